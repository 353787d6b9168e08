//! The controller of `examples/controller.rs` (a `larder::controller`
//! runner: reflector, handler, work queue, workers) against a real etcd
//! server that is SIGKILLed and restarted in the middle of a burst of spec
//! changes: every status ends
//! equal to its spec, no status outlives its spec, and no name is ever
//! reconciled by two workers at once.
//!
//! Needs the `etcd` feature and an `etcd` binary (`apt-get install
//! etcd-server`); tests/common/etcd.rs starts the server.

#[path = "../examples/controller/mod.rs"]
mod controller;
#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use controller::{Controller, SPEC_PREFIX, STATUS_PREFIX};
use etcd_client::Client;
use etcd_server::{EtcdServer, bounded, connect};

/// Far above the test's usual running time (under a minute), below
/// nextest's 180 s kill in CI, so a hang fails here with the test's name.
const LIMIT: Duration = Duration::from_secs(170);

/// Spec changes written in all (puts, updates and deletes).
const CHANGES: u64 = 5_000;
const WRITERS: u64 = 4;
/// etcd is killed once this many changes are written.
const KILL_AFTER: u64 = 2_000;

/// One writer's share of the changes, on its own names: puts a new name,
/// updates every third name once, deletes every fourth. A write that fails
/// (etcd down) is retried with a new value until etcd takes it.
async fn writer(client: Client, writer: u64, written: Arc<AtomicU64>) {
    let mut kv = client.kv_client();
    let name = |i: u64| format!("{SPEC_PREFIX}w{writer}-{i:05}");
    let mut plan = Vec::new();
    let mut i = 0;
    while (plan.len() as u64) < CHANGES / WRITERS {
        plan.push((name(i), true));
        if i % 3 == 2 {
            plan.push((name(i - 1), true));
        }
        if i % 4 == 3 {
            plan.push((name(i - 3), false));
        }
        i += 1;
    }
    plan.truncate((CHANGES / WRITERS) as usize);
    let mut sequence = 0_u64;
    for (key, put) in plan {
        loop {
            sequence += 1;
            let done = if put {
                let value = format!("w{writer} change {sequence}");
                kv.put(key.clone(), value, None).await.map(drop)
            } else {
                kv.delete(key.clone(), None).await.map(drop)
            };
            match done {
                Ok(()) => break,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        written.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_thousand_spec_changes_through_an_etcd_restart_converge_one_worker_per_key() {
    let _watchdog = watchdog::arm(LIMIT + Duration::from_secs(5));
    let mut server = EtcdServer::start();
    bounded(
        "five_thousand_spec_changes_through_an_etcd_restart_converge_one_worker_per_key",
        LIMIT,
        async {
            let started = Instant::now();
            let mut client = connect(&server).await;
            // A status left by an earlier run whose spec is gone: the
            // controller queues every status's name when it starts.
            let orphan = format!("{STATUS_PREFIX}orphan");
            client.put(orphan, "reconciled: gone", None).await.unwrap();
            let controller = Controller::start(client.clone(), 4)
                .await
                .expect("the controller starts");
            let written = Arc::new(AtomicU64::new(0));
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| tokio::spawn(writer(client.clone(), w, Arc::clone(&written))))
                .collect();
            while written.load(Ordering::Relaxed) < KILL_AFTER {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::task::block_in_place(|| server.kill());
            tokio::time::sleep(Duration::from_millis(500)).await;
            tokio::task::block_in_place(|| server.restart());
            for task in writers {
                task.await.expect("a writer panicked");
            }
            assert_eq!(written.load(Ordering::Relaxed), CHANGES);
            let written_in = started.elapsed();

            let converged = controller.wait_converged(Duration::from_secs(60)).await;
            let specs = converged.unwrap_or_else(|error| panic!("{error}"));
            let counts = controller.stats();
            let (reconciled, failed) = (counts.reconciled, counts.failed);
            let overlaps = controller.overlaps();
            assert_eq!(
                overlaps,
                0,
                "names reconciled by two workers at once: {:?}",
                controller.overlapping()
            );
            // The kill came while the workers had a backlog: reconciles
            // failed, were queued again with a backoff, and succeeded later.
            assert!(failed >= 1, "no reconcile failed while etcd was down");
            let stats = controller.handle().stats();
            assert!(
                stats.watch_restarts >= 1,
                "the reflector's watch was reopened after the kill: {stats:?}"
            );
            controller.stop().await;
            // Stopped: nothing can change a status any more; still equal.
            assert_eq!(
                controller::mismatches(&client).await.expect("read etcd"),
                Ok(specs)
            );
            eprintln!(
                "{CHANGES} changes written in {written_in:.1?}, converged in {:.1?}: {specs} specs; \
                 {reconciled} reconciles, {failed} failed and retried; controller {counts:?}; \
                 reflector {stats:?}",
                started.elapsed()
            );
        },
    )
    .await;
}
