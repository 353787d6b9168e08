//! Measures an etcd-fed reflector: how long after etcd acknowledges a `put`
//! the object is visible in the store (at a steady 1,000 puts/s), and what
//! a consistent read from the cache costs against a direct etcd `get` and a
//! plain (possibly stale) cache read. Prints the figures; it asserts
//! nothing.
//!
//! ```text
//! etcd &   # Debian/Ubuntu: apt-get install etcd-server
//! cargo run --release --example etcd_latency --features etcd -- [--endpoint URL] [--puts N] [--reads N]
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use larder::IndexedStore;
use larder::reflector::{EtcdSource, Reflector};

const PREFIX: &str = "/larder-latency/";

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// p50 and p99 of `samples`, in microseconds.
fn percentiles(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    (at(0.50), at(0.99))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let endpoint = arg(&args, "--endpoint")
        .or_else(|| std::env::var("ETCD_ENDPOINT").ok())
        .unwrap_or_else(|| "http://127.0.0.1:2379".to_owned());
    let puts: u64 = arg(&args, "--puts").map_or(Ok(5_000), |n| n.parse())?;
    let reads: usize = arg(&args, "--reads").map_or(Ok(2_000), |n| n.parse())?;

    let mut client = etcd_client::Client::connect([endpoint.as_str()], None).await?;
    client
        .delete(
            PREFIX,
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        )
        .await?;
    let source = EtcdSource::builder(client.clone(), PREFIX, |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())?
            .parse::<u64>()
            .map_err(|e| e.to_string())
    })
    .build()?;
    let store = IndexedStore::<String, Arc<u64>>::new();
    // When each sequence number became visible: the handlers run right
    // after the store applied the change.
    let visible: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let (on_add, on_update) = (visible.clone(), visible.clone());
    let reflector = Reflector::builder(source.clone(), store)
        .on_add(move |_, n| {
            on_add.lock().unwrap().insert(**n, Instant::now());
        })
        .on_update(move |_, _, n| {
            on_update.lock().unwrap().insert(**n, Instant::now());
        })
        .build()?;
    let store = reflector.reader();
    let handle = reflector.handle();
    let task = tokio::spawn(reflector.run());
    handle
        .wait_until_synced_timeout(Duration::from_secs(10))
        .await?;

    // 1. put acknowledged -> visible, at 1,000 puts/s (one put every
    // millisecond, 100 keys overwritten in turn).
    let mut acknowledged = HashMap::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut in_flight = tokio::task::JoinSet::new();
    for n in 1..=puts {
        ticker.tick().await;
        let mut writer = client.clone();
        let sent = Instant::now();
        in_flight.spawn(async move {
            writer
                .put(format!("{PREFIX}{}", n % 100), n.to_string(), None)
                .await
                .map(|_| (n, sent, Instant::now()))
        });
        while let Some(done) = in_flight.try_join_next() {
            let (n, sent, at) = done??;
            acknowledged.insert(n, (sent, at));
        }
    }
    while let Some(done) = in_flight.join_next().await {
        let (n, sent, at) = done??;
        acknowledged.insert(n, (sent, at));
    }
    let rate = puts as f64 / started.elapsed().as_secs_f64();
    source
        .wait_consistent(&handle, Duration::from_secs(30))
        .await?;
    let visible = visible.lock().unwrap().clone();
    let mut lags = Vec::new();
    let mut from_sent = Vec::new();
    let mut before_ack = 0;
    for (n, (sent, ack)) in &acknowledged {
        let seen = visible[n];
        from_sent.push(seen.saturating_duration_since(*sent));
        match seen.checked_duration_since(*ack) {
            Some(lag) => lags.push(lag),
            None => {
                before_ack += 1;
                lags.push(Duration::ZERO);
            }
        }
    }
    let (p50, p99) = percentiles(&mut lags);
    println!(
        "put acknowledged -> visible in the store: {} puts at {rate:.0} puts/s: \
         p50 {p50:.0} us, p99 {p99:.0} us ({before_ack} visible before the client saw the ack, counted as 0)",
        lags.len()
    );
    let (p50, p99) = percentiles(&mut from_sent);
    println!("put sent -> visible in the store: p50 {p50:.0} us, p99 {p99:.0} us");

    // 2. Reads of one key, interleaved round by round: a consistent cache
    // read (etcd's revision, wait, local get), a direct linearizable etcd
    // get, a plain cache get.
    let (mut consistent, mut direct, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    let mut kv = client.kv_client();
    let key = format!("{PREFIX}7");
    for _ in 0..reads {
        let t = Instant::now();
        source
            .wait_consistent(&handle, Duration::from_secs(5))
            .await?;
        std::hint::black_box(store.get(key.as_str()));
        consistent.push(t.elapsed());

        let t = Instant::now();
        std::hint::black_box(kv.get(key.as_str(), None).await?);
        direct.push(t.elapsed());

        let t = Instant::now();
        std::hint::black_box(store.get(key.as_str()));
        plain.push(t.elapsed());
    }
    for (name, samples) in [
        ("consistent cache read", &mut consistent),
        ("direct etcd get (linearizable)", &mut direct),
        ("plain cache read (may be stale)", &mut plain),
    ] {
        let (p50, p99) = percentiles(samples);
        println!("{name}: {reads} reads: p50 {p50:.2} us, p99 {p99:.2} us");
    }

    client
        .delete(
            PREFIX,
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        )
        .await?;
    handle.stop();
    task.await?;
    Ok(())
}
