//! The limiters that count each key's failures: [`ExponentialBackoff`]
//! and [`ItemFastSlow`], over one failure table ([`Failures`]).

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use hashbrown::HashTable;

use super::RateLimiter;
use crate::BuildError;
use crate::sync::Mutex;

/// Each key's count of failures since it was last forgotten: client-go's
/// `failures map[T]int` under its mutex.
///
/// Keys are kept with their hash, so a panicking `Hash` of `K` (which runs
/// before the lock is taken) or `Eq`/`Clone` (which run before anything
/// changes) leaves the table usable.
struct Failures<K, S> {
    table: Mutex<HashTable<(u64, K, u32)>>,
    hasher: S,
}

impl<K, S> Failures<K, S> {
    fn new(hasher: S) -> Self {
        Self {
            table: Mutex::new(HashTable::new()),
            hasher,
        }
    }

    /// How many keys have failures recorded.
    fn keys(&self) -> usize {
        self.table.lock().len()
    }
}

impl<K: Hash + Eq + Clone, S: BuildHasher> Failures<K, S> {
    /// Records a failure of `key`; returns how many were recorded before
    /// it (saturating at `u32::MAX`).
    fn record(&self, key: &K) -> u32 {
        let hash = self.hasher.hash_one(key);
        let mut table = self.table.lock();
        match table.find_mut(hash, |(h, k, _)| *h == hash && k == key) {
            Some((_, _, count)) => {
                let before = *count;
                *count = count.saturating_add(1);
                before
            }
            None => {
                let owned = key.clone();
                table.insert_unique(hash, (hash, owned, 1), |(h, _, _)| *h);
                0
            }
        }
    }

    /// Clears `key`'s failures; its key is dropped after unlocking.
    fn forget(&self, key: &K) {
        let hash = self.hasher.hash_one(key);
        let removed = {
            let mut table = self.table.lock();
            match table.find_entry(hash, |(h, k, _)| *h == hash && k == key) {
                Ok(entry) => Some(entry.remove().0),
                Err(_) => None,
            }
        };
        drop(removed);
    }

    /// `key`'s failures recorded.
    fn count(&self, key: &K) -> u32 {
        let hash = self.hasher.hash_one(key);
        let table = self.table.lock();
        table
            .find(hash, |(h, k, _)| *h == hash && k == key)
            .map_or(0, |(_, _, count)| *count)
    }
}

/// Per-key exponential backoff: a key's `n`th failure in a row waits
/// `base * 2^(n-1)`, at most `max` (client-go's
/// `ItemExponentialFailureRateLimiter`).
///
/// A panicking `Hash`, `Eq` or `Clone` of `K` leaves the limiter usable:
/// `Hash` runs before its lock is taken, `Eq` and `Clone` before anything
/// changes.
///
/// # Examples
///
/// ```
/// use larder::{ExponentialBackoff, RateLimiter};
/// use std::time::Duration;
///
/// let backoff = ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1));
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
    failures: Failures<K, S>,
}

impl<K> ExponentialBackoff<K> {
    /// Backoff from `base`, doubling per failure, capped at `max`.
    ///
    /// # Panics
    ///
    /// If `base > max` ([`try_new`](Self::try_new) returns the error
    /// instead).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::ExponentialBackoff;
    /// use std::time::Duration;
    ///
    /// let backoff = ExponentialBackoff::<u32>::new(Duration::from_millis(5), Duration::from_secs(1000));
    /// # let _ = backoff;
    /// ```
    pub fn new(base: Duration, max: Duration) -> Self {
        Self::try_new(base, max).unwrap_or_else(|error| panic!("{error}"))
    }

    /// [`new`](Self::new), returning an invalid setting as an error.
    ///
    /// # Errors
    ///
    /// [`BuildError::BaseAboveMax`] if `base > max`.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{BuildError, ExponentialBackoff};
    /// use std::time::Duration;
    ///
    /// let error = ExponentialBackoff::<u32>::try_new(Duration::from_secs(2), Duration::from_secs(1))
    ///     .unwrap_err();
    /// assert!(matches!(error, BuildError::BaseAboveMax { .. }));
    /// ```
    pub fn try_new(base: Duration, max: Duration) -> Result<Self, BuildError> {
        if base > max {
            return Err(BuildError::BaseAboveMax { base, max });
        }
        Ok(Self {
            base,
            max,
            failures: Failures::new(crate::sync::default_hasher()),
        })
    }
}

impl<K, S> ExponentialBackoff<K, S> {
    /// The same backoff, counting each key's failures in a table hashed
    /// with `hasher`. Failures recorded so far are forgotten: set it
    /// before use.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::ExponentialBackoff;
    /// use std::hash::RandomState;
    /// use std::time::Duration;
    ///
    /// let backoff: ExponentialBackoff<u32, RandomState> =
    ///     ExponentialBackoff::new(Duration::ZERO, Duration::ZERO).hasher(RandomState::new());
    /// # let _ = backoff;
    /// ```
    pub fn hasher<T>(self, hasher: T) -> ExponentialBackoff<K, T> {
        ExponentialBackoff {
            base: self.base,
            max: self.max,
            failures: Failures::new(hasher),
        }
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
            .field("keys", &self.failures.keys())
            .finish_non_exhaustive()
    }
}

impl<K, S> RateLimiter<K> for ExponentialBackoff<K, S>
where
    K: Hash + Eq + Clone + Send + Sync,
    S: BuildHasher + Send + Sync,
{
    fn when(&self, key: &K, _now: Duration) -> Duration {
        self.backoff(self.failures.record(key))
    }

    fn forget(&self, key: &K) {
        self.failures.forget(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures.count(key)
    }
}

/// Per-key fast, then slow retries: a key's first `fast_attempts`
/// failures in a row wait `fast`, every later one waits `slow`
/// (client-go's `ItemFastSlowRateLimiter`). For a dependency that is
/// usually back within seconds, and otherwise worth polling only now and
/// then.
///
/// A panicking `Hash`, `Eq` or `Clone` of `K` leaves the limiter usable,
/// as [`ExponentialBackoff`]'s.
///
/// # Examples
///
/// ```
/// use larder::{ItemFastSlow, RateLimiter};
/// use std::time::Duration;
///
/// let limiter =
///     ItemFastSlow::new(Duration::from_millis(5), Duration::from_secs(10), 2);
/// let now = Duration::ZERO;
/// assert_eq!(limiter.when(&"a", now), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a", now), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a", now), Duration::from_secs(10)); // the fast ones are spent
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a", now), Duration::from_millis(5));
/// ```
pub struct ItemFastSlow<K, S = ahash::RandomState> {
    fast: Duration,
    slow: Duration,
    fast_attempts: u32,
    failures: Failures<K, S>,
}

impl<K> ItemFastSlow<K> {
    /// `fast_attempts` retries after `fast`, then retries after `slow`
    /// (client-go's `NewItemFastSlowRateLimiter(fast, slow, fast_attempts)`).
    /// Zero `fast_attempts` makes every retry slow.
    ///
    /// # Panics
    ///
    /// If `fast > slow` ([`try_new`](Self::try_new) returns the error
    /// instead).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::ItemFastSlow;
    /// use std::time::Duration;
    ///
    /// let limiter = ItemFastSlow::<u32>::new(Duration::from_millis(5), Duration::from_secs(10), 3);
    /// # let _ = limiter;
    /// ```
    pub fn new(fast: Duration, slow: Duration, fast_attempts: u32) -> Self {
        Self::try_new(fast, slow, fast_attempts).unwrap_or_else(|error| panic!("{error}"))
    }

    /// [`new`](Self::new), returning an invalid setting as an error.
    ///
    /// # Errors
    ///
    /// [`BuildError::FastAboveSlow`] if `fast > slow`.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{BuildError, ItemFastSlow};
    /// use std::time::Duration;
    ///
    /// let error = ItemFastSlow::<u32>::try_new(Duration::from_secs(10), Duration::from_millis(5), 3)
    ///     .unwrap_err();
    /// assert!(matches!(error, BuildError::FastAboveSlow { .. }));
    /// ```
    pub fn try_new(fast: Duration, slow: Duration, fast_attempts: u32) -> Result<Self, BuildError> {
        if fast > slow {
            return Err(BuildError::FastAboveSlow { fast, slow });
        }
        Ok(Self {
            fast,
            slow,
            fast_attempts,
            failures: Failures::new(crate::sync::default_hasher()),
        })
    }
}

impl<K, S> ItemFastSlow<K, S> {
    /// The same limiter, counting each key's failures in a table hashed
    /// with `hasher`. Failures recorded so far are forgotten: set it
    /// before use.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::ItemFastSlow;
    /// use std::hash::RandomState;
    /// use std::time::Duration;
    ///
    /// let limiter: ItemFastSlow<u32, RandomState> =
    ///     ItemFastSlow::new(Duration::ZERO, Duration::ZERO, 1).hasher(RandomState::new());
    /// # let _ = limiter;
    /// ```
    pub fn hasher<T>(self, hasher: T) -> ItemFastSlow<K, T> {
        ItemFastSlow {
            fast: self.fast,
            slow: self.slow,
            fast_attempts: self.fast_attempts,
            failures: Failures::new(hasher),
        }
    }
}

impl<K, S> fmt::Debug for ItemFastSlow<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlow")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("fast_attempts", &self.fast_attempts)
            .field("keys", &self.failures.keys())
            .finish_non_exhaustive()
    }
}

impl<K, S> RateLimiter<K> for ItemFastSlow<K, S>
where
    K: Hash + Eq + Clone + Send + Sync,
    S: BuildHasher + Send + Sync,
{
    fn when(&self, key: &K, _now: Duration) -> Duration {
        // This failure is number `before + 1`: fast while that is at most
        // `fast_attempts`.
        let before = self.failures.record(key);
        if before < self.fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, key: &K) {
        self.failures.forget(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures.count(key)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let backoff = ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
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
    fn fast_slow_counts_saturate_and_stay_slow() {
        let limiter = ItemFastSlow::new(Duration::from_millis(1), Duration::from_secs(1), 2);
        let failures = &limiter.failures;
        let hash = failures.hasher.hash_one(7_u32);
        failures
            .table
            .lock()
            .insert_unique(hash, (hash, 7_u32, u32::MAX - 1), |(h, _, _)| *h);
        assert_eq!(limiter.when(&7, Duration::ZERO), Duration::from_secs(1));
        assert_eq!(limiter.when(&7, Duration::ZERO), Duration::from_secs(1));
        assert_eq!(limiter.num_requeues(&7), u32::MAX);
    }

    #[test]
    fn zero_fast_attempts_make_every_retry_slow() {
        let limiter = ItemFastSlow::new(Duration::from_millis(1), Duration::from_secs(1), 0);
        assert_eq!(limiter.when(&1_u32, Duration::ZERO), Duration::from_secs(1));
        assert_eq!(limiter.num_requeues(&1), 1);
    }
}
