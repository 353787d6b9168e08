//! [`LruCache`]: a bounded, sharded LRU cache with statistics and
//! single-flight load-on-miss, the concurrent form of Python's
//! `functools.lru_cache`.
//!
//! - `core.rs`: one shard's exact LRU, sequential (`&mut self`, no locks).
//! - `cache.rs`: the concurrent wrapper (one padded mutex per shard).
//! - `load.rs`: load on miss through `crate::flight`, and [`LoadingLruCache`].
//! - `builder.rs`, `stats.rs`, `iter.rs`: configuration, `cache_info()`,
//!   snapshots.
//!
//! Design notes and the measurements behind them: `docs/lru.md`.

mod builder;
mod cache;
mod core;
mod iter;
mod load;
mod stats;

pub use builder::{LruBuildError, LruCacheBuilder};
pub use cache::LruCache;
pub use iter::LruIter;
pub use load::LoadingLruCache;
pub use stats::CacheStats;

use crate::sync::Arc;

/// The eviction listener: called with each evicted entry, unlocked.
pub(crate) type Listener<K, V> = Arc<dyn Fn(K, Arc<V>) + Send + Sync>;

/// A deliberately broken protocol, for the loom suite's negative controls.
#[cfg(loom)]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The correct protocol.
    None,
    /// `insert` adds the entry in one critical section and evicts in a
    /// second one: the bound is exceeded in between.
    SplitEviction,
    /// `get` counts its hit or miss outside the shard lock with a load then a
    /// store (lost updates).
    RacyStats,
    /// Load on miss skips the single-flight group (check-then-act): racing
    /// misses each run the loader.
    SkipFlight,
}

#[cfg(all(test, not(loom)))]
mod tests;
