//! [`LruCache`]: a bounded, sharded LRU cache with statistics and
//! single-flight load-on-miss, the concurrent form of Python's
//! `functools.lru_cache`.
//!
//! One shard's entries and eviction are the engine's (`crate::cache`:
//! exact LRU, CLOCK, S3-FIFO); this module is the concurrent face.
//!
//! - `policy.rs`: [`EvictionPolicy`], and the engine shard under the policy
//!   chosen at run time.
//! - `cache.rs`: the concurrent wrapper (one padded reader-writer lock per
//!   shard); `read.rs`: its lookups (`get`, `get_with`,
//!   `peek`, `peek_with`) and what a hit writes.
//! - `load.rs`: load on miss (the face's side of `crate::cache::load`),
//!   and [`LoadingLruCache`].
//! - `load_async.rs`, `async_loading.rs`: async load on miss, and
//!   [`AsyncLoadingLruCache`].
//! - `write.rs`: `insert`, `remove`, `resize`.
//! - `builder.rs`: configuration. The counters of `stats()` are
//!   `crate::cache`'s (`stats.rs`), shared with `TypedCache`.
//!
//! Design notes and the measurements behind them: `design/lru.md`.

mod async_loading;
mod builder;
mod cache;
mod load;
mod load_async;
mod read;
mod write;

pub use crate::cache::EvictionPolicy;
pub use async_loading::AsyncLoadingLruCache;
pub use builder::LruCacheBuilder;
pub use cache::LruCache;
pub use load::LoadingLruCache;

pub(crate) use crate::removal::Listener;

#[cfg(all(test, not(loom)))]
mod tests;
