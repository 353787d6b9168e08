//! The broken variants of the engine's protocols, for the loom negative
//! controls of [`LruFault`] and [`TypedFault`] (`crate::fault`) that live
//! in the engine; compiled only under `cfg(loom)`. Each step below is a
//! dispatcher: the broken variant the model selected, else the correct
//! step, which outside loom is the step itself.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use super::eviction_policy::take_if_expired;
use super::layer::{
    Layer, LayerLock, Locked, Tally, count_exclusive_lookup, count_shared_lookup, take_all_and_bump,
};
use super::{Event, PolicyShard};
use crate::fault::{LruFault, TypedFault, is_selected};

/// `clear`'s step for one shard. `InvalidateAllKeepsGeneration`: the
/// shard is emptied without bumping its user-write count, so an init that
/// raced the clear publishes a value read before it.
pub(super) fn empty_shard<K, V>(
    shard: &mut Locked<K, V>,
    now: u64,
    expired: &mut Vec<(K, V)>,
) -> Vec<(K, V)> {
    if is_selected(TypedFault::InvalidateAllKeepsGeneration) {
        return shard.entries.take_all(now, expired);
    }
    take_all_and_bump(shard, now, expired)
}

/// A counted lookup under `Exact`. `RacyStats`: the hit or miss is counted
/// after the lock is released, with a load and a separate store (lost
/// updates).
pub(super) fn get_exclusive<K, V, S, L, T, Q, R>(
    layer: &Layer<K, V, S, L, T>,
    hash: u64,
    key: &Q,
    project: impl FnOnce(&V) -> R,
) -> Option<R>
where
    K: Hash + Eq + Borrow<Q>,
    S: BuildHasher,
    L: LayerLock<Locked<K, V>>,
    T: Tally<K, V>,
    Q: ?Sized + Eq,
{
    if !is_selected(LruFault::RacyStats) {
        return count_exclusive_lookup(layer, hash, key, project);
    }
    let found = layer
        .shard(hash)
        .write()
        .entries
        .get(hash, key, || 0)
        .live()
        .map(project);
    layer.striped.record_racily(lookup(found.is_some()));
    found
}

/// A counted lookup under `Clock` or `S3Fifo`. `LateReferenceBit`: the
/// lookup and the use are two critical sections, so the hand may evict the
/// entry in between, after the hit was reported. `RacyStats`: the hit or
/// miss is counted with a load and a separate store under the shared lock,
/// which other readers hold at the same time (lost updates).
pub(super) fn get_shared<K, V, S, L, T, Q, R>(
    layer: &Layer<K, V, S, L, T>,
    hash: u64,
    key: &Q,
    project: impl FnOnce(&V) -> R,
) -> Option<R>
where
    K: Hash + Eq + Borrow<Q>,
    S: BuildHasher,
    L: LayerLock<Locked<K, V>>,
    T: Tally<K, V>,
    Q: ?Sized + Eq,
{
    if is_selected(LruFault::LateReferenceBit) {
        let found = (layer.shard(hash).read().entries)
            .peek(hash, key, 0)
            .map(project);
        let _ = (layer.shard(hash).read().entries).get_shared(hash, key, || 0);
        layer.striped.record(lookup(found.is_some()));
        return found;
    }
    if is_selected(LruFault::RacyStats) {
        let shard = layer.shard(hash).read();
        let found = shard
            .entries
            .get_shared(hash, key, || 0)
            .live()
            .map(project);
        layer.striped.record_racily(lookup(found.is_some()));
        return found;
    }
    count_shared_lookup(layer, hash, key, project)
}

/// A read's release of an entry it found expired. `ReleaseUnchecked`:
/// whatever the key holds under the write lock goes, fresh or not (a value
/// stored since the read is released as expired).
pub(super) fn take_expired<K, V, Q>(
    shard: &mut PolicyShard<K, V>,
    hash: u64,
    key: &Q,
    now: u64,
) -> Option<(K, V)>
where
    K: Borrow<Q>,
    Q: ?Sized + Eq,
{
    if is_selected(LruFault::ReleaseUnchecked) {
        return (shard.remove(hash, key, now)).map(|(key, value, _)| (key, value));
    }
    take_if_expired(shard, hash, key, now)
}

/// A lookup's event: a hit if `hit`, else a miss.
fn lookup(hit: bool) -> Event {
    if hit { Event::Hit } else { Event::Miss }
}
