//! [`WorkQueueBuilder`]: a work queue's clock, rate limiter and hasher.

use std::fmt;
use std::hash::{BuildHasher, Hash};

use super::{MaxOf, RateLimiter, Shared, WorkQueue};
use crate::error::BuildError;
use crate::sync::Arc;
use crate::{Clock, SystemClock};

/// Builds a [`WorkQueue`] with another clock, rate limiter or hasher than
/// [`WorkQueue::new`]'s. Every setting is valid (the limiters' own
/// constructors check theirs), so [`build`](Self::build) never returns its
/// error today; it returns a `Result` as every builder in this crate does.
///
/// # Examples
///
/// ```
/// use larder::{ManualClock, TokenBucket, WorkQueue};
///
/// let clock = ManualClock::new();
/// let queue: WorkQueue<String> = WorkQueue::builder()
///     .clock(clock.clone())
///     .rate_limiter(TokenBucket::new(50.0, 10))
///     .build()
///     .unwrap();
/// assert!(queue.is_empty());
/// ```
pub struct WorkQueueBuilder<K, S = ahash::RandomState> {
    clock: Option<Arc<dyn Clock>>,
    limiter: Option<Box<dyn RateLimiter<K>>>,
    hasher: S,
}

impl<K> WorkQueueBuilder<K> {
    pub(super) fn new() -> Self {
        Self {
            clock: None,
            limiter: None,
            hasher: crate::sync::default_hasher(),
        }
    }
}

impl<K, S> WorkQueueBuilder<K, S> {
    /// The clock of delays, rate limits and statistics; a [`SystemClock`]
    /// unless set. Tests pass a [`ManualClock`](crate::ManualClock) and
    /// take due keys with [`try_get`](WorkQueue::try_get) after moving it.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ManualClock, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let queue = WorkQueue::builder().clock(clock.clone()).build().unwrap();
    /// queue.add_after("a", Duration::from_secs(5));
    /// assert!(queue.try_get().is_err());
    /// clock.advance(Duration::from_secs(5));
    /// assert_eq!(queue.try_get(), Ok("a"));
    /// ```
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The limiter of [`add_rate_limited`](WorkQueue::add_rate_limited);
    /// [`MaxOf::controller_default`] unless set.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ExponentialBackoff, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let backoff = ExponentialBackoff::new(Duration::from_millis(1), Duration::from_secs(1));
    /// let queue: WorkQueue<u64> = WorkQueue::builder().rate_limiter(backoff).build().unwrap();
    /// # let _ = queue;
    /// ```
    #[must_use]
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<K> + 'static) -> Self {
        self.limiter = Some(Box::new(limiter));
        self
    }

    /// The hasher of the queue's keys (ahash's `RandomState` unless set).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    /// use std::hash::RandomState;
    ///
    /// let queue: WorkQueue<u64, RandomState> = WorkQueue::builder().hasher(RandomState::new()).build().unwrap();
    /// # let _ = queue;
    /// ```
    #[must_use]
    pub fn hasher<T>(self, hasher: T) -> WorkQueueBuilder<K, T> {
        WorkQueueBuilder {
            clock: self.clock,
            limiter: self.limiter,
            hasher,
        }
    }
}

impl<K, S> WorkQueueBuilder<K, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Builds the queue.
    ///
    /// # Errors
    ///
    /// None at present: every setting is valid. The `Result` is every
    /// builder's shape in this crate (a later setting may be refusable
    /// without a breaking change).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::WorkQueue;
    ///
    /// let queue: WorkQueue<u64> = WorkQueue::builder().build()?;
    /// assert!(!queue.is_shutting_down());
    /// # Ok::<(), larder::BuildError>(())
    /// ```
    pub fn build(self) -> Result<WorkQueue<K, S>, BuildError> {
        Ok(self.build_queue())
    }

    /// [`build`](Self::build), which cannot fail.
    pub(crate) fn build_queue(self) -> WorkQueue<K, S> {
        let clock = self
            .clock
            .unwrap_or_else(|| Arc::new(SystemClock::new()) as Arc<dyn Clock>);
        let limiter = self
            .limiter
            .unwrap_or_else(|| Box::new(MaxOf::controller_default()));
        WorkQueue {
            shared: Arc::new(Shared::new(clock, limiter, self.hasher)),
        }
    }
}

impl<K, S> fmt::Debug for WorkQueueBuilder<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueueBuilder")
            .field("clock", &self.clock)
            .field("rate_limiter", &self.limiter)
            .finish_non_exhaustive()
    }
}
