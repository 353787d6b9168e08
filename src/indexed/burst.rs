//! A burst of revisioned changes applied as one write: the reflector's form
//! of [`transaction`](super::IndexedStore::transaction) for the watch events
//! a stream already holds.
//!
//! Every change's index values are computed with no lock held; the shards
//! the burst touches are write-locked once each, in ascending order; the
//! changes are applied in order and the store's revision set to the last
//! change's, in that one critical section. A change an index function
//! rejects removes its key instead (the cache must not keep content the
//! source no longer holds) and comes back with its error. So a whole-store
//! read sees none of a burst or all of it, and a point read never pairs an
//! object with a revision it does not belong with.

use std::hash::{BuildHasher, Hash};

use super::core::{Inserted, Removed};
use super::error::IndexError;
use super::index_fn::{AllValues, Schema};
use super::shards::ShardSet;
use super::store::IndexedStore;
use super::transaction::{self, Garbage, Op};
use crate::sync::{Arc, Ordering};

/// One change of a burst.
pub(crate) enum Change<K, V> {
    /// `key` now holds the object.
    Put(K, Arc<V>),
    /// `key` was deleted.
    Delete(K),
}

/// What one change of a burst did, in the burst's order.
pub(crate) struct Outcome<K, V> {
    pub(crate) key: K,
    /// The object the change replaced or removed.
    pub(crate) previous: Option<Arc<V>>,
    /// A put's error from an index function: its key was removed instead.
    pub(crate) rejected: Option<IndexError>,
}

impl<K, V, S> IndexedStore<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// Applies `changes` in order as one write (see the module), setting the
    /// store's revision to `revision`. Runs `K`'s `Hash` and `Clone` and the
    /// index functions with no lock held, `K`'s `Eq` under the locks before
    /// any change; a panic in any of them leaves the store unchanged.
    pub(crate) fn apply_burst(
        &self,
        changes: Vec<Change<K, V>>,
        revision: u64,
    ) -> Vec<Outcome<K, V>> {
        let mut schema = self.schema();
        let mut rejected: Vec<Option<IndexError>> = changes.iter().map(|_| None).collect();
        let mut ops: Vec<Op<K, V>> = changes
            .into_iter()
            .map(|change| match change {
                Change::Put(key, value) => Op::Insert {
                    key_copy: key.clone(),
                    key,
                    value,
                    values: AllValues::default(),
                },
                Change::Delete(key) => Op::Remove { key },
            })
            .collect();
        ops = compute(&schema, ops, &mut rejected);
        let plan = transaction::plan(&ops, &self.hasher, |hash| self.shards.of(hash));
        let mut touched = ShardSet::default();
        for &shard in plan.shards() {
            touched.insert(shard);
        }
        let garbage = loop {
            let mut cores = self.shards.write_some(&touched);
            let Some((_, first)) = cores.first() else {
                self.revision.store(revision, Ordering::SeqCst);
                return Vec::new();
            };
            if Arc::ptr_eq(first.schema(), &schema) {
                let garbage = transaction::apply(&mut cores, &plan, ops);
                self.revision.store(revision, Ordering::SeqCst);
                drop(cores);
                break garbage;
            }
            // An index was added meanwhile: recompute, no lock held.
            schema = Arc::clone(first.schema());
            drop(cores);
            ops = compute(&schema, ops, &mut rejected);
        };
        outcomes(garbage, rejected)
    }
}

/// Computes every put's index values for `schema`; a put an index function
/// rejects becomes a remove of its key, its error kept in `rejected`.
/// Runs user code: call with no lock held.
fn compute<K, V>(
    schema: &Schema<V>,
    ops: Vec<Op<K, V>>,
    rejected: &mut [Option<IndexError>],
) -> Vec<Op<K, V>> {
    ops.into_iter()
        .zip(rejected)
        .map(|(op, rejected)| match op {
            Op::Insert {
                key,
                key_copy,
                value,
                ..
            } => match schema.compute(&value) {
                Ok(values) => Op::Insert {
                    key,
                    key_copy,
                    value,
                    values,
                },
                Err(error) => {
                    *rejected = Some(error);
                    Op::Remove { key }
                }
            },
            remove @ Op::Remove { .. } => remove,
        })
        .collect()
}

/// Each change's outcome from what [`transaction::apply`] handed back (a
/// replaced or removed entry, then the key, per change). Drops the rest:
/// call with no lock held.
fn outcomes<K, V>(
    garbage: Vec<Garbage<K, V>>,
    rejected: Vec<Option<IndexError>>,
) -> Vec<Outcome<K, V>> {
    let mut garbage = garbage.into_iter();
    rejected
        .into_iter()
        .map(|rejected| {
            let previous = match garbage.next() {
                Some(Garbage::Inserted(Inserted::Updated { previous, .. })) => Some(previous),
                Some(Garbage::Removed(Some(Removed { value, .. }))) => Some(value),
                Some(Garbage::Inserted(Inserted::New) | Garbage::Removed(None)) => None,
                Some(Garbage::Key(_)) | None => unreachable!("an entry, then a key, per change"),
            };
            let Some(Garbage::Key(key)) = garbage.next() else {
                unreachable!("an entry, then a key, per change")
            };
            Outcome {
                key,
                previous,
                rejected,
            }
        })
        .collect()
}
