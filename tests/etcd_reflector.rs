//! A `Reflector` fed by an `EtcdSource`, against a real etcd server with
//! faults: concurrent writers, a SIGKILLed and restarted server, compaction
//! while the watch is disconnected, undecodable values, and consistent reads.
//!
//! Needs the `etcd` feature and an `etcd` binary (`apt-get install
//! etcd-server`); tests/common/etcd.rs starts one server per test.

#[path = "common/etcd.rs"]
mod etcd_server;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use etcd_server::{EtcdServer, bounded, connect};
use larder::IndexedStore;
use larder::reflector::{
    Backoff, EtcdSource, Reflector, ReflectorError, ReflectorHandle, Revision, SourceError,
};

/// Far above a test's usual running time (under a minute), below
/// nextest's 180 s kill in CI, so a hang fails here with the test's name.
const LIMIT: Duration = Duration::from_secs(170);

/// Objects are decimal sequence numbers: every write of a writer carries a
/// larger one than its previous writes.
fn source(client: Client, prefix: &str) -> EtcdSource<u64> {
    EtcdSource::builder(client, prefix, |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())?
            .parse::<u64>()
            .map_err(|e| e.to_string())
    })
    .request_timeout(Duration::from_secs(3))
    .build()
    .expect("a valid configuration")
}

/// The state the handlers' calls build up, and every call that could only
/// come from an event applied twice or out of order.
#[derive(Debug, Default)]
struct Replay {
    state: HashMap<String, u64>,
    /// A duplicate add, an update to an older or equal sequence number, a
    /// delete of an unknown key, or a handler's `old` that differs from the
    /// replayed state.
    violations: Vec<String>,
    /// Updates whose new object equals the old one (a relist re-delivers
    /// unchanged objects as updates; a watch never does).
    unchanged_updates: u64,
    deletes: u64,
}

struct Harness {
    store: Arc<IndexedStore<String, u64>>,
    handle: ReflectorHandle,
    replay: Arc<Mutex<Replay>>,
    errors: Arc<Mutex<Vec<String>>>,
    watch_errors: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

fn start(source: EtcdSource<u64>, backoff: Backoff) -> Harness {
    let store = Arc::new(
        IndexedStore::<String, u64>::builder()
            .index("parity", |n: &u64| {
                [if n % 2 == 0 { "even" } else { "odd" }.to_owned()]
            })
            .build()
            .unwrap(),
    );
    let replay = Arc::new(Mutex::new(Replay::default()));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let watch_errors = Arc::new(AtomicU64::new(0));
    let (on_add, on_update, on_delete) = (replay.clone(), replay.clone(), replay.clone());
    let (on_error, watch_errors_seen) = (errors.clone(), watch_errors.clone());
    let reflector = Reflector::builder(source, Arc::clone(&store))
        .on_add(move |key, new| {
            let mut replay = on_add.lock().unwrap();
            if let Some(old) = replay.state.insert(key.clone(), **new) {
                replay
                    .violations
                    .push(format!("add of present {key} (had {old}, got {new})"));
            }
        })
        .on_update(move |key, old, new| {
            let mut replay = on_update.lock().unwrap();
            match replay.state.insert(key.clone(), **new) {
                Some(known) if known == **old => {}
                known => replay
                    .violations
                    .push(format!("update of {key}: old {old}, replayed {known:?}")),
            }
            if new == old {
                replay.unchanged_updates += 1;
            } else if **new < **old {
                replay
                    .violations
                    .push(format!("update of {key} went back: {old} -> {new}"));
            }
        })
        .on_delete(move |key, last| {
            let mut replay = on_delete.lock().unwrap();
            replay.deletes += 1;
            match replay.state.remove(key) {
                Some(known) if known == **last => {}
                known => replay
                    .violations
                    .push(format!("delete of {key}: last {last}, replayed {known:?}")),
            }
        })
        .on_error(move |error| {
            if matches!(error, ReflectorError::Watch(_)) {
                watch_errors_seen.fetch_add(1, Ordering::SeqCst);
            }
            on_error.lock().unwrap().push(error.to_string());
        })
        .parse_invalid_key(|key| Some(key.to_owned()))
        .backoff(backoff)
        .build()
        .unwrap();
    let handle = reflector.handle();
    let task = tokio::spawn(reflector.run());
    Harness {
        store,
        handle,
        replay,
        errors,
        watch_errors,
        task,
    }
}

impl Harness {
    async fn stop(self) {
        self.handle.stop();
        self.task.await.expect("the reflector's task");
    }

    /// Waits until the store holds every write etcd acknowledged, then
    /// checks that the store and the handlers' replay both equal etcd's
    /// content at the store's revision.
    async fn assert_converged(&self, source: &EtcdSource<u64>, client: &Client) -> Revision {
        // First let the watch deliver etcd's writes on its own, without a
        // progress request: etcd before 3.4.25 (Debian ships 3.4.23) may
        // answer one ahead of events still queued for the watch, and the
        // source then ends the stream as too old and the reflector relists
        // (see below). Tests that count relists need the quiet path. A store
        // that never gets there (the last write outside the prefix) falls
        // through to `wait_consistent`, which checks the same thing.
        let written = source
            .current_revision()
            .await
            .expect("etcd's current revision");
        let _ = self
            .handle
            .wait_for_revision_timeout(written, Duration::from_secs(30))
            .await;
        let revision = source
            .wait_consistent(&self.handle, Duration::from_secs(60))
            .await
            .expect("the store catches up with etcd");
        // etcd before 3.4.25 (Debian ships 3.4.23) may answer a progress
        // request ahead of events still queued for the watch: the handle then
        // reaches `revision` first, the source ends the stream as too old when
        // the older events arrive, and the relist brings the store there.
        let caught_up = Instant::now() + Duration::from_secs(60);
        while self.store.revision() < revision {
            assert!(
                Instant::now() < caught_up,
                "the store stayed at {}, short of {revision}",
                self.store.revision()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(self.store.revision(), revision);
        let truth = etcd_content(client, source.prefix(), revision).await;
        let stored: BTreeMap<String, u64> = self
            .store
            .to_vec()
            .into_iter()
            .map(|(key, value)| (key, *value))
            .collect();
        assert_eq!(
            stored.len(),
            truth.len(),
            "the store has etcd's number of keys"
        );
        assert!(
            stored == truth,
            "the store equals etcd at revision {revision}"
        );
        let replay = self.replay.lock().unwrap();
        assert!(
            replay.violations.is_empty(),
            "{:#?}",
            &replay.violations[..replay.violations.len().min(10)]
        );
        let replayed: BTreeMap<String, u64> = replay
            .state
            .iter()
            .map(|(key, value)| (key.clone(), *value))
            .collect();
        assert!(
            replayed == truth,
            "the handlers' replay equals etcd at revision {revision}"
        );
        self.store.check_invariants();
        revision
    }
}

/// etcd's decodable content under `prefix` at `revision` (a fresh
/// `get --prefix`).
async fn etcd_content(client: &Client, prefix: &str, revision: Revision) -> BTreeMap<String, u64> {
    let mut kv = client.kv_client();
    let response = kv
        .get(
            prefix,
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_revision(revision as i64),
            ),
        )
        .await
        .expect("a fresh get --prefix");
    response
        .kvs()
        .iter()
        .filter_map(|pair| {
            let value = std::str::from_utf8(pair.value()).ok()?.parse().ok()?;
            Some((pair.key_str().ok()?.to_owned(), value))
        })
        .collect()
}

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

fn fast_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(50), Duration::from_secs(1))
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
            // etcd before 3.4.25 (Debian ships 3.4.23) can answer a progress
            // request for a watch that is still replaying its start revision
            // ahead of the replayed events (the limitation the guide states
            // for consistent reads). So the trials start once the new watch
            // has delivered an event, i.e. has caught up.
            let warmup = client.put("/cr/warmup", "0", None).await.unwrap();
            let warmed = warmup.header().unwrap().revision() as u64;
            while harness.store.revision() < warmed {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let mut stale = Vec::new();
            for trial in 0..1_000u64 {
                let key = format!("/cr/{}", trial % 10);
                client
                    .put(key.clone(), trial.to_string(), None)
                    .await
                    .unwrap();
                if trial % 2 == 1 {
                    // A later write outside the prefix: etcd's revision moves
                    // past the prefix's, so only a progress notification can
                    // vouch for the store.
                    client
                        .put("/elsewhere", trial.to_string(), None)
                        .await
                        .unwrap();
                }
                source
                    .wait_consistent(&harness.handle, Duration::from_secs(10))
                    .await
                    .unwrap_or_else(|e| panic!("trial {trial}: {e}"));
                let read = harness.store.get(key.as_str()).map(|v| *v);
                if read != Some(trial) {
                    stale.push((trial, read));
                }
            }
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
        let error = source
            .wait_consistent(&harness.handle, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                larder::reflector::ConsistencyError::Source(SourceError::Connection(_))
            ),
            "{error}"
        );
        harness.stop().await;
    })
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
