//! Draining: [`WorkQueue::shut_down_with_drain`] and its forms with a
//! deadline and as a future, and how [`WorkQueue::shut_down`] ends a drain
//! in progress (client-go's `ShutDown` clearing the drain flag).
//!
//! A drain shuts the queue down, reads the core's count of forced
//! shutdowns under the same lock, and waits until no key is being
//! processed or that count moves (a `shut_down` came after it began). The
//! waiting is the crate's shared machinery (`crate::waiters`): a drain is a
//! consumer whose attempt reads the core under its mutex; `done` (when the
//! last held key is done) and `shut_down` are its producers, and wake the
//! drains after releasing that mutex, so no wake-up is lost.

use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::{Shared, WorkQueue};
use crate::waiters::{Publishing, Waiting};

/// How a drain ended: what [`WorkQueue::shut_down_with_drain`] and its
/// forms return.
///
/// # Examples
///
/// ```
/// use larder::{DrainOutcome, WorkQueue};
/// use std::time::Duration;
///
/// let queue = WorkQueue::new();
/// queue.add("a");
/// let _held = queue.try_get().unwrap(); // never done
/// let outcome = queue.shut_down_with_drain_timeout(Duration::from_millis(5));
/// assert_eq!(outcome, DrainOutcome::TimedOut { still_held: 1 });
/// assert!(!outcome.is_drained());
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DrainOutcome {
    /// No key is being processed: every worker called
    /// [`done`](WorkQueue::done) for the keys it held.
    Drained,
    /// [`shut_down`](WorkQueue::shut_down) was called after the drain
    /// began, and ended it while keys were still held.
    Forced {
        /// How many keys workers still held when the drain ended.
        still_held: usize,
    },
    /// The deadline passed while keys were still held.
    TimedOut {
        /// How many keys workers still held when the drain ended.
        still_held: usize,
    },
}

impl DrainOutcome {
    /// Whether every held key was done ([`Drained`](Self::Drained)).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// assert!(queue.shut_down_with_drain().is_drained());
    /// ```
    pub fn is_drained(&self) -> bool {
        matches!(self, Self::Drained)
    }

    /// How many keys workers still held when the drain ended: 0 if it
    /// [drained](Self::Drained).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    /// use std::time::Duration;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add(1);
    /// queue.add(2);
    /// let _first = queue.try_get().unwrap();
    /// let second = queue.try_get().unwrap();
    /// queue.done(&second);
    /// let outcome = queue.shut_down_with_drain_timeout(Duration::ZERO);
    /// assert_eq!(outcome.still_held(), 1);
    /// ```
    pub fn still_held(&self) -> usize {
        match *self {
            Self::Drained => 0,
            Self::Forced { still_held } | Self::TimedOut { still_held } => still_held,
        }
    }
}

impl<K, S> Shared<K, S> {
    /// Shuts the queue down for a drain (a shutdown that ends no drain);
    /// returns the count of forced shutdowns the drain began with.
    fn begin_drain(&self) -> u64 {
        let (forced, dropped) = {
            let mut core = self.core.lock();
            (core.forced_shutdowns(), core.shut_down())
        };
        self.after_shut_down();
        drop(dropped);
        forced
    }

    /// One look of a drain begun with `forced` forced shutdowns: `None`
    /// while keys are held and no `shut_down` came since.
    fn drain_attempt(&self, forced: u64) -> Option<DrainOutcome> {
        let core = self.core.lock();
        match core.processing() {
            0 => Some(DrainOutcome::Drained),
            still_held if core.forced_shutdowns() != forced => {
                Some(DrainOutcome::Forced { still_held })
            }
            _ => None,
        }
    }
}

/// `shut_down`'s last step: wakes the drains it ended. Call with the
/// core's mutex released, after the step that counted the forced
/// shutdown.
pub(super) fn wake_drains_forced<K, S>(shared: &Shared<K, S>, publishing: Publishing) {
    shared.drains.after_insert(publishing, true);
}

/// `done`'s last step: wakes the drains if no key is held any more (its
/// key was the last, and the queue is shutting down). Call with the
/// core's mutex released.
pub(super) fn wake_drains_if_drained<K, S>(
    shared: &Shared<K, S>,
    publishing: Publishing,
    drained: bool,
) {
    shared.drains.after_insert(publishing, drained);
}

// The steps loom negative controls break: outside loom each name is the
// correct step itself; under loom it dispatches to the correct step or to
// the broken one the control selected (`crate::fault`).
#[cfg(not(loom))]
pub(super) use self::{
    wake_drains_forced as wake_ended_drains, wake_drains_if_drained as wake_drains_after_done,
};

#[cfg(loom)]
pub(super) fn wake_drains_after_done<K, S>(
    shared: &Shared<K, S>,
    publishing: Publishing,
    drained: bool,
) {
    if crate::fault::is_selected(crate::fault::WorkQueueFault::DoneSkipsDrainWake) {
        wake_no_drain(shared, publishing);
    } else {
        wake_drains_if_drained(shared, publishing, drained);
    }
}

#[cfg(loom)]
pub(super) fn wake_ended_drains<K, S>(shared: &Shared<K, S>, publishing: Publishing) {
    if crate::fault::is_selected(crate::fault::WorkQueueFault::ShutdownSkipsDrains) {
        wake_no_drain(shared, publishing);
    } else {
        wake_drains_forced(shared, publishing);
    }
}

/// BROKEN on purpose (the loom controls `ShutdownSkipsDrains` and
/// `DoneSkipsDrainWake`): wakes no drain.
#[cfg(loom)]
fn wake_no_drain<K, S>(shared: &Shared<K, S>, publishing: Publishing) {
    let _ = (shared, publishing);
}

impl<K, S> WorkQueue<K, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Shuts the queue down as [`shut_down`](Self::shut_down), then blocks
    /// until no key is being processed: every worker holding a key has
    /// called [`done`](Self::done) (client-go's `ShutDownWithDrain`).
    /// Keys still queued are not waited for: workers still take them
    /// until `get` says the queue is shut down (join the workers to wait
    /// for those too).
    ///
    /// A [`shut_down`](Self::shut_down) called while it waits ends the
    /// wait, as in client-go, so a controller can force a stop (a second
    /// signal, a grace period spent on another thread):
    /// [`DrainOutcome::Forced`] says how many keys were still held. A
    /// drain begun after a `shut_down` waits again.
    ///
    /// Never call it from async code: it blocks the executor's thread.
    /// There, use [`shut_down_with_drain_async`](Self::shut_down_with_drain_async).
    ///
    /// # Deadlocks
    ///
    /// Waits forever if a worker never calls `done` for a key it took (and
    /// if the caller itself holds one), unless another thread calls
    /// `shut_down`. [`shut_down_with_drain_timeout`](Self::shut_down_with_drain_timeout)
    /// bounds the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{DrainOutcome, WorkQueue};
    /// use std::sync::Arc;
    /// use std::thread;
    ///
    /// let queue = Arc::new(WorkQueue::new());
    /// queue.add("a");
    /// let key = queue.get().unwrap();
    /// let finisher = {
    ///     let queue = Arc::clone(&queue);
    ///     thread::spawn(move || queue.done(&key))
    /// };
    /// // Returns once "a" is done.
    /// assert_eq!(queue.shut_down_with_drain(), DrainOutcome::Drained);
    /// finisher.join().unwrap();
    /// assert_eq!(queue.stats().processing, 0);
    /// ```
    pub fn shut_down_with_drain(&self) -> DrainOutcome {
        let shared = &*self.shared;
        let forced = shared.begin_drain();
        shared
            .drains
            .wait(None, || shared.drain_attempt(forced))
            .expect("larder: a drain without a deadline ends drained or forced")
    }

    /// [`shut_down_with_drain`](Self::shut_down_with_drain), waiting at
    /// most `timeout`: a controller's graceful stop with a grace period.
    /// [`DrainOutcome::TimedOut`] says how many keys were still held when
    /// the deadline passed; the queue stays shut down and those workers
    /// keep their keys (their `done` is still accepted).
    ///
    /// A zero `timeout` shuts down and reports without waiting. A
    /// `timeout` too large to add to the current `Instant` waits forever.
    /// The deadline is wall time (as [`get_timeout`](Self::get_timeout)'s),
    /// not the queue's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{DrainOutcome, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("stuck");
    /// let _key = queue.get().unwrap(); // its worker never calls done
    /// match queue.shut_down_with_drain_timeout(Duration::from_millis(10)) {
    ///     DrainOutcome::Drained => println!("every worker finished"),
    ///     DrainOutcome::TimedOut { still_held } => assert_eq!(still_held, 1),
    ///     other => println!("ended early: {other:?}"),
    /// }
    /// ```
    #[must_use = "the outcome says whether workers still hold keys"]
    pub fn shut_down_with_drain_timeout(&self, timeout: Duration) -> DrainOutcome {
        let Some(deadline) = Instant::now().checked_add(timeout) else {
            return self.shut_down_with_drain();
        };
        let shared = &*self.shared;
        let forced = shared.begin_drain();
        let attempt = || shared.drain_attempt(forced);
        if let Some(outcome) = shared.drains.wait(Some(deadline), attempt) {
            return outcome;
        }
        // A last look: a `done` or a `shut_down` just after the deadline
        // is reported as what it was.
        match shared.drain_attempt(forced) {
            Some(outcome) => outcome,
            None => DrainOutcome::TimedOut {
                still_held: shared.core.lock().processing(),
            },
        }
    }

    /// [`shut_down_with_drain`](Self::shut_down_with_drain) as a future:
    /// no thread is blocked, and it runs on any executor (it needs no
    /// runtime).
    ///
    /// The queue shuts down when this method is called, not when the
    /// future is first polled; the future waits for the held keys to be
    /// done, or for a [`shut_down`](Self::shut_down) that ends the drain.
    /// Dropping it (a timeout, a `select!` branch that lost) only stops
    /// the wait: bound a drain with your runtime's timeout, then read
    /// [`stats`](Self::stats)' `processing` for the keys still held.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{DrainOutcome, WorkQueue};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// let key = queue.get_async().await.unwrap();
    /// // A grace period: the drain is cut short while "a" is held.
    /// let grace = Duration::from_millis(5);
    /// assert!(tokio::time::timeout(grace, queue.shut_down_with_drain_async()).await.is_err());
    /// assert_eq!(queue.stats().processing, 1);
    /// queue.done(&key);
    /// assert_eq!(queue.shut_down_with_drain_async().await, DrainOutcome::Drained);
    /// # }
    /// ```
    pub fn shut_down_with_drain_async(&self) -> impl Future<Output = DrainOutcome> + Send + '_ {
        let shared = &*self.shared;
        let forced = shared.begin_drain();
        Waiting::new(&shared.drains, move || shared.drain_attempt(forced))
    }
}
