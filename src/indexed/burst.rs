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

use super::core::Inserted;
use super::error::IndexError;
use super::index_fn::{AllValues, Schema};
use super::store::IndexedStore;
use super::transaction::{self, Garbage, Op, Spare};
use crate::sync::{Arc, Ordering};

/// One change of a burst.
pub(crate) enum BurstChange<K, V> {
    /// `key` now holds the object.
    Put(K, V),
    /// `key` was deleted.
    Delete(K),
}

/// What one change of a burst did, in the burst's order.
pub(crate) struct BurstOutcome<K, V> {
    pub(crate) key: K,
    /// The object the change replaced or removed.
    pub(crate) previous: Option<V>,
    /// A put's error from an index function: its key was removed instead.
    pub(crate) rejected: Option<IndexError>,
}

/// What a change keeps beside its operation until its outcome is known: a
/// put's copy of its key (the store may keep the one it brought), and an
/// index function's error that turned the put into a remove.
struct Pending<K> {
    key: Option<K>,
    rejected: Option<IndexError>,
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
        changes: Vec<BurstChange<K, V>>,
        revision: u64,
    ) -> Vec<BurstOutcome<K, V>> {
        let mut schema = self.schema();
        let Spare {
            mut ops,
            steps,
            mut garbage,
        } = self.take_spare();
        ops.reserve_exact(changes.len());
        let mut pending = Vec::with_capacity(changes.len());
        for change in changes {
            let (op, key) = match change {
                BurstChange::Put(key, value) => {
                    let copy = key.clone();
                    let op = Op::Insert {
                        key,
                        value,
                        values: AllValues::default(),
                    };
                    (op, Some(copy))
                }
                BurstChange::Delete(key) => (Op::Remove { key }, None),
            };
            ops.push(op);
            pending.push(Pending {
                key,
                rejected: None,
            });
        }
        compute(&schema, &mut ops, &mut pending);
        let mut plan = transaction::plan(&ops, steps, &self.hasher, |hash| self.shards.of(hash));
        loop {
            // Declared after `ops`: if a probe panics, the locks go first.
            let mut cores = self.shards.write_some(plan.touched());
            let Some(first) = cores.first() else {
                self.revision.store(revision, Ordering::SeqCst);
                return Vec::new();
            };
            if Arc::ptr_eq(first.schema(), &schema) {
                transaction::apply(&mut cores, &mut plan, &mut ops, &mut garbage);
                self.revision.store(revision, Ordering::SeqCst);
                drop(cores);
                break;
            }
            // An index was added meanwhile: recompute, no lock held.
            schema = Arc::clone(first.schema());
            drop(cores);
            compute(&schema, &mut ops, &mut pending);
        }
        let outcomes = outcomes(garbage.drain(..), pending);
        self.keep_spare(Spare {
            ops,
            steps: plan.into_steps(),
            garbage,
        });
        outcomes
    }
}

/// Computes every put's index values for `schema`; a put an index function
/// rejects becomes a remove of its key, its error kept in `pending`.
/// Runs user code: call with no lock held.
fn compute<K, V>(schema: &Schema<V>, ops: &mut [Op<K, V>], pending: &mut [Pending<K>]) {
    for (op, pending) in ops.iter_mut().zip(pending) {
        let Op::Insert { value, values, .. } = op else {
            continue;
        };
        match schema.compute(value) {
            Ok(computed) => *values = computed,
            Err(error) => {
                pending.rejected = Some(error);
                // The remove takes the put's copy of the key (its outcome
                // gets the key back from the remove); the put drops here.
                let key = pending
                    .key
                    .take()
                    .expect("larder: a put keeps a copy of its key");
                drop(std::mem::replace(op, Op::Remove { key }));
            }
        }
    }
}

/// Each change's outcome from what [`transaction::apply`] handed back (one
/// item per change). Drops the rest: call with no lock held.
fn outcomes<K, V>(
    garbage: impl Iterator<Item = Garbage<K, V>>,
    pending: Vec<Pending<K>>,
) -> Vec<BurstOutcome<K, V>> {
    garbage
        .zip(pending)
        .map(|(garbage, Pending { key, rejected })| {
            let (brought, previous) = match garbage {
                Garbage::Inserted(Inserted::New) => (None, None),
                Garbage::Inserted(Inserted::Updated {
                    previous, unused, ..
                }) => (Some(unused), Some(previous)),
                Garbage::Removed(key, removed) => (Some(key), removed.map(|r| r.value)),
            };
            BurstOutcome {
                key: key
                    .or(brought)
                    .expect("larder: a put keeps a copy of its key"),
                previous,
                rejected,
            }
        })
        .collect()
}
