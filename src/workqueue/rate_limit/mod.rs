//! Rate limiters for [`WorkQueue::add_rate_limited`](crate::WorkQueue::add_rate_limited):
//! the [`RateLimiter`] trait and client-go's limiters.
//!
//! # Files
//!
//! - this one: the [`RateLimiter`] trait;
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
