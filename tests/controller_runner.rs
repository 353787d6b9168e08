//! The controller runner (`larder::controller`) through the public API, on
//! a tokio runtime, over `MemorySource`s: every key reconciled after its
//! last change with its current state (several writers, dropped watches),
//! one worker per key, per-key backoff and `forget` on success (asserted on
//! a `ManualClock`), `Action::requeue`, a secondary watch mapped to the
//! owner, graceful shutdown, panics. Every wait is bounded: a hang fails
//! with the test's name.

#![cfg(feature = "reflector")]

#[path = "common/reflecting.rs"]
mod reflecting;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use larder::controller::{Action, Controller, ControllerHandle, ReconcileError};
use larder::reflector::{MemorySource, Reflector};
use larder::{BuildError, Clock, IndexedStore, ManualClock};
use reflecting::{bounded, fast};

type Source = MemorySource<String, u32>;

/// A reflector over `source` into a new store, fast backoff.
fn reflector<V: Clone + Send + Sync + 'static>(
    source: &MemorySource<String, V>,
) -> Reflector<MemorySource<String, V>> {
    Reflector::builder(source.clone(), IndexedStore::new())
        .backoff(fast())
        .build()
        .unwrap()
}

/// How long `until` waits: well inside `bounded`'s limit, so that a
/// wait that fails says what it waited for.
const UNTIL: Duration = Duration::from_secs(10);

/// Waits until `done()` holds, failing with `what` after UNTIL.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let wait = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    if tokio::time::timeout(UNTIL, wait).await.is_err() {
        panic!("timed out waiting until {what}");
    }
}

/// Long enough for a waiting worker to have taken a key that fell due
/// (the queue's delay thread looks at its clock every 100 ms).
const SETTLE: Duration = Duration::from_millis(350);

/// What reconciles saw: each key with its object and the clock's time.
#[derive(Default)]
struct Log(Mutex<Vec<(String, Option<u32>, Duration)>>);

impl Log {
    fn push(&self, key: &str, object: Option<u32>, at: Duration) {
        self.0.lock().unwrap().push((key.to_owned(), object, at));
    }
    fn times_of(&self, key: &str) -> Vec<Duration> {
        let log = self.0.lock().unwrap();
        log.iter().filter(|e| e.0 == key).map(|e| e.2).collect()
    }
    /// The first ten times, for a message.
    fn first_times_of(&self, key: &str) -> Vec<Duration> {
        self.times_of(key).into_iter().take(10).collect()
    }
    fn count_of(&self, key: &str) -> usize {
        self.times_of(key).len()
    }
}

/// Keys being reconciled, the overlaps found, the most at once.
#[derive(Default)]
struct InFlight {
    keys: Mutex<HashSet<String>>,
    overlaps: AtomicUsize,
    most: AtomicUsize,
}

impl InFlight {
    fn enter(&self, key: &str) -> bool {
        let mut keys = self.keys.lock().unwrap();
        let fresh = keys.insert(key.to_owned());
        if !fresh {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        self.most.fetch_max(keys.len(), Ordering::SeqCst);
        fresh
    }
    fn leave(&self, key: &str) {
        self.keys.lock().unwrap().remove(key);
    }
}

#[test]
fn every_key_is_reconciled_after_its_last_change_with_its_current_state() {
    bounded(
        "every_key_is_reconciled_after_its_last_change_with_its_current_state",
        async {
            let source = Source::new();
            let world: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
            let in_flight = Arc::new(InFlight::default());
            let controller = {
                let (world, in_flight) = (Arc::clone(&world), Arc::clone(&in_flight));
                Controller::builder(reflector(&source), move |key: String, object| {
                    let (world, in_flight) = (Arc::clone(&world), Arc::clone(&in_flight));
                    async move {
                        in_flight.enter(&key);
                        tokio::task::yield_now().await;
                        match object {
                            Some(value) => world.lock().unwrap().insert(key.clone(), *value),
                            None => world.lock().unwrap().remove(&key),
                        };
                        in_flight.leave(&key);
                        Ok::<_, String>(Action::done())
                    }
                })
                .build()
                .unwrap()
            };
            let handle = controller.handle();
            let running = tokio::spawn(controller.run());

            // Four writers over 24 keys, with watches dropped now and then.
            let writers: Vec<_> = (0..4u32)
                .map(|writer| {
                    let source = source.clone();
                    std::thread::spawn(move || {
                        for i in 0..300u32 {
                            let key = format!("k{:02}", (i * 7 + writer * 5) % 24);
                            if (i + writer) % 5 == 0 {
                                source.delete(&key);
                            } else {
                                source.put(key, writer * 1000 + i);
                            }
                            if i % 97 == 0 {
                                source.drop_watches();
                            }
                        }
                    })
                })
                .collect();
            for writer in writers {
                writer.join().unwrap();
            }
            reflecting::caught_up(handle.reflector(), &source).await;
            let expected: BTreeMap<String, u32> = source.to_vec().into_iter().collect();
            until("the world equals the source", || {
                *world.lock().unwrap() == expected
            })
            .await;
            assert!(handle.has_synced());
            assert_eq!(in_flight.overlaps.load(Ordering::SeqCst), 0);
            let stats = handle.stats();
            assert!(stats.reconciled >= expected.len() as u64, "{stats:?}");
            assert_eq!(stats.failed + stats.panicked, 0, "{stats:?}");
            handle.shut_down();
            running.await.unwrap();
        },
    );
}

#[test]
fn never_one_key_in_two_workers_at_once() {
    bounded("never_one_key_in_two_workers_at_once", async {
        let source = Source::new();
        let in_flight = Arc::new(InFlight::default());
        let controller = {
            let in_flight = Arc::clone(&in_flight);
            Controller::builder(reflector(&source), move |key: String, _object| {
                let in_flight = Arc::clone(&in_flight);
                async move {
                    let fresh = in_flight.enter(&key);
                    tokio::time::sleep(Duration::from_micros(300)).await;
                    if fresh {
                        in_flight.leave(&key);
                    }
                    Ok::<_, String>(Action::done())
                }
            })
            .workers(4)
            .build()
            .unwrap()
        };
        let handle = controller.handle();
        let running = tokio::spawn(controller.run());
        // Three hot keys and a few cold ones, changed while reconciled.
        for i in 0..2_000u32 {
            let key = if i % 10 == 9 {
                format!("cold{}", i % 7)
            } else {
                format!("hot{}", i % 3)
            };
            source.put(key, i);
            if i % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        reflecting::caught_up(handle.reflector(), &source).await;
        until("the queue is idle", || {
            in_flight.keys.lock().unwrap().is_empty() && handle.stats().reconciled >= 10
        })
        .await;
        assert_eq!(in_flight.overlaps.load(Ordering::SeqCst), 0);
        // The test could have seen an overlap: reconciles did run at once.
        assert!(in_flight.most.load(Ordering::SeqCst) >= 2);
        handle.shut_down();
        running.await.unwrap();
    });
}

/// A controller on a manual clock whose reconcile logs each attempt's
/// time and fails while `failing` holds the key.
struct Flaky {
    clock: ManualClock,
    log: Arc<Log>,
    failing: Arc<Mutex<HashSet<String>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Flaky {
    fn new() -> Self {
        Self {
            clock: ManualClock::new(),
            log: Arc::default(),
            failing: Arc::default(),
            errors: Arc::default(),
        }
    }

    fn controller(&self, source: &Source) -> Controller<String, u32, String> {
        let (clock, log, failing) = (
            self.clock.clone(),
            Arc::clone(&self.log),
            Arc::clone(&self.failing),
        );
        let errors = Arc::clone(&self.errors);
        Controller::builder(reflector(source), move |key: String, object| {
            log.push(&key, object.map(|o| *o), clock.now());
            let fail = failing.lock().unwrap().contains(&key);
            async move {
                if fail {
                    Err(format!("{key} failed"))
                } else {
                    Ok(Action::done())
                }
            }
        })
        .clock(self.clock.clone())
        .on_error(move |key: &String, error: &ReconcileError<String>| {
            errors.lock().unwrap().push(format!("{key}: {error}"));
        })
        .build()
        .unwrap()
    }

    /// Moves the clock by `by` less 1 ms and sees no new attempt of `key`;
    /// then by the last 1 ms, and waits for it.
    async fn next_attempt_after(&self, key: &str, by: Duration) {
        let before = self.log.count_of(key);
        self.clock.advance(by - Duration::from_millis(1));
        tokio::time::sleep(SETTLE).await;
        assert_eq!(
            self.log.count_of(key),
            before,
            "{key} was retried before {by:?}: {:?}",
            self.log.first_times_of(key)
        );
        self.clock.advance(Duration::from_millis(1));
        until(&format!("{key} is retried {by:?} later"), || {
            self.log.count_of(key) > before
        })
        .await;
    }
}

#[test]
fn failures_back_off_per_key_and_a_success_forgets_them() {
    bounded(
        "failures_back_off_per_key_and_a_success_forgets_them",
        async {
            let flaky = Flaky::new();
            let source = Source::new();
            let controller = flaky.controller(&source);
            let handle: ControllerHandle<String> = controller.handle();
            let running = tokio::spawn(controller.run());
            let ms = Duration::from_millis;
            let a = "a".to_owned();

            flaky.failing.lock().unwrap().insert(a.clone());
            source.put(a.clone(), 1);
            until("a is reconciled", || flaky.log.count_of("a") >= 1).await;
            // client-go's default: 5 ms, doubling per failure.
            flaky.next_attempt_after("a", ms(5)).await;
            flaky.next_attempt_after("a", ms(10)).await;
            // A second key backs off on its own: 5 ms first.
            flaky.failing.lock().unwrap().insert("b".to_owned());
            source.put("b".to_owned(), 1);
            until("b is reconciled", || flaky.log.count_of("b") >= 1).await;
            flaky.failing.lock().unwrap().remove("b"); // its retry succeeds
            flaky.next_attempt_after("b", ms(5)).await;
            flaky.next_attempt_after("a", ms(15)).await; // 20 ms after a's last
            assert_eq!(
                flaky.log.times_of("a"),
                [ms(0), ms(5), ms(15), ms(35)],
                "a's attempts"
            );
            assert_eq!(flaky.log.times_of("b"), [ms(15), ms(20)], "b's attempts");
            assert_eq!(handle.num_requeues(&a), 4);

            // A success forgets a's failures: its next failure waits 5 ms.
            flaky.failing.lock().unwrap().remove(&a);
            flaky.next_attempt_after("a", ms(40)).await;
            until("a's failures are forgotten", || {
                handle.num_requeues(&a) == 0
            })
            .await;
            flaky.failing.lock().unwrap().insert(a.clone());
            source.put(a.clone(), 2);
            until("a is reconciled again", || flaky.log.count_of("a") == 6).await;
            flaky.next_attempt_after("a", ms(5)).await;
            assert_eq!(handle.num_requeues(&a), 2);

            let stats = handle.stats();
            assert_eq!(stats.reconciled, 2, "{stats:?}");
            assert_eq!(stats.failed, 7, "{stats:?}");
            assert!(
                flaky
                    .errors
                    .lock()
                    .unwrap()
                    .contains(&"a: reconcile failed: a failed".to_owned())
            );
            handle.shut_down();
            running.await.unwrap();
        },
    );
}

#[test]
fn requeue_reconciles_again_after_its_delay() {
    bounded("requeue_reconciles_again_after_its_delay", async {
        let clock = ManualClock::new();
        let log = Arc::new(Log::default());
        let source = Source::new();
        let controller = {
            let (now, log) = (clock.clone(), Arc::clone(&log));
            Controller::builder(reflector(&source), move |key: String, object| {
                log.push(&key, object.map(|o| *o), now.now());
                async { Ok::<_, String>(Action::requeue(Duration::from_secs(30))) }
            })
            .clock(clock.clone())
            .build()
            .unwrap()
        };
        let handle = controller.handle();
        let running = tokio::spawn(controller.run());
        source.put("r".to_owned(), 1);
        until("r is reconciled", || log.count_of("r") == 1).await;
        clock.advance(Duration::from_secs(30) - Duration::from_millis(1));
        tokio::time::sleep(SETTLE).await;
        assert_eq!(log.count_of("r"), 1, "requeued before 30 s");
        clock.advance(Duration::from_millis(1));
        until("r is requeued", || log.count_of("r") == 2).await;
        assert_eq!(log.times_of("r"), [Duration::ZERO, Duration::from_secs(30)]);
        let stats = handle.stats();
        assert_eq!((stats.reconciled, stats.requeued), (2, 2), "{stats:?}");
        handle.shut_down();
        running.await.unwrap();
    });
}

#[test]
fn a_secondary_watch_reconciles_the_owner_of_a_changed_object() {
    bounded(
        "a_secondary_watch_reconciles_the_owner_of_a_changed_object",
        async {
            let owners = Source::new();
            // Owned objects: their value names their owner.
            let owned = MemorySource::<String, String>::new();
            let owned_reflector = reflector(&owned);
            let owned_handle = owned_reflector.handle();
            let registry = owned_reflector.handler_registry();
            let owned_running = tokio::spawn(owned_reflector.run());
            let log = Arc::new(Log::default());
            let controller = {
                let log = Arc::clone(&log);
                Controller::builder(reflector(&owners), move |key: String, object| {
                    log.push(&key, object.map(|o| *o), Duration::ZERO);
                    async { Ok::<_, String>(Action::done()) }
                })
                .watches(registry, |_key: &String, owner: &String| [owner.clone()])
                .build()
                .unwrap()
            };
            let handle = controller.handle();
            let running = tokio::spawn(controller.run());
            owners.put("web".to_owned(), 1);
            owners.put("db".to_owned(), 1);
            until("the owners are reconciled", || {
                log.count_of("web") == 1 && log.count_of("db") == 1
            })
            .await;

            owned.put("web-rs".to_owned(), "web".to_owned());
            until("the owner of a new object is reconciled", || {
                log.count_of("web") == 2
            })
            .await;
            // Moved to another owner: both are reconciled.
            owned.put("web-rs".to_owned(), "db".to_owned());
            until("the old and new owners are reconciled", || {
                log.count_of("web") == 3 && log.count_of("db") == 2
            })
            .await;
            owned.delete(&"web-rs".to_owned());
            until("the owner of a deleted object is reconciled", || {
                log.count_of("db") == 3
            })
            .await;
            assert_eq!(log.count_of("web-rs"), 0, "an owned key reconciled");

            handle.shut_down();
            running.await.unwrap();
            owned_handle.stop();
            owned_running.await.unwrap();
        },
    );
}

#[test]
fn shut_down_drains_the_reconciles_in_flight_and_completes() {
    bounded(
        "shut_down_drains_the_reconciles_in_flight_and_completes",
        async {
            let source = Source::new();
            let gate = Arc::new(tokio::sync::Semaphore::new(0));
            let started = Arc::new(AtomicUsize::new(0));
            let finished = Arc::new(AtomicUsize::new(0));
            let controller = {
                let (gate, started, finished) = (
                    Arc::clone(&gate),
                    Arc::clone(&started),
                    Arc::clone(&finished),
                );
                Controller::builder(reflector(&source), move |_key: String, _object| {
                    let (gate, started, finished) = (
                        Arc::clone(&gate),
                        Arc::clone(&started),
                        Arc::clone(&finished),
                    );
                    async move {
                        started.fetch_add(1, Ordering::SeqCst);
                        gate.acquire().await.unwrap().forget();
                        finished.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, String>(Action::done())
                    }
                })
                .workers(2)
                .build()
                .unwrap()
            };
            let handle = controller.handle();
            let mut running = tokio::spawn(controller.run());
            for key in ["a", "b"] {
                source.put(key.to_owned(), 1);
            }
            until("two reconciles are in flight", || {
                started.load(Ordering::SeqCst) == 2
            })
            .await;
            // Two keys wait in the queue behind them.
            handle.enqueue("c".to_owned());
            handle.enqueue("d".to_owned());
            handle.shut_down();
            assert!(handle.is_shutting_down());
            // The run waits for the two in flight.
            assert!(
                tokio::time::timeout(Duration::from_millis(200), &mut running)
                    .await
                    .is_err(),
                "the run ended with reconciles in flight"
            );
            source.put("late".to_owned(), 1);
            gate.add_permits(2);
            running.await.unwrap();
            assert!(handle.is_finished());
            assert!(handle.reflector().is_finished());
            // The queued keys were not started; the two in flight ended.
            assert_eq!(started.load(Ordering::SeqCst), 2);
            assert_eq!(finished.load(Ordering::SeqCst), 2);
            let stats = handle.stats();
            assert_eq!(stats.reconciled, 2, "{stats:?}");
            assert_eq!(stats.skipped_at_shut_down, 2, "{stats:?}");
        },
    );
}

#[test]
fn dropping_the_run_future_stops_the_controller_and_its_reflector() {
    bounded(
        "dropping_the_run_future_stops_the_controller_and_its_reflector",
        async {
            let source = Source::new();
            source.put("a".to_owned(), 1);
            let controller = Controller::builder(reflector(&source), |_key: String, _object| {
                std::future::pending::<Result<Action, String>>()
            })
            .build()
            .unwrap();
            let handle = controller.handle();
            let running = tokio::spawn(controller.run());
            until("the reflector has synced", || handle.has_synced()).await;
            running.abort();
            assert!(running.await.unwrap_err().is_cancelled());
            assert!(handle.is_finished() && handle.is_shutting_down());
            assert!(handle.reflector().is_finished());
        },
    );
}

#[test]
fn a_reflector_stopped_by_its_own_handle_shuts_the_controller_down() {
    bounded(
        "a_reflector_stopped_by_its_own_handle_shuts_the_controller_down",
        async {
            let source = Source::new();
            source.put("a".to_owned(), 1);
            let controller =
                Controller::builder(reflector(&source), |_key: String, _object| async {
                    Ok::<_, String>(Action::done())
                })
                .build()
                .unwrap();
            let handle = controller.handle();
            let running = tokio::spawn(controller.run());
            until("a is reconciled", || handle.stats().reconciled == 1).await;
            handle.reflector().stop();
            running.await.unwrap();
            assert!(handle.is_shutting_down() && handle.is_finished());
        },
    );
}

/// What `on_error` was given.
type Errors = Vec<(String, ReconcileError<String>)>;

#[test]
fn a_panicking_reconcile_is_reported_and_retried_and_other_keys_go_on() {
    bounded(
        "a_panicking_reconcile_is_reported_and_retried_and_other_keys_go_on",
        async {
            let source = Source::new();
            let log = Arc::new(Log::default());
            let errors: Arc<Mutex<Errors>> = Arc::default();
            let panicked_once = Arc::new(AtomicBool::new(false));
            let controller = {
                let (log, errors, panicked_once) = (
                    Arc::clone(&log),
                    Arc::clone(&errors),
                    Arc::clone(&panicked_once),
                );
                Controller::builder(reflector(&source), move |key: String, object| {
                    let (log, panicked_once) = (Arc::clone(&log), Arc::clone(&panicked_once));
                    async move {
                        tokio::task::yield_now().await;
                        if key == "p" && !panicked_once.swap(true, Ordering::SeqCst) {
                            panic!("boom in {key}");
                        }
                        log.push(&key, object.map(|o| *o), Duration::ZERO);
                        Ok::<_, String>(Action::done())
                    }
                })
                .on_error(move |key: &String, error: &ReconcileError<String>| {
                    errors.lock().unwrap().push((key.clone(), error.clone()));
                })
                .build()
                .unwrap()
            };
            let handle = controller.handle();
            let running = tokio::spawn(controller.run());
            for key in ["a", "p", "b", "c"] {
                source.put(key.to_owned(), 7);
            }
            until("every key is reconciled, p on its retry", || {
                ["a", "p", "b", "c"].iter().all(|k| log.count_of(k) == 1)
            })
            .await;
            let errors = errors.lock().unwrap().clone();
            assert_eq!(
                errors,
                [(
                    "p".to_owned(),
                    ReconcileError::Panicked {
                        message: "boom in p".to_owned()
                    }
                )]
            );
            let stats = handle.stats();
            assert_eq!((stats.panicked, stats.reconciled), (1, 4), "{stats:?}");
            assert_eq!(handle.num_requeues(&"p".to_owned()), 0);
            handle.shut_down();
            running.await.unwrap();
        },
    );
}

#[test]
fn every_controller_type_is_debug() {
    fn assert_debug<T: std::fmt::Debug>() {}
    struct Opaque;
    assert_debug::<Controller<Opaque, Opaque, Opaque>>();
    assert_debug::<larder::controller::ControllerBuilder<Opaque, Opaque, Opaque>>();
    assert_debug::<ControllerHandle<Opaque>>();
    assert_debug::<larder::controller::ControllerStats>();
    assert_debug::<Action>();
    assert_debug::<ReconcileError<String>>();
}

#[test]
fn zero_workers_is_a_build_error() {
    let source = Source::new();
    let built = Controller::builder(reflector(&source), |_key: String, _object| async {
        Ok::<_, String>(Action::done())
    })
    .workers(0)
    .build();
    assert!(matches!(built.unwrap_err(), BuildError::ZeroWorkers));
}
