//! A reflector fed by an `EtcdSource` for the etcd tests, with handlers
//! that replay every notification (and flag any that could only come from a
//! change applied twice or out of order), and the check that the store, its
//! indexes and the replay all equal etcd's prefix at one revision.
//!
//! A test module using it declares `etcd_server` (common/etcd.rs) too.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use larder::IndexedStore;
use larder::reflector::{
    Backoff, EtcdSource, Reflector, ReflectorError, ReflectorHandle, Revision, StoreReader,
};

/// Objects are decimal sequence numbers: every write of a writer carries a
/// larger one than its previous writes.
pub fn source(client: Client, prefix: &str) -> EtcdSource<u64> {
    EtcdSource::builder(client, prefix, decimal)
        .request_timeout(Duration::from_secs(3))
        .build()
        .expect("a valid configuration")
}

/// The tests' decode function: a decimal number.
pub fn decimal(bytes: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(bytes)
        .map_err(|e| e.to_string())?
        .parse::<u64>()
        .map_err(|e| e.to_string())
}

/// The state the handlers' calls build up, and every call that could only
/// come from an event applied twice or out of order.
#[derive(Debug, Default)]
pub struct Replay {
    pub state: HashMap<String, u64>,
    /// A duplicate add, an update to an older or equal sequence number, a
    /// delete of an unknown key, or a handler's `old` that differs from the
    /// replayed state.
    pub violations: Vec<String>,
    /// Updates whose new object equals the old one: syncs, which these
    /// handlers (no resync) never get, and a watch never sends.
    pub unchanged_updates: u64,
    pub deletes: u64,
}

pub struct Harness {
    pub store: StoreReader<String, u64>,
    pub handle: ReflectorHandle,
    pub replay: Arc<Mutex<Replay>>,
    pub errors: Arc<Mutex<Vec<String>>>,
    pub watch_errors: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

pub fn start(source: EtcdSource<u64>, backoff: Backoff) -> Harness {
    start_with(source, backoff, true)
}

/// [`start`], and whether each writer's values only grow in etcd's history
/// (`monotonic`): not so when writers abandon requests on a timeout, as
/// etcd may still commit an abandoned write after the writer's later ones.
pub fn start_with(source: EtcdSource<u64>, backoff: Backoff, monotonic: bool) -> Harness {
    let store = IndexedStore::<String, Arc<u64>>::builder()
        .index("parity", |n: &Arc<u64>| [parity(**n).to_owned()])
        .index("digit", |n: &Arc<u64>| [digit(**n)])
        .build()
        .unwrap();
    let replay = Arc::new(Mutex::new(Replay::default()));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let watch_errors = Arc::new(AtomicU64::new(0));
    let (on_add, on_update, on_delete) = (replay.clone(), replay.clone(), replay.clone());
    let (on_error, watch_errors_seen) = (errors.clone(), watch_errors.clone());
    let reflector = Reflector::builder(source, store)
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
            } else if monotonic && **new < **old {
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
    let store = reflector.reader();
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
    pub async fn stop(self) {
        self.handle.stop();
        self.task.await.expect("the reflector's task");
    }

    /// Waits until the store holds every write etcd acknowledged, then
    /// checks that the store and the handlers' replay both equal etcd's
    /// content at the store's revision.
    pub async fn assert_converged(&self, source: &EtcdSource<u64>, client: &Client) -> Revision {
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
        for (name, value) in [("parity", "even"), ("parity", "odd")] {
            let wanted = truth.iter().filter(|(_, n)| parity(**n) == value).count();
            assert_index(&self.store, &truth, name, value, wanted);
        }
        for d in 0..10 {
            let value = d.to_string();
            let wanted = truth.iter().filter(|(_, n)| digit(**n) == value).count();
            assert_index(&self.store, &truth, "digit", &value, wanted);
        }
        self.store.check_invariants();
        revision
    }
}

/// etcd's decodable content under `prefix` at `revision` (a fresh
/// `get --prefix`).
pub async fn etcd_content(
    client: &Client,
    prefix: &str,
    revision: Revision,
) -> BTreeMap<String, u64> {
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

pub fn fast_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(50), Duration::from_secs(1))
}

/// The first index: even or odd.
fn parity(n: u64) -> &'static str {
    if n % 2 == 0 { "even" } else { "odd" }
}

/// The second index: the last decimal digit.
fn digit(n: u64) -> String {
    (n % 10).to_string()
}

/// The index `name` maps `value` to exactly the keys of `truth` that have
/// it (`wanted` of them).
fn assert_index(
    store: &StoreReader<String, u64>,
    truth: &BTreeMap<String, u64>,
    name: &str,
    value: &str,
    wanted: usize,
) {
    let mut keys = store.index_keys(name, value).expect("a known index");
    keys.sort();
    assert_eq!(
        keys.len(),
        wanted,
        "index {name}={value} has etcd's number of keys"
    );
    for key in &keys {
        assert!(
            truth.contains_key(key),
            "index {name}={value} names {key}, which etcd does not hold"
        );
    }
}

/// 1,000 put-then-consistent-read trials on `/cr/` (every other trial also
/// writes outside the prefix, so only a progress notification can vouch
/// for the store): the stale reads (trial, value read) and each
/// `wait_consistent`'s latency, sorted. Starts once the watch has
/// delivered a warm-up write: etcd before 3.4.25 can answer a progress
/// request for a watch still replaying its start revision ahead of the
/// replayed events (the limitation the guide states).
pub async fn consistent_read_trials(
    client: &mut Client,
    source: &EtcdSource<u64>,
    harness: &Harness,
) -> (Vec<(u64, Option<u64>)>, Vec<Duration>) {
    let warmup = client.put("/cr/warmup", "0", None).await.unwrap();
    let warmed = warmup.header().expect("etcd sends a header").revision() as Revision;
    let deadline = Instant::now() + Duration::from_secs(30);
    while harness.store.revision() < warmed {
        assert!(Instant::now() < deadline, "the warm-up write never arrived");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut stale = Vec::new();
    let mut latencies = Vec::with_capacity(1_000);
    for trial in 0..1_000u64 {
        let key = format!("/cr/{}", trial % 10);
        client
            .put(key.clone(), trial.to_string(), None)
            .await
            .unwrap();
        if trial % 2 == 1 {
            client
                .put("/elsewhere", trial.to_string(), None)
                .await
                .unwrap();
        }
        let began = Instant::now();
        source
            .wait_consistent(&harness.handle, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        latencies.push(began.elapsed());
        let read = harness.store.get(key.as_str()).map(|v| *v);
        if read != Some(trial) {
            stale.push((trial, read));
        }
    }
    latencies.sort();
    (stale, latencies)
}
