//! `WorkQueue`'s drains through the public API: client-go's drain tests
//! (`ShutDownWithDrain`, and `ShutDown` forcing a drain to end), the
//! drain with a deadline, and the async drain cancelled and ended by
//! `shut_down`. Every test that could hang runs under a watchdog, and the
//! drains run on their own threads with their outcome awaited under a
//! timeout, so a drain that never returns fails the test by name.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use larder::{DrainOutcome, TryGetError, WorkQueue};

const WATCHDOG: Duration = Duration::from_secs(60);

/// How long a test waits for a drain it expects to return: far above the
/// time it takes, far below the watchdog, so that a drain that never
/// returns fails with this test's message.
const RETURNS_WITHIN: Duration = Duration::from_secs(10);

/// Starts `drain` on a thread of its own; its outcome comes through the
/// receiver.
fn spawn_drain<K>(
    queue: &Arc<WorkQueue<K>>,
    drain: impl FnOnce(&WorkQueue<K>) -> DrainOutcome + Send + 'static,
) -> mpsc::Receiver<DrainOutcome>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    let (sender, receiver) = mpsc::channel();
    let queue = Arc::clone(queue);
    thread::spawn(move || {
        let _ = sender.send(drain(&queue));
    });
    receiver
}

/// Waits until the drain has begun: it shut the queue down (nothing else
/// shuts these queues down before the test's own `shut_down`).
fn wait_until_shutting_down<K>(queue: &WorkQueue<K>)
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    while !queue.is_shutting_down() {
        thread::yield_now();
    }
}

/// The drain's outcome, failing the test if it does not come in time.
fn outcome(receiver: &mpsc::Receiver<DrainOutcome>, what: &str) -> DrainOutcome {
    receiver
        .recv_timeout(RETURNS_WITHIN)
        .unwrap_or_else(|_| panic!("{what}: the drain did not return"))
}

/// A waker that records that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Flag {
    fn woken(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// A worker holds a key and never calls `done`; a drain waits; then
/// `shut_down` is called: the drain returns, saying the key is still
/// held (client-go's `ShutDown` clears the drain flag and wakes it).
#[test]
fn workqueue_shut_down_ends_a_drain_in_progress() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add("foo");
    let _held = queue.get(); // never done
    let drain = spawn_drain(&queue, WorkQueue::shut_down_with_drain);
    wait_until_shutting_down(&queue);
    thread::sleep(Duration::from_millis(50)); // most likely waiting by now
    queue.shut_down();
    assert_eq!(
        outcome(&drain, "shut_down after shut_down_with_drain"),
        DrainOutcome::Forced { still_held: 1 }
    );
}

/// client-go's `TestForceQueueShutdownUsingShutDown`: two keys held, the
/// drain begun (a worker's `get` sees the shutdown), then `ShutDown`.
#[test]
fn workqueue_force_shutdown_using_shut_down() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add("foo");
    queue.add("bar");
    let _first = queue.get();
    let _second = queue.get();
    let drain = spawn_drain(&queue, WorkQueue::shut_down_with_drain);
    while queue.get().is_some() {}
    queue.shut_down();
    assert_eq!(
        outcome(&drain, "forced"),
        DrainOutcome::Forced { still_held: 2 }
    );
}

/// client-go's `TestQueueDrainageUsingShutDownWithDrain`: the drain
/// returns once both held keys are done, and not before.
#[test]
fn workqueue_drain_waits_for_every_held_key() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add("foo");
    queue.add("bar");
    let first = queue.get().unwrap();
    let second = queue.get().unwrap();
    let drain = spawn_drain(&queue, WorkQueue::shut_down_with_drain);
    while queue.get().is_some() {}
    queue.done(&first);
    assert!(
        drain.recv_timeout(Duration::from_millis(50)).is_err(),
        "the drain returned while a key was held"
    );
    queue.done(&second);
    assert_eq!(outcome(&drain, "both done"), DrainOutcome::Drained);
}

/// client-go's `TestNoQueueDrainageUsingShutDown`: `shut_down` never
/// waits for held keys.
#[test]
fn workqueue_shut_down_does_not_wait_for_held_keys() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = WorkQueue::new();
    queue.add("foo");
    queue.add("bar");
    let _first = queue.get();
    let _second = queue.get();
    queue.shut_down();
    assert_eq!(queue.stats().processing, 2);
}

/// client-go's `TestQueueDrainageUsingShutDownWithDrainWithDirtyItem`: a
/// key added again while processed is queued again by its `done`, after
/// the shutdown, and handed out once more: `get` says the queue is shut
/// down before that `done` (nothing is queued), and again after the
/// second one.
#[test]
fn workqueue_drain_with_a_key_added_during_processing() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add("foo");
    let gotten = queue.get().unwrap();
    queue.add("foo");
    let drain = spawn_drain(&queue, WorkQueue::shut_down_with_drain);
    wait_until_shutting_down(&queue);
    assert_eq!(queue.try_get(), Err(TryGetError::ShutDown));
    queue.done(&gotten);
    let again = queue
        .get()
        .expect("the add during processing is queued again");
    queue.done(&again);
    assert_eq!(queue.get(), None);
    assert_eq!(outcome(&drain, "dirty key"), DrainOutcome::Drained);
    queue.check_invariants();
}

/// With nothing held, a drain of every form returns at once.
#[test]
fn workqueue_drain_with_nothing_held_is_drained() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue: WorkQueue<u32> = WorkQueue::new();
    queue.add(1); // queued, not held: a drain does not wait for it
    assert_eq!(queue.shut_down_with_drain(), DrainOutcome::Drained);
    let outcome = queue.shut_down_with_drain_timeout(Duration::ZERO);
    assert_eq!(outcome, DrainOutcome::Drained);
    assert_eq!(
        block_on(queue.shut_down_with_drain_async()),
        DrainOutcome::Drained
    );
    assert_eq!(queue.try_get(), Ok(1), "keys queued are still handed out");
}

/// A worker is stuck with its key: the drain with a deadline returns when
/// the deadline passes, saying so and how many keys are held; the queue
/// stays shut down and a late `done` is still accepted.
#[test]
fn workqueue_drain_timeout_ends_while_a_worker_is_stuck() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add("stuck");
    queue.add("finishes");
    let stuck = queue.get().unwrap();
    let finishes = queue.get().unwrap();
    queue.done(&finishes);
    let drain = spawn_drain(&queue, |queue| {
        queue.shut_down_with_drain_timeout(Duration::from_millis(20))
    });
    assert_eq!(
        outcome(&drain, "deadline"),
        DrainOutcome::TimedOut { still_held: 1 }
    );
    assert!(queue.is_shutting_down());
    assert_eq!(queue.get(), None);
    queue.done(&stuck);
    let late = queue.shut_down_with_drain_timeout(Duration::ZERO);
    assert_eq!(late, DrainOutcome::Drained);
    queue.check_invariants();
}

/// A zero timeout shuts down and reports without waiting.
#[test]
fn workqueue_drain_timeout_zero_reports_at_once() {
    let queue = WorkQueue::new();
    queue.add(1);
    queue.add(2);
    let _one = queue.try_get().unwrap();
    let _two = queue.try_get().unwrap();
    let outcome = queue.shut_down_with_drain_timeout(Duration::ZERO);
    assert_eq!(outcome, DrainOutcome::TimedOut { still_held: 2 });
    assert_eq!(outcome.still_held(), 2);
    assert!(!outcome.is_drained());
    assert!(queue.is_shutting_down());
}

/// A drain with a deadline ended by `shut_down` says it was forced, not
/// timed out; one whose keys are done says drained.
#[test]
fn workqueue_drain_timeout_ends_forced_or_drained_before_its_deadline() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add(1);
    let held = queue.get().unwrap();
    let long = Duration::from_secs(3600);
    let drain = spawn_drain(&queue, move |queue| {
        queue.shut_down_with_drain_timeout(long)
    });
    wait_until_shutting_down(&queue);
    queue.shut_down();
    assert_eq!(
        outcome(&drain, "forced, long deadline"),
        DrainOutcome::Forced { still_held: 1 }
    );
    // A timeout past what an `Instant` holds waits as long as it takes.
    let drain = spawn_drain(&queue, |queue| {
        queue.shut_down_with_drain_timeout(Duration::MAX)
    });
    thread::sleep(Duration::from_millis(20));
    queue.done(&held);
    assert_eq!(
        outcome(&drain, "drained, endless deadline"),
        DrainOutcome::Drained
    );
}

/// A drain begun after a `shut_down` waits again (client-go sets its
/// drain flag again): only a later `shut_down` or the keys' `done` end it.
#[test]
fn workqueue_drain_after_shut_down_waits_again() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add(1);
    let held = queue.get().unwrap();
    queue.shut_down();
    let outcome_now = queue.shut_down_with_drain_timeout(Duration::from_millis(20));
    assert_eq!(outcome_now, DrainOutcome::TimedOut { still_held: 1 });
    let drain = spawn_drain(&queue, WorkQueue::shut_down_with_drain);
    thread::sleep(Duration::from_millis(20));
    queue.done(&held);
    assert_eq!(outcome(&drain, "after shut_down"), DrainOutcome::Drained);
}

/// One `shut_down` ends every drain in progress, of every form.
#[test]
fn workqueue_shut_down_ends_every_drain() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue = Arc::new(WorkQueue::new());
    queue.add(1);
    let _held = queue.get().unwrap();
    let drains: Vec<_> = (0..3)
        .map(|_| spawn_drain(&queue, WorkQueue::shut_down_with_drain))
        .chain((0..2).map(|_| {
            spawn_drain(&queue, |queue| {
                queue.shut_down_with_drain_timeout(Duration::from_secs(3600))
            })
        }))
        .collect();
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut waiting = pin!(queue.shut_down_with_drain_async());
    assert!(
        waiting
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    thread::sleep(Duration::from_millis(20));
    queue.shut_down();
    for drain in &drains {
        assert_eq!(
            outcome(drain, "one of several"),
            DrainOutcome::Forced { still_held: 1 }
        );
    }
    assert!(flag.woken(), "shut_down did not wake the async drain");
    let poll = waiting.as_mut().poll(&mut Context::from_waker(&waker));
    assert_eq!(poll, Poll::Ready(DrainOutcome::Forced { still_held: 1 }));
}

/// The async drain: pending while a key is held, woken and ended by
/// `shut_down`; a drain future dropped before it ends (cancelled) leaves
/// the queue shut down and wakes nothing.
#[test]
fn workqueue_async_drain_cancelled_then_ended_by_shut_down() {
    let queue = WorkQueue::new();
    queue.add(1);
    queue.add(2);
    let one = queue.try_get().unwrap();
    let _two = queue.try_get().unwrap();
    let cancelled = Arc::new(Flag::default());
    {
        let mut waiting = pin!(queue.shut_down_with_drain_async());
        let poll = waiting
            .as_mut()
            .poll(&mut Context::from_waker(&Waker::from(Arc::clone(
                &cancelled,
            ))));
        assert!(poll.is_pending());
        // Dropped here: the wait is cancelled, the shutdown stands.
    }
    assert!(queue.is_shutting_down());
    queue.done(&one);
    assert!(!cancelled.woken(), "a cancelled drain was woken");
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut waiting = pin!(queue.shut_down_with_drain_async());
    assert!(
        waiting
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    queue.shut_down();
    assert!(flag.woken(), "shut_down did not wake the async drain");
    assert!(!cancelled.woken(), "a cancelled drain was woken");
    let poll = waiting.as_mut().poll(&mut Context::from_waker(&waker));
    assert_eq!(poll, Poll::Ready(DrainOutcome::Forced { still_held: 1 }));
}

/// The async drain under tokio: cut short by a timeout (a grace period),
/// then ended by a `shut_down` from another task.
#[tokio::test]
async fn workqueue_async_drain_under_a_runtime_timeout_then_shut_down() {
    let queue = Arc::new(WorkQueue::new());
    queue.add("a");
    let held = queue.get_async().await.unwrap();
    let grace = Duration::from_millis(10);
    let cut = tokio::time::timeout(grace, queue.shut_down_with_drain_async()).await;
    assert!(cut.is_err(), "the drain ended while a key was held");
    assert_eq!(queue.stats().processing, 1);
    // The drain begins when it is called, so the `shut_down` beside it
    // comes after, whichever the runtime polls first.
    let drain = queue.shut_down_with_drain_async();
    let forcer = async {
        tokio::task::yield_now().await;
        queue.shut_down();
    };
    let (outcome, ()) = tokio::time::timeout(RETURNS_WITHIN, async { tokio::join!(drain, forcer) })
        .await
        .expect("the async drain did not return after shut_down");
    assert_eq!(outcome, DrainOutcome::Forced { still_held: 1 });
    queue.done(&held);
    assert_eq!(
        queue.shut_down_with_drain_async().await,
        DrainOutcome::Drained
    );
}

/// Polls `future` to completion on this thread (it must not need a
/// runtime's timer or I/O).
fn block_on<F: Future>(future: F) -> F::Output {
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut Context::from_waker(&waker)) {
            return output;
        }
        while !flag.woken() {
            thread::yield_now();
        }
    }
}
