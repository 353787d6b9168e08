//! The broken variants of `LruCache`'s writes, for the loom negative
//! controls of [`LruFault`] (`crate::fault`) that live here; compiled only
//! under `cfg(loom)`. Each step below is a dispatcher: the broken variant
//! the model selected, else the correct step, which outside loom is the
//! step itself.

use std::hash::{BuildHasher, Hash};

use super::LruCache;
use super::write::{insert_and_evict, resize_in_order};
use crate::cache::{Displaced, Event, Evicted};
use crate::fault::{LruFault, is_selected};
use crate::sync::Ordering;

/// `insert`'s locked step. `SplitEviction`: the new entry is stored over
/// the capacity (by its weight) in one critical section and the shard
/// evicts in a second one: the bound is exceeded in between.
pub(super) fn insert_locked<K: Hash + Eq, V, S: BuildHasher>(
    cache: &LruCache<K, V, S>,
    hash: u64,
    key: K,
    value: V,
    weight: u32,
    inserted: &mut Displaced<K, V>,
) {
    if !is_selected(LruFault::SplitEviction) {
        return insert_and_evict(cache, hash, key, value, weight, inserted);
    }
    let mut shard = cache.lock(hash);
    let capacity = shard.entries.set_capacity_lazily(usize::MAX);
    shard
        .entries
        .set_capacity_lazily(capacity + weight as usize);
    (shard.entries).insert_into(hash, key, value, weight, || 0, 0, inserted);
    shard.entries.set_capacity_lazily(capacity);
    shard.counters.record(Event::Insert);
    drop(shard);
    let mut evicted: Vec<_> = std::mem::replace(&mut inserted.evicted, Evicted::none())
        .into_iter()
        .collect();
    let mut shard = cache.lock(hash);
    shard.entries.evict_overflow(&mut evicted);
    shard.counters.add(Event::Eviction, evicted.len() as u64);
    drop(shard);
    for entry in evicted {
        inserted.evicted.push(entry);
    }
}

/// `resize`'s step. `CapacityBeforeShrink`: the smaller capacity is stored
/// before the shards shrink, so until they have, `stats()` reports more
/// entries than capacity.
pub(super) fn resize_shards<K: Hash + Eq, V, S: BuildHasher>(
    cache: &LruCache<K, V, S>,
    capacity: usize,
) {
    if !is_selected(LruFault::CapacityBeforeShrink) {
        return resize_in_order(cache, capacity);
    }
    let growing = capacity >= cache.capacity();
    // Relaxed: as in the correct step; the bug is the order.
    cache.capacity.store(capacity, Ordering::Relaxed);
    cache.resize_each_shard(capacity, growing);
}
