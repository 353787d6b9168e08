//! Taking a key: [`WorkQueue::try_get`] and the forms that wait for one,
//! over the crate's waiting machinery (`crate::waiters`). Each attempt is one
//! step under the core's mutex (promote the due delayed keys, take the
//! first queued key, mark it processing); `add`, `done`, `shut_down` and
//! the delay thread wake the waiters after the step that queued a key.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::WorkQueue;
use super::core::Popped;
use crate::waiters::Waiting;

/// Why [`WorkQueue::try_get`] returned no key.
///
/// # Examples
///
/// ```
/// use larder::{TryGetError, WorkQueue};
///
/// let queue: WorkQueue<u8> = WorkQueue::new();
/// assert_eq!(queue.try_get(), Err(TryGetError::Empty));
/// queue.shut_down();
/// assert_eq!(queue.try_get(), Err(TryGetError::ShutDown));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryGetError {
    /// No key waits in the queue now.
    Empty,
    /// The queue is shut down and no key is left in it.
    ShutDown,
}

/// Why [`WorkQueue::get_timeout`] returned no key.
///
/// # Examples
///
/// ```
/// use larder::{GetTimeoutError, WorkQueue};
/// use std::time::Duration;
///
/// let queue: WorkQueue<u8> = WorkQueue::new();
/// assert_eq!(queue.get_timeout(Duration::from_millis(1)), Err(GetTimeoutError::Timeout));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetTimeoutError {
    /// No key came within the timeout.
    Timeout,
    /// The queue is shut down and no key is left in it.
    ShutDown,
}

impl fmt::Display for TryGetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "the work queue is empty",
            Self::ShutDown => "the work queue is shut down",
        })
    }
}

impl fmt::Display for GetTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Timeout => "no key came within the timeout",
            Self::ShutDown => "the work queue is shut down",
        })
    }
}

impl std::error::Error for TryGetError {}
impl std::error::Error for GetTimeoutError {}

impl<K, S> WorkQueue<K, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// One attempt: `Some(Some(key))` (taken), `Some(None)` (shut down
    /// and empty) or `None` (wait).
    fn attempt(&self) -> Option<Option<K>> {
        let shared = &*self.shared;
        let now = shared.clock.now();
        let publishing = shared.waiters.before_insert();
        let (popped, more) = {
            let mut core = shared.core.lock();
            let (popped, promoted) = core.pop(now);
            (popped, promoted > 0 && core.len() > 0)
        };
        // Keys this attempt moved from the heap beyond the one it took are
        // for the other waiters (the delay thread may already have looked).
        shared.waiters.after_insert(publishing, more);
        match popped {
            Popped::Key(key) => Some(Some(key)),
            Popped::ShutDown => Some(None),
            Popped::Empty => None,
        }
    }

    /// Takes the first key in the queue without waiting, marking it
    /// processing: call [`done`](Self::done) when finished with it.
    ///
    /// # Errors
    ///
    /// [`TryGetError::Empty`] if no key waits now,
    /// [`TryGetError::ShutDown`] if the queue is shut down and empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.try_get(), Ok("a"));
    /// assert!(queue.try_get().is_err());
    /// ```
    pub fn try_get(&self) -> Result<K, TryGetError> {
        match self.attempt() {
            Some(Some(key)) => Ok(key),
            Some(None) => Err(TryGetError::ShutDown),
            None => Err(TryGetError::Empty),
        }
    }

    /// Takes the first key in the queue, blocking the calling thread until
    /// there is one, and marks it processing (client-go's `Get`): call
    /// [`done`](Self::done) when finished with it. `None` once the queue is
    /// shut down and empty.
    ///
    /// Never call it from async code: it blocks the executor's thread.
    /// There, use [`get_async`](Self::get_async).
    ///
    /// # Deadlocks
    ///
    /// Waits forever if no key is ever added and the queue is never shut
    /// down; [`get_timeout`](Self::get_timeout) bounds the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    /// use std::sync::Arc;
    /// use std::thread;
    ///
    /// let queue = Arc::new(WorkQueue::new());
    /// let worker = {
    ///     let queue = Arc::clone(&queue);
    ///     thread::spawn(move || queue.get())
    /// };
    /// queue.add(5);
    /// assert_eq!(worker.join().unwrap(), Some(5));
    /// ```
    pub fn get(&self) -> Option<K> {
        self.shared
            .waiters
            .wait(None, || self.attempt())
            .expect("larder: a wait without a deadline ends with a key or a shutdown")
    }

    /// [`get`](Self::get), waiting at most `timeout`. A `timeout` too large
    /// to add to the current `Instant` waits forever.
    ///
    /// # Errors
    ///
    /// [`GetTimeoutError::Timeout`] if no key came in time,
    /// [`GetTimeoutError::ShutDown`] if the queue is shut down and empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{GetTimeoutError, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let queue = WorkQueue::new();
    /// assert_eq!(queue.get_timeout(Duration::from_millis(5)), Err(GetTimeoutError::Timeout));
    /// queue.add(1);
    /// assert_eq!(queue.get_timeout(Duration::from_secs(1)), Ok(1));
    /// ```
    pub fn get_timeout(&self, timeout: Duration) -> Result<K, GetTimeoutError> {
        let got = match Instant::now().checked_add(timeout) {
            Some(deadline) => self.shared.waiters.wait(Some(deadline), || self.attempt()),
            None => Some(self.get()),
        };
        match got {
            Some(Some(key)) => Ok(key),
            Some(None) => Err(GetTimeoutError::ShutDown),
            None => Err(GetTimeoutError::Timeout),
        }
    }

    /// [`get`](Self::get) as a future: no thread is blocked, and it runs on
    /// any executor (it needs no runtime). `None` once the queue is shut
    /// down and empty.
    ///
    /// **Cancel-safe**: a key is taken only inside the `poll` that returns
    /// it, so a future dropped before it completes (a timeout, a `select!`
    /// branch that lost, an aborted task) has taken nothing, and the key
    /// goes to another worker. A pending future is woken through the waker
    /// of its latest poll.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = Arc::new(WorkQueue::new());
    /// let worker = {
    ///     let queue = Arc::clone(&queue);
    ///     tokio::spawn(async move { queue.get_async().await })
    /// };
    /// queue.add("a");
    /// assert_eq!(worker.await.unwrap(), Some("a"));
    ///
    /// // A wait cut short takes nothing.
    /// let late = tokio::time::timeout(Duration::from_millis(5), queue.get_async()).await;
    /// assert!(late.is_err());
    /// queue.add("b");
    /// assert_eq!(queue.try_get(), Ok("b"));
    /// # }
    /// ```
    pub fn get_async(&self) -> impl Future<Output = Option<K>> + Send + '_ {
        Waiting::new(&self.shared.waiters, move || self.attempt())
    }
}
