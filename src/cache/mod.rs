//! The cache engine under both caches, [`LruCache`](crate::LruCache) and
//! [`TypedCache`](crate::TypedCache): one sequential shard generic over
//! its eviction policy, and one concurrent layer of such shards.
//!
//! # What a call passes through
//!
//! A **get**, on either face (`LruCache::get` through `lookup`,
//! `TypedCache::get` through `Raw::get`): the face hashes the key with no
//! lock held and calls [`Layer::get_with`], which picks the shard from the
//! hash. Under CLOCK and S3-FIFO it takes the shard's *read* lock (for
//! `TypedCache` a striped lock whose read writes only the thread's own
//! stripe), probes the slot table, marks the hit with the policy's atomic
//! (a reference bit, a frequency counter), clones the value and counts the
//! hit or miss in the thread's own counter stripe (`counters.rs`). Under
//! exact LRU it takes the *write* lock, moves the entry to the front of its
//! list and counts in the shard's own counters. An expired entry is a miss,
//! released after the lock.
//!
//! An **insert** hashes and weighs (user code) unlocked, then takes the
//! shard's write lock, where the policy's shard stores and links the entry.
//! `LruCache` bounds each shard: `insert_into` evicts down to the shard's
//! capacity under that lock, counted in the shard. `TypedCache` bounds the
//! whole cache: `insert_unevicting` stores, the bound (`typed/bound.rs`)
//! accounts the change and evicts in this shard, then, unlocked, in the
//! others; counted in the stripe. Whatever an insert displaced (the old
//! value, victims, expired entries swept on the way: `displaced.rs`) is
//! dropped or handed to the listener after every lock is released.
//!
//! # Files
//!
//! - `shard.rs`: [`Shard`], the slab of entries with stored hashes, the
//!   slot table (`crate::node_index`), weight accounting, swap-remove,
//!   take-all, shrink, and the one invariant checker; `weights.rs`: the
//!   entries' weights by slot, kept only once some entry weighs other
//!   than 1.
//! - `policy.rs`: [`Policy`], what an eviction policy is told and decides
//!   (hit, link, unlink, move, choose a victim).
//! - `exact.rs` (exact LRU), `second_chance.rs` (CLOCK, second chance),
//!   `s3fifo.rs` (S3-FIFO) with `ghost.rs` (its ghost of evicted hashes):
//!   the policies, one a file; `list.rs`: the doubly linked list that exact
//!   LRU and S3-FIFO's queues thread through the entries.
//! - `eviction_policy.rs`: [`EvictionPolicy`], the user's choice, and
//!   `PolicyShard`, a shard of the chosen policy (with or without expiry)
//!   behind one type.
//! - `expiry.rs`: time to live and time to idle for any policy's shard,
//!   the side table of entry times kept only when entries can expire, and
//!   the bounded sweep.
//! - `layer.rs`: [`Layer`], the shards behind the face's lock
//!   (parking_lot `RwLock` for `LruCache`, crossbeam `ShardedLock` for
//!   `TypedCache`: why, in its docs), hash-to-shard, the clock, lookups
//!   and hit counting, clear, purge, copy-out, statistics, "collect
//!   removals, unlock, then notify", and the invariant check over shards.
//! - `load.rs`: load on miss for both faces over `crate::flight`.
//! - `counters.rs`: the counters (per shard, and per-thread stripes) that
//!   `stats.rs`'s [`CacheStats`] is summed from.
//! - `builder.rs`: the settings both builders share; `displaced.rs`: what
//!   an insert hands back to drop unlocked; `weigher.rs`: the user's
//!   weigher.
//! - `broken.rs`: the loom models' broken variants (`cfg(loom)` only);
//!   `tests.rs`, `expiry_tests.rs`, `room_tests.rs`: unit tests.
//!
//! Design notes and measurements: `design/lru.md`.

#[cfg(loom)]
mod broken;
mod builder;
mod counters;
mod displaced;
mod eviction_policy;
mod exact;
mod expiry;
mod ghost;
mod layer;
mod list;
mod load;
mod policy;
mod s3fifo;
mod second_chance;
mod shard;
mod stats;
mod weigher;
mod weights;

pub(crate) use builder::{MAX_SHARDS, Settings, check_shards};
pub(crate) use counters::{Event, ShardCounters, Striped};
pub(crate) use displaced::Displaced;
pub(crate) use displaced::Evicted;
pub use eviction_policy::EvictionPolicy;
pub(crate) use eviction_policy::PolicyShard;
pub(crate) use exact::Exact;
pub(crate) use expiry::{Expiry, Lookup, SWEEP_BUDGET, nanos};
pub(crate) use layer::{Layer, Locked, Padded, Tally};
pub(crate) use load::{LoadFace, load, load_async};
pub(crate) use s3fifo::S3Fifo;
pub(crate) use second_chance::SecondChance;
pub(crate) use shard::{MAX_SHARD_CAPACITY, Shard};
pub use stats::CacheStats;
pub(crate) use weigher::{Weigher, weigh};

#[cfg(test)]
mod expiry_tests;
#[cfg(test)]
mod room_tests;
#[cfg(test)]
mod tests;
