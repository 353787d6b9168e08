//! loom models of `WorkQueue`: the add/get/done protocol
//! (`src/workqueue/core.rs` under the queue's mutex) and its wake-ups (the
//! shared waiting machinery, `src/waiters.rs`), over loom's mutex and condvar,
//! with the async `get` driven by `loom::future::block_on`. Three tasks:
//! two workers (one blocking, one async) and a producer; for the drains,
//! a drain, a worker and the thread that ends it (`done` or `shut_down`).
//! The negative controls select a broken protocol (`WorkQueueFault`) that
//! the model must catch: a key in two workers or a lost add as a failed
//! assertion, a lost wake-up as loom's deadlock.
#![cfg(loom)]

use larder::fault::{WorkQueueFault, inject};
use larder::{Clock, DrainOutcome, ManualClock, WorkQueue};
use loom::thread;
use std::time::Duration;
// std's `Arc` and atomics, not loom's: they are the models' own checks,
// not part of the protocol, and a model that deadlocks (the negative
// controls) unwinds its threads, where dropping a loom `Arc` aborts.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// The models' key.
const KEY: u32 = 7;

fn queue_of() -> WorkQueue<u32> {
    WorkQueue::builder()
        .clock(ManualClock::new())
        .build()
        .expect("valid settings")
}

/// What the workers share with the producer: the number of workers
/// holding the key now, and the version of the object the key names
/// (bumped by the producer before each add) next to the latest version a
/// worker saw.
#[derive(Default)]
struct Checks {
    in_flight: AtomicUsize,
    version: AtomicUsize,
    latest_seen: AtomicUsize,
}

impl Checks {
    /// One worker's processing of `key`.
    fn process(&self, key: u32) {
        assert_eq!(key, KEY);
        let before = self.in_flight.fetch_add(1, SeqCst);
        assert_eq!(before, 0, "the key is processed by two workers at once");
        self.latest_seen
            .fetch_max(self.version.load(SeqCst), SeqCst);
        // The checks' atomics are std's, invisible to loom: give it a point
        // where another thread can run while this worker holds the key.
        thread::yield_now();
        self.in_flight.fetch_sub(1, SeqCst);
    }
}

/// A blocking worker and an async worker loop on `get` until shutdown;
/// the producer changes the object twice, adding its key after each
/// change, then shuts the queue down. No worker holds the key while
/// another does; the latest change is processed (an add that came while
/// the key was processed is processed again afterwards); both workers
/// return (no lost wake-up, shutdown wakes them all, or loom reports a
/// deadlock).
fn add_get_done(fault: WorkQueueFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let queue = Arc::new(queue_of());
        let checks = Arc::new(Checks::default());
        let blocking = {
            let (queue, checks) = (Arc::clone(&queue), Arc::clone(&checks));
            thread::spawn(move || {
                while let Some(key) = queue.get() {
                    checks.process(key);
                    queue.done(&key);
                }
            })
        };
        let waiting = {
            let (queue, checks) = (Arc::clone(&queue), Arc::clone(&checks));
            thread::spawn(move || {
                loom::future::block_on(async {
                    while let Some(key) = queue.get_async().await {
                        checks.process(key);
                        queue.done(&key);
                    }
                });
            })
        };
        for version in 1..=2 {
            checks.version.store(version, SeqCst);
            queue.add(KEY);
        }
        queue.shut_down();
        blocking.join().unwrap();
        waiting.join().unwrap();
        assert_eq!(
            checks.latest_seen.load(SeqCst),
            2,
            "the add that came during processing was lost"
        );
        assert!(queue.is_empty());
    });
}

#[test]
fn workqueue_add_get_done() {
    add_get_done(WorkQueueFault::None);
}

#[test]
#[should_panic(expected = "lost")]
fn workqueue_negative_control_done_forgets_dirty() {
    add_get_done(WorkQueueFault::DoneForgetsDirty);
}

#[test]
#[should_panic(expected = "two workers")]
fn workqueue_negative_control_get_skips_processing() {
    add_get_done(WorkQueueFault::GetSkipsProcessing);
}

/// Two workers wait on an empty queue, one blocked, one async; the
/// producer shuts the queue down. Both return `None`.
fn shutdown_wakes_every_worker(fault: WorkQueueFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let queue = Arc::new(queue_of());
        let blocking = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.get())
        };
        let waiting = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || loom::future::block_on(queue.get_async()))
        };
        queue.shut_down();
        assert_eq!(blocking.join().unwrap(), None);
        assert_eq!(waiting.join().unwrap(), None);
    });
}

#[test]
fn workqueue_shutdown_wakes_every_worker() {
    shutdown_wakes_every_worker(WorkQueueFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn workqueue_negative_control_shutdown_wakes_one() {
    shutdown_wakes_every_worker(WorkQueueFault::ShutdownWakesOne);
}

/// A worker waits (blocking, or as a future) while the producer holds the
/// key, adds it again and calls `done`: `done` queues it again and must
/// wake the waiting worker, which gets it (or loom reports a deadlock).
fn done_wakes_a_waiting_worker(fault: WorkQueueFault, blocking: bool) {
    let _fault = inject(fault);
    loom::model(move || {
        let queue = Arc::new(queue_of());
        queue.add(KEY);
        let key = queue.try_get().unwrap();
        let waiting = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                if blocking {
                    queue.get()
                } else {
                    loom::future::block_on(queue.get_async())
                }
            })
        };
        queue.add(KEY); // during processing: marked, not handed out
        queue.done(&key);
        assert_eq!(waiting.join().unwrap(), Some(KEY));
        queue.done(&KEY);
        assert!(queue.is_empty());
    });
}

#[test]
fn workqueue_done_wakes_a_blocked_worker() {
    done_wakes_a_waiting_worker(WorkQueueFault::None, true);
}

#[test]
fn workqueue_done_wakes_an_async_worker() {
    done_wakes_a_waiting_worker(WorkQueueFault::None, false);
}

#[test]
#[should_panic(expected = "deadlock")]
fn workqueue_negative_control_done_skips_wake() {
    done_wakes_a_waiting_worker(WorkQueueFault::DoneSkipsWake, true);
}

#[test]
#[should_panic(expected = "deadlock")]
fn workqueue_negative_control_done_skips_wake_async() {
    done_wakes_a_waiting_worker(WorkQueueFault::DoneSkipsWake, false);
}

/// Two producers add the key for 10 ms and for 5 ms from now at once;
/// a worker looks while they do. Whichever add comes first, the key is
/// due at 5 ms (the sooner time wins, the later never postpones it) and
/// is handed out once.
#[test]
fn workqueue_sooner_delay_wins_under_a_concurrent_add() {
    loom::model(|| {
        let clock = ManualClock::new();
        let queue = Arc::new(WorkQueue::builder().clock(clock.clone()).build().unwrap());
        let later = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.add_after(KEY, Duration::from_millis(10)))
        };
        let sooner = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.add_after(KEY, Duration::from_millis(5)))
        };
        // Nothing is due before 5 ms, whatever has been added so far.
        assert!(queue.try_get().is_err());
        later.join().unwrap();
        sooner.join().unwrap();
        clock.advance(Duration::from_millis(4));
        assert!(queue.try_get().is_err(), "due before its sooner time");
        clock.advance(Duration::from_millis(1));
        assert_eq!(clock.now(), Duration::from_millis(5));
        assert_eq!(queue.try_get(), Ok(KEY), "the later time postponed the key");
        queue.done(&KEY);
        clock.advance(Duration::from_millis(10));
        assert!(queue.try_get().is_err(), "the key was handed out twice");
        queue.check_invariants();
    });
}

/// A worker holds the key and never calls `done`; a drain waits for it
/// (blocking on a thread of its own, or as a future on the model's
/// thread) while a second worker waits for a key; then `shut_down` is
/// called. It ends the drain, which says the key is still held (client-go's
/// forced shutdown), and the waiting worker gets `None`; a drain that is
/// never woken is loom's deadlock.
fn shut_down_ends_a_drain(fault: WorkQueueFault, blocking: bool) {
    let _fault = inject(fault);
    loom::model(move || {
        let queue = Arc::new(queue_of());
        queue.add(KEY);
        let held = queue.try_get().unwrap();
        let worker = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.get())
        };
        let outcome = if blocking {
            let drain = {
                let queue = Arc::clone(&queue);
                thread::spawn(move || queue.shut_down_with_drain())
            };
            // Only the drain shuts the queue down before this thread does:
            // once it is shutting down, the drain has begun.
            while !queue.is_shutting_down() {
                thread::yield_now();
            }
            queue.shut_down();
            drain.join().unwrap()
        } else {
            // The async drain begins when it is called.
            let drain = queue.shut_down_with_drain_async();
            let forcer = {
                let queue = Arc::clone(&queue);
                thread::spawn(move || queue.shut_down())
            };
            let outcome = loom::future::block_on(drain);
            forcer.join().unwrap();
            outcome
        };
        assert_eq!(outcome, DrainOutcome::Forced { still_held: 1 });
        assert_eq!(worker.join().unwrap(), None);
        queue.done(&held);
    });
}

#[test]
fn workqueue_shut_down_ends_a_blocking_drain() {
    shut_down_ends_a_drain(WorkQueueFault::None, true);
}

#[test]
fn workqueue_shut_down_ends_an_async_drain() {
    shut_down_ends_a_drain(WorkQueueFault::None, false);
}

#[test]
#[should_panic(expected = "deadlock")]
fn workqueue_negative_control_shutdown_skips_drains() {
    shut_down_ends_a_drain(WorkQueueFault::ShutdownSkipsDrains, true);
}

#[test]
#[should_panic(expected = "deadlock")]
fn workqueue_negative_control_shutdown_skips_drains_async() {
    shut_down_ends_a_drain(WorkQueueFault::ShutdownSkipsDrains, false);
}

/// A worker holds the key; two drains wait for it, one blocking on a
/// thread of its own, one as a future on the model's thread; the worker
/// calls `done`. Both drains end drained (or loom reports a deadlock).
fn done_ends_the_drains(fault: WorkQueueFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let queue = Arc::new(queue_of());
        queue.add(KEY);
        let held = queue.try_get().unwrap();
        let blocking = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.shut_down_with_drain())
        };
        let waiting = queue.shut_down_with_drain_async();
        let worker = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.done(&held))
        };
        assert_eq!(loom::future::block_on(waiting), DrainOutcome::Drained);
        assert_eq!(blocking.join().unwrap(), DrainOutcome::Drained);
        worker.join().unwrap();
    });
}

#[test]
fn workqueue_done_ends_the_drains() {
    done_ends_the_drains(WorkQueueFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn workqueue_negative_control_done_skips_drain_wake() {
    done_ends_the_drains(WorkQueueFault::DoneSkipsDrainWake);
}
