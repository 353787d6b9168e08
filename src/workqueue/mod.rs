//! [`WorkQueue`]: client-go's controller work queue
//! (`k8s.io/client-go/util/workqueue`), runtime-agnostic.
//!
//! # Files
//!
//! - `core.rs`: the sequential state (`&mut self`): the queue, the dirty
//!   and processing marks, the delayed heap, the statistics' counters.
//! - this file: the concurrent wrapper, one mutex around the core, and
//!   the operations that do not wait.
//! - `get.rs`: the `get` forms that wait, over the crate's shared waiting
//!   machinery (`crate::waiters`: blocking, timed and async waiters, no lost
//!   wake-up, cancel-safe futures).
//! - `drain.rs`: the drain forms (blocking, with a deadline, async) over
//!   the same machinery, and how `shut_down` ends a drain.
//! - `delay.rs`: the thread that wakes waiting workers when a delayed key
//!   falls due.
//! - `rate_limit/`: the rate limiters; `stats.rs`: [`WorkQueueStats`];
//!   `builder.rs`: [`WorkQueueBuilder`]; `tests.rs`: unit tests.
//!
//! # Locks
//!
//! The core's mutex is never held while another lock is taken: the
//! waiters' mutex (`crate::waiters`), the delay thread's and the rate
//! limiter's are each taken after it is released. User code (`Hash` of
//! `K`, the clock, the rate limiter, `Drop` of keys that leave the queue)
//! runs with no lock held; `Eq` and `Clone` of `K` run under the core's
//! mutex before the operation changes anything, so a panic there leaves
//! the queue as it was (`core.rs`).

mod builder;
mod core;
#[cfg(not(loom))]
mod delay;
mod drain;
mod get;
mod rate_limit;
mod stats;

pub use builder::WorkQueueBuilder;
pub use drain::DrainOutcome;
pub use get::{GetTimeoutError, TryGetError};
pub use rate_limit::{
    ExponentialBackoff, ItemFastSlow, MaxOf, RateLimiter, TokenBucket, WithMaxWait,
};
pub use stats::WorkQueueStats;

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use self::core::{Added, Core};
use crate::Clock;
use crate::sync::{Arc, Mutex};
use crate::waiters::{Publishing, Waiters};

/// A work queue for controllers: client-go's rate-limited, delaying work
/// queue. Producers (event handlers) [`add`](Self::add) keys of objects
/// that changed; workers [`get`](Self::get) a key, reconcile the object,
/// and call [`done`](Self::done).
///
/// The guarantees, as client-go's:
///
/// - **Deduplication**: a key added while it waits in the queue is not
///   queued twice.
/// - **One worker per key**: a key being processed is never handed to a
///   second worker; added meanwhile, it is queued again when its worker
///   calls `done`, so the change that came during processing is
///   processed afterwards, and no add is lost.
/// - **Delays** ([`add_after`](Self::add_after)): a key added for a later
///   time joins the queue then; added again for a sooner time, it joins at
///   the sooner one (a later time never postpones it).
/// - **Rate limiting** ([`add_rate_limited`](Self::add_rate_limited)):
///   a key that failed is retried after its limiter's delay
///   ([`MaxOf::controller_default`] unless the builder sets another
///   [`RateLimiter`]), until [`forget`](Self::forget) clears its record.
/// - **Shutdown** ([`shut_down`](Self::shut_down)): wakes every waiting
///   worker; later adds are ignored; keys already queued are still handed
///   out, then every `get` says the queue is shut down.
/// - **Drain** ([`shut_down_with_drain`](Self::shut_down_with_drain)):
///   shuts down, then waits until the keys held by workers are done; a
///   `shut_down` meanwhile ends the wait (as client-go's), and
///   [`shut_down_with_drain_timeout`](Self::shut_down_with_drain_timeout)
///   gives up at a deadline. The [`DrainOutcome`] says which, with the
///   count of keys still held.
///
/// Waiting: [`get`](Self::get) blocks a thread, [`get_timeout`](Self::get_timeout)
/// bounds it, [`try_get`](Self::try_get) never waits and
/// [`get_async`](Self::get_async) is a cancel-safe future for any executor.
/// Keys go to waiting workers in no particular order of the workers.
///
/// Times come from the queue's [`Clock`] (a [`SystemClock`](crate::SystemClock)
/// unless the builder sets one; tests use a [`ManualClock`](crate::ManualClock)).
/// A queue that delays keys has one helper thread that wakes waiting
/// workers when a key falls due (client-go's waiting goroutine); it stops
/// at shutdown or when the queue is dropped.
///
/// `docs/workqueue.md` maps client-go's names to these.
///
/// # Examples
///
/// ```
/// use larder::WorkQueue;
/// use std::sync::Arc;
/// use std::thread;
///
/// let queue = Arc::new(WorkQueue::new());
/// queue.add("default/web");
/// queue.add("default/web"); // deduplicated while it waits
/// let worker = {
///     let queue = Arc::clone(&queue);
///     thread::spawn(move || {
///         let mut reconciled = Vec::new();
///         while let Some(key) = queue.get() {
///             reconciled.push(key);
///             queue.done(&key);
///         }
///         reconciled
///     })
/// };
/// // Keys already queued are still handed out; then `get` returns `None`.
/// queue.shut_down_with_drain();
/// let reconciled = worker.join().unwrap();
/// assert_eq!(reconciled, ["default/web"]);
/// ```
pub struct WorkQueue<K, S = ahash::RandomState> {
    shared: Arc<Shared<K, S>>,
}

/// What the queue's handle and its delay thread share.
struct Shared<K, S> {
    core: Mutex<Core<K>>,
    /// The workers waiting for a key.
    waiters: Waiters,
    /// The drains waiting for the held keys to be done (`drain.rs`).
    drains: Waiters,
    clock: Arc<dyn Clock>,
    limiter: Box<dyn RateLimiter<K>>,
    hasher: S,
    #[cfg(not(loom))]
    delay: delay::DelayThread,
}

impl<K, S> Shared<K, S> {
    fn new(clock: Arc<dyn Clock>, limiter: Box<dyn RateLimiter<K>>, hasher: S) -> Self {
        Self {
            core: Mutex::new(Core::default()),
            waiters: Waiters::new(),
            drains: Waiters::new(),
            clock,
            limiter,
            hasher,
            #[cfg(not(loom))]
            delay: delay::DelayThread::default(),
        }
    }

    /// After the core was marked shut down (with its mutex released):
    /// stops the delay thread and wakes every waiting worker.
    fn after_shut_down(&self) {
        #[cfg(not(loom))]
        self.delay.stop();
        wake_workers_at_shutdown(self);
    }
}

/// Wakes every waiting worker: the queue shut down. Call with the core's
/// mutex released, after the step that marked it shut down.
fn wake_every_worker<K, S>(shared: &Shared<K, S>) {
    let publishing = shared.waiters.before_insert();
    shared.waiters.after_insert(publishing, true);
}

/// `done`'s wake-up of the waiting workers, if it `requeued` its key.
/// Call with the core's mutex released.
fn wake_if_requeued<K, S>(shared: &Shared<K, S>, publishing: Publishing, requeued: bool) {
    shared.waiters.after_insert(publishing, requeued);
}

// The steps loom negative controls break: outside loom each name is the
// correct step itself; under loom it dispatches to the correct step or to
// the broken one the control selected (`crate::fault`).
#[cfg(not(loom))]
use self::{wake_every_worker as wake_workers_at_shutdown, wake_if_requeued as wake_after_done};

#[cfg(loom)]
fn wake_after_done<K, S>(shared: &Shared<K, S>, publishing: Publishing, requeued: bool) {
    if crate::fault::is_selected(crate::fault::WorkQueueFault::DoneSkipsWake) {
        wake_nobody_after_done(shared, publishing, requeued);
    } else {
        wake_if_requeued(shared, publishing, requeued);
    }
}

/// BROKEN on purpose (the loom control `DoneSkipsWake`): a key queued
/// again, nobody woken.
#[cfg(loom)]
fn wake_nobody_after_done<K, S>(shared: &Shared<K, S>, publishing: Publishing, requeued: bool) {
    let _ = (shared, publishing, requeued);
}

#[cfg(loom)]
fn wake_workers_at_shutdown<K, S>(shared: &Shared<K, S>) {
    if crate::fault::is_selected(crate::fault::WorkQueueFault::ShutdownWakesOne) {
        wake_one_worker(shared);
    } else {
        wake_every_worker(shared);
    }
}

/// BROKEN on purpose (the loom control `ShutdownWakesOne`): one waiting
/// worker woken.
#[cfg(loom)]
fn wake_one_worker<K, S>(shared: &Shared<K, S>) {
    shared.waiters.wake_one();
}

impl<K, S> Shared<K, S> {
    /// Moves the delayed keys that fell due into the queue and wakes the
    /// waiting workers if it queued any; returns how long until the next
    /// delayed key is due by the clock.
    fn promote_due(&self) -> Option<Duration> {
        let now = self.clock.now();
        let publishing = self.waiters.before_insert();
        let (queued, next) = {
            let mut core = self.core.lock();
            if core.is_shutting_down() {
                return None;
            }
            (core.promote_due(now), core.next_due())
        };
        self.waiters.after_insert(publishing, queued > 0);
        next.map(|due| due.saturating_sub(now))
    }
}

#[cfg(not(loom))]
impl<K: Send, S: Send + Sync> delay::Promote for Shared<K, S> {
    fn promote_due(&self) -> Option<Duration> {
        Shared::promote_due(self)
    }

    fn delay(&self) -> &delay::DelayThread {
        &self.delay
    }
}

impl<K> WorkQueue<K>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// An empty queue with the system clock and client-go's default
    /// controller rate limiter ([`MaxOf::controller_default`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue: WorkQueue<String> = WorkQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::builder().build_queue()
    }

    /// A builder, to set the clock, rate limiter or hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ManualClock, WorkQueue};
    ///
    /// let queue: WorkQueue<u32> = WorkQueue::builder().clock(ManualClock::new()).build().unwrap();
    /// # let _ = queue;
    /// ```
    pub fn builder() -> WorkQueueBuilder<K> {
        WorkQueueBuilder::new()
    }
}

impl<K> Default for WorkQueue<K>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, S> WorkQueue<K, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Queues `key` for a worker (client-go's `Add`), unless it already
    /// waits in the queue. A key being processed is queued again when its
    /// worker calls [`done`](Self::done). Ignored once the queue is shutting
    /// down.
    ///
    /// Atomic: a worker that takes the key after this returns sees every
    /// change the caller made before the call.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// queue.add("a");
    /// assert_eq!(queue.len(), 1);
    /// ```
    pub fn add(&self, key: K) {
        let shared = &*self.shared;
        let hash = shared.hasher.hash_one(&key);
        let now = shared.clock.now();
        let publishing = shared.waiters.before_insert();
        let (added, leftover) = shared.core.lock().add(hash, key, now);
        shared
            .waiters
            .after_insert(publishing, added == Added::Queued);
        drop(leftover);
    }

    /// Queues `key` once `delay` has passed on the queue's clock
    /// (client-go's `AddAfter`); a zero `delay` is [`add`](Self::add).
    /// A key already delayed is queued at the sooner of its two times.
    /// Ignored once the queue is shutting down; delayed keys are dropped
    /// at shutdown.
    ///
    /// # Panics
    ///
    /// If the queue's delay thread, started by the first delayed key,
    /// cannot be spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ManualClock, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let queue = WorkQueue::builder().clock(clock.clone()).build().unwrap();
    /// queue.add_after("a", Duration::from_secs(10));
    /// queue.add_after("a", Duration::from_secs(1)); // sooner: wins
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(queue.try_get(), Ok("a"));
    /// ```
    pub fn add_after(&self, key: K, delay: Duration) {
        self.add_after_counting(key, delay, false);
    }

    fn add_after_counting(&self, key: K, delay: Duration, retry: bool) {
        let shared = &*self.shared;
        if delay.is_zero() {
            if retry {
                let mut core = shared.core.lock();
                if !core.is_shutting_down() {
                    core.counters.retries += 1;
                }
            }
            return self.add(key);
        }
        let hash = shared.hasher.hash_one(&key);
        let due = shared.clock.now().saturating_add(delay);
        let (soonest, leftover) = {
            let mut core = shared.core.lock();
            if retry && !core.is_shutting_down() {
                core.counters.retries += 1;
            }
            core.add_at(hash, key, due)
        };
        drop(leftover);
        #[cfg(not(loom))]
        if soonest {
            shared.delay.poke(&self.shared);
        }
        #[cfg(loom)]
        let _ = soonest;
    }

    /// Queues `key` after the delay its rate limiter gives it, recording a
    /// failure (client-go's `AddRateLimited`). Call it when processing
    /// the key failed; call [`forget`](Self::forget) when it succeeded.
    ///
    /// # Panics
    ///
    /// As [`add_after`](Self::add_after).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ManualClock, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let queue = WorkQueue::builder().clock(clock.clone()).build().unwrap();
    /// queue.add_rate_limited("a"); // the default limiter: 5 ms first
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    /// clock.advance(Duration::from_millis(5));
    /// assert_eq!(queue.try_get(), Ok("a"));
    /// queue.forget(&"a");
    /// assert_eq!(queue.num_requeues(&"a"), 0);
    /// ```
    pub fn add_rate_limited(&self, key: K) {
        let delay = self.shared.limiter.when(&key, self.shared.clock.now());
        self.add_after_counting(key, delay, true);
    }

    /// Clears `key`'s failures in the rate limiter (client-go's `Forget`):
    /// its next [`add_rate_limited`](Self::add_rate_limited) waits as a
    /// first failure's. It does not remove the key from the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited(7);
    /// queue.forget(&7);
    /// assert_eq!(queue.num_requeues(&7), 0);
    /// ```
    pub fn forget(&self, key: &K) {
        self.shared.limiter.forget(key);
    }

    /// How many failures of `key` the rate limiter has recorded since it
    /// was last forgotten (client-go's `NumRequeues`).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited(7);
    /// queue.add_rate_limited(7);
    /// assert_eq!(queue.num_requeues(&7), 2);
    /// ```
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.shared.limiter.num_requeues(key)
    }

    /// The worker that took `key` is finished with it (client-go's
    /// `Done`). If `key` was added while it was processed, it is queued
    /// again now. A key that no worker holds is left alone.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// let key = queue.try_get().unwrap();
    /// queue.add("a"); // during processing: not handed to another worker
    /// assert!(queue.try_get().is_err());
    /// queue.done(&key); // now queued again
    /// assert_eq!(queue.try_get(), Ok("a"));
    /// ```
    pub fn done<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let shared = &*self.shared;
        let hash = shared.hasher.hash_one(key);
        let now = shared.clock.now();
        let publishing = shared.waiters.before_insert();
        let draining = shared.drains.before_insert();
        let (requeued, drained, leftover) = {
            let mut core = shared.core.lock();
            let (requeued, leftover) = core.done(hash, key, now);
            let drained = core.processing() == 0 && core.is_shutting_down();
            (requeued, drained, leftover)
        };
        wake_after_done(shared, publishing, requeued);
        drain::wake_drains_after_done(shared, draining, drained);
        drop(leftover);
    }

    /// Keys waiting in the queue: neither processing nor delayed
    /// (client-go's `Len`); delayed keys that fell due by the clock are
    /// moved into the queue first, and counted. A moment's value under
    /// concurrent use.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add(1);
    /// queue.add(2);
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.shared.promote_due();
        self.shared.core.lock().len()
    }

    /// Whether no key waits in the queue (keys being processed or delayed
    /// are not counted).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down (client-go's `ShutDown`): every waiting
    /// worker is woken; later adds are ignored and delayed keys dropped;
    /// keys already queued are still handed out, then every `get` returns
    /// that the queue is shut down. Idempotent.
    ///
    /// It also ends every drain in progress, as client-go's does:
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) and its forms,
    /// begun before this call, return [`DrainOutcome::Forced`] with the
    /// count of keys still held (or [`DrainOutcome::Drained`] if none is),
    /// whether or not their workers ever call `done`.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add(1);
    /// queue.shut_down();
    /// queue.add(2); // ignored
    /// assert_eq!(queue.get(), Some(1));
    /// assert_eq!(queue.get(), None);
    /// assert!(queue.is_shutting_down());
    /// ```
    pub fn shut_down(&self) {
        let shared = &*self.shared;
        let publishing = shared.drains.before_insert();
        let dropped = {
            let mut core = shared.core.lock();
            core.force_shut_down();
            core.shut_down()
        };
        shared.after_shut_down();
        drain::wake_ended_drains(shared, publishing);
        drop(dropped);
    }

    /// Whether [`shut_down`](Self::shut_down) was called (client-go's
    /// `ShuttingDown`).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// assert!(!queue.is_shutting_down());
    /// queue.shut_down();
    /// assert!(queue.is_shutting_down());
    /// ```
    pub fn is_shutting_down(&self) -> bool {
        self.shared.core.lock().is_shutting_down()
    }

    /// The queue's statistics, read at one instant of its clock (client-go's
    /// workqueue metrics; see [`WorkQueueStats`]). Delayed keys that fell
    /// due are moved into the queue first, as [`len`](Self::len) does.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ManualClock, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let queue = WorkQueue::builder().clock(clock.clone()).build().unwrap();
    /// queue.add("a");
    /// clock.advance(Duration::from_secs(2));
    /// let key = queue.try_get().unwrap();
    /// clock.advance(Duration::from_secs(3));
    /// let stats = queue.stats();
    /// assert_eq!(stats.longest_queue_time, Duration::from_secs(2));
    /// assert_eq!(stats.longest_running_processor, Duration::from_secs(3));
    /// queue.done(&key);
    /// assert_eq!(queue.stats().total_processing_time, Duration::from_secs(3));
    /// ```
    pub fn stats(&self) -> WorkQueueStats {
        self.shared.promote_due();
        let now = self.shared.clock.now();
        let core = self.shared.core.lock();
        WorkQueueStats::read(
            &core.counters,
            core.len(),
            core.delayed(),
            core.processing_since(),
            now,
        )
    }

    /// Asserts the core's invariants; for tests, with no other thread
    /// using the queue.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn check_invariants(&self) {
        self.shared.core.lock().check_invariants();
    }
}

impl<K, S> Drop for WorkQueue<K, S> {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        self.shared.delay.stop();
    }
}

impl<K, S> fmt::Debug for WorkQueue<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = self.shared.core.lock();
        f.debug_struct("WorkQueue")
            .field("len", &core.len())
            .field("processing", &core.processing())
            .field("delayed", &core.delayed())
            .field("shutting_down", &core.is_shutting_down())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
