//! The cache engine under [`LruCache`](crate::LruCache): one sequential
//! shard, generic over its eviction policy.
//!
//! - `shard.rs`: [`Shard`], the slab of entries with stored hashes, the
//!   slot table (`crate::node_index`), weight accounting, swap-remove,
//!   take-all, shrink, and the one invariant checker.
//! - `policy.rs`: [`Policy`], what an eviction policy is told and decides
//!   (hit, link, unlink, move, choose a victim).
//! - `exact.rs` (exact LRU), `clock.rs` (CLOCK, second chance),
//!   `s3fifo.rs` (S3-FIFO) with `ghost.rs` (its ghost of evicted hashes):
//!   the policies, one a file; `list.rs`: the doubly linked list that exact
//!   LRU and S3-FIFO's queues thread through the entries.
//! - `displaced.rs`: what an insert hands back to drop unlocked;
//!   `weigher.rs`: the user's weigher.
//!
//! Design notes and measurements: `design/lru.md`.

mod clock;
mod displaced;
mod exact;
mod ghost;
mod list;
mod policy;
mod s3fifo;
mod shard;
mod weigher;

pub(crate) use clock::Clock;
pub(crate) use displaced::Evicted;
pub(crate) use displaced::Inserted;
pub(crate) use exact::Exact;
pub(crate) use s3fifo::S3Fifo;
pub(crate) use shard::{MAX_SHARD_CAPACITY, Shard};
pub(crate) use weigher::{Weigher, weigh};

#[cfg(all(test, not(loom)))]
mod tests;
