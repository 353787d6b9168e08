//! [`LruCache`]: a bounded, sharded LRU cache with statistics and
//! single-flight load-on-miss, the concurrent form of Python's
//! `functools.lru_cache`.
//!
//! The shards, their locks, lookups, expiry and statistics are the
//! engine's (`crate::cache`: its `Layer` over exact LRU, CLOCK or S3-FIFO
//! shards); this module is the face with a hard bound.
//!
//! # Files
//!
//! - `cache.rs`: [`LruCache`] over the engine's layer (one padded
//!   reader-writer lock per shard), each shard bounded by its share of the
//!   capacity; `read.rs`: its lookups (`get`, `get_with`, `peek`,
//!   `peek_with`).
//! - `load.rs`: load on miss (the face's side of `crate::cache::load`),
//!   and [`LoadingLruCache`].
//! - `load_async.rs`, `async_loading.rs`: async load on miss, and
//!   [`AsyncLoadingLruCache`].
//! - `write.rs`: `insert`, `remove`, `resize`.
//! - `builder.rs`: configuration. The counters of `stats()` are
//!   `crate::cache`'s, shared with `TypedCache`.
//! - `broken.rs`: the loom models' broken variants (`cfg(loom)` only);
//!   `tests.rs`: unit tests.
//!
//! Design notes and the measurements behind them: `design/lru.md`.

mod async_loading;
#[cfg(loom)]
mod broken;
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

#[cfg(test)]
mod tests;
