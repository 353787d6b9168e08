//! Measures an etcd-fed reflector on a three-member etcd cluster it starts
//! itself (three `etcd` processes on loopback, data on tmpfs: the tests'
//! harness, tests/common/etcd_cluster.rs), and prints the figures; it
//! asserts nothing.
//!
//! 1. **Lag under load:** four writers put as fast as etcd accepts (each
//!    awaits its acknowledgement, then puts again) for `--seconds`; for
//!    every put, the time from its acknowledgement to the reflector's
//!    handler seeing it (the handler runs once the store holds the change):
//!    p50, p99, max.
//! 2. **Scale:** `--keys` keys of `--value-bytes`-byte values loaded into a
//!    fresh prefix (transactions of 128 puts), then a reflector started on
//!    it: the time from its start to synced, and the process's resident
//!    memory (VmRSS, before and once synced). `--page-size` sets the
//!    list's page (default `DEFAULT_PAGE_SIZE`).
//!
//! ```text
//! cargo run --release --example etcd_cluster_scale --features etcd -- [--seconds 20] [--keys 1000000] [--value-bytes 100] [--page-size 1000]
//! ```

#[path = "../tests/common/etcd_cluster.rs"]
mod etcd_cluster;
#[path = "../tests/common/etcd.rs"]
mod etcd_server;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, Txn, TxnOp};
use etcd_cluster::EtcdCluster;
use larder::IndexedStore;
use larder::reflector::{EtcdSource, Reflector};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The process's resident memory, in MiB (Linux).
fn resident_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// The `q` quantile of sorted `samples`.
fn quantile(samples: &[Duration], q: f64) -> Duration {
    samples[((samples.len() as f64 - 1.0) * q).round() as usize]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: u64 = arg(&args, "--seconds").map_or(Ok(20), |n| n.parse())?;
    let keys: usize = arg(&args, "--keys").map_or(Ok(1_000_000), |n| n.parse())?;
    let value_bytes: usize = arg(&args, "--value-bytes").map_or(Ok(100), |n| n.parse())?;
    let page_size: u32 = arg(&args, "--page-size")
        .map_or(Ok(larder::reflector::DEFAULT_PAGE_SIZE), |n| n.parse())?;

    let cluster = tokio::task::block_in_place(EtcdCluster::start);
    let endpoints = cluster.endpoints();
    let client =
        Client::connect(&endpoints, Some(larder::reflector::etcd_connect_options())).await?;
    if seconds > 0 {
        lag(&endpoints, &client, Duration::from_secs(seconds)).await?;
    }
    if keys > 0 {
        scale(&endpoints, &client, keys, value_bytes, page_size).await?;
    }
    drop(cluster);
    Ok(())
}

/// Four writers as fast as etcd accepts; acknowledged -> seen by the
/// handler.
async fn lag(
    endpoints: &[String],
    client: &Client,
    duration: Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    const PREFIX: &str = "/lag/";
    let seen: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let source = EtcdSource::connect(endpoints, PREFIX, |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())?
            .parse::<u64>()
            .map_err(|e| e.to_string())
    })
    .await?
    .build()?;
    let store = IndexedStore::<String, Arc<u64>>::new();
    let record = {
        let seen = Arc::clone(&seen);
        move |value: u64| {
            seen.lock().unwrap().insert(value, Instant::now());
        }
    };
    let on_update = record.clone();
    let reflector = Reflector::builder(source, store)
        .on_add(move |_, new| record(**new))
        .on_update(move |_, _, new| on_update(**new))
        .build()?;
    let handle = reflector.handle();
    let task = tokio::spawn(reflector.run());
    handle.wait_until_synced().await?;

    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (mut kv, stop) = (client.kv_client(), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut acked = Vec::new();
                let mut sequence = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    sequence += 1;
                    let value = (w << 40) | sequence;
                    let key = format!("{PREFIX}w{w}/{:04}", sequence % 1_000);
                    let sent = Instant::now();
                    kv.put(key, value.to_string(), None).await.expect("a put");
                    acked.push((value, sent, Instant::now()));
                }
                acked
            })
        })
        .collect();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut acked = Vec::new();
    for writer in writers {
        acked.extend(writer.await?);
    }
    let last = client.clone().get("/", None).await?;
    let revision = last.header().map_or(0, |h| h.revision() as u64);
    handle
        .wait_for_revision_timeout(revision, Duration::from_secs(60))
        .await?;
    handle.stop();
    task.await?;

    let seen = seen.lock().unwrap();
    let mut before_ack = 0usize;
    let mut from_sent = Vec::with_capacity(acked.len());
    let mut lags: Vec<Duration> = acked
        .iter()
        .map(|(value, sent, at)| {
            let visible = seen.get(value).expect("every acknowledged put was seen");
            if visible < at {
                before_ack += 1;
            }
            from_sent.push(visible.saturating_duration_since(*sent));
            visible.saturating_duration_since(*at)
        })
        .collect();
    lags.sort();
    from_sent.sort();
    println!(
        "lag under load: {} puts acknowledged in {duration:?} by 4 writers ({:.0}/s); \
         acknowledged -> in the store: p50 {:?}, p99 {:?}, max {:?}; {} ({:.0}%) were in \
         the store before their writer saw the acknowledgement (counted as 0); put sent -> \
         in the store: p50 {:?}, p99 {:?}",
        acked.len(),
        acked.len() as f64 / duration.as_secs_f64(),
        quantile(&lags, 0.50),
        quantile(&lags, 0.99),
        lags[lags.len() - 1],
        before_ack,
        100.0 * before_ack as f64 / acked.len() as f64,
        quantile(&from_sent, 0.50),
        quantile(&from_sent, 0.99),
    );
    Ok(())
}

/// `keys` keys of `value_bytes`-byte values: start -> synced, and memory.
async fn scale(
    endpoints: &[String],
    client: &Client,
    keys: usize,
    value_bytes: usize,
    page_size: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    const PREFIX: &str = "/scale/";
    const PER_TXN: usize = 128; // etcd's default --max-txn-ops
    let loading = Instant::now();
    let batches: Vec<usize> = (0..keys).step_by(PER_TXN).collect();
    let loaders: Vec<_> = batches
        .chunks(batches.len().div_ceil(8).max(1))
        .map(|starts| {
            let (mut kv, starts) = (client.kv_client(), starts.to_vec());
            tokio::spawn(async move {
                for start in starts {
                    let ops: Vec<TxnOp> = (start..(start + PER_TXN).min(keys))
                        .map(|i| {
                            let value = format!("{i:0width$}", width = value_bytes);
                            TxnOp::put(format!("{PREFIX}{i:08}"), value, None)
                        })
                        .collect();
                    kv.txn(Txn::new().and_then(ops)).await.expect("a load");
                }
            })
        })
        .collect();
    for loader in loaders {
        loader.await?;
    }
    println!(
        "loaded {keys} keys of {value_bytes}-byte values in {:?}",
        loading.elapsed()
    );

    let before = resident_mib();
    let started = Instant::now();
    let source = EtcdSource::connect(endpoints, PREFIX, |bytes: &[u8]| {
        Ok::<_, std::convert::Infallible>(bytes.to_vec())
    })
    .await?
    .page_size(page_size)
    .build()?;
    let store = IndexedStore::<String, Arc<Vec<u8>>>::new();
    let reflector = Reflector::builder(source, store).build()?;
    let store = reflector.reader();
    let handle = reflector.handle();
    let task = tokio::spawn(reflector.run());
    handle.wait_until_synced().await?;
    let took = started.elapsed();
    let after = resident_mib();
    println!(
        "scale: {} keys synced {took:?} after the reflector started (pages of {page_size}); \
         resident memory \
         {before:.0} MiB before, {after:.0} MiB once synced (+{:.0} MiB, {:.0} bytes per key)",
        store.len(),
        after - before,
        (after - before) * 1024.0 * 1024.0 / keys as f64,
    );
    handle.stop();
    task.await?;
    Ok(())
}
