//! [`TokenBucket`]: client-go's overall limiter (`BucketRateLimiter` over
//! `rate.Limiter`), on the queue's clock.

use std::time::Duration;

use super::RateLimiter;
use crate::BuildError;
use crate::sync::Mutex;

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
/// let bucket = TokenBucket::new(10.0, 2);
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
    /// # Panics
    ///
    /// Unless `rate` is positive and finite and `burst` at least 1
    /// ([`try_new`](Self::try_new) returns the error instead).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TokenBucket;
    ///
    /// let bucket = TokenBucket::new(10.0, 100);
    /// # let _ = bucket;
    /// ```
    pub fn new(rate: f64, burst: u32) -> Self {
        Self::try_new(rate, burst).unwrap_or_else(|error| panic!("{error}"))
    }

    /// [`new`](Self::new), returning an invalid setting as an error.
    ///
    /// # Errors
    ///
    /// [`BuildError::InvalidRate`] unless `rate` is positive and finite;
    /// [`BuildError::ZeroBurst`] if `burst` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{BuildError, TokenBucket};
    ///
    /// assert!(TokenBucket::try_new(10.0, 100).is_ok());
    /// assert!(matches!(TokenBucket::try_new(0.0, 100), Err(BuildError::InvalidRate { .. })));
    /// ```
    pub fn try_new(rate: f64, burst: u32) -> Result<Self, BuildError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(BuildError::InvalidRate { rate });
        }
        if burst == 0 {
            return Err(BuildError::ZeroBurst);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_refills_at_its_rate() {
        let bucket = TokenBucket::new(10.0, 100);
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
}
