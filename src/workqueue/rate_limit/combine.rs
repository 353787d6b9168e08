//! The limiters over other limiters: [`MaxOf`] (the strictest of
//! several) and [`WithMaxWait`] (a cap on one).

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use super::{ExponentialBackoff, RateLimiter, TokenBucket};

/// The maximum of several limiters: a key waits as long as the strictest
/// says (client-go's `MaxOfRateLimiter`). `forget` forgets in all;
/// `num_requeues` is the largest count.
///
/// # Examples
///
/// ```
/// use larder::{ExponentialBackoff, MaxOf, RateLimiter, TokenBucket};
/// use std::time::Duration;
///
/// let limiter = MaxOf::new()
///     .with(ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000)))
///     .with(TokenBucket::new(10.0, 100));
/// assert_eq!(limiter.when(&"a", Duration::ZERO), Duration::from_millis(5));
/// ```
pub struct MaxOf<K> {
    limiters: Vec<Box<dyn RateLimiter<K>>>,
}

impl<K> MaxOf<K> {
    /// No limiter yet: every key waits zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{MaxOf, RateLimiter};
    /// use std::time::Duration;
    ///
    /// assert_eq!(MaxOf::new().when(&1, Duration::ZERO), Duration::ZERO);
    /// ```
    pub fn new() -> Self {
        Self {
            limiters: Vec::new(),
        }
    }

    /// Adds `limiter` to the ones whose maximum is taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{MaxOf, TokenBucket};
    ///
    /// let limiter = MaxOf::<u32>::new().with(TokenBucket::new(1.0, 1));
    /// # let _ = limiter;
    /// ```
    #[must_use]
    pub fn with(mut self, limiter: impl RateLimiter<K> + 'static) -> Self {
        self.limiters.push(Box::new(limiter));
        self
    }
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static> MaxOf<K> {
    /// client-go's `DefaultControllerRateLimiter`: per-key exponential
    /// backoff from 5 ms, capped at 1000 s, and an overall token bucket of
    /// 10 a second with a burst of 100, whichever is later. The limiter a
    /// [`WorkQueue`](crate::WorkQueue) has unless its builder is given
    /// another.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{MaxOf, RateLimiter};
    /// use std::time::Duration;
    ///
    /// let limiter = MaxOf::controller_default();
    /// assert_eq!(limiter.when(&"a", Duration::ZERO), Duration::from_millis(5));
    /// assert_eq!(limiter.when(&"a", Duration::ZERO), Duration::from_millis(10));
    /// ```
    pub fn controller_default() -> Self {
        let backoff = ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
        let bucket = TokenBucket::new(10.0, 100);
        Self::new().with(backoff).with(bucket)
    }
}

impl<K> Default for MaxOf<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> fmt::Debug for MaxOf<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.limiters).finish()
    }
}

impl<K> RateLimiter<K> for MaxOf<K> {
    fn when(&self, key: &K, now: Duration) -> Duration {
        self.limiters
            .iter()
            .map(|limiter| limiter.when(key, now))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, key: &K) {
        for limiter in &self.limiters {
            limiter.forget(key);
        }
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(key))
            .max()
            .unwrap_or(0)
    }
}

/// A cap on another limiter's delay: a key waits what `limiter` says, at
/// most `max` (client-go's `WithMaxWaitRateLimiter`). `forget` and
/// `num_requeues` are the inner limiter's. For an overall token bucket
/// whose reservations can run far ahead under a burst of failures, or a
/// backoff whose cap is set elsewhere.
///
/// # Examples
///
/// ```
/// use larder::{RateLimiter, TokenBucket, WithMaxWait};
/// use std::time::Duration;
///
/// let limiter = WithMaxWait::new(TokenBucket::new(1.0, 1), Duration::from_millis(1500));
/// let now = Duration::ZERO;
/// assert_eq!(limiter.when(&"a", now), Duration::ZERO);
/// assert_eq!(limiter.when(&"b", now), Duration::from_secs(1));
/// assert_eq!(limiter.when(&"c", now), Duration::from_millis(1500)); // the bucket says 2 s
/// ```
#[derive(Debug)]
pub struct WithMaxWait<L> {
    limiter: L,
    max: Duration,
}

impl<L> WithMaxWait<L> {
    /// `limiter`, its delays capped at `max` (client-go's
    /// `NewWithMaxWaitRateLimiter(limiter, max)`). A zero `max` makes
    /// every retry immediate while the inner limiter still counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ExponentialBackoff, WithMaxWait, WorkQueue};
    /// use std::time::Duration;
    ///
    /// let backoff = ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
    /// let queue: WorkQueue<String> = WorkQueue::builder()
    ///     .rate_limiter(WithMaxWait::new(backoff, Duration::from_secs(60)))
    ///     .build()
    ///     .unwrap();
    /// # let _ = queue;
    /// ```
    pub fn new(limiter: L, max: Duration) -> Self {
        Self { limiter, max }
    }

    /// The limiter whose delays are capped.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{TokenBucket, WithMaxWait};
    /// use std::time::Duration;
    ///
    /// let limiter = WithMaxWait::new(TokenBucket::new(1.0, 1), Duration::from_secs(1));
    /// let _bucket: &TokenBucket = limiter.inner();
    /// ```
    pub fn inner(&self) -> &L {
        &self.limiter
    }
}

impl<K, L: RateLimiter<K>> RateLimiter<K> for WithMaxWait<L> {
    fn when(&self, key: &K, now: Duration) -> Duration {
        self.limiter.when(key, now).min(self.max)
    }

    fn forget(&self, key: &K) {
        self.limiter.forget(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.limiter.num_requeues(key)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_default_takes_the_later_delay() {
        let limiter = MaxOf::controller_default();
        let now = Duration::ZERO;
        for key in 0..100_u32 {
            assert_eq!(limiter.when(&key, now), Duration::from_millis(5));
        }
        // The bucket's burst is spent: 100 ms, later than the backoff.
        assert_eq!(limiter.when(&100, now), Duration::from_millis(100));
        assert_eq!(limiter.num_requeues(&100), 1);
        limiter.forget(&100);
        assert_eq!(limiter.num_requeues(&100), 0);
    }
}
