//! The Kubernetes source end to end, under real faults: a reflector over
//! `KubeSource` of config maps, with indexes and a handler-built replica,
//! fed by kube's real client over HTTP from the Kubernetes list/watch test
//! server (tests/common/kube_server/), whose objects live in a real etcd
//! that the test SIGKILLs and restarts while four writers change objects
//! through kube's client and the server breaks, ends, silences and expires
//! its watches and compacts etcd's history. At the end the store, each
//! index and the replica must equal what the server holds.
//!
//! The reflector is run by a controller (`larder::controller`) with four
//! workers on a `ManualClock` that a task moves forward a millisecond at a
//! time, and a recording reconcile (tests/common/reconciles.rs): every
//! key's last reconcile must see its final state, no key may be in two
//! workers at once, and the keys that fail on a schedule must be retried
//! no sooner than the default limiter's delays, with their failures
//! forgotten after a success.
//!
//! A silent watch's bound is `a_silent_watch_is_given_up_within_its_deadline`
//! in tests/kube_reflector.rs; the faults each have their own test there
//! and in tests/kube_source.rs.
//!
//! Needs the `kube` and `etcd` features and an `etcd` binary.

#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/kube_objects.rs"]
mod kube_objects;
#[path = "common/kube_server/mod.rs"]
mod kube_server;
#[path = "common/reconciles.rs"]
mod reconciles;
#[path = "common/recorder.rs"]
mod recorder;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use etcd_server::bounded;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_objects::{Fixture, config_map, pod, revision_of};
use larder::controller::Controller;
use larder::reflector::{
    Backoff, KubeSource, Reflector, StoreReader, index_by_label, index_by_namespace,
    meta_namespace_key,
};
use larder::{IndexedStore, ManualClock};
use reconciles::Reconciles;
use recorder::{Call, Recorder, Shared};

/// The tokio-level limit of the test's body: a hang fails with the test's
/// name and unwinds, which kills etcd. The watchdog (120 s) is the backstop
/// for a thread the runtime cannot time out.
const LIMIT: Duration = Duration::from_secs(100);

/// How long the reflector may take to reach the server's revision once
/// the writers are done and etcd is up (it takes about a second).
const CATCH_UP: Duration = Duration::from_secs(30);

/// How long one write may keep failing (etcd down, restarting) before the
/// writer gives up and fails the test.
const WRITE_RETRY_LIMIT: Duration = Duration::from_secs(40);

const WRITERS: u64 = 4;
const CHANGES: u64 = 5_000;
const NAMESPACES: u64 = 5;
const TIERS: [&str; 3] = ["gold", "silver", "bronze"];
const TIER_LABEL: &str = "tier";
/// The controller's workers.
const WORKERS: usize = 4;
/// Of each writer's objects written once (created, never changed), every
/// this many fails on `reconciles::FAILING_SCHEDULE` (eight a writer).
const FAILING_EVERY: usize = 40;
/// How often the task that moves the controller's clock moves it, by as
/// much.
const TICK: Duration = Duration::from_millis(1);

type ConfigMaps = StoreReader<String, ConfigMap>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Create,
    Update,
    Delete,
}

/// One writer's changes, `(change, object number)`: every object is
/// created, every third is updated soon after, every fifth relabelled,
/// every fourth deleted three objects later. Nothing is updated after its
/// deletion.
fn plan(changes: u64) -> Vec<(Change, u64)> {
    let mut plan = Vec::new();
    let mut i = 0;
    while (plan.len() as u64) < changes {
        plan.push((Change::Create, i));
        if i % 3 == 2 {
            plan.push((Change::Update, i - 1));
        }
        if i % 5 == 4 {
            plan.push((Change::Update, i - 2));
        }
        if i % 4 == 3 {
            plan.push((Change::Delete, i - 3));
        }
        i += 1;
    }
    plan.truncate(changes as usize);
    plan
}

/// Object `i` of writer `writer` at its `version`th write: its namespace is
/// one of five, its `tier` label moves with each write (every seventh
/// object has no labels at all).
fn object(writer: u64, i: u64, version: u64) -> ConfigMap {
    let namespace = format!("ns-{}", (i + writer) % NAMESPACES);
    let name = format!("w{writer}-{i:04}");
    let mut config = config_map(&namespace, &name, &format!("v{version}"));
    if i % 7 != 0 {
        let tier = TIERS[((i + version) % TIERS.len() as u64) as usize];
        config.metadata.labels = Some([(TIER_LABEL.to_owned(), tier.to_owned())].into());
    }
    config
}

/// The key of every object the writers write, and the failing ones: every
/// `FAILING_EVERY`th object of a writer that it writes only once, so that
/// its every reconcile after the first is a retry of the controller's, none
/// a change's.
fn written_keys() -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut written, mut failing) = (BTreeSet::new(), BTreeSet::new());
    for w in 0..WRITERS {
        let mut changes: BTreeMap<u64, usize> = BTreeMap::new();
        for (_, i) in plan(CHANGES / WRITERS) {
            *changes.entry(i).or_default() += 1;
        }
        let key = |i: u64| meta_namespace_key(&object(w, i, 1));
        written.extend(changes.keys().map(|&i| key(i)));
        let once = changes.iter().filter(|&(_, &n)| n == 1).map(|(&i, _)| i);
        failing.extend(once.step_by(FAILING_EVERY).map(key));
    }
    (written, failing)
}

/// Every key the replica was told of.
fn notified_keys(replica: &Recorder<String, ConfigMap>) -> BTreeSet<String> {
    let state = replica.state.lock().unwrap();
    state
        .calls
        .iter()
        .map(|call| match call {
            Call::Add(key, _) | Call::Update(key, _, _) | Call::Delete(key, _) => key.clone(),
        })
        .collect()
}

/// Writes one change, retrying while it fails (etcd down or restarting): a
/// create answered `409 AlreadyExists` and a delete answered `404` are an
/// earlier try that was applied though its answer was lost. Updates carry
/// no resource version, so a repeated one writes the same content again.
/// How many tries failed.
async fn write(client: &Client, change: Change, config: &ConfigMap) -> u64 {
    let api: Api<ConfigMap> =
        Api::namespaced(client.clone(), config.namespace().as_deref().unwrap());
    let name = config.name_any();
    let began = Instant::now();
    let mut failed = 0;
    loop {
        let done = match change {
            Change::Create => api.create(&PostParams::default(), config).await.map(drop),
            Change::Update => api
                .replace(&name, &PostParams::default(), config)
                .await
                .map(drop),
            Change::Delete => api.delete(&name, &DeleteParams::default()).await.map(drop),
        };
        match done {
            Ok(()) => return failed,
            Err(kube::Error::Api(status))
                if failed > 0
                    && ((change == Change::Create && status.code == 409)
                        || (change == Change::Delete && status.code == 404)) =>
            {
                return failed;
            }
            Err(error) => {
                failed += 1;
                assert!(
                    began.elapsed() < WRITE_RETRY_LIMIT,
                    "{change:?} of {name} still failing after {WRITE_RETRY_LIMIT:?}: {error}"
                );
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
    }
}

/// One writer: its plan, in order, counting each change done in `done`
/// and each failed try in `retries`.
async fn writer(client: Client, writer: u64, done: Arc<AtomicU64>, retries: Arc<AtomicU64>) {
    let mut versions: BTreeMap<u64, u64> = BTreeMap::new();
    for (change, i) in plan(CHANGES / WRITERS) {
        let version = versions.entry(i).or_insert(0);
        *version += 1;
        let failed = write(&client, change, &object(writer, i, *version)).await;
        retries.fetch_add(failed, Ordering::Relaxed);
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// What the fault task does at each step.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// SIGKILL etcd, leave it down a moment, restart it on its data.
    KillEtcd,
    DropWatches,
    CloseWatches,
    SilenceWatches,
    ExpireWatches,
    Compact,
    /// Break the watches, then compact before the reflector resumes: the
    /// resumed watch is likely to start at a compacted revision (`410`).
    DropAndCompact,
}

const FAULTS: [Fault; 13] = [
    Fault::DropWatches,
    Fault::KillEtcd,
    Fault::CloseWatches,
    Fault::SilenceWatches,
    Fault::DropAndCompact,
    Fault::ExpireWatches,
    Fault::KillEtcd,
    Fault::Compact,
    Fault::SilenceWatches,
    Fault::DropWatches,
    Fault::ExpireWatches,
    Fault::KillEtcd,
    Fault::DropAndCompact,
];

/// What the fault task did.
#[derive(Debug, Default)]
struct Injected {
    kills: u64,
    compactions: u64,
    /// Fault switches thrown at the open watches (drop, close, silence,
    /// expire), and how many watches they hit.
    watch_faults: u64,
    watches_hit: usize,
    expired: usize,
}

/// An index's value for an object, recomputed from the server's copy.
type IndexValue = fn(&ConfigMap) -> Option<String>;

fn namespace_of(config: &ConfigMap) -> Option<String> {
    config.namespace()
}

fn tier_of(config: &ConfigMap) -> Option<String> {
    config.labels().get(TIER_LABEL).cloned()
}

/// The mismatches between the store, its indexes and the replica on one
/// side and the server's content (`truth`) on the other; empty when they
/// all agree.
fn mismatches(
    store: &ConfigMaps,
    replica: &Recorder<String, ConfigMap>,
    truth: &BTreeMap<String, ConfigMap>,
) -> Vec<String> {
    let mut found = Vec::new();
    let stored: BTreeMap<String, Arc<ConfigMap>> = store.to_vec().into_iter().collect();
    // (a) The store against the server.
    for (key, object) in truth {
        match stored.get(key) {
            None => found.push(format!("store lacks {key:?}")),
            Some(held) if **held != *object => found.push(format!(
                "store holds {key:?} at {:?}, the server at {:?}",
                held.resource_version(),
                object.resource_version()
            )),
            Some(_) => {}
        }
    }
    for key in stored.keys().filter(|key| !truth.contains_key(*key)) {
        found.push(format!("store holds {key:?}, the server does not"));
    }
    // (b) Every index against the one recomputed from the server's content.
    let indexes: [(&str, IndexValue); 2] = [("namespace", namespace_of), (TIER_LABEL, tier_of)];
    for (index, value_of) in indexes {
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (key, object) in truth {
            if let Some(value) = value_of(object) {
                expected.entry(value).or_default().insert(key.clone());
            }
        }
        let mut values: BTreeSet<String> = store.index_values(index).unwrap().into_iter().collect();
        values.extend(expected.keys().cloned());
        for value in values {
            let held: BTreeSet<String> = store
                .index_keys(index, &value)
                .unwrap()
                .into_iter()
                .collect();
            let wanted = expected.remove(&value).unwrap_or_default();
            if held != wanted {
                found.push(format!(
                    "index {index}={value}: store {} keys, server {} ({} differ)",
                    held.len(),
                    wanted.len(),
                    held.symmetric_difference(&wanted).count()
                ));
            }
        }
    }
    // (c) The handler-built replica against the store.
    let replica_state = replica.model();
    for (key, object) in &replica_state {
        match stored.get(key) {
            Some(held) if **held == *object => {}
            _ => found.push(format!("replica's {key:?} is not the store's")),
        }
    }
    if replica_state.len() != stored.len() {
        found.push(format!(
            "replica holds {} objects, the store {}",
            replica_state.len(),
            stored.len()
        ));
    }
    for violation in replica.violations() {
        found.push(format!("handler contract: {violation}"));
    }
    found
}

/// Four writers make 5,000 changes (creates, updates, deletes across five
/// namespaces and three label values) through kube's client while etcd is
/// SIGKILLed and restarted three times and the server drops, closes,
/// silences and expires its watches and compacts etcd: once the writers
/// are done and the reflector has reached the server's revision, the
/// store, both indexes and the handler-built replica hold exactly what the
/// server holds (zero mismatches).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_writers_through_etcd_kills_and_watch_faults_converge_with_no_mismatch() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let mut fixture = Fixture::start().await;
    let (server, etcd) = (&fixture.server, &mut fixture.etcd);
    bounded(
        "four_writers_through_etcd_kills_and_watch_faults_converge_with_no_mismatch",
        LIMIT,
        async {
            let began = Instant::now();
            let store = IndexedStore::<String, Arc<ConfigMap>>::builder()
                .index("namespace", index_by_namespace)
                .index(TIER_LABEL, index_by_label(TIER_LABEL))
                .build()
                .unwrap();
            // Watches the server ends every 5 s, given up after 2 s of
            // silence (bookmarks come every 250 ms on a live one); lists in
            // pages of 200, so a relist spans pages and a compaction can
            // expire its continue token.
            let source = KubeSource::builder(Api::<ConfigMap>::all(server.client()))
                .page_size(200)
                .watch_timeout(Duration::from_secs(5))
                .watch_deadline(Duration::from_secs(2))
                .build()
                .unwrap();
            let replica = Recorder::<String, ConfigMap>::new();
            let reflector = Reflector::builder(source, store)
                .handler(Shared(Arc::clone(&replica)))
                .parse_invalid_key(|key| (!key.is_empty()).then(|| key.to_owned()))
                .backoff(Backoff::new(
                    Duration::from_millis(20),
                    Duration::from_millis(300),
                ))
                .build()
                .unwrap();
            let store = reflector.reader();
            let handle = reflector.handle();
            // The controller runs the reflector; its clock moves a tick
            // every tick of real time (or more slowly), so retries fall due
            // while the run goes on, and their times are exact.
            let (written, failing) = written_keys();
            let clock = ManualClock::new();
            let reconciles = Reconciles::new(clock.clone(), failing.clone());
            let controller = {
                let reconciles = Arc::clone(&reconciles);
                Controller::builder(reflector, move |key, object| {
                    Arc::clone(&reconciles).reconcile(key, object)
                })
                .workers(WORKERS)
                .clock(clock.clone())
                .build()
                .unwrap()
            };
            let runner = controller.handle();
            reconciles.handle.set(runner.clone()).unwrap();
            let task = tokio::spawn(controller.run());
            let ticking = Arc::new(AtomicBool::new(true));
            let ticker = tokio::spawn({
                let ticking = Arc::clone(&ticking);
                async move {
                    while ticking.load(Ordering::Relaxed) {
                        tokio::time::sleep(TICK).await;
                        clock.advance(TICK);
                    }
                }
            });
            handle.wait_until_synced_timeout(CATCH_UP).await.unwrap();

            let done = Arc::new(AtomicU64::new(0));
            let retries = Arc::new(AtomicU64::new(0));
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    tokio::spawn(writer(
                        server.client(),
                        w,
                        Arc::clone(&done),
                        Arc::clone(&retries),
                    ))
                })
                .collect();

            // The faults, spread over the run: step `n` once `n / 14` of
            // the changes are done (so each step after a restart follows
            // writes that etcd took: the server's etcd client is back).
            let mut injected = Injected::default();
            for (n, fault) in FAULTS.iter().enumerate() {
                let due = CHANGES * (n as u64 + 1) / (FAULTS.len() as u64 + 1);
                while done.load(Ordering::Relaxed) < due {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                if !matches!(fault, Fault::KillEtcd | Fault::Compact) {
                    // A watch fault hits the reflector's watch, not the gap
                    // between two (a backoff, a relist).
                    server.wait_for_watches(1).await;
                }
                let watch_fault = |hit: usize, injected: &mut Injected| {
                    injected.watch_faults += 1;
                    injected.watches_hit += hit;
                    hit
                };
                match fault {
                    Fault::KillEtcd => {
                        tokio::task::block_in_place(|| etcd.kill());
                        injected.kills += 1;
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        tokio::task::block_in_place(|| etcd.restart());
                    }
                    Fault::DropWatches => {
                        watch_fault(server.drop_watches(), &mut injected);
                    }
                    Fault::CloseWatches => {
                        watch_fault(server.close_watches(), &mut injected);
                    }
                    Fault::SilenceWatches => {
                        let restarts = handle.stats().watch_restarts;
                        if watch_fault(server.silence_watches(), &mut injected) > 0 {
                            // The silent watch is given up after its
                            // deadline and a new one opened; the next
                            // faults then hit that one, not the silent one.
                            while handle.stats().watch_restarts == restarts
                                || server.open_watches() > 1
                            {
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                        }
                    }
                    Fault::ExpireWatches => {
                        let hit = watch_fault(server.expire_watches(), &mut injected);
                        injected.expired += hit;
                    }
                    Fault::Compact => {
                        server.compact().await;
                        injected.compactions += 1;
                    }
                    Fault::DropAndCompact => {
                        watch_fault(server.drop_watches(), &mut injected);
                        server.compact().await;
                        injected.compactions += 1;
                    }
                }
            }
            for task in writers {
                task.await.expect("a writer");
            }
            let changes = done.load(Ordering::Relaxed);
            assert_eq!(changes, CHANGES);

            // Writers done, etcd up. A last write of another kind: the
            // config map watch learns its revision from a bookmark alone,
            // as a watch of one resource learns the others' writes.
            let marker = Api::<Pod>::namespaced(server.client(), "ns-0")
                .create(&PostParams::default(), &pod("ns-0", "marker"))
                .await
                .expect("a pod written once etcd is back");
            let current = server.revision().await;
            assert_eq!(revision_of(&marker), current);
            // The reflector reaches the server's revision, then everything
            // is compared with a fresh list.
            handle
                .wait_for_revision_timeout(current, CATCH_UP)
                .await
                .unwrap_or_else(|error| {
                    panic!(
                        "the reflector did not reach the server's revision {current} within \
                         {CATCH_UP:?}: {error}; {:?}",
                        handle.stats()
                    )
                });
            let listed = Api::<ConfigMap>::all(server.client())
                .list(&ListParams::default())
                .await
                .expect("a list of the server's content");
            assert_eq!(
                listed.metadata.resource_version.as_deref(),
                Some(current.to_string().as_str()),
                "nothing was written after the writers ended"
            );
            let truth: BTreeMap<String, ConfigMap> = listed
                .items
                .into_iter()
                .map(|config| (meta_namespace_key(&config), config))
                .collect();
            let found = mismatches(&store, &replica, &truth);
            store.check_invariants();
            // Every key the reflector delivered is reconciled after its
            // last change: its last reconcile saw the server's object (or
            // none, deleted) and succeeded.
            let notified = notified_keys(&replica);
            let strays: Vec<_> = notified.difference(&written).collect();
            assert!(strays.is_empty(), "keys nobody wrote: {strays:?}");
            let reconciled_by = Instant::now() + CATCH_UP;
            let unreconciled = loop {
                let unreconciled = reconciles.unreconciled(&notified, &truth);
                if unreconciled.is_empty() || Instant::now() > reconciled_by {
                    break unreconciled;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            let stats = handle.stats();
            let runner_stats = runner.stats();
            println!(
                "changes {changes} ({} failed tries retried), objects at the end {}, \
                 etcd kills {}, compactions {}, watch faults {} (hitting {} watches, {} \
                 expired), lists {} (relists {}), watch restarts {}, events applied {}, \
                 revision {current}, mismatches {}, reconciles {} ({} keys failing \
                 on schedule, at most {} at once, clock at {:?}), {runner_stats:?}, \
                 took {:?}",
                retries.load(Ordering::Relaxed),
                truth.len(),
                injected.kills,
                injected.compactions,
                injected.watch_faults,
                injected.watches_hit,
                injected.expired,
                stats.lists,
                stats.relists,
                stats.watch_restarts,
                stats.events_applied,
                found.len(),
                reconciles.attempts(),
                failing.len(),
                reconciles.most_at_once(),
                reconciles.now(),
                began.elapsed(),
            );
            assert!(
                found.is_empty(),
                "{} mismatches with the server at {current}, the first: {:#?}",
                found.len(),
                &found[..found.len().min(10)]
            );
            assert!(!truth.is_empty());
            assert!(injected.kills >= 2);
            if injected.expired > 0 {
                assert!(
                    stats.relists >= 1,
                    "a 410 makes the reflector relist: {stats:?}"
                );
            }
            assert_eq!(stats.invalid_objects, 0, "{stats:?}");

            assert!(
                unreconciled.is_empty(),
                "{} keys not reconciled after their last change within {CATCH_UP:?}, the \
                 first: {:#?}",
                unreconciled.len(),
                &unreconciled[..unreconciled.len().min(10)]
            );
            let overlaps = reconciles.overlaps();
            assert!(
                overlaps.is_empty(),
                "one key in two workers {} times, the first: {:?}",
                overlaps.len(),
                &overlaps[..overlaps.len().min(10)]
            );
            assert!(
                reconciles.most_at_once() >= 2,
                "the workers never overlapped: an overlap of one key could not be seen"
            );
            let backoff = reconciles.backoff_errors();
            assert!(
                backoff.is_empty(),
                "{} departures from the failing keys' backoff, the first: {:#?}",
                backoff.len(),
                &backoff[..backoff.len().min(10)]
            );
            let failures = reconciles::FAILING_SCHEDULE
                .iter()
                .filter(|&&outcome| outcome == reconciles::Outcome::Failed)
                .count() as u64;
            assert_eq!(
                (
                    runner_stats.failed,
                    runner_stats.panicked,
                    runner_stats.requeued
                ),
                (failures * failing.len() as u64, 0, failing.len() as u64),
                "{runner_stats:?}"
            );
            for key in &failing {
                assert_eq!(
                    runner.num_requeues(key),
                    0,
                    "{key}'s failures not forgotten"
                );
            }
            assert_eq!(reconciles.in_flight(), 0);
            runner.shut_down();
            task.await.expect("the controller's task");
            assert!(handle.is_finished());
            ticking.store(false, Ordering::Relaxed);
            ticker.await.expect("the clock's task");
        },
    )
    .await;
}
