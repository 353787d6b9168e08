//! [`ControllerHandle`] and the stop signal it shares with the run future.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::task::Waker;

use super::stats::{ControllerStats, Counters};
use crate::WorkQueue;
use crate::reflector::ReflectorHandle;
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};

/// Whether the controller should stop, and the task to wake when it
/// should: the one that polls the run future.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    requested: AtomicBool,
    finished: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl Stop {
    /// Marks the stop and wakes the run future's task (after unlocking).
    pub(crate) fn request(&self) {
        // Release pairs with the Acquire load in `is_requested`.
        self.requested.store(true, Ordering::Release);
        let task = self.task.lock().take();
        if let Some(task) = task {
            task.wake();
        }
    }

    pub(crate) fn is_requested(&self) -> bool {
        // Acquire pairs with the Release store in `request`.
        self.requested.load(Ordering::Acquire)
    }

    /// Remembers the run future's task, to wake at the stop.
    pub(crate) fn register(&self, waker: &Waker) {
        let mut task = self.task.lock();
        if !task.as_ref().is_some_and(|t| t.will_wake(waker)) {
            *task = Some(waker.clone());
        }
    }

    pub(crate) fn finish(&self) {
        // Release pairs with the Acquire load in `is_finished`: whoever
        // sees the end sees every reconcile's effects.
        self.finished.store(true, Ordering::Release);
    }

    pub(crate) fn is_finished(&self) -> bool {
        // Acquire pairs with the Release store in `finish`.
        self.finished.load(Ordering::Acquire)
    }
}

/// Stops a [`Controller`](super::Controller), reads its statistics and
/// queues keys by hand; cheap to clone, usable before, during and after
/// the run.
///
/// # Examples
///
/// See [`Controller`](super::Controller).
pub struct ControllerHandle<K, H = ahash::RandomState> {
    pub(crate) queue: Arc<WorkQueue<K, H>>,
    pub(crate) stop: Arc<Stop>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) reflector: ReflectorHandle,
    pub(crate) synced: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl<K, H> Clone for ControllerHandle<K, H> {
    fn clone(&self) -> Self {
        Self {
            queue: Arc::clone(&self.queue),
            stop: Arc::clone(&self.stop),
            counters: Arc::clone(&self.counters),
            reflector: self.reflector.clone(),
            synced: Arc::clone(&self.synced),
        }
    }
}

impl<K, H> ControllerHandle<K, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    /// Stops the controller gracefully: workers take no new key (keys
    /// still queued are dropped, counted in
    /// [`ControllerStats::skipped_at_shut_down`]), the reconciles in flight
    /// finish (a failed one is not retried), the reflector stops, the
    /// handlers' deliveries end, and then the run future completes.
    /// Returns at once; await the run future for the end. Idempotent.
    ///
    /// # Examples
    ///
    /// See [`Controller`](super::Controller).
    pub fn shut_down(&self) {
        // The mark first: a worker that takes a key after the queue shut
        // down sees it, and skips the key.
        self.stop.request();
        self.queue.shut_down();
        self.reflector.stop();
    }

    /// Whether [`shut_down`](Self::shut_down) was called or the run future
    /// was dropped.
    ///
    /// # Examples
    ///
    /// See [`Controller`](super::Controller).
    pub fn is_shutting_down(&self) -> bool {
        self.stop.is_requested()
    }

    /// Whether the run future has completed (or was dropped): no reconcile
    /// runs any more.
    ///
    /// # Examples
    ///
    /// See [`Controller`](super::Controller).
    pub fn is_finished(&self) -> bool {
        self.stop.is_finished()
    }

    /// Queues `key` for a reconcile, as a change of its object would (the
    /// work queue's `add`): for keys the reflector cannot know of, such as
    /// the targets of a controller that last ran with other objects.
    /// Ignored once shutting down.
    ///
    /// # Examples
    ///
    /// See [`Controller`](super::Controller).
    pub fn enqueue(&self, key: K) {
        self.queue.add(key);
    }

    /// How many times in a row `key`'s reconcile has failed (or panicked)
    /// since it last succeeded: the work queue's `num_requeues`. A
    /// reconcile that gives up on a key after some failures returns
    /// `Ok(Action::done())` once this reaches its limit.
    ///
    /// # Examples
    ///
    /// See [`Controller`](super::Controller).
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.queue.num_requeues(key)
    }

    /// Whether the reflector has listed its source and the controller's
    /// handler has been given every object that list found (each key is
    /// queued, or already reconciled): client-go's `WaitForCacheSync` of a
    /// controller.
    ///
    /// # Examples
    ///
    /// See [`Controller`](super::Controller).
    pub fn has_synced(&self) -> bool {
        self.reflector.has_synced() && (self.synced)()
    }

    /// The reflector's handle: its revision, statistics and waits.
    ///
    /// # Examples
    ///
    /// See [`Controller`](super::Controller).
    pub fn reflector(&self) -> &ReflectorHandle {
        &self.reflector
    }

    /// The controller's counts.
    ///
    /// # Examples
    ///
    /// See [`ControllerStats`].
    pub fn stats(&self) -> ControllerStats {
        self.counters.read()
    }
}

impl<K, H> fmt::Debug for ControllerHandle<K, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerHandle")
            .field("stats", &self.counters.read())
            .field("shutting_down", &self.stop.is_requested())
            .field("finished", &self.stop.is_finished())
            .finish_non_exhaustive()
    }
}
