//! Consuming [`OrderedIndex`]: `retain`, and taking entries from the ends
//! (`pop_first`, `pop_last`, `drain_to`), each atomic.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::ops::Bound;

use super::sequential::Pair;
use super::{Engine, OrderedIndex};
use crate::sync::Arc;

#[cfg(loom)]
use super::broken::{drain_step, pop_first_step};
#[cfg(not(loom))]
use {drain_in_one_step as drain_step, pop_first_in_one_step as pop_first_step};

impl<K: Ord + Clone + Hash, V, S: BuildHasher> OrderedIndex<K, V, S> {
    /// Keeps only the entries for which `f` returns `true`.
    ///
    /// **Not one atomic step**, so that `f` never runs under a lock: `f`
    /// sees every entry of one consistent cut of the index, in key order,
    /// outside any lock; then the entries it rejected are removed (with one
    /// lock in one atomic step, with leaves one entry at a time), each only
    /// if it still holds the very value `f` saw. An entry inserted, replaced
    /// or removed while `f` runs is therefore left as the concurrent writer
    /// made it, never removed on the strength of a stale look. If `f`
    /// panics, nothing is removed.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u32, u32> = (0..10).map(|k| (k, k * k)).collect();
    /// index.retain(|_, square| square % 2 == 0);
    /// let keys: Vec<u32> = index.to_vec().into_iter().map(|(k, _)| k).collect();
    /// assert_eq!(keys, [0, 2, 4, 6, 8]);
    /// ```
    pub fn retain<F>(&self, mut f: F)
    where
        F: FnMut(&K, &V) -> bool,
    {
        let core = match &self.engine {
            Engine::Locked(core) => core,
            Engine::Partitioned(parts) => {
                // A consistent copy of the entries (no map to build); every
                // call of `f` before the first removal.
                let mut entries = self.range_inner::<K, _>(..);
                entries.retain(|(key, value)| !f(key, value));
                for (key, value) in &entries {
                    drop(parts.remove_identical(self.hash_of(key), key, value));
                }
                return;
            }
        };
        let view = self.snapshot();
        let rejected: Vec<(u64, Pair<K, V>)> = view
            .iter()
            .filter(|(key, value)| !f(key, value))
            .map(|(key, value)| (self.hash_of(key), (key.clone(), Arc::clone(value))))
            .collect();
        // Let go of the snapshot first, so the removal can write in place.
        drop(view);
        if rejected.is_empty() {
            return;
        }
        let removed = Self::write(core, |core| core.remove_identical(&rejected));
        drop(rejected);
        drop(removed);
    }

    /// Removes and returns the entry with the least key, atomically. From
    /// any number of threads, every entry goes to exactly one caller.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, char> = [(2, 'b'), (1, 'a')].into_iter().collect();
    /// assert_eq!(index.pop_first().map(|(k, v)| (k, *v)), Some((1, 'a')));
    /// assert_eq!(index.pop_first().map(|(k, v)| (k, *v)), Some((2, 'b')));
    /// assert_eq!(index.pop_first(), None);
    /// ```
    pub fn pop_first(&self) -> Option<(K, Arc<V>)> {
        pop_first_step(self)
    }

    /// Removes and returns the entry with the greatest key, atomically.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, char> = [(2, 'b'), (1, 'a')].into_iter().collect();
    /// assert_eq!(index.pop_last().map(|(k, v)| (k, *v)), Some((2, 'b')));
    /// assert_eq!(index.len(), 1);
    /// ```
    pub fn pop_last(&self) -> Option<(K, Arc<V>)> {
        match &self.engine {
            Engine::Locked(core) => {
                Self::write(core, |core| core.pop_last(|key| self.hasher.hash_one(key)))
            }
            Engine::Partitioned(parts) => parts.pop_end(true, |key| self.hasher.hash_one(key)),
        }
    }

    /// Removes and returns, in key order, every entry up to `end`, as one
    /// atomic step: `Bound::Included(k)` takes keys `<= k`,
    /// `Bound::Excluded(k)` keys `< k`, `Bound::Unbounded` everything.
    ///
    /// This is "consume every offset up to the committed one": no concurrent
    /// reader sees part of the drain, and of several threads draining (or
    /// popping) at once, every entry goes to exactly one of them. Cost:
    /// O(d log n) for d drained entries, O(d) when all are drained.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::ops::Bound;
    ///
    /// let index: larder::OrderedIndex<u64, ()> = (1..=6).map(|k| (k, ())).collect();
    /// let first: Vec<u64> = index.drain_to(Bound::Excluded(&3)).into_iter().map(|(k, _)| k).collect();
    /// assert_eq!(first, [1, 2]);
    /// let rest = index.drain_to(Bound::Included(&4));
    /// assert_eq!(rest.len(), 2);
    /// assert_eq!(index.len(), 2);
    /// assert_eq!(index.drain_to(Bound::Unbounded).len(), 2);
    /// ```
    pub fn drain_to<Q>(&self, end: Bound<&Q>) -> Vec<(K, Arc<V>)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        drain_step(self, end)
    }
}

/// [`OrderedIndex::pop_first`]'s step: the least entry found and removed
/// under one write lock.
#[inline(always)]
pub(super) fn pop_first_in_one_step<K: Ord + Clone + Hash, V, S: BuildHasher>(
    index: &OrderedIndex<K, V, S>,
) -> Option<(K, Arc<V>)> {
    match &index.engine {
        Engine::Locked(core) => OrderedIndex::<K, V, S>::write(core, |core| {
            core.pop_first(|key| index.hasher.hash_one(key))
        }),
        Engine::Partitioned(parts) => parts.pop_end(false, |key| index.hasher.hash_one(key)),
    }
}

/// [`OrderedIndex::drain_to`]'s step: the entries up to `end` found and
/// removed in one atomic step.
#[inline(always)]
pub(super) fn drain_in_one_step<K, V, S, Q>(
    index: &OrderedIndex<K, V, S>,
    end: Bound<&Q>,
) -> Vec<(K, Arc<V>)>
where
    K: Ord + Clone + Hash + Borrow<Q>,
    S: BuildHasher,
    Q: Ord + ?Sized,
{
    match &index.engine {
        Engine::Locked(core) => OrderedIndex::<K, V, S>::write(core, |core| {
            core.drain_to(end, |key| index.hasher.hash_one(key))
        }),
        Engine::Partitioned(parts) => parts.drain_to(end, |key| index.hasher.hash_one(key)),
    }
}
