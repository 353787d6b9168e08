//! The broken variants of the typed faces' writes, for the loom negative
//! controls of [`TypedFault`] (`crate::fault`) that live here; compiled
//! only under `cfg(loom)`. Each step below is a dispatcher: the broken
//! variant the model selected, else the correct step, which outside loom
//! is the step itself.

use std::hash::{BuildHasher, Hash};

use super::bound::{Bound, Size, account_size, set_capacity_then_evict};
use super::raw::{
    Raw, TypedLayer, bump_for_user_write, store_by_weight, sweep_budget, written_since,
};
use crate::cache::{Event, Locked};
use crate::fault::{TypedFault, is_selected};
use crate::removal::{Removal, RemovalCause};
use crate::sync::ShardedLock;

/// The store. `EvictionCheckedBeforeLock`: whether eviction is needed is
/// decided from the total read before the shard lock is taken
/// (check-then-act): two stores into different shards can both decide "no
/// room needed", and store without evicting.
pub(super) fn store<K, V, S>(
    raw: &Raw<K, V, S>,
    hash: u64,
    key: K,
    value: V,
    expect: Option<u64>,
    user: bool,
) -> Option<V>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    let bound = &raw.layer.tally;
    let weight = match bound.weighted() {
        false => bound.weigh::<false>(&key, &value),
        true => bound.weigh::<true>(&key, &value),
    };
    let fits = weight.zip(bound.capacity()).is_some_and(|(weight, max)| {
        let held = bound.weight().unwrap_or(bound.len());
        held + weight as usize <= max
    });
    if !is_selected(TypedFault::EvictionCheckedBeforeLock) || !fits {
        return store_by_weight(raw, hash, key, value, expect, user);
    }
    let weight = weight.unwrap_or(1);
    let now = raw.layer.now();
    let mut garbage = Vec::new();
    let mut swept = Vec::new();
    let stored = raw.layer.write(raw.layer.index(hash), |core| {
        if written_since(core, expect) {
            return None;
        }
        raw.layer.striped.record(Event::Insert);
        let (_, displaced) =
            (core.entries).insert_unevicting(hash, key, value, weight, || now, 0, &mut swept);
        bump_for_user_write(core, user);
        Some(displaced)
    });
    let replaced = stored.flatten().map(|(key, old, expired)| {
        let cause = match expired {
            true => RemovalCause::Expired,
            false => RemovalCause::Replaced,
        };
        garbage.push((key, old, cause));
        !expired && user
    });
    raw.release_returning(garbage, replaced.filter(|&live| live).map(|_| 0))
}

/// Whether an init lost to a user write. `InitIgnoresWrites`: never, so an
/// init's value overwrites writes that landed while it ran.
pub(super) fn raced<K, V>(shard: &Locked<K, V>, expect: Option<u64>) -> bool {
    !is_selected(TypedFault::InitIgnoresWrites) && written_since(shard, expect)
}

/// A store's count of a user write. `InsertKeepsGeneration`: none, so an
/// init that raced the insert overwrites the inserted value.
pub(super) fn bump_for<K, V>(shard: &mut Locked<K, V>, user_write: bool) {
    if !is_selected(TypedFault::InsertKeepsGeneration) {
        bump_for_user_write(shard, user_write);
    }
}

/// A write's sweep budget. `WriteSkipsSweep`: none, so an expired entry
/// stays until a read finds it or `purge_expired` runs.
pub(super) fn write_sweep<K, V, S>(layer: &TypedLayer<K, V, S>) -> usize {
    match is_selected(TypedFault::WriteSkipsSweep) {
        true => 0,
        false => sweep_budget(layer),
    }
}

/// `resize`'s step. `CapacityAfterShrink`: evicts down to the new capacity
/// before setting it, so a write landing in between evicts to the old one,
/// and its entry stays over the new one.
pub(super) fn apply_capacity<K, V>(
    bound: &Bound<K, V>,
    shards: &[ShardedLock<Locked<K, V>>],
    capacity: usize,
    now: u64,
    garbage: &mut Vec<Removal<K, V>>,
) {
    if !is_selected(TypedFault::CapacityAfterShrink) {
        return set_capacity_then_evict(bound, shards, capacity, now, garbage);
    }
    bound.evict_to(shards, capacity, now, garbage);
    bound.set_capacity(capacity, shards.len());
}

/// An eviction's accounting. `EvictionKeepsWeight`: the victim's weight
/// stays in the total.
pub(super) fn account_eviction<K, V>(bound: &Bound<K, V>, before: Size, mut after: Size) {
    if is_selected(TypedFault::EvictionKeepsWeight) {
        after.weight = before.weight;
    }
    account_size(bound, before, after);
}
