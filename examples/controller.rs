//! A controller, client-go style: a reflector mirrors the etcd prefix
//! `/larder-controller/spec/` into an `IndexedStore`; a handler queues the
//! name of each spec that changed on a `WorkQueue`; workers reconcile each
//! name into `/larder-controller/status/<name>` (the spec's value behind
//! `reconciled: `), and delete the status when the spec is deleted. A
//! reconcile that fails (etcd unreachable) is retried with a per-key
//! backoff; the controller rides out an etcd restart.
//!
//! Start etcd (`etcd` with no flags listens on 127.0.0.1:2379; on Debian and
//! Ubuntu `apt-get install etcd-server`), then:
//!
//! ```text
//! cargo run --example controller --features etcd -- --demo
//! ```
//!
//! `--demo` writes, updates and deletes some specs, waits until every
//! status matches its spec, prints a summary and exits (non-zero if that
//! takes over 30 s). Without it the controller runs until stopped (Ctrl-C):
//! `etcdctl put /larder-controller/spec/web 'replicas=3'`, then
//! `etcdctl get --prefix /larder-controller/status/`. `--endpoint URL` picks
//! another server (default `http://127.0.0.1:2379`, or `$ETCD_ENDPOINT`);
//! `--workers N` sets the number of workers (default 4).
//!
//! The logic is in `examples/controller/mod.rs`, which the test against a
//! real etcd (`tests/etcd_controller.rs`) runs too.

#[path = "controller/mod.rs"]
mod controller;

use std::time::{Duration, Instant};

use controller::{Controller, SPEC_PREFIX, STATUS_PREFIX};

/// How long the demo may take to converge.
const DEMO_LIMIT: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let demo = args.iter().any(|a| a == "--demo");
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let endpoint = value_of("--endpoint")
        .or_else(|| std::env::var("ETCD_ENDPOINT").ok())
        .unwrap_or_else(|| "http://127.0.0.1:2379".to_owned());
    let workers: usize = value_of("--workers").map_or(Ok(4), |n| n.parse())?;

    let options = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_keep_alive(Duration::from_secs(5), Duration::from_secs(5));
    let mut client = etcd_client::Client::connect([endpoint.as_str()], Some(options)).await?;
    if demo {
        // The demo starts from empty prefixes.
        for prefix in [SPEC_PREFIX, STATUS_PREFIX] {
            let all = etcd_client::DeleteOptions::new().with_prefix();
            client.delete(prefix, Some(all)).await?;
        }
    }
    let started = Instant::now();
    let controller = Controller::start(client.clone(), workers).await?;
    println!(
        "controller on {endpoint}: {workers} workers, {SPEC_PREFIX} -> {STATUS_PREFIX}, synced at revision {}",
        controller.handle().revision()
    );
    if !demo {
        std::future::pending::<()>().await;
    }

    // 200 specs, every third updated, every fifth deleted.
    for i in 0..200 {
        client
            .put(
                format!("{SPEC_PREFIX}app-{i:03}"),
                format!("replicas={}", i % 7),
                None,
            )
            .await?;
    }
    for i in (0..200).step_by(3) {
        client
            .put(format!("{SPEC_PREFIX}app-{i:03}"), "replicas=9", None)
            .await?;
    }
    for i in (0..200).step_by(5) {
        client
            .delete(format!("{SPEC_PREFIX}app-{i:03}"), None)
            .await?;
    }
    let converged = controller.wait_converged(DEMO_LIMIT).await;
    let stats = controller.stats();
    let summary = format!(
        "{} reconciles ({} failed and retried), {} overlapping",
        stats.reconciled,
        stats.failed,
        controller.overlaps(),
    );
    let overlapping = controller.overlapping();
    controller.stop().await;
    match converged {
        Ok(specs) if overlapping.is_empty() => {
            println!(
                "converged in {:.1?}: {specs} specs, each with its status; {summary}",
                started.elapsed()
            );
            Ok(())
        }
        Ok(_) => Err(format!("names reconciled by two workers at once: {overlapping:?}").into()),
        Err(error) => Err(format!("{error}; {summary}").into()),
    }
}
