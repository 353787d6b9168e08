//! [`LruCache`]: a bounded, sharded LRU cache with statistics and
//! single-flight load-on-miss, the concurrent form of Python's
//! `functools.lru_cache`.
//!
//! One shard's entries and eviction are the engine's (`crate::cache`:
//! exact LRU, CLOCK, S3-FIFO); this module is the concurrent face.
//!
//! - `policy.rs`: [`LruPolicy`], and the engine shard under the policy
//!   chosen at run time.
//! - `cache.rs`: the concurrent wrapper (one padded reader-writer lock per
//!   shard); `read.rs`: its lookups (`get`, `get_with`,
//!   `peek`, `peek_with`) and what a hit writes.
//! - `load.rs`: load on miss through `crate::flight`, and [`LoadingLruCache`].
//! - `load_async.rs`, `async_loading.rs`: async load on miss, and
//!   [`AsyncLoadingLruCache`].
//! - `write.rs`: `insert`, `remove`, `resize`.
//! - `builder.rs`, `stats.rs`: configuration and the shard counters of
//!   `cache_info()` (the crate's `CacheStats`).
//!
//! Design notes and the measurements behind them: `design/lru.md`.

mod async_loading;
mod builder;
mod cache;
mod load;
mod load_async;
mod policy;
mod read;
mod stats;
mod write;

pub use async_loading::AsyncLoadingLruCache;
pub use builder::LruCacheBuilder;
pub use cache::LruCache;
pub use load::LoadingLruCache;
pub use policy::LruPolicy;

pub(crate) use crate::removal::Listener;

/// A deliberately broken protocol, for the loom suite's negative controls.
#[cfg(loom)]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The correct protocol.
    None,
    /// `insert` adds the entry in one critical section and evicts in a
    /// second one: the bound (the entry count, or with a weigher the total
    /// weight) is exceeded in between.
    SplitEviction,
    /// `get` counts its hit or miss with a load then a store: outside the
    /// shard lock under `Exact`, under the shared lock (which other readers
    /// hold too) under `Clock`. Lost updates either way.
    RacyStats,
    /// Load on miss skips the single-flight group (check-then-act): racing
    /// misses each run the loader.
    SkipFlight,
    /// Under `Clock`, a hit finds its entry under one shared lock and sets
    /// its reference bit under a second one: the hand can evict the entry
    /// in between, after the hit was reported.
    LateReferenceBit,
    /// `resize` stores a smaller capacity before the shards shrink: until
    /// they have, `stats()` reports more entries than capacity.
    CapacityBeforeShrink,
    /// The single-flight group wakes one waiter instead of all when a load
    /// ends (`FlightFault::NotifyOne`).
    NotifyOne,
}

#[cfg(all(test, not(loom)))]
mod tests;
