//! Rate limiters for [`WorkQueue::add_rate_limited`](crate::WorkQueue::add_rate_limited):
//! the [`RateLimiter`] trait and client-go's limiters.
//!
//! - `per_key.rs`: the limiters that count each key's failures (one
//!   failure table serves both): [`ExponentialBackoff`] and
//!   [`ItemFastSlow`].
//! - `bucket.rs`: the overall [`TokenBucket`].
//! - `combine.rs`: the limiters over other limiters, [`MaxOf`] (and
//!   client-go's default controller limiter, [`MaxOf::controller_default`])
//!   and [`WithMaxWait`].

mod bucket;
mod combine;
mod per_key;

pub use bucket::TokenBucket;
pub use combine::{MaxOf, WithMaxWait};
pub use per_key::{ExponentialBackoff, ItemFastSlow};

use std::fmt;
use std::time::Duration;

/// Decides how long a key waits before it is queued again after a
/// failure: client-go's `workqueue.TypedRateLimiter`.
///
/// `when` is called once per [`add_rate_limited`](crate::WorkQueue::add_rate_limited)
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
    /// The fast delay of an [`ItemFastSlow`] is above its slow delay.
    FastAboveSlow {
        /// The delay of the first, fast retries.
        fast: Duration,
        /// The delay of the retries after them.
        slow: Duration,
    },
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
            Self::FastAboveSlow { fast, slow } => {
                write!(
                    f,
                    "fast retry delay {fast:?} is above the slow one {slow:?}"
                )
            }
        }
    }
}

impl std::error::Error for RateLimiterError {}
