//! The broken variants of `IndexedStore`'s protocols, for the loom
//! negative controls of [`IndexedFault`] (`crate::fault`) that live here;
//! compiled only under `cfg(loom)`. Each step below is a dispatcher: the
//! broken variant the model selected, else the correct step, which outside
//! loom is the step itself. (`WriterOneStripe` lives with the striped lock,
//! `striped_lock/broken.rs`.)

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::ops::ControlFlow;

use super::core::{Core, Inserted, Removed, drop_stale};
use super::error::IndexError;
use super::index_fn::{AllValues, Schema, Values};
use super::shard_lock::ShardWriteGuard;
use super::store::{IndexedStore, cut_at_once};
use super::visit::visit_under_one_cut;
use super::write::{
    build_then_swap, insert_in_one_section, remove_in_one_section, schema_unchanged,
};
use crate::fault::{IndexedFault, is_selected};
use crate::sync::{Arc, Ordering};

/// A write's check, under the shard's write lock, that its index values
/// were computed for the current schema. `IgnoreSchemaChange`: they are
/// taken as current whatever the schema (stale values applied; a plain
/// store's lean write under a schema that has gained an index, storing no
/// values).
pub(super) fn computed_for<K, V>(core: &Core<K, V>, schema: Option<&Arc<Schema<V>>>) -> bool {
    if !is_selected(IndexedFault::IgnoreSchemaChange) {
        return schema_unchanged(core, schema);
    }
    true
}

/// `insert`'s write under the shard's write lock. `IndexOutsideLock`: the
/// object changes in one critical section and its index entries in a
/// second one. `RevisionOutsideLock`: the revision is recorded after the
/// object's critical section.
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_insert<K, V, S>(
    store: &IndexedStore<K, V, S>,
    shard: usize,
    mut core: ShardWriteGuard<'_, Core<K, V>>,
    hash: u64,
    key: &mut Option<K>,
    object: &mut Option<V>,
    values: AllValues,
    revision: Option<u64>,
) -> Inserted<K, V>
where
    K: Eq,
{
    const OURS: &str = "larder: the object is ours";
    if is_selected(IndexedFault::IndexOutsideLock) {
        let found = core.find(hash, key.as_ref().expect(OURS));
        let key = key.take().expect(OURS);
        let value = object.take().expect(OURS);
        let (inserted, id, mut old) = core.insert_unindexed(hash, found, key, value, values);
        drop(core);
        store.shards.write(shard).reindex(id, old.as_deref_mut());
        return inserted;
    }
    if is_selected(IndexedFault::RevisionOutsideLock) {
        let inserted = core.upsert(hash, key, object, values);
        drop(core);
        if let Some(revision) = revision {
            store.revision.store(revision, Ordering::SeqCst);
        }
        return inserted;
    }
    insert_in_one_section(store, shard, core, hash, key, object, values, revision)
}

/// `remove`'s write. `IndexOutsideLock`: the object leaves in one
/// critical section and its index entries in a second one.
pub(super) fn apply_remove<K, V, S, Q>(
    store: &IndexedStore<K, V, S>,
    shard: usize,
    hash: u64,
    key: &Q,
    revision: Option<u64>,
) -> Option<Removed<K, V>>
where
    K: Borrow<Q>,
    Q: ?Sized + Eq,
{
    if !is_selected(IndexedFault::IndexOutsideLock) {
        return remove_in_one_section(store, shard, hash, key, revision);
    }
    let mut core = store.shards.write(shard);
    core.slot();
    let id = core.find(hash, key)?;
    let (removed, (values, at)) = core.remove_unindexed(hash, id);
    drop(core);
    store.shards.write(shard).unindex(id, &values, &at);
    Some(removed)
}

/// `replace`. `ReplacePiecewise`: the store is cleared, then each item
/// inserted in a critical section of its own.
pub(super) fn replace_with<K, V, S>(
    store: &IndexedStore<K, V, S>,
    items: impl Iterator<Item = (K, V)>,
    revision: Option<u64>,
) -> Result<(), IndexError>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    if !is_selected(IndexedFault::ReplacePiecewise) {
        return build_then_swap(store, items, revision);
    }
    store.clear();
    for (key, value) in items {
        store.insert(key, value)?;
    }
    Ok(())
}

/// The whole-store cut. `CutShardByShard`: each shard is read under its
/// own lock, released before the next is taken.
pub(super) fn read_cut<K, V, S, E>(
    store: &IndexedStore<K, V, S>,
    mut f: impl FnMut(&Core<K, V>) -> Result<(), E>,
) -> Result<(), E> {
    if !is_selected(IndexedFault::CutShardByShard) {
        return cut_at_once(store, f);
    }
    for shard in 0..store.shards.count() {
        f(&store.shards.read(shard))?;
    }
    Ok(())
}

/// The visit of one index value's bucket. `VisitTwoLocks`: the bucket's
/// keys under one read lock, each object under another, so an object
/// updated in between is visited under a value it no longer has.
pub(super) fn visit_bucket<K, V, S, B>(
    store: &IndexedStore<K, V, S>,
    name: &str,
    value: &str,
    mut f: impl FnMut(&K, &V) -> ControlFlow<B>,
) -> Result<ControlFlow<B>, IndexError>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    if !is_selected(IndexedFault::VisitTwoLocks) {
        return visit_under_one_cut(store, name, value, f);
    }
    let keys = {
        let cores = store.shards.read_all();
        let schema = cores.first().schema();
        let position = schema.position(name)?;
        let hash = schema.hash_value(value);
        let mut keys = Vec::new();
        for core in cores.iter() {
            core.index_keys_into(position, hash, value, &mut keys);
        }
        keys
    };
    for key in keys {
        if let Some(ControlFlow::Break(stop)) = store.get_with(&key, |object| f(&key, object)) {
            return Ok(ControlFlow::Break(stop));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// `add_index`'s drop of the values the writes since its watch made stale.
/// `AddIndexIgnoresWrites`: the written slots keep the values computed
/// from their old objects.
pub(super) fn drop_written<K, V>(core: &Core<K, V>, computed: &mut HashMap<usize, Values>) {
    if !is_selected(IndexedFault::AddIndexIgnoresWrites) {
        drop_stale(core, computed);
    }
}
