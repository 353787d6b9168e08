//! A `Reflector` fed by an `EtcdSource`, against a real etcd server with
//! faults: concurrent writers, a SIGKILLed and restarted server, compaction
//! while the watch is disconnected, undecodable values, and consistent reads.
//!
//! Needs the `etcd` feature and an `etcd` binary (`apt-get install
//! etcd-server`); tests/common/etcd.rs starts one server per test.

#[path = "common/etcd_mirror.rs"]
mod etcd_mirror;
#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/scripted.rs"]
mod scripted;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use etcd_client::Client;
use etcd_mirror::{consistent_read_trials, fast_backoff, source, start};
use etcd_server::{EtcdServer, bounded, connect};
use larder::reflector::{Backoff, Listed, Reflector, Revision, Source, SourceError, WatchEvent};
use scripted::Scripted;

/// Far above a test's usual running time (under a minute), below
/// nextest's 180 s kill in CI, so a hang fails here with the test's name.
const LIMIT: Duration = Duration::from_secs(170);

/// One writer's share: puts `keys` keys, updates every third, deletes every
/// fourth, each write with a larger sequence number, retrying through
/// connection errors with a fresh sequence number (a write etcd applied
/// before the error is then written again, as a new change).
async fn writer(client: Client, prefix: String, writer: u64, keys: u64, ops: Arc<AtomicU64>) {
    let mut kv = client.kv_client();
    let mut sequence = writer << 40;
    let key = |i: u64| format!("{prefix}w{writer}/{i:05}");
    let mut plan = Vec::new();
    for i in 0..keys {
        plan.push((key(i), true));
        if i % 3 == 2 {
            plan.push((key(i - 1), true));
        }
        if i % 4 == 3 {
            plan.push((key(i - 3), false));
        }
    }
    for (key, put) in plan {
        loop {
            sequence += 1;
            let done = if put {
                kv.put(key.clone(), sequence.to_string(), None)
                    .await
                    .map(drop)
            } else {
                kv.delete(key.clone(), None).await.map(drop)
            };
            match done {
                Ok(()) => break,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
}

async fn run_writers(
    client: &Client,
    prefix: &str,
    writers: u64,
    keys: u64,
    ops: &Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..writers)
        .map(|w| {
            tokio::spawn(writer(
                client.clone(),
                prefix.to_owned(),
                w,
                keys,
                Arc::clone(ops),
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_writers_20000_keys_store_and_handlers_equal_etcd() {
    let server = EtcdServer::start();
    bounded(
        "four_writers_20000_keys_store_and_handlers_equal_etcd",
        LIMIT,
        async {
            let client = connect(&server).await;
            let source = source(client.clone(), "/r/");
            let harness = start(source.clone(), fast_backoff());
            harness.handle.wait_until_synced().await.unwrap();
            let ops = Arc::new(AtomicU64::new(0));
            for task in run_writers(&client, "/r/", 4, 5_000, &ops).await {
                task.await.unwrap();
            }
            harness.assert_converged(&source, &client).await;
            let stats = harness.handle.stats();
            let written = ops.load(Ordering::Relaxed);
            // Every write was one event, applied once: no relist, no restart.
            assert_eq!(stats.events_applied, written, "{stats:?}");
            assert_eq!(
                (stats.lists, stats.relists, stats.watch_restarts),
                (1, 0, 0),
                "{stats:?}"
            );
            assert_eq!(harness.replay.lock().unwrap().unchanged_updates, 0);
            assert!(
                harness.errors.lock().unwrap().is_empty(),
                "{:?}",
                harness.errors.lock().unwrap()
            );
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkilled_etcd_restarted_mid_burst_converges_with_nothing_twice_or_lost() {
    let mut server = EtcdServer::start();
    bounded(
        "a_sigkilled_etcd_restarted_mid_burst_converges_with_nothing_twice_or_lost",
        LIMIT,
        async {
            let client = connect(&server).await;
            let source = source(client.clone(), "/k/");
            let harness = start(source.clone(), fast_backoff());
            harness.handle.wait_until_synced().await.unwrap();
            let ops = Arc::new(AtomicU64::new(0));
            let writers = run_writers(&client, "/k/", 4, 2_000, &ops).await;
            while ops.load(Ordering::Relaxed) < 3_000 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::task::block_in_place(|| server.kill());
            tokio::time::sleep(Duration::from_millis(500)).await;
            tokio::task::block_in_place(|| server.restart());
            for task in writers {
                task.await.unwrap();
            }
            harness.assert_converged(&source, &client).await;
            let stats = harness.handle.stats();
            assert!(
                stats.watch_restarts >= 1,
                "the watch was reopened: {stats:?}"
            );
            assert!(harness.watch_errors.load(Ordering::SeqCst) >= 1);
            // The history survived the kill, so the watch resumed where it
            // stopped: no relist, no event re-delivered.
            assert_eq!(stats.relists, 0, "{stats:?}");
            assert_eq!(harness.replay.lock().unwrap().unchanged_updates, 0);
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compaction_while_the_watch_is_down_relists_and_deletes_what_vanished() {
    let mut server = EtcdServer::start();
    bounded(
        "compaction_while_the_watch_is_down_relists_and_deletes_what_vanished",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            for i in 0..100u64 {
                client
                    .put(format!("/c/{i:03}"), i.to_string(), None)
                    .await
                    .unwrap();
            }
            let source = source(client.clone(), "/c/");
            // A fixed 4 s pause before the watch is reopened: the window in
            // which etcd comes back, changes and compacts.
            let backoff = Backoff::new(Duration::from_secs(4), Duration::from_secs(4)).jitter(0.0);
            let harness = start(source.clone(), backoff);
            harness.assert_converged(&source, &client).await;
            tokio::task::block_in_place(|| server.kill());
            while harness.watch_errors.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let disconnected = Instant::now();
            tokio::task::block_in_place(|| server.restart());
            let mut client = connect(&server).await;
            for i in 0..50u64 {
                client.delete(format!("/c/{i:03}"), None).await.unwrap();
            }
            client.put("/c/050", "1000", None).await.unwrap();
            let last = client.put("/c/new", "7", None).await.unwrap();
            let now = last.header().unwrap().revision();
            client.compact(now, None).await.unwrap();
            assert!(
                disconnected.elapsed() < Duration::from_millis(3_500),
                "restarting, writing and compacting took {:?}: too slow to beat the 4 s backoff",
                disconnected.elapsed()
            );
            let deletes_before = harness.replay.lock().unwrap().deletes;
            harness.assert_converged(&source, &client).await;
            let stats = harness.handle.stats();
            assert_eq!(
                stats.relists, 1,
                "the compacted watch made it relist: {stats:?}"
            );
            assert_eq!(
                harness.replay.lock().unwrap().deletes - deletes_before,
                50,
                "a delete for each vanished key"
            );
            // The 49 keys that did not change are syncs, and this handler
            // has no resync: it gets none of them.
            assert_eq!(harness.replay.lock().unwrap().unchanged_updates, 0);
            assert!(harness.store.get("/c/000").is_none());
            assert_eq!(harness.store.get("/c/050").as_deref(), Some(&1000));
            assert!(
                harness
                    .errors
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|e| e.contains("too old")),
                "{:?}",
                harness.errors.lock().unwrap()
            );
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn undecodable_values_are_reported_with_keys_and_the_rest_stays_in_sync() {
    let server = EtcdServer::start();
    bounded(
        "undecodable_values_are_reported_with_keys_and_the_rest_stays_in_sync",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            for i in 0..100u64 {
                let value = if i % 10 == 0 {
                    format!("bad-{i}")
                } else {
                    i.to_string()
                };
                client.put(format!("/u/{i:03}"), value, None).await.unwrap();
            }
            let source = source(client.clone(), "/u/");
            let harness = start(source.clone(), fast_backoff());
            harness.assert_converged(&source, &client).await;
            assert_eq!(harness.store.len(), 90);
            let reported = |key: &str| {
                harness
                    .errors
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|e| e.contains(key))
                    .count()
            };
            for i in (0..100).step_by(10) {
                assert_eq!(
                    reported(&format!("\"/u/{i:03}\"")),
                    1,
                    "{:?}",
                    harness.errors.lock().unwrap()
                );
            }
            // In the watch: a good value turns bad (dropped and reported), a
            // bad one turns good, the rest goes on.
            client.put("/u/005", "garbage", None).await.unwrap();
            client.put("/u/010", "10", None).await.unwrap();
            client.put("/u/006", "600", None).await.unwrap();
            harness.assert_converged(&source, &client).await;
            assert!(harness.store.get("/u/005").is_none());
            assert_eq!(harness.store.get("/u/010").as_deref(), Some(&10));
            assert_eq!(harness.store.get("/u/006").as_deref(), Some(&600));
            assert_eq!(reported("\"/u/005\""), 1);
            assert_eq!(harness.handle.stats().invalid_objects, 11);
            assert_eq!(
                harness.handle.stats().relists,
                0,
                "a parsed key needs no relist"
            );
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_write_then_consistent_read_trials_are_never_stale() {
    let server = EtcdServer::start();
    bounded(
        "a_thousand_write_then_consistent_read_trials_are_never_stale",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            let source = source(client.clone(), "/cr/");
            let harness = start(source.clone(), fast_backoff());
            harness.handle.wait_until_synced().await.unwrap();
            let (stale, _) = consistent_read_trials(&mut client, &source, &harness).await;
            assert!(
                stale.is_empty(),
                "stale reads (trial, value read): {stale:?}"
            );
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consistent_read_fails_when_etcd_is_down() {
    let mut server = EtcdServer::start();
    bounded("a_consistent_read_fails_when_etcd_is_down", LIMIT, async {
        let client = connect(&server).await;
        let source = source(client.clone(), "/d/");
        let harness = start(source.clone(), fast_backoff());
        harness.handle.wait_until_synced().await.unwrap();
        tokio::task::block_in_place(|| server.kill());
        let began = Instant::now();
        let error = source
            .wait_consistent(&harness.handle, Duration::from_secs(2))
            .await
            .unwrap_err();
        let took = began.elapsed();
        // It kept trying for its whole limit, and not much longer.
        assert!(
            took >= Duration::from_millis(1_800) && took < Duration::from_secs(4),
            "gave up after {took:?}"
        );
        assert!(
            matches!(
                error,
                larder::reflector::ConsistencyError::Source(SourceError::Connection(_))
            ),
            "{error}"
        );
        // The message says what failed, where and why.
        let message = error.to_string();
        assert!(
            message.contains("cannot read etcd's current revision")
                && message.contains("cannot read the current revision"),
            "{message}"
        );
        harness.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consistent_read_retries_until_etcd_is_back_within_its_limit() {
    let mut server = EtcdServer::start();
    bounded(
        "a_consistent_read_retries_until_etcd_is_back_within_its_limit",
        LIMIT,
        async {
            let client = connect(&server).await;
            let source = source(client.clone(), "/e/");
            let harness = start(source.clone(), fast_backoff());
            harness.handle.wait_until_synced().await.unwrap();
            tokio::task::block_in_place(|| server.kill());
            // etcd comes back 1 s into a 20 s limit: the first revision
            // reads fail ("connection refused"), a later one answers.
            let read = {
                let (source, handle) = (source.clone(), harness.handle.clone());
                tokio::spawn(async move {
                    source
                        .wait_consistent(&handle, Duration::from_secs(20))
                        .await
                })
            };
            tokio::time::sleep(Duration::from_secs(1)).await;
            tokio::task::block_in_place(|| server.restart());
            let revision = read
                .await
                .unwrap()
                .expect("a consistent read once etcd is back");
            assert!(harness.store.revision() >= revision);
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_deleting_many_keys_removes_every_one() {
    // etcd gives every change of one request (a range delete, a txn) the
    // same revision: the reflector must apply them all.
    let server = EtcdServer::start();
    bounded(
        "one_request_deleting_many_keys_removes_every_one",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            for i in 0..10u64 {
                client
                    .put(format!("/m/a/{i}"), i.to_string(), None)
                    .await
                    .unwrap();
            }
            client.put("/m/b", "1", None).await.unwrap();
            let source = source(client.clone(), "/m/");
            let harness = start(source.clone(), fast_backoff());
            harness.assert_converged(&source, &client).await;
            client
                .delete(
                    "/m/a/",
                    Some(etcd_client::DeleteOptions::new().with_prefix()),
                )
                .await
                .unwrap();
            harness.assert_converged(&source, &client).await;
            assert_eq!(harness.store.len(), 1);
            harness.stop().await;
        },
    )
    .await;
}

/// A source whose first watch sends a bookmark at 5, then fails the way
/// the etcd source does when an event at 4 follows it (what etcd before
/// 3.4.25 can do); later watches stay open and quiet.
#[derive(Clone, Default)]
struct Reordering {
    watches: Arc<AtomicU64>,
}

impl Source for Reordering {
    type Key = String;
    type Object = u64;
    type Watch = Scripted<String, u64>;

    async fn list(&self) -> Result<Listed<String, u64>, SourceError> {
        Ok(Listed {
            items: vec![("a".to_owned(), 1, 3)],
            revision: 3,
            invalid: Vec::new(),
        })
    }

    async fn watch(&self, _from: Revision) -> Result<Scripted<String, u64>, SourceError> {
        let mut items = std::collections::VecDeque::new();
        if self.watches.fetch_add(1, Ordering::SeqCst) == 0 {
            items.push_back(Ok(WatchEvent::Bookmark { revision: 5 }));
            items.push_back(Err(SourceError::ProgressAheadOfEvent {
                bookmarked: 5,
                event: 4,
            }));
        }
        Ok(Scripted(items))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_notification_ahead_of_an_event_relists_with_its_own_error_and_count() {
    bounded(
        "a_progress_notification_ahead_of_an_event_relists_with_its_own_error_and_count",
        LIMIT,
        async {
            let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
            let seen = Arc::clone(&errors);
            let store = larder::IndexedStore::<String, Arc<u64>>::new();
            let reflector = Reflector::builder(Reordering::default(), store)
                .on_error(move |error| seen.lock().unwrap().push(error.to_string()))
                .backoff(fast_backoff())
                .build()
                .unwrap();
            let handle = reflector.handle();
            let task = tokio::spawn(reflector.run());
            let deadline = Instant::now() + Duration::from_secs(10);
            while handle.stats().lists < 2 {
                assert!(Instant::now() < deadline, "no relist: {:?}", handle.stats());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let stats = handle.stats();
            assert_eq!(
                (stats.relists, stats.progress_ahead_of_events),
                (1, 1),
                "{stats:?}"
            );
            let errors = errors.lock().unwrap().clone();
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert!(
                errors[0].contains("progress notification came ahead of events")
                    && !errors[0].contains("compacted"),
                "{}",
                errors[0]
            );
            handle.stop();
            task.await.unwrap();
        },
    )
    .await;
}
