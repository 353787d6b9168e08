//! Misuse 06: holding a lock guard across an `.await`.
//!
//! A task that holds a (synchronous) mutex guard across a suspension point
//! keeps the lock while it is parked. Any other task on the same executor
//! thread that asks for the lock blocks the thread, and the task holding the
//! lock can never be polled again to release it: the executor stalls.
//!
//! This example needs no async runtime: it carries a tiny single-threaded
//! executor (round-robin polling, a `std::task::Wake` waker) and a `yield_now`
//! future. The second task asks with `try_lock_for`, so the stall is reported
//! instead of hanging the process.
//!
//! Run with `cargo run --example misuse_06_lock_across_await`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use larder::Snapshot;
use parking_lot::Mutex;

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Guard held across `.await`: task B could not get the lock.
    pub broken_stalled: bool,
    /// Guard scoped to end before the `.await`: B stalled?
    pub scoped_stalled: bool,
    /// `Snapshot::load_full` before the `.await`: B's write completed while
    /// A was suspended holding its `Arc`.
    pub snapshot_b_wrote_while_a_suspended: bool,
    /// The snapshot version task A used after its `.await` (the one it
    /// loaded: a consistent view for its whole unit of work).
    pub snapshot_version_used_by_a: u64,
    /// The snapshot version after task B's write.
    pub snapshot_final_version: u64,
    /// Polls the executor made in the broken run.
    pub broken_polls: usize,
}

/// A waker that counts its wake-ups; the executor polls round-robin anyway.
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        // Relaxed: a statistic; nothing is published through it.
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Polls every task in turn, on this thread, until all are done; returns
/// the number of polls. Bounded, so a bug cannot hang the process.
fn run_to_completion(mut tasks: Vec<Task<'_>>) -> usize {
    let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
    let mut cx = Context::from_waker(&waker);
    let mut polls = 0;
    for _round in 0..100 {
        tasks.retain_mut(|task| {
            polls += 1;
            task.as_mut().poll(&mut cx).is_pending()
        });
        if tasks.is_empty() {
            return polls;
        }
    }
    panic!("tasks still pending after 100 rounds");
}

/// A future that is pending exactly once: a suspension point.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn yield_now() -> YieldNow {
    YieldNow(false)
}

/// Task B: takes the lock the way the real code would (`lock()`), except
/// that it gives up after a timeout and records in `stalled` that it had to.
async fn task_b(state: &Mutex<u64>, stalled: &Mutex<bool>) {
    match state.try_lock_for(common::STALL_TIMEOUT) {
        Some(mut guard) => *guard += 10,
        // `state.lock()` here would block this thread forever: task A, which
        // holds the lock, runs on this very thread.
        None => *stalled.lock() = true,
    }
}

/// BROKEN: task A holds the guard across `yield_now().await`.
// clippy's `await_holding_lock` lint catches exactly this; it is silenced
// here because this is the bug being demonstrated.
#[allow(clippy::await_holding_lock)]
fn broken() -> (bool, usize) {
    let state = Mutex::new(0_u64);
    let stalled = Mutex::new(false);
    let task_a = async {
        let mut guard = state.lock();
        *guard += 1;
        yield_now().await; // e.g. a network call; the guard stays locked
        *guard += 1;
    };
    let polls = run_to_completion(vec![Box::pin(task_a), Box::pin(task_b(&state, &stalled))]);
    let stalled = *stalled.lock();
    (stalled, polls)
}

/// FIXED with std means: the guard's scope ends before the `.await`.
fn scoped() -> bool {
    let state = Mutex::new(0_u64);
    let stalled = Mutex::new(false);
    let task_a = async {
        *state.lock() += 1; // guard dropped at the end of the statement
        yield_now().await;
        *state.lock() += 1;
    };
    run_to_completion(vec![Box::pin(task_a), Box::pin(task_b(&state, &stalled))]);
    *stalled.lock()
}

/// LARDER: task A takes an owned `Arc` out of the snapshot and holds that
/// across the `.await`; no lock is held, B's write goes straight through,
/// and A keeps one consistent view for its unit of work.
fn with_snapshot() -> (bool, u64, u64) {
    let config = Snapshot::new(String::from("v0"));
    let used_by_a = Mutex::new(u64::MAX);
    let events = Mutex::new(Vec::new());
    let task_a = async {
        let current = config.load_full(); // an Arc: holds no lock
        events.lock().push("A suspended");
        yield_now().await;
        events.lock().push("A resumed");
        *used_by_a.lock() = current.version();
    };
    let task_b = async {
        // A store never waits for readers: there is nothing to time out on.
        config.store(String::from("v1"));
        events.lock().push("B stored");
    };
    run_to_completion(vec![Box::pin(task_a), Box::pin(task_b)]);
    let used = *used_by_a.lock();
    let in_order = *events.lock() == ["A suspended", "B stored", "A resumed"];
    (in_order, used, config.version())
}

/// Runs every variant.
pub fn run() -> Outcome {
    let (broken_stalled, broken_polls) = broken();
    let (snapshot_b_wrote_while_a_suspended, snapshot_version_used_by_a, snapshot_final_version) =
        with_snapshot();
    Outcome {
        broken_stalled,
        scoped_stalled: scoped(),
        snapshot_b_wrote_while_a_suspended,
        snapshot_version_used_by_a,
        snapshot_final_version,
        broken_polls,
    }
}

fn main() {
    common::header(6, "holding a lock guard across .await");
    let outcome = run();
    common::broken(format!(
        "task A holds a Mutex guard across .await: task B stalled = {} (try_lock_for gave up after {:?}; lock() would hang the executor)",
        outcome.broken_stalled,
        common::STALL_TIMEOUT
    ));
    common::fixed(format!(
        "guard scoped to end before .await: task B stalled = {}",
        outcome.scoped_stalled
    ));
    common::fixed(format!(
        "Snapshot::load_full() before .await: B stored while A was suspended = {}; A used version {} throughout, B published version {}",
        outcome.snapshot_b_wrote_while_a_suspended,
        outcome.snapshot_version_used_by_a,
        outcome.snapshot_final_version
    ));
}
