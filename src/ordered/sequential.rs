//! The sequential core of [`OrderedIndex`](super::OrderedIndex): a
//! `BTreeMap<K, Arc<V>>` behind an `Arc`, written copy-on-write, with the
//! multi-step operations (`drain_to`, `pop_first`, identity-checked removal
//! for `retain`) that the wrapper runs as one step under its write lock.
//!
//! No locks here: every method takes `&self` or `&mut self`, and the wrapper
//! decides which lock guards which call.
//!
//! # Copy-on-write
//!
//! The map lives in an `Arc` so that [`OrderedCore::share`] (the wrapper's
//! `snapshot()`) is O(1): it hands out another reference to the same map.
//! Every write goes through [`OrderedCore::write_map`], which mutates in place
//! while the core holds the only reference and otherwise copies the map once
//! (O(n) clones of the keys and of the values' `Arc`s, never of a `V`).
//! A write that would change nothing (removing an absent key, popping an empty
//! map, draining below the first key) never copies.
//!
//! A displaced map version is not dropped here: it is parked in `retired` and
//! the wrapper drops it after unlocking, because the core may hold its last
//! reference (a snapshot holder can let go between the uniqueness check and
//! the copy) and dropping a map runs the `Drop` of keys and values.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

use crate::sync::Arc;

/// The map type shared between the core and its snapshots.
pub(crate) type Map<K, V> = BTreeMap<K, Arc<V>>;

/// An entry handed out by value: the key cloned, the value shared.
pub(crate) type Entry<K, V> = (K, Arc<V>);

/// The sequential ordered map under the wrapper's lock.
pub(crate) struct OrderedCore<K, V> {
    /// The current map version; shared with every live snapshot of it.
    map: Arc<Map<K, V>>,
    /// Map versions displaced by writes (copy-on-write, `clear`), waiting
    /// for the wrapper to drop them outside the lock. Empty between locked
    /// steps (except after a step that panicked; the next step hands those
    /// back too), so it costs no allocation on the common path.
    retired: Vec<Arc<Map<K, V>>>,
}

impl<K, V> OrderedCore<K, V> {
    /// An empty core.
    pub(crate) fn new() -> Self {
        Self::from_map(BTreeMap::new())
    }

    /// A core holding `map`.
    pub(crate) fn from_map(map: Map<K, V>) -> Self {
        Self {
            map: Arc::new(map),
            retired: Vec::new(),
        }
    }

    /// The current map, for reads.
    #[inline]
    pub(crate) fn map(&self) -> &Map<K, V> {
        &self.map
    }

    /// Another reference to the current map: an immutable snapshot in O(1).
    /// The next write copies the map while this reference is alive.
    pub(crate) fn share(&self) -> Arc<Map<K, V>> {
        Arc::clone(&self.map)
    }

    /// The map versions writes displaced; the caller drops them after
    /// releasing its lock.
    #[must_use]
    pub(crate) fn take_retired(&mut self) -> Vec<Arc<Map<K, V>>> {
        std::mem::take(&mut self.retired)
    }

    /// Empties the map. The old contents are retired, not dropped here.
    pub(crate) fn clear(&mut self) {
        if self.map.is_empty() {
            return;
        }
        let old = std::mem::replace(&mut self.map, Arc::new(BTreeMap::new()));
        self.retire(old);
    }

    /// Parks a displaced map version for the wrapper to drop after unlocking.
    fn retire(&mut self, old: Arc<Map<K, V>>) {
        self.retired.push(old);
    }

    /// Whether a snapshot may share the map: a plain load of the reference
    /// count, used only to avoid copying the map for a write that would
    /// change nothing. It is a hint, never a decision: [`Self::write_map`]
    /// checks uniqueness exactly. (A stale `true`, after a snapshot was
    /// dropped elsewhere, costs one extra lookup.)
    fn maybe_shared(&self) -> bool {
        Arc::strong_count(&self.map) > 1
    }
}

impl<K: Ord + Clone, V> OrderedCore<K, V> {
    /// Runs `write` on the map: in place when the core holds the only
    /// reference (one `Arc::get_mut`), else on a private copy made first.
    fn write_map<R>(&mut self, write: impl FnOnce(&mut Map<K, V>) -> R) -> R {
        if let Some(map) = Arc::get_mut(&mut self.map) {
            return write(map);
        }
        let copy = Arc::new((*self.map).clone());
        let old = std::mem::replace(&mut self.map, copy);
        self.retire(old);
        match Arc::get_mut(&mut self.map) {
            Some(map) => write(map),
            None => unreachable!("a freshly copied map is unshared"),
        }
    }

    /// Inserts `value` under `key`; returns the value it replaced. On a
    /// replacement the map keeps its stored key (as `BTreeMap::insert` does)
    /// and hands the caller's key back, so that its `Drop` runs outside the
    /// lock; keys without drop glue take the one-search path.
    pub(crate) fn insert(&mut self, key: K, value: Arc<V>) -> (Option<Arc<V>>, Option<K>) {
        self.write_map(|map| {
            if std::mem::needs_drop::<K>() {
                if let Some(slot) = map.get_mut(&key) {
                    return (Some(std::mem::replace(slot, value)), Some(key));
                }
            }
            (map.insert(key, value), None)
        })
    }

    /// Removes `key`; returns the stored key and value.
    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<Entry<K, V>>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if self.maybe_shared() && !self.map.contains_key(key) {
            return None; // nothing to remove: do not copy a shared map
        }
        self.write_map(|map| map.remove_entry(key))
    }

    /// Removes and returns the entry with the least key.
    pub(crate) fn pop_first(&mut self) -> Option<Entry<K, V>> {
        if self.map.is_empty() {
            return None;
        }
        self.write_map(BTreeMap::pop_first)
    }

    /// Removes and returns the entry with the greatest key.
    pub(crate) fn pop_last(&mut self) -> Option<Entry<K, V>> {
        if self.map.is_empty() {
            return None;
        }
        self.write_map(BTreeMap::pop_last)
    }

    /// Removes and returns, in key order, every entry whose key is below
    /// `end` (`Included`: up to and including it; `Unbounded`: everything).
    pub(crate) fn drain_to<Q>(&mut self, end: Bound<&Q>) -> Vec<Entry<K, V>>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let drained = self.map.range::<Q, _>((Bound::Unbounded, end)).count();
        if drained == 0 {
            return Vec::new();
        }
        self.write_map(|map| {
            if drained == map.len() {
                return std::mem::take(map).into_iter().collect();
            }
            // Pop from the head: O(drained * log n), cheap for the usual
            // short drains of a consumer. The count above fixes how many to
            // take, so a key type whose `Ord` disagrees with itself cannot
            // make this loop run past the entries the range saw.
            let mut out = Vec::with_capacity(drained);
            for _ in 0..drained {
                match map.pop_first() {
                    Some(entry) => out.push(entry),
                    None => break,
                }
            }
            out
        })
    }

    /// Removes every listed entry whose key still maps to the very same value
    /// (`Arc::ptr_eq`); returns the removed entries. Entries replaced or
    /// removed since the caller looked are left alone.
    pub(crate) fn remove_identical(&mut self, victims: &[Entry<K, V>]) -> Vec<Entry<K, V>> {
        let unchanged = |map: &Map<K, V>, (key, value): &Entry<K, V>| {
            map.get(key).is_some_and(|now| Arc::ptr_eq(now, value))
        };
        if !victims.iter().any(|victim| unchanged(&self.map, victim)) {
            return Vec::new();
        }
        self.write_map(|map| {
            let mut removed = Vec::new();
            for victim in victims {
                if unchanged(map, victim) {
                    if let Some(entry) = map.remove_entry(&victim.0) {
                        removed.push(entry);
                    }
                }
            }
            removed
        })
    }

    /// Clones out, in key order, the entries in `range`.
    pub(crate) fn range_cloned<Q, R>(&self, range: R) -> Vec<Entry<K, V>>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        self.map
            .range::<Q, R>(range)
            .map(|(key, value)| (key.clone(), Arc::clone(value)))
            .collect()
    }

    /// Checks the core's invariants; panics with a description if one fails.
    /// Test-only: keys strictly increasing, `len` equal to the entry count,
    /// nothing left retired between locked steps.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_invariants(&self) {
        let mut count = 0;
        let mut previous: Option<&K> = None;
        for key in self.map.keys() {
            if let Some(previous) = previous {
                assert!(previous < key, "keys out of order");
            }
            previous = Some(key);
            count += 1;
        }
        assert_eq!(count, self.map.len(), "len disagrees with the entries");
        assert!(self.retired.is_empty(), "a retired map was not handed back");
    }
}
