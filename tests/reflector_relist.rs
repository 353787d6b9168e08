//! What a relist delivers to each handler (client-go's shared informer):
//! an object whose revision has not changed is a sync, delivered only to
//! the handlers whose resync is due, as `on_update(key, obj, obj)`; a
//! changed object is an update to every handler; new and vanished objects
//! are adds and deletes to every handler. Also the one panic path: every
//! handler's panic, the builder's and the registry's, is counted and
//! reported. Every wait is bounded: a hang fails with the test's name.

#![cfg(feature = "reflector")]

#[path = "common/alarms.rs"]
mod alarms;
#[path = "common/recorder.rs"]
mod recorder;
#[path = "common/reflecting.rs"]
mod reflecting;
#[path = "common/scripted.rs"]
mod scripted;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alarms::Alarms;
use larder::IndexedStore;
use larder::reflector::{
    Change, Handler, Listed, MemorySource, Reflector, ReflectorHandle, Resync, Revision, Sleep,
    Source, SourceError, WatchEvent,
};
use recorder::{Call, Recorder, Shared};
use reflecting::{bounded, caught_up, fast, key, sorted, store};
use scripted::Scripted;

const OWN_PERIOD: Duration = Duration::from_secs(7);
const REFLECTOR_PERIOD: Duration = Duration::from_secs(11);

/// Every notification as a line: `add k=v`, `update k a->b`, `sync k=v`
/// (an update whose old and new are the same `Arc`), `delete k=v`.
#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The lines so far, sorted, and forgotten.
    fn take_sorted(&self) -> Vec<String> {
        let mut lines = std::mem::take(&mut *self.0.lock().unwrap());
        lines.sort();
        lines
    }

    fn count(&self, prefix: &str) -> usize {
        let lines = self.0.lock().unwrap();
        lines.iter().filter(|line| line.starts_with(prefix)).count()
    }

    fn has(&self, line: &str) -> bool {
        self.0.lock().unwrap().iter().any(|l| l == line)
    }
}

struct Logging(Arc<Log>);

impl Handler<String, u32> for Logging {
    fn on_change(&self, change: Change<'_, String, u32>, _revision: Revision) {
        let line = match change {
            Change::Add { key, new } => format!("add {key}={new}"),
            Change::Update { key, new, .. } if change.is_sync() => format!("sync {key}={new}"),
            Change::Update { key, old, new } => format!("update {key} {old}->{new}"),
            Change::Delete { key, last_known } => format!("delete {key}={last_known}"),
        };
        self.0.0.lock().unwrap().push(line);
    }
}

fn timer(alarms: &Arc<Alarms>) -> impl Fn(Duration) -> Sleep + Send + Sync + 'static {
    let alarms = Arc::clone(alarms);
    move |duration| alarms.sleep(duration)
}

/// Waits (yielding) until `done` holds; the test's bound catches a hang.
async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Makes the watches fail and waits until the loop has left its watch
/// step (it polls no resync timer until the next relist), then runs
/// `change` unseen by any watch and compacts past it: the next watch is
/// too old and the reflector relists. `before_relist` runs once the
/// history is compacted, before the watches may succeed again.
async fn relist_after(
    source: &MemorySource<String, u32>,
    handle: &ReflectorHandle,
    change: impl FnOnce(),
    before_relist: impl FnOnce(),
) {
    let (restarts, relists) = (handle.stats().watch_restarts, handle.stats().relists);
    source.fail_watches(usize::MAX);
    source.drop_watches();
    until(|| handle.stats().watch_restarts > restarts).await;
    change();
    source.compact(source.revision());
    before_relist();
    source.fail_watches(0);
    caught_up(handle, source).await;
    assert_eq!(handle.stats().relists, relists + 1, "{:?}", handle.stats());
}

/// Puts a marker and waits until every log has it: each log then holds
/// every notification before it (a buffer delivers in order).
async fn flush(source: &MemorySource<String, u32>, logs: &[&Arc<Log>], marker: &str) {
    source.put(marker.to_string(), 0);
    let line = format!("add {marker}=0");
    until(|| logs.iter().all(|log| log.has(&line))).await;
}

/// client-go's `TestSharedInformerWatchDisruption`: pod3 added and pod2
/// bumped while no watch sees it, then a relist. The handler that never
/// resyncs gets the two changes; the one whose resync is due gets them and
/// pod1 as a sync, and the relist was its resync (its timer starts again,
/// no second resync follows).
#[test]
fn a_relist_sends_unchanged_objects_only_to_handlers_whose_resync_is_due() {
    bounded(
        "a_relist_sends_unchanged_objects_only_to_handlers_whose_resync_is_due",
        async {
            let alarms = Arc::new(Alarms::default());
            let source = MemorySource::new();
            source.put("pod1".to_string(), 1);
            source.put("pod2".to_string(), 2);
            let reflector = Reflector::builder(source.clone(), store())
                .backoff(fast())
                .timer(timer(&alarms))
                .build()
                .unwrap();
            let (handle, registry) = (reflector.handle(), reflector.handler_registry());
            let (no_resync, resync) = (Arc::new(Log::default()), Arc::new(Log::default()));
            let (never, never_delivery) = registry
                .add_with_resync(Logging(Arc::clone(&no_resync)), Resync::Never)
                .unwrap();
            let (every, every_delivery) = registry
                .add_with_resync(Logging(Arc::clone(&resync)), Resync::Every(OWN_PERIOD))
                .unwrap();
            let deliveries = [tokio::spawn(never_delivery), tokio::spawn(every_delivery)];
            let task = tokio::spawn(reflector.run());
            until(|| never.has_synced() && every.has_synced()).await;
            for log in [&no_resync, &resync] {
                assert_eq!(log.take_sorted(), ["add pod1=1", "add pod2=2"]);
            }

            relist_after(
                &source,
                &handle,
                || {
                    source.put("pod3".to_string(), 3);
                    source.put("pod2".to_string(), 4);
                },
                || assert_eq!(alarms.fire(OWN_PERIOD), 1),
            )
            .await;
            flush(&source, &[&no_resync, &resync], "zz").await;
            assert_eq!(
                no_resync.take_sorted(),
                ["add pod3=3", "add zz=0", "update pod2 2->4"]
            );
            assert_eq!(
                resync.take_sorted(),
                ["add pod3=3", "add zz=0", "sync pod1=1", "update pod2 2->4"]
            );
            // The relist did the due resync: a new timer, and no other resync.
            assert_eq!(alarms.pending(OWN_PERIOD), 1);
            assert_eq!(handle.stats().resyncs, 0, "the reflector's own resync");

            handle.stop();
            task.await.unwrap();
            for delivery in deliveries {
                delivery.await.unwrap();
            }
        },
    );
}

/// The plain case: nothing changed, a relist (expired watches), and a
/// handler without resync, added through the registry or the builder,
/// gets nothing from it.
#[test]
fn a_relist_with_nothing_changed_delivers_nothing_without_a_due_resync() {
    bounded(
        "a_relist_with_nothing_changed_delivers_nothing_without_a_due_resync",
        async {
            let source = MemorySource::new();
            source.put("pod1".to_string(), 1u32);
            let (added, built) = (Arc::new(Log::default()), Arc::new(Log::default()));
            let store = IndexedStore::<String, Arc<u32>>::new();
            let reflector = Reflector::builder(source.clone(), store)
                .handler(Logging(Arc::clone(&built)))
                .backoff(fast())
                .build()
                .unwrap();
            let (handle, registry) = (reflector.handle(), reflector.handler_registry());
            let (registration, delivery) = registry
                .add_with_resync(Logging(Arc::clone(&added)), Resync::Never)
                .unwrap();
            let delivering = tokio::spawn(delivery);
            let task = tokio::spawn(reflector.run());
            handle.wait_until_synced().await.unwrap();
            until(|| registration.has_synced()).await;

            source.expire_watches(); // forces a relist
            until(|| handle.stats().relists == 1).await;
            flush(&source, &[&added, &built], "marker").await;
            for log in [&added, &built] {
                assert_eq!(log.lines(), ["add pod1=1", "add marker=0"]);
            }

            handle.stop();
            task.await.unwrap();
            delivering.await.unwrap();
        },
    );
}

/// Counts of what a log holds: `(adds, updates, syncs, deletes)`.
fn tally(log: &Log) -> (usize, usize, usize, usize) {
    (
        log.count("add "),
        log.count("update "),
        log.count("sync "),
        log.count("delete "),
    )
}

/// A relist after a compaction, over 10,000 objects of which 10 changed, 5
/// vanished and 7 are new: a handler whose resync is not due (never, or
/// its own timer not fired) gets exactly those 22 changes; one whose resync
/// is due (the builder's and the inheriting registry handler, under the
/// reflector's fired timer) gets them and the 9,985 unchanged objects as
/// syncs.
#[test]
fn a_relist_of_10000_objects_sends_10_changes_to_all_and_syncs_to_the_due() {
    bounded(
        "a_relist_of_10000_objects_sends_10_changes_to_all_and_syncs_to_the_due",
        async {
            let alarms = Arc::new(Alarms::default());
            let source = MemorySource::new();
            for i in 0..10_000 {
                source.put(key(i), i);
            }
            let store = store();
            let built = Arc::new(Log::default());
            let reflector = Reflector::builder(source.clone(), store)
                .handler(Logging(Arc::clone(&built)))
                .backoff(fast())
                .resync(Resync::Every(REFLECTOR_PERIOD))
                .timer(timer(&alarms))
                .build()
                .unwrap();
            let store = reflector.reader();
            let (handle, registry) = (reflector.handle(), reflector.handler_registry());
            let logs: [Arc<Log>; 3] = Default::default();
            let [inherit, never, own] = &logs;
            let added = [
                registry.add(Logging(Arc::clone(inherit))),
                registry
                    .add_with_resync(Logging(Arc::clone(never)), Resync::Never)
                    .unwrap(),
                registry
                    .add_with_resync(Logging(Arc::clone(own)), Resync::Every(OWN_PERIOD))
                    .unwrap(),
            ];
            let mut registrations = Vec::new();
            let mut deliveries = Vec::new();
            for (registration, delivery) in added {
                registrations.push(registration);
                deliveries.push(tokio::spawn(delivery));
            }
            let task = tokio::spawn(reflector.run());
            // Added before the run, the handlers join the empty store: the
            // first list reaches them as live adds.
            let all = [&built, inherit, never, own];
            until(|| registrations.iter().all(|r| r.has_synced())).await;
            until(|| all.iter().all(|log| log.count("add ") == 10_000)).await;
            for log in all {
                assert_eq!(tally(log), (10_000, 0, 0, 0));
                log.take_sorted();
            }

            relist_after(
                &source,
                &handle,
                || {
                    for i in 0..10 {
                        source.put(key(i * 1_000), 100_000 + i);
                    }
                    for i in 0..5 {
                        source.delete(&key(i * 1_000 + 1));
                    }
                    for i in 0..7 {
                        source.put(format!("new{i}"), i);
                    }
                },
                || assert_eq!(alarms.fire(REFLECTOR_PERIOD), 1),
            )
            .await;
            flush(&source, &all, "zz").await;
            let mut changes: Vec<String> = (0..10)
                .map(|i| format!("update {} {}->{}", key(i * 1_000), i * 1_000, 100_000 + i))
                .chain((0..5).map(|i| format!("delete {}={}", key(i * 1_000 + 1), i * 1_000 + 1)))
                .chain((0..7).map(|i| format!("add new{i}={i}")))
                .chain(["add zz=0".to_string()])
                .collect();
            changes.sort();
            for log in [never, own] {
                assert_eq!(
                    log.take_sorted(),
                    changes,
                    "a handler whose resync is not due"
                );
            }
            for log in [&built, inherit] {
                assert_eq!(
                    tally(log),
                    (8, 10, 9_985, 5),
                    "a handler whose resync is due"
                );
                let lines = log.take_sorted();
                let changed: Vec<&String> =
                    lines.iter().filter(|l| !l.starts_with("sync ")).collect();
                assert_eq!(changed, changes.iter().collect::<Vec<_>>());
            }
            assert_eq!(
                handle.stats().resyncs,
                1,
                "the relist did the reflector's resync"
            );
            assert_eq!(
                alarms.pending(REFLECTOR_PERIOD),
                1,
                "its timer started again"
            );
            assert_eq!(alarms.pending(OWN_PERIOD), 1, "the own timer left alone");
            assert_eq!(sorted(&store), source.to_vec_sorted());

            handle.stop();
            task.await.unwrap();
            for delivery in deliveries {
                delivery.await.unwrap();
            }
        },
    );
}

/// A source whose first watch sends a bookmark at 5, then a change of "b"
/// at 4 (the bookmark ran ahead of it), so the reflector relists; the list
/// holds that change. Bookmarks claim to cover every change.
#[derive(Clone, Default)]
struct BookmarkAhead {
    lists: Arc<AtomicU32>,
}

impl Source for BookmarkAhead {
    type Key = String;
    type Object = u32;
    type Watch = Scripted<String, u32>;

    async fn list(&self) -> Result<Listed<String, u32>, SourceError> {
        let (items, revision) = if self.lists.fetch_add(1, Ordering::SeqCst) == 0 {
            (vec![("a".into(), 1, 1), ("b".into(), 1, 2)], 3)
        } else {
            (vec![("a".into(), 1, 1), ("b".into(), 2, 4)], 5)
        };
        Ok(Listed {
            items,
            revision,
            invalid: Vec::new(),
        })
    }

    async fn watch(&self, from: Revision) -> Result<Scripted<String, u32>, SourceError> {
        let mut items = VecDeque::new();
        if from == 3 {
            items.push_back(Ok(WatchEvent::Bookmark { revision: 5 }));
            items.push_back(Ok(WatchEvent::Put {
                key: "b".into(),
                object: 2,
                revision: 4,
            }));
        }
        Ok(Scripted(items))
    }
}

/// The store held the source's content at 3 (its last change), not at the
/// bookmark's 5 it had got to: "b", changed at 4, is an update at the
/// relist, not a sync a handler without resync would miss.
#[test]
fn a_change_behind_an_early_bookmark_is_an_update_at_the_relist() {
    bounded(
        "a_change_behind_an_early_bookmark_is_an_update_at_the_relist",
        async {
            let recorder = Recorder::new();
            let store = store();
            let source = BookmarkAhead::default();
            let reflector = Reflector::builder(source.clone(), store)
                .handler(Shared(Arc::clone(&recorder)))
                .backoff(fast())
                .build()
                .unwrap();
            let store = reflector.reader();
            let handle = reflector.handle();
            let task = tokio::spawn(reflector.run());
            until(|| handle.stats().lists == 2 && handle.revision() == 5).await;
            assert_eq!(handle.stats().progress_ahead_of_events, 1);
            let mut calls = recorder.take_calls();
            calls.sort_by_key(|call| format!("{call:?}"));
            assert_eq!(
                calls,
                [
                    Call::Add("a".into(), 1),
                    Call::Add("b".into(), 1),
                    Call::Update("b".into(), 1, 2)
                ]
            );
            assert_eq!(recorder.model(), sorted(&store));
            assert_eq!(recorder.violations(), Vec::<String>::new());
            handle.stop();
            task.await.unwrap();
        },
    );
}

/// One panic path: a builder handler's panic and a registry handler's are
/// both counted and reported to `on_error`; the other handlers get every
/// notification and the loop goes on.
#[test]
fn every_handlers_panic_is_counted_and_reported() {
    struct PanicsOn(&'static str);
    impl Handler<String, u32> for PanicsOn {
        fn on_add(&self, key: &String, _: &Arc<u32>) {
            assert_ne!(key, self.0, "{} panicked on purpose", self.0);
        }
    }
    bounded("every_handlers_panic_is_counted_and_reported", async {
        let source = MemorySource::new();
        let errors = Arc::new(Mutex::new(Vec::new()));
        let (built, added) = (Recorder::new(), Recorder::new());
        let reflector = Reflector::builder(source.clone(), store())
            .handler(PanicsOn("x"))
            .handler(Shared(Arc::clone(&built)))
            .on_error({
                let errors = Arc::clone(&errors);
                move |error| errors.lock().unwrap().push(error.to_string())
            })
            .backoff(fast())
            .build()
            .unwrap();
        let (handle, registry) = (reflector.handle(), reflector.handler_registry());
        let (_panics, panics_delivery) = registry.add(PanicsOn("y"));
        let (_records, records_delivery) = registry.add(Shared(Arc::clone(&added)));
        let deliveries = [
            tokio::spawn(panics_delivery),
            tokio::spawn(records_delivery),
        ];
        let task = tokio::spawn(reflector.run());
        for name in ["a", "x", "y", "b"] {
            source.put(name.to_string(), 1);
        }
        caught_up(&handle, &source).await;
        until(|| handle.stats().handler_panics == 2 && added.model().len() == 4).await;
        handle.stop();
        task.await.unwrap();
        for delivery in deliveries {
            delivery.await.unwrap();
        }
        let mut errors = errors.lock().unwrap().clone();
        errors.sort();
        assert_eq!(errors.len(), 2, "{errors:?}");
        for (error, name) in errors.iter().zip(["x", "y"]) {
            assert!(
                error.starts_with("handler on_add panicked: ")
                    && error.contains(&format!("{name} panicked on purpose")),
                "{error}"
            );
        }
        assert_eq!(handle.stats().handler_panics, 2);
        for recorder in [&built, &added] {
            assert_eq!(recorder.model(), source.to_vec_sorted());
            assert_eq!(recorder.violations(), Vec::<String>::new());
        }
    });
}
