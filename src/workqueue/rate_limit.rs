//! Rate limiters for [`WorkQueue::add_rate_limited`](super::WorkQueue::add_rate_limited):
//! the [`RateLimiter`] trait and client-go's three building blocks, a
//! per-key exponential backoff, an overall token bucket and the maximum
//! of several limiters, which together make client-go's default
//! controller limiter ([`MaxOf::controller_default`]).

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use hashbrown::HashTable;

use crate::sync::Mutex;

/// Decides how long a key waits before it is queued again after a
/// failure: client-go's `workqueue.TypedRateLimiter`.
///
/// `when` is called once per [`add_rate_limited`](super::WorkQueue::add_rate_limited)
/// (it records the failure), with the queue's clock reading `now`;
/// [`forget`](Self::forget) clears a key's record once it succeeded.
/// The queue calls its limiter with none of its own locks held.
///
/// # Examples
///
/// A fixed delay:
///
/// ```
/// use larder::{RateLimiter, WorkQueue};
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// struct Fixed(Duration);
///
/// impl<K> RateLimiter<K> for Fixed {
///     fn when(&self, _key: &K, _now: Duration) -> Duration {
///         self.0
///     }
///     fn forget(&self, _key: &K) {}
///     fn num_requeues(&self, _key: &K) -> u32 {
///         0
///     }
/// }
///
/// let queue: WorkQueue<&str> = WorkQueue::builder()
///     .rate_limiter(Fixed(Duration::from_secs(1)))
///     .build()
///     .unwrap();
/// queue.add_rate_limited("pod-a");
/// assert_eq!(queue.len(), 0); // due in a second
/// ```
pub trait RateLimiter<K>: Send + Sync + fmt::Debug {
    /// Records a failure of `key` and returns how long it must wait before
    /// it is queued again; `now` is the queue's clock.
    fn when(&self, key: &K, now: Duration) -> Duration;
    /// Clears `key`'s failures (it succeeded, or is given up).
    fn forget(&self, key: &K);
    /// How many failures of `key` are recorded.
    fn num_requeues(&self, key: &K) -> u32;
}

/// An invalid rate limiter setting.
///
/// # Examples
///
/// ```
/// use larder::{ExponentialBackoff, RateLimiterError};
/// use std::time::Duration;
///
/// let error = ExponentialBackoff::<u32>::new(Duration::from_secs(2), Duration::from_secs(1))
///     .unwrap_err();
/// assert!(matches!(error, RateLimiterError::BaseAboveMax { .. }));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateLimiterError {
    /// The first delay of an exponential backoff is above its cap.
    BaseAboveMax {
        /// The first delay given.
        base: Duration,
        /// The cap given.
        max: Duration,
    },
    /// A token bucket's rate is not a positive, finite number of tokens
    /// per second.
    InvalidRate(f64),
    /// A token bucket cannot hold a token.
    ZeroBurst,
}

impl fmt::Display for RateLimiterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BaseAboveMax { base, max } => {
                write!(f, "backoff base {base:?} is above its cap {max:?}")
            }
            Self::InvalidRate(rate) => {
                write!(
                    f,
                    "token rate {rate} is not a positive, finite number per second"
                )
            }
            Self::ZeroBurst => f.write_str("a token bucket's burst must be at least 1"),
        }
    }
}

impl std::error::Error for RateLimiterError {}

/// Per-key exponential backoff: a key's `n`th failure in a row waits
/// `base * 2^(n-1)`, at most `max` (client-go's
/// `ItemExponentialFailureRateLimiter`).
///
/// Keys are kept with their hash, so a panicking `Hash` of `K` (which runs
/// before the limiter's lock is taken) or `Eq`/`Clone` (which run before
/// anything changes) leaves the limiter usable.
///
/// # Examples
///
/// ```
/// use larder::{ExponentialBackoff, RateLimiter};
/// use std::time::Duration;
///
/// let backoff = ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1)).unwrap();
/// let now = Duration::ZERO;
/// assert_eq!(backoff.when(&"a", now), Duration::from_millis(5));
/// assert_eq!(backoff.when(&"a", now), Duration::from_millis(10));
/// assert_eq!(backoff.num_requeues(&"a"), 2);
/// backoff.forget(&"a");
/// assert_eq!(backoff.when(&"a", now), Duration::from_millis(5));
/// ```
pub struct ExponentialBackoff<K, S = ahash::RandomState> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashTable<(u64, K, u32)>>,
    hasher: S,
}

impl<K> ExponentialBackoff<K> {
    /// Backoff from `base`, doubling per failure, capped at `max`.
    ///
    /// # Errors
    ///
    /// [`RateLimiterError::BaseAboveMax`] if `base > max`.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::ExponentialBackoff;
    /// use std::time::Duration;
    ///
    /// assert!(ExponentialBackoff::<u32>::new(Duration::from_millis(5), Duration::from_secs(1000)).is_ok());
    /// ```
    pub fn new(base: Duration, max: Duration) -> Result<Self, RateLimiterError> {
        Self::with_hasher(base, max, crate::sync::default_hasher())
    }
}

impl<K, S> ExponentialBackoff<K, S> {
    /// [`new`](ExponentialBackoff::new) with the hasher `hasher`.
    ///
    /// # Errors
    ///
    /// [`RateLimiterError::BaseAboveMax`] if `base > max`.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::ExponentialBackoff;
    /// use std::hash::RandomState;
    /// use std::time::Duration;
    ///
    /// let backoff: ExponentialBackoff<u32, _> =
    ///     ExponentialBackoff::with_hasher(Duration::ZERO, Duration::ZERO, RandomState::new()).unwrap();
    /// # let _ = backoff;
    /// ```
    pub fn with_hasher(base: Duration, max: Duration, hasher: S) -> Result<Self, RateLimiterError> {
        if base > max {
            return Err(RateLimiterError::BaseAboveMax { base, max });
        }
        Ok(Self {
            base,
            max,
            failures: Mutex::new(HashTable::new()),
            hasher,
        })
    }

    /// The delay of a key's failure number `exponent + 1`.
    fn backoff(&self, exponent: u32) -> Duration {
        let nanos = self.base.as_nanos();
        let scaled = 1_u128
            .checked_shl(exponent)
            .and_then(|factor| nanos.checked_mul(factor));
        match scaled {
            Some(scaled) if scaled < self.max.as_nanos() => {
                Duration::from_nanos(u64::try_from(scaled).unwrap_or(u64::MAX))
            }
            _ => self.max,
        }
    }
}

impl<K, S> fmt::Debug for ExponentialBackoff<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExponentialBackoff")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("keys", &self.failures.lock().len())
            .finish_non_exhaustive()
    }
}

impl<K, S> RateLimiter<K> for ExponentialBackoff<K, S>
where
    K: Hash + Eq + Clone + Send + Sync,
    S: BuildHasher + Send + Sync,
{
    fn when(&self, key: &K, _now: Duration) -> Duration {
        let hash = self.hasher.hash_one(key);
        let mut failures = self.failures.lock();
        let found = failures.find_mut(hash, |(h, k, _)| *h == hash && k == key);
        let exponent = match found {
            Some((_, _, count)) => {
                let exponent = *count;
                *count = count.saturating_add(1);
                exponent
            }
            None => {
                let owned = key.clone();
                failures.insert_unique(hash, (hash, owned, 1), |(h, _, _)| *h);
                0
            }
        };
        drop(failures);
        self.backoff(exponent)
    }

    fn forget(&self, key: &K) {
        let hash = self.hasher.hash_one(key);
        let removed = {
            let mut failures = self.failures.lock();
            match failures.find_entry(hash, |(h, k, _)| *h == hash && k == key) {
                Ok(entry) => Some(entry.remove().0),
                Err(_) => None,
            }
        };
        drop(removed);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        let hash = self.hasher.hash_one(key);
        let failures = self.failures.lock();
        failures
            .find(hash, |(h, k, _)| *h == hash && k == key)
            .map_or(0, |(_, _, count)| *count)
    }
}

/// An overall token bucket: `rate` tokens a second, at most `burst` saved;
/// each failure takes a token, and waits until the bucket would have one
/// (client-go's `BucketRateLimiter` over `rate.Limiter`). Keeps no
/// per-key record (`num_requeues` is 0).
///
/// # Examples
///
/// ```
/// use larder::{RateLimiter, TokenBucket};
/// use std::time::Duration;
///
/// let bucket = TokenBucket::new(10.0, 2).unwrap();
/// let now = Duration::ZERO;
/// assert_eq!(bucket.when(&"a", now), Duration::ZERO);
/// assert_eq!(bucket.when(&"b", now), Duration::ZERO);
/// assert_eq!(bucket.when(&"c", now), Duration::from_millis(100)); // the burst is spent
/// ```
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    /// Tokens at `last` (negative: reserved ahead), and `last`.
    state: Mutex<(f64, Duration)>,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens, refilled at `rate` a second.
    ///
    /// # Errors
    ///
    /// [`RateLimiterError::InvalidRate`] unless `rate` is positive and
    /// finite; [`RateLimiterError::ZeroBurst`] if `burst` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TokenBucket;
    ///
    /// assert!(TokenBucket::new(10.0, 100).is_ok());
    /// assert!(TokenBucket::new(0.0, 100).is_err());
    /// ```
    pub fn new(rate: f64, burst: u32) -> Result<Self, RateLimiterError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(RateLimiterError::InvalidRate(rate));
        }
        if burst == 0 {
            return Err(RateLimiterError::ZeroBurst);
        }
        let burst = f64::from(burst);
        Ok(Self {
            rate,
            burst,
            state: Mutex::new((burst, Duration::ZERO)),
        })
    }
}

impl<K> RateLimiter<K> for TokenBucket {
    fn when(&self, _key: &K, now: Duration) -> Duration {
        let mut state = self.state.lock();
        let (tokens, last) = *state;
        let refilled = now.saturating_sub(last).as_secs_f64() * self.rate;
        let tokens = (tokens + refilled).min(self.burst) - 1.0;
        *state = (tokens, now.max(last));
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-tokens / self.rate)
        }
    }

    fn forget(&self, _key: &K) {}

    fn num_requeues(&self, _key: &K) -> u32 {
        0
    }
}

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
///     .with(ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000)).unwrap())
///     .with(TokenBucket::new(10.0, 100).unwrap());
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
    /// let limiter = MaxOf::<u32>::new().with(TokenBucket::new(1.0, 1).unwrap());
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
    /// [`WorkQueue`](super::WorkQueue) has unless its builder is given
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
        let backoff = ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000))
            .expect("larder: 5 ms is below 1000 s");
        let bucket = TokenBucket::new(10.0, 100).expect("larder: 10/s and 100 are valid");
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let backoff =
            ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000)).unwrap();
        let delays: Vec<Duration> = (0..20)
            .map(|_| backoff.when(&1_u32, Duration::ZERO))
            .collect();
        assert_eq!(delays[0], Duration::from_millis(5));
        assert_eq!(delays[1], Duration::from_millis(10));
        assert_eq!(delays[10], Duration::from_millis(5 * 1024));
        assert_eq!(delays[19], Duration::from_secs(1000));
        assert_eq!(backoff.num_requeues(&1), 20);
        assert_eq!(backoff.num_requeues(&2), 0);
        // Far past the shift's width: still the cap.
        for _ in 0..200 {
            backoff.when(&1, Duration::ZERO);
        }
        assert_eq!(backoff.when(&1, Duration::ZERO), Duration::from_secs(1000));
    }

    #[test]
    fn the_bucket_refills_at_its_rate() {
        let bucket = TokenBucket::new(10.0, 100).unwrap();
        for _ in 0..100 {
            assert_eq!(
                RateLimiter::<u32>::when(&bucket, &0, Duration::ZERO),
                Duration::ZERO
            );
        }
        let late = RateLimiter::<u32>::when(&bucket, &0, Duration::ZERO);
        assert_eq!(late, Duration::from_millis(100));
        // A second later ten tokens came back; one is reserved ahead.
        let later = RateLimiter::<u32>::when(&bucket, &0, Duration::from_secs(1));
        assert_eq!(later, Duration::ZERO);
    }

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
