//! What a running reflector shares with its handles: how far it has come
//! (revision, readiness), its statistics, and the stop request.
//!
//! One mutex guards it all. The loop takes it briefly after each applied
//! change; handles take it to read or to register a waker. Wakers are woken
//! after the mutex is released.

use std::fmt;
use std::future::{Future, poll_fn};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::error::WaitError;
use super::source::Revision;
use super::timer::{SharedTimer, timeout};
use crate::sync::{Arc, Mutex};

/// A reflector's statistics, read with
/// [`ReflectorHandle::stats`].
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use larder::IndexedStore;
/// use larder::reflector::{MemorySource, Reflector};
///
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
/// let stats = reflector.handle().stats();
/// assert_eq!(stats.lists, 0);
/// assert_eq!(stats.since_last_event, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReflectorStats {
    /// Successful lists (the first one included).
    pub lists: u64,
    /// Successful lists after the first (a too-old revision, an
    /// undecodable object with no key parser, a progress notification
    /// ahead of an event).
    pub relists: u64,
    /// Watches that ended because the source sent a progress notification
    /// ahead of an event ([`SourceError::ProgressAheadOfEvent`](super::SourceError::ProgressAheadOfEvent));
    /// each is followed by a relist. Compacted revisions are not counted
    /// here.
    pub progress_ahead_of_events: u64,
    /// Lists that failed (retried after a backoff).
    pub list_failures: u64,
    /// Watches opened again after a connection error or a dropped stream
    /// (the first watch after each list is not counted).
    pub watch_restarts: u64,
    /// Watch events applied to the store (puts, deletes, undecodable
    /// objects; bookmarks and skipped duplicates are not counted).
    pub events_applied: u64,
    /// Undecodable objects reported (from lists and watches).
    pub invalid_objects: u64,
    /// Objects an index function of the store rejected.
    pub rejected_objects: u64,
    /// Handler panics caught.
    pub handler_panics: u64,
    /// Periodic resyncs of the reflector's own period delivered (one that a
    /// relist did, its period having run out, included).
    pub resyncs: u64,
    /// The revision the reflector has caught up with (lists, events and
    /// bookmarks; see [`ReflectorHandle::revision`]), 0 before the first
    /// list.
    pub last_revision: Revision,
    /// Time since the last list or watch event, `None` before any.
    pub since_last_event: Option<Duration>,
}

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) stats: ReflectorStats,
    pub(crate) last_event: Option<Instant>,
    pub(crate) synced: bool,
    /// The loop has ended (stopped, or its future dropped).
    pub(crate) finished: bool,
    pub(crate) stop_requested: bool,
    /// Tasks waiting for a revision, readiness or the end.
    waiters: Vec<Waker>,
    /// The loop's own task, woken by `stop`.
    loop_waker: Option<Waker>,
}

#[derive(Default)]
pub(crate) struct Status {
    inner: Mutex<Inner>,
}

impl Status {
    /// Changes the status under the lock, then wakes every waiter.
    pub(crate) fn update(&self, f: impl FnOnce(&mut Inner)) {
        let waiters = {
            let mut inner = self.inner.lock();
            f(&mut inner);
            std::mem::take(&mut inner.waiters)
        };
        waiters.into_iter().for_each(Waker::wake);
    }

    pub(crate) fn read<R>(&self, f: impl FnOnce(&Inner) -> R) -> R {
        f(&self.inner.lock())
    }

    /// Whether a stop was asked for; if not, the loop's task is woken when
    /// it is.
    pub(crate) fn poll_stop(&self, cx: &mut Context<'_>) -> bool {
        let mut inner = self.inner.lock();
        if inner.stop_requested {
            return true;
        }
        if !inner
            .loop_waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            inner.loop_waker = Some(cx.waker().clone());
        }
        false
    }

    /// Wakes the loop's task (a handler was added), if it waits.
    pub(crate) fn wake_loop(&self) {
        let waker = self.inner.lock().loop_waker.take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Waits until `ready` holds (`Ok`) or the loop has ended (`Err`).
    fn wait(&self, ready: impl Fn(&Inner) -> bool) -> impl Future<Output = Result<(), WaitError>> {
        poll_fn(move |cx| {
            let mut inner = self.inner.lock();
            if ready(&inner) {
                return Poll::Ready(Ok(()));
            }
            if inner.finished {
                return Poll::Ready(Err(WaitError::Stopped));
            }
            inner.waiters.push(cx.waker().clone());
            Poll::Pending
        })
    }
}

/// Marks the loop finished when dropped: on a clean stop, and when the
/// loop's future is dropped mid-way, so that no waiter waits forever.
pub(crate) struct FinishGuard(pub(crate) Arc<Status>);

impl Drop for FinishGuard {
    fn drop(&mut self) {
        self.0.update(|inner| inner.finished = true);
    }
}

/// A cloneable handle on a reflector: readiness, revisions, statistics and
/// stopping. Valid before, during and after the loop runs.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use larder::IndexedStore;
/// use larder::reflector::{MemorySource, Reflector};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let source = MemorySource::new();
/// source.put("a".to_string(), 1);
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(source.clone(), store).build().unwrap();
/// let store = reflector.reader();
/// let handle = reflector.handle();
/// let task = tokio::spawn(reflector.run());
///
/// handle.wait_until_synced().await.unwrap();
/// assert_eq!(store.get("a").as_deref(), Some(&1));
/// let revision = source.put("b".to_string(), 2);
/// handle.wait_for_revision(revision).await.unwrap(); // read your writes
/// assert_eq!(store.get("b").as_deref(), Some(&2));
///
/// handle.stop();
/// task.await.unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct ReflectorHandle {
    pub(crate) status: Arc<Status>,
    pub(crate) timer: SharedTimer,
}

impl ReflectorHandle {
    /// Whether the first list is in the store and its notifications were
    /// delivered (client-go `HasSynced`). Stays true after a stop.
    ///
    /// # Examples
    ///
    /// See [`ReflectorHandle`].
    pub fn has_synced(&self) -> bool {
        self.status.read(|inner| inner.synced)
    }

    /// Waits until [`has_synced`](Self::has_synced) (kube-rs's
    /// `wait_until_ready`).
    ///
    /// # Errors
    ///
    /// [`WaitError::Stopped`] if the reflector stops, or its future is
    /// dropped, before the first list completes.
    ///
    /// # Examples
    ///
    /// See [`ReflectorHandle`].
    pub async fn wait_until_synced(&self) -> Result<(), WaitError> {
        self.status.wait(|inner| inner.synced).await
    }

    /// [`wait_until_synced`](Self::wait_until_synced) for at most `limit`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`] once `limit` has passed;
    /// [`WaitError::Stopped`] as `wait_until_synced`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use larder::IndexedStore;
    /// use larder::reflector::{MemorySource, Reflector, WaitError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let store = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
    /// // Not running: it cannot sync.
    /// let waited = reflector.handle().wait_until_synced_timeout(Duration::from_millis(10)).await;
    /// assert_eq!(waited, Err(WaitError::TimedOut));
    /// # });
    /// ```
    pub async fn wait_until_synced_timeout(&self, limit: Duration) -> Result<(), WaitError> {
        timeout(self.wait_until_synced(), self.timer.sleep(limit))
            .await
            .unwrap_or(Err(WaitError::TimedOut))
    }

    /// The revision the reflector has caught up with: every change up to
    /// it is in the store and has been delivered to the builder's handlers
    /// and queued for the handlers added through a
    /// [`HandlerRegistry`](super::HandlerRegistry) (their deliveries may
    /// call them later). Bookmarks advance it too. 0 before the first list.
    ///
    /// Between two changes the store's content is the source's at this
    /// revision. [`IndexedStore::revision`](crate::IndexedStore::revision)
    /// is the revision of the last change written to the store: the store
    /// holds a change a little before this moves on (while its handlers
    /// run), and bookmarks, which write nothing, do not move it, so it can
    /// be lower. A handler learns the revision of each change from
    /// [`Handler::on_change`](super::Handler::on_change).
    ///
    /// # Examples
    ///
    /// See [`ReflectorHandle`].
    pub fn revision(&self) -> Revision {
        self.status.read(|inner| inner.stats.last_revision)
    }

    /// Waits until the reflector has caught up with `revision` (see
    /// [`revision`](Self::revision)): read your writes, by writing to the
    /// source, then waiting for the write's revision. A handler must not
    /// wait for the revision it is being notified of (it would wait for
    /// itself); the timeout form bounds such a mistake.
    ///
    /// # Errors
    ///
    /// [`WaitError::Stopped`] if the reflector stops (or its future is
    /// dropped) first.
    ///
    /// # Examples
    ///
    /// See [`ReflectorHandle`].
    pub async fn wait_for_revision(&self, revision: Revision) -> Result<(), WaitError> {
        self.status
            .wait(|inner| inner.synced && inner.stats.last_revision >= revision)
            .await
    }

    /// [`wait_for_revision`](Self::wait_for_revision) for at most `limit`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`] once `limit` has passed;
    /// [`WaitError::Stopped`] as `wait_for_revision`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use larder::IndexedStore;
    /// use larder::reflector::{MemorySource, Reflector, WaitError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let store = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
    /// let handle = reflector.handle();
    /// let task = tokio::spawn(reflector.run());
    /// let waited = handle.wait_for_revision_timeout(99, Duration::from_millis(10)).await;
    /// assert_eq!(waited, Err(WaitError::TimedOut)); // nobody writes revision 99
    /// handle.stop();
    /// task.await.unwrap();
    /// # });
    /// ```
    pub async fn wait_for_revision_timeout(
        &self,
        revision: Revision,
        limit: Duration,
    ) -> Result<(), WaitError> {
        timeout(self.wait_for_revision(revision), self.timer.sleep(limit))
            .await
            .unwrap_or(Err(WaitError::TimedOut))
    }

    /// Asks the loop to stop: it returns at its next await point (never in
    /// the middle of applying a change or delivering its notifications).
    /// Waiters then get [`WaitError::Stopped`] unless their condition
    /// already holds.
    ///
    /// # Examples
    ///
    /// See [`ReflectorHandle`].
    pub fn stop(&self) {
        let waker = {
            let mut inner = self.status.inner.lock();
            inner.stop_requested = true;
            inner.loop_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Whether the loop has ended (stopped, or its future dropped).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use larder::IndexedStore;
    /// use larder::reflector::{MemorySource, Reflector};
    ///
    /// let store = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
    /// let handle = reflector.handle();
    /// assert!(!handle.is_finished());
    /// drop(reflector.run()); // a dropped loop counts as ended
    /// assert!(handle.is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        self.status.read(|inner| inner.finished)
    }

    /// A snapshot of the statistics.
    ///
    /// # Examples
    ///
    /// See [`ReflectorStats`].
    pub fn stats(&self) -> ReflectorStats {
        self.status.read(|inner| {
            let mut stats = inner.stats.clone();
            stats.since_last_event = inner.last_event.map(|at| at.elapsed());
            stats
        })
    }
}

impl fmt::Debug for ReflectorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.status.read(|inner| {
            f.debug_struct("ReflectorHandle")
                .field("synced", &inner.synced)
                .field("revision", &inner.stats.last_revision)
                .field("finished", &inner.finished)
                .finish_non_exhaustive()
        })
    }
}
