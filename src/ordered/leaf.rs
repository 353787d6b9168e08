//! One leaf of the partitioned engine: its keys and values in two parallel
//! `Vec`s sorted by key.
//!
//! Keys apart from values, so that a binary search walks a dense array of
//! keys (128 `u64` keys are 16 cache lines, not 32 with each value pointer
//! beside its key), and an insert or removal shifts two short arrays: fewer
//! lines read, and fewer lines dirtied for the next thread that searches the
//! leaf from another core.
//!
//! No user code runs here except `K`'s `Ord` (in the searches) and `Clone`
//! (in [`Clone`]): every other method moves entries by position.

use std::borrow::Borrow;
use std::ops::Bound;

use super::sequential::Pair;
use crate::sync::Arc;

/// The entries of one leaf, sorted by key (with a consistent `Ord`).
pub(crate) struct LeafData<K, V> {
    keys: Vec<K>,
    values: Vec<Arc<V>>,
}

impl<K, V> Default for LeafData<K, V> {
    fn default() -> Self {
        Self {
            keys: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl<K: Clone, V> Clone for LeafData<K, V> {
    fn clone(&self) -> Self {
        Self {
            keys: self.keys.clone(),
            values: self.values.clone(),
        }
    }
}

impl<K, V> LeafData<K, V> {
    /// A leaf of sorted, distinct entries.
    pub(crate) fn from_entries(entries: Vec<Pair<K, V>>) -> Self {
        let (keys, values) = entries.into_iter().unzip();
        Self { keys, values }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys, sorted.
    #[inline]
    pub(crate) fn keys(&self) -> &[K] {
        &self.keys
    }

    /// The value at `i`.
    #[inline]
    pub(crate) fn value(&self, i: usize) -> &Arc<V> {
        &self.values[i]
    }

    /// The first entry.
    pub(crate) fn first(&self) -> Option<(&K, &Arc<V>)> {
        self.keys.first().zip(self.values.first())
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<(&K, &Arc<V>)> {
        self.keys.last().zip(self.values.last())
    }

    /// The entries from `lo` to `hi` (none if `lo >= hi`: an inconsistent
    /// `Ord` may put them so, and that must not panic).
    pub(crate) fn slice(&self, lo: usize, hi: usize) -> impl Iterator<Item = (&K, &Arc<V>)> {
        let hi = hi.min(self.keys.len());
        let lo = lo.min(hi);
        self.keys[lo..hi].iter().zip(&self.values[lo..hi])
    }

    /// Every entry in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &Arc<V>)> {
        self.keys.iter().zip(&self.values)
    }

    /// The position of the entry holding `value` (the same `Arc`).
    pub(crate) fn position_of(&self, value: &Arc<V>) -> Option<usize> {
        self.values.iter().position(|v| Arc::ptr_eq(v, value))
    }

    /// Inserts an entry at `i`.
    pub(crate) fn insert(&mut self, i: usize, key: K, value: Arc<V>) {
        self.keys.insert(i, key);
        self.values.insert(i, value);
    }

    /// Replaces the value at `i`, returning the old one.
    pub(crate) fn replace(&mut self, i: usize, value: Arc<V>) -> Arc<V> {
        std::mem::replace(&mut self.values[i], value)
    }

    /// Removes the entry at `i`.
    pub(crate) fn remove(&mut self, i: usize) -> Pair<K, V> {
        (self.keys.remove(i), self.values.remove(i))
    }

    /// Removes the last entry.
    pub(crate) fn pop(&mut self) -> Option<Pair<K, V>> {
        self.keys.pop().zip(self.values.pop())
    }

    /// Moves the first `n` entries to the end of `out`.
    pub(crate) fn take_front(&mut self, n: usize, out: &mut Vec<Pair<K, V>>) {
        out.extend(self.keys.drain(..n).zip(self.values.drain(..n)));
    }

    /// Splits off the entries from `at` on.
    pub(crate) fn split_off(&mut self, at: usize) -> Self {
        Self {
            keys: self.keys.split_off(at),
            values: self.values.split_off(at),
        }
    }

    /// Moves every entry of `other` to the end of this leaf.
    pub(crate) fn append(&mut self, other: &mut Self) {
        self.keys.append(&mut other.keys);
        self.values.append(&mut other.values);
    }
}

/// The position of `key` among sorted keys, or where it would go.
#[inline]
pub(crate) fn search<K: Borrow<Q>, Q: Ord + ?Sized>(keys: &[K], key: &Q) -> Result<usize, usize> {
    keys.binary_search_by(|k| k.borrow().cmp(key))
}

/// How many sorted keys are below `start`.
pub(crate) fn lower<K: Borrow<Q>, Q: Ord + ?Sized>(keys: &[K], start: Bound<&Q>) -> usize {
    match start {
        Bound::Included(s) => keys.partition_point(|k| k.borrow() < s),
        Bound::Excluded(s) => keys.partition_point(|k| k.borrow() <= s),
        Bound::Unbounded => 0,
    }
}

/// How many sorted keys are at or before `end`.
pub(crate) fn upper<K: Borrow<Q>, Q: Ord + ?Sized>(keys: &[K], end: Bound<&Q>) -> usize {
    match end {
        Bound::Included(e) => keys.partition_point(|k| k.borrow() <= e),
        Bound::Excluded(e) => keys.partition_point(|k| k.borrow() < e),
        Bound::Unbounded => keys.len(),
    }
}
