//! The sequential core of [`OrderedIndex`](super::OrderedIndex): a
//! `BTreeMap<K, Arc<V>>` behind an `Arc`, written copy-on-write, a hash table
//! over the same entries for point lookups, and the multi-step operations
//! (`drain_to`, `pop_first`, identity-checked removal for `retain`) that the
//! wrapper runs as one step under its write lock.
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
//! # The point-lookup table
//!
//! `get`, `get_with` and `contains_key` do not search the tree: a
//! `hashbrown::HashTable` holds one [`Slot`] per tree entry (the key's hash,
//! a clone of the key, and the very `Arc` the tree holds), so a point read is
//! one hash probe instead of a walk down the tree. Snapshots share only the
//! tree; the table belongs to the core and is always written in place.
//!
//! The tree and the table hold the same entries, matched by the identity of
//! their `Arc` (every insert makes a new one), whatever the user's `Ord`,
//! `Hash` and `Eq` do:
//! - every change to the tree is followed, with no user code in between, by
//!   the same change to the table; all user calls an operation makes (`Ord`
//!   in the tree's search, `Hash` of the keys it will remove, `Clone`) come
//!   before its first change, so a panic in them changes nothing;
//! - a slot is found for removal by its stored hash and `Arc` identity, never
//!   by `Eq`; if the key's `Hash` now gives another value than when it was
//!   inserted (an inconsistent `Hash`), the slot is found by a scan of the
//!   table instead (O(n), only for such keys);
//! - the table grows from the stored hashes, never calling `Hash`.
//!
//! Nothing the core removes is dropped here: displaced map versions (the core
//! may hold their last reference: a snapshot holder can let go between the
//! uniqueness check and the copy), and slots whose key has drop glue, are
//! parked in `retired`, and the wrapper drops them after unlocking, because
//! dropping runs the `Drop` of keys and values.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

use hashbrown::HashTable;

use crate::sync::Arc;

/// The map type shared between the core and its snapshots.
pub(crate) type Map<K, V> = BTreeMap<K, Arc<V>>;

/// An entry handed out by value: the key cloned, the value shared.
pub(crate) type Pair<K, V> = (K, Arc<V>);

/// One entry of the point-lookup table.
pub(crate) struct Slot<K, V> {
    /// The key's hash when it was inserted: the table grows and removes by
    /// it, never calling `Hash`.
    hash: u64,
    /// A clone of the key, for `Eq` on lookup.
    key: K,
    /// The same `Arc` as the tree's entry: the slot's identity.
    value: Arc<V>,
}

/// What a locked step displaced, for the wrapper to drop after unlocking.
pub(crate) struct Retired<K, V> {
    maps: Vec<Arc<Map<K, V>>>,
    slots: Vec<Slot<K, V>>,
    table: Option<HashTable<Slot<K, V>>>,
}

impl<K, V> Default for Retired<K, V> {
    fn default() -> Self {
        Self {
            maps: Vec::new(),
            slots: Vec::new(),
            table: None,
        }
    }
}

#[cfg(all(test, not(loom)))]
impl<K, V> Retired<K, V> {
    /// Nothing retired.
    pub(crate) fn is_empty(&self) -> bool {
        self.maps.is_empty() && self.slots.is_empty() && self.table.is_none()
    }

    /// The retired map versions.
    pub(crate) fn maps(&self) -> &[Arc<Map<K, V>>] {
        &self.maps
    }
}

/// The sequential ordered map under the wrapper's lock.
pub(crate) struct OrderedCore<K, V> {
    /// The current map version; shared with every live snapshot of it.
    map: Arc<Map<K, V>>,
    /// One slot per entry of `map`, by the key's hash; `None` when the
    /// index was built without point lookups (they then search the tree).
    table: Option<HashTable<Slot<K, V>>>,
    /// What writes displaced (map versions, slots, a cleared table), waiting
    /// for the wrapper to drop it outside the lock. Empty between locked
    /// steps (except after a step that panicked; the next step hands that
    /// back too), so it costs no allocation on the common path.
    retired: Retired<K, V>,
}

impl<K, V> OrderedCore<K, V> {
    /// An empty core, with or without the point-lookup table.
    pub(crate) fn new(point_lookups: bool) -> Self {
        Self {
            map: Arc::new(BTreeMap::new()),
            table: point_lookups.then(HashTable::new),
            retired: Retired::default(),
        }
    }

    /// A core holding `map` with the point-lookup table, whose keys `hash`
    /// hashes (user code: called before the core exists, so a panic leaves
    /// nothing behind).
    pub(crate) fn from_map(map: Map<K, V>, hash: impl Fn(&K) -> u64) -> Self
    where
        K: Clone,
    {
        let mut table = HashTable::with_capacity(map.len());
        for (key, value) in &map {
            let slot = Slot {
                hash: hash(key),
                key: key.clone(),
                value: Arc::clone(value),
            };
            table.insert_unique(slot.hash, slot, |slot| slot.hash);
        }
        Self {
            table: Some(table),
            ..Self::from_map_without_table(map)
        }
    }

    /// A core holding `map`, without the point-lookup table.
    pub(crate) fn from_map_without_table(map: Map<K, V>) -> Self {
        Self {
            map: Arc::new(map),
            table: None,
            retired: Retired::default(),
        }
    }

    /// Whether the core keeps the point-lookup table.
    #[inline]
    pub(crate) fn point_lookups(&self) -> bool {
        self.table.is_some()
    }

    /// The current map, for reads.
    #[inline]
    pub(crate) fn map(&self) -> &Map<K, V> {
        &self.map
    }

    /// The value of the key equal to `key` whose hash is `hash`: one probe
    /// of the table, calling `Eq` on the keys whose hash matches; a search
    /// of the tree (`Ord`) when there is no table.
    #[inline]
    pub(crate) fn lookup<Q>(&self, hash: u64, key: &Q) -> Option<&Arc<V>>
    where
        K: Borrow<Q> + Ord,
        Q: Ord + Eq + ?Sized,
    {
        match &self.table {
            Some(table) => table
                .find(hash, |slot| slot.key.borrow() == key)
                .map(|slot| &slot.value),
            None => self.map.get(key),
        }
    }

    /// Another reference to the current map: an immutable snapshot in O(1).
    /// The next write copies the map while this reference is alive.
    pub(crate) fn share(&self) -> Arc<Map<K, V>> {
        Arc::clone(&self.map)
    }

    /// What writes displaced; the caller drops it after releasing its lock.
    #[must_use]
    pub(crate) fn take_retired(&mut self) -> Retired<K, V> {
        std::mem::take(&mut self.retired)
    }

    /// Empties the map and the table. The old contents are retired, not
    /// dropped here.
    pub(crate) fn clear(&mut self) {
        if self.map.is_empty() {
            return;
        }
        let old = std::mem::replace(&mut self.map, Arc::new(BTreeMap::new()));
        self.retire(old);
        self.take_table();
    }

    /// Empties the table: in place when its keys have no drop glue (the
    /// slots' `Arc`s are never the last: the tree's entries hold them),
    /// else by retiring the old table whole (O(1)).
    fn take_table(&mut self) {
        let Some(table) = &mut self.table else {
            return;
        };
        if !std::mem::needs_drop::<K>() {
            table.clear();
            return;
        }
        let old = std::mem::take(table);
        // A step that panicked earlier may have left a table here; keep
        // both for the wrapper rather than dropping one under the lock.
        if let Some(earlier) = self.retired.table.replace(old) {
            self.retired.slots.extend(earlier);
        }
    }

    /// Parks a displaced map version for the wrapper to drop after unlocking.
    fn retire(&mut self, old: Arc<Map<K, V>>) {
        self.retired.maps.push(old);
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

/// The map, unshared: in place when the core holds the only reference (one
/// `Arc::get_mut`), else a private copy made first (the shared version is
/// retired). Copying calls `K::clone`, before any change.
fn unshare<'a, K: Ord + Clone, V>(
    map: &'a mut Arc<Map<K, V>>,
    retired: &mut Vec<Arc<Map<K, V>>>,
) -> &'a mut Map<K, V> {
    if Arc::get_mut(map).is_none() {
        let copy = Arc::new((**map).clone());
        retired.push(std::mem::replace(map, copy));
    }
    match Arc::get_mut(map) {
        Some(map) => map,
        None => unreachable!("a freshly copied map is unshared"),
    }
}

/// Adds the slot of a new tree entry (nothing when there is no table). No
/// user code.
fn add_slot<K, V>(table: &mut Option<HashTable<Slot<K, V>>>, hash: u64, key: K, value: Arc<V>) {
    let Some(table) = table else {
        return;
    };
    let slot = Slot { hash, key, value };
    table.insert_unique(hash, slot, |slot| slot.hash);
}

/// Removes the slot of the tree entry holding `value`, whose key is expected
/// to hash to `hash` (as it did when inserted, if its `Hash` is consistent).
/// No user code.
fn remove_slot<K, V>(
    table: &mut Option<HashTable<Slot<K, V>>>,
    retired: &mut Vec<Slot<K, V>>,
    hash: u64,
    value: &Arc<V>,
) {
    let Some(table) = table else {
        return;
    };
    let same = |slot: &Slot<K, V>| Arc::ptr_eq(&slot.value, value);
    let entry = match table.find_entry(hash, same) {
        Ok(entry) => entry,
        Err(absent) => {
            // The key's `Hash` changed its mind: find the slot by identity.
            let table = absent.into_table();
            let Some(hash) = table.iter().find(|slot| same(slot)).map(|slot| slot.hash) else {
                debug_assert!(false, "a tree entry without its slot");
                return;
            };
            match table.find_entry(hash, same) {
                Ok(entry) => entry,
                Err(_) => unreachable!("the slot was just seen under this hash"),
            }
        }
    };
    let (slot, _) = entry.remove();
    if std::mem::needs_drop::<K>() {
        // The key clone's `Drop` is user code: after unlocking.
        retired.push(slot);
    }
    // Otherwise dropping the slot only decrements a reference count that is
    // not the last (the tree's entry, now the caller's, holds one).
}

impl<K: Ord + Clone, V> OrderedCore<K, V> {
    /// Inserts `value` under `key`; `slot_key` is the key's hash and a clone
    /// of it (made by the caller before locking) for the table, `None` when
    /// there is no table. Returns the value it replaced. On a replacement the map keeps its
    /// stored key (as `BTreeMap::insert` does) and hands the caller's key
    /// back, so that its `Drop` runs outside the lock; keys without drop glue
    /// take the one-search path.
    pub(crate) fn insert(
        &mut self,
        slot_key: Option<(u64, K)>,
        key: K,
        value: Arc<V>,
    ) -> (Option<Arc<V>>, Option<K>) {
        debug_assert_eq!(slot_key.is_some(), self.table.is_some());
        let Self {
            map,
            table,
            retired,
        } = self;
        let map = unshare(map, &mut retired.maps);
        let stored = Arc::clone(&value);
        // The tree's search (user `Ord`) runs before the tree changes.
        let (replaced, unused_key) = match std::mem::needs_drop::<K>() {
            true => match map.get_mut(&key) {
                Some(slot) => (Some(std::mem::replace(slot, stored)), Some(key)),
                None => (map.insert(key, stored), None),
            },
            false => (map.insert(key, stored), None),
        };
        if let Some((hash, table_key)) = slot_key {
            if let Some(old) = &replaced {
                remove_slot(table, &mut retired.slots, hash, old);
            }
            add_slot(table, hash, table_key, value);
        }
        (replaced, unused_key)
    }

    /// Removes `key`, whose hash is `hash` (any value when there is no
    /// table); returns the stored key and value.
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q) -> Option<Pair<K, V>>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if self.maybe_shared() && !self.map.contains_key(key) {
            return None; // nothing to remove: do not copy a shared map
        }
        let Self {
            map,
            table,
            retired,
        } = self;
        let entry = unshare(map, &mut retired.maps).remove_entry(key)?;
        remove_slot(table, &mut retired.slots, hash, &entry.1);
        Some(entry)
    }

    /// Removes and returns the entry with the least key; `hash` hashes it.
    pub(crate) fn pop_first(&mut self, hash: impl Fn(&K) -> u64) -> Option<Pair<K, V>> {
        self.pop_end(false, hash)
    }

    /// Removes and returns the entry with the greatest key; `hash` hashes it.
    pub(crate) fn pop_last(&mut self, hash: impl Fn(&K) -> u64) -> Option<Pair<K, V>> {
        self.pop_end(true, hash)
    }

    /// `pop_first` (`last == false`) or `pop_last`: the key is hashed before
    /// the map changes, then the tree and the table lose the entry together.
    fn pop_end(&mut self, last: bool, hash: impl Fn(&K) -> u64) -> Option<Pair<K, V>> {
        let end = match last {
            true => self.map.last_key_value(),
            false => self.map.first_key_value(),
        };
        let (key, _) = end?;
        let key_hash = if self.point_lookups() { hash(key) } else { 0 };
        let Self {
            map,
            table,
            retired,
        } = self;
        let map = unshare(map, &mut retired.maps);
        let entry = match last {
            true => map.pop_last(),
            false => map.pop_first(),
        }?;
        remove_slot(table, &mut retired.slots, key_hash, &entry.1);
        Some(entry)
    }

    /// Removes and returns, in key order, every entry whose key is below
    /// `end` (`Included`: up to and including it; `Unbounded`: everything);
    /// `hash` hashes the keys it removes.
    pub(crate) fn drain_to<Q>(
        &mut self,
        end: Bound<&Q>,
        hash: impl Fn(&K) -> u64,
    ) -> Vec<Pair<K, V>>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        // Every user call first: `Ord` to find the drained prefix, `Hash`
        // of its keys (unless all go, or there is no table: no hash needed).
        let mut hashes: Vec<u64> = Vec::new();
        let drained = if matches!(end, Bound::Unbounded) {
            self.map.len()
        } else {
            let prefix = self.map.range::<Q, _>((Bound::Unbounded, end));
            if self.point_lookups() {
                hashes = prefix.map(|(key, _)| hash(key)).collect();
                hashes.len()
            } else {
                prefix.count()
            }
        };
        if drained == 0 {
            return Vec::new();
        }
        if drained == self.map.len() {
            let all = {
                let map = unshare(&mut self.map, &mut self.retired.maps);
                std::mem::take(map).into_iter().collect()
            };
            self.take_table();
            return all;
        }
        let Self {
            map,
            table,
            retired,
        } = self;
        let map = unshare(map, &mut retired.maps);
        // Pop from the head: O(drained * log n), cheap for the usual short
        // drains of a consumer. The range above was a prefix of the tree's
        // order, which is the order `pop_first` takes, so the hashes pair up
        // with the entries; and it fixes how many to take, so a key type
        // whose `Ord` disagrees with itself cannot make this loop run past
        // the entries the range saw.
        let mut out = Vec::with_capacity(drained);
        for i in 0..drained {
            match map.pop_first() {
                Some(entry) => {
                    let key_hash = hashes.get(i).copied().unwrap_or_default();
                    remove_slot(table, &mut retired.slots, key_hash, &entry.1);
                    out.push(entry);
                }
                None => break,
            }
        }
        out
    }

    /// Removes every listed entry whose key still maps to the very same value
    /// (`Arc::ptr_eq`); returns the removed entries. Entries replaced or
    /// removed since the caller looked are left alone. Each victim comes
    /// with its key's hash.
    pub(crate) fn remove_identical(&mut self, victims: &[(u64, Pair<K, V>)]) -> Vec<Pair<K, V>> {
        let unchanged = |map: &Map<K, V>, (key, value): &Pair<K, V>| {
            map.get(key).is_some_and(|now| Arc::ptr_eq(now, value))
        };
        if !victims
            .iter()
            .any(|(_, victim)| unchanged(&self.map, victim))
        {
            return Vec::new();
        }
        let Self {
            map,
            table,
            retired,
        } = self;
        let map = unshare(map, &mut retired.maps);
        let mut removed = Vec::new();
        for (key_hash, victim) in victims {
            // `Ord` runs between removals, but each removal leaves the tree
            // and the table in step before the next search.
            if unchanged(map, victim) {
                if let Some(entry) = map.remove_entry(&victim.0) {
                    remove_slot(table, &mut retired.slots, *key_hash, &entry.1);
                    removed.push(entry);
                }
            }
        }
        removed
    }

    /// Clones out, in key order, the entries in `range`.
    pub(crate) fn range_cloned<Q, R>(&self, range: R) -> Vec<Pair<K, V>>
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
        self.check_structure();
        assert!(
            self.retired.is_empty(),
            "something retired was not handed back"
        );
    }

    /// Checks the tree's order and that the table holds exactly the tree's
    /// entries; panics with a message starting "invariant violated" if not.
    /// (What a step retired may still wait here, after a panic, for the
    /// next write to drop it.)
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_structure(&self) {
        let mut count = 0;
        let mut previous: Option<&K> = None;
        for key in self.map.keys() {
            if let Some(previous) = previous {
                assert!(previous < key, "invariant violated: keys out of order");
            }
            previous = Some(key);
            count += 1;
        }
        assert_eq!(
            count,
            self.map.len(),
            "invariant violated: len disagrees with the entries"
        );
        if let Some(table) = &self.table {
            assert_eq!(
                table.len(),
                self.map.len(),
                "invariant violated: table and tree differ in size"
            );
            for value in self.map.values() {
                assert!(
                    table.iter().any(|slot| Arc::ptr_eq(&slot.value, value)),
                    "invariant violated: a tree entry without its slot"
                );
            }
        }
    }

    /// Checks that the table holds exactly the tree's entries (by `Arc`
    /// identity) and that nothing retired was left behind; uses no `Ord`.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_table_in_step(&self) {
        if let Some(table) = &self.table {
            assert_eq!(table.len(), self.map.len(), "table and tree differ in size");
            for value in self.map.values() {
                assert!(
                    table.iter().any(|slot| Arc::ptr_eq(&slot.value, value)),
                    "a tree entry without its slot"
                );
            }
        }
        assert!(
            self.retired.is_empty(),
            "something retired was not handed back"
        );
    }
}
