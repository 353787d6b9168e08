//! [`BuildError`]: why a builder, of any primitive, refused its settings.

use std::error::Error;
use std::fmt;

use crate::IndexError;

/// Why a builder refused its settings: the one error of every builder's
/// `build()` (and of [`LruCache::resize`](crate::LruCache::resize), which
/// checks a new capacity as `build` does). Each variant names the setting
/// at fault.
///
/// # Examples
///
/// ```
/// use larder::{BuildError, IndexError, IndexedStore, LruCache, TypedCache};
/// use std::time::Duration;
///
/// let err = LruCache::<u32, u32>::builder().capacity(0).build().unwrap_err();
/// assert!(matches!(err, BuildError::ZeroCapacity));
///
/// let err = TypedCache::<u32, u32>::builder()
///     .time_to_live(Duration::ZERO)
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, BuildError::ZeroTimeToLive));
/// assert!(err.to_string().contains("time to live"));
///
/// // A duplicate index is the same error whether `build` or `add_index`
/// // finds it.
/// let err = IndexedStore::<String, String>::builder()
///     .index("len", |s: &String| [s.len().to_string()])
///     .index("len", |s: &String| [s.len().to_string()])
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, BuildError::Index(IndexError::DuplicateIndex { .. })));
/// assert_eq!(err.to_string(), "an index named \"len\" already exists");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// `capacity(0)`, or (for [`LruCache`](crate::LruCache), whose bound is
    /// required) no capacity at all: such a cache could hold nothing.
    ZeroCapacity,
    /// `shards(0)`.
    ZeroShards,
    /// More shards than capacity: some shards would hold nothing, and their
    /// keys could never be cached.
    MoreShardsThanCapacity {
        /// The shard count asked for.
        shards: usize,
        /// The capacity asked for.
        capacity: usize,
    },
    /// More shards than the primitive allows
    /// ([`LruCache::MAX_SHARDS`](crate::LruCache::MAX_SHARDS), or 128 for an
    /// [`IndexedStore`](crate::IndexedStore)).
    TooManyShards {
        /// The shard count asked for.
        shards: usize,
        /// The most this primitive allows.
        max: usize,
    },
    /// `time_to_live(Duration::ZERO)`: every entry would expire at once.
    ZeroTimeToLive,
    /// `time_to_idle(Duration::ZERO)`: every entry would expire at once.
    ZeroTimeToIdle,
    /// The requested
    /// [`initial_capacity`](crate::IndexedStoreBuilder::initial_capacity)
    /// cannot be reserved: it overflows the table's size, or the allocator
    /// refused it.
    CapacityOverflow {
        /// The initial capacity asked for.
        initial_capacity: usize,
    },
    /// An [`ExponentialBackoff`](crate::ExponentialBackoff)'s first delay
    /// is above its cap.
    BaseAboveMax {
        /// The first delay given.
        base: std::time::Duration,
        /// The cap given.
        max: std::time::Duration,
    },
    /// An [`ItemFastSlow`](crate::ItemFastSlow)'s fast delay is above its
    /// slow delay.
    FastAboveSlow {
        /// The delay of the first, fast retries.
        fast: std::time::Duration,
        /// The delay of the retries after them.
        slow: std::time::Duration,
    },
    /// A [`TokenBucket`](crate::TokenBucket)'s rate is not a positive,
    /// finite number of tokens a second.
    InvalidRate {
        /// The rate given.
        rate: f64,
    },
    /// A [`TokenBucket`](crate::TokenBucket) with a burst of 0 could never
    /// hand out a token.
    ZeroBurst,
    /// A controller's `workers(0)`: no key would ever be reconciled.
    ZeroWorkers,
    /// An index definition was refused, as
    /// [`IndexedStore::add_index`](crate::IndexedStore::add_index) refuses
    /// it: [`IndexError::DuplicateIndex`] when two indexes share a name.
    Index(IndexError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroCapacity => f.write_str("the capacity must be at least 1"),
            Self::ZeroShards => f.write_str("the shard count must be at least 1"),
            Self::MoreShardsThanCapacity { shards, capacity } => write!(
                f,
                "{shards} shards need a capacity of at least {shards} (got {capacity}): every shard must hold at least one entry"
            ),
            Self::TooManyShards { shards, max } => write!(
                f,
                "the shard count {shards} exceeds the most allowed, {max}"
            ),
            Self::ZeroTimeToLive => {
                f.write_str("a zero time to live would expire every entry at once")
            }
            Self::ZeroTimeToIdle => {
                f.write_str("a zero time to idle would expire every entry at once")
            }
            Self::CapacityOverflow { initial_capacity } => {
                write!(f, "cannot reserve room for {initial_capacity} objects")
            }
            Self::BaseAboveMax { base, max } => {
                write!(f, "backoff base {base:?} is above its cap {max:?}")
            }
            Self::FastAboveSlow { fast, slow } => {
                write!(
                    f,
                    "fast retry delay {fast:?} is above the slow one {slow:?}"
                )
            }
            Self::InvalidRate { rate } => write!(
                f,
                "token rate {rate} is not a positive, finite number per second"
            ),
            Self::ZeroBurst => f.write_str("a token bucket's burst must be at least 1"),
            Self::ZeroWorkers => f.write_str("a controller needs at least 1 worker"),
            Self::Index(error) => fmt::Display::fmt(error, f),
        }
    }
}

impl Error for BuildError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Index(error) => error.source(),
            _ => None,
        }
    }
}

impl From<IndexError> for BuildError {
    fn from(error: IndexError) -> Self {
        Self::Index(error)
    }
}
