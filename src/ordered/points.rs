//! The point-lookup table of the partitioned engine: a hash table over the
//! leaves' entries, split by hash into shards under a lock each, so that a
//! point read is one hash probe and writers to different shards do not meet.
//!
//! Each [`Slot`] holds the key's hash when it was inserted, a clone of the
//! key (for `Eq` on lookup) and the very `Arc` the leaf holds, which is the
//! slot's identity: a slot is found for replacement or removal by its stored
//! hash and that identity, never by the user's `Eq`, and by a scan of every
//! shard if the key's `Hash` has changed its mind since. The table grows
//! from the stored hashes, never calling `Hash`.
//!
//! A writer changes a leaf and its slots while holding the leaf's write lock
//! (lock order: leaves, then shards in ascending order), so a point read,
//! which only takes its shard's read lock, sees a write entirely or not at
//! all.

use std::borrow::Borrow;

use hashbrown::HashTable;

use crate::sync::{Arc, CachePadded, RwLock};

/// The number of shards (a power of two). At two threads a read finds its
/// shard's lock word in the other core's cache about half the time whatever
/// the count; more shards only make two writers meet less often.
const SHARDS: usize = 64;

/// One entry of the table.
pub(crate) struct Slot<K, V> {
    /// The key's hash when it was inserted.
    hash: u64,
    /// A clone of the key, for `Eq` on lookup.
    key: K,
    /// The same `Arc` as the leaf's entry: the slot's identity.
    value: Arc<V>,
}

type PointShard<K, V> = CachePadded<RwLock<HashTable<Slot<K, V>>>>;

/// The sharded table.
pub(crate) struct Points<K, V> {
    shards: Box<[PointShard<K, V>]>,
}

/// The shard of a hash (`shard_index.rs`).
#[inline]
fn shard_of(hash: u64) -> usize {
    crate::shard_index::shard_index(hash, SHARDS)
}

impl<K, V> Points<K, V> {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(RwLock::new(HashTable::new())))
                .collect(),
        }
    }

    /// A table holding a slot for each entry (the user's `hash` and `Clone`
    /// run before the table exists).
    pub(crate) fn from_entries<'a>(
        entries: impl Iterator<Item = (&'a K, &'a Arc<V>)>,
        hash: impl Fn(&K) -> u64,
    ) -> Self
    where
        K: Clone + 'a,
        V: 'a,
    {
        let mut points = Self::new();
        for (key, value) in entries {
            let slot_hash = hash(key);
            points.shards[shard_of(slot_hash)].get_mut().insert_unique(
                slot_hash,
                Slot {
                    hash: slot_hash,
                    key: key.clone(),
                    value: Arc::clone(value),
                },
                |slot| slot.hash,
            );
        }
        points
    }

    /// Runs `f` on the value of `key` under its shard's read lock.
    #[inline]
    pub(crate) fn view<Q, R>(&self, hash: u64, key: &Q, f: impl FnOnce(&Arc<V>) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let shard = self.shards[shard_of(hash)].read();
        let slot = shard.find(hash, |slot| slot.hash == hash && slot.key.borrow() == key)?;
        Some(f(&slot.value))
    }

    /// Adds the slot of a new leaf entry. No user code.
    pub(crate) fn add(&self, hash: u64, key: K, value: Arc<V>) {
        self.shards[shard_of(hash)].write().insert_unique(
            hash,
            Slot { hash, key, value },
            |slot| slot.hash,
        );
    }

    /// Points the slot of the entry holding `old` at `new`. No user code.
    pub(crate) fn replace(&self, hash: u64, old: &Arc<V>, new: Arc<V>) {
        let same = |slot: &Slot<K, V>| Arc::ptr_eq(&slot.value, old);
        if let Some(slot) = self.shards[shard_of(hash)].write().find_mut(hash, same) {
            slot.value = new;
            return;
        }
        // The key's `Hash` changed its mind: find the slot by identity.
        for shard in self.shards.iter() {
            if let Some(slot) = shard.write().iter_mut().find(|slot| same(slot)) {
                slot.value = new;
                return;
            }
        }
        debug_assert!(false, "larder: a leaf entry without its slot");
    }

    /// Removes the slot of the entry holding `value`, whose key is expected
    /// to hash to `hash`; the slot goes to `garbage` if its key has drop
    /// glue. No user code.
    #[inline]
    pub(crate) fn remove_one(&self, hash: u64, value: &Arc<V>, garbage: &mut Vec<Slot<K, V>>) {
        let removed = {
            let mut table = self.shards[shard_of(hash)].write();
            match table.find_entry(hash, |slot| Arc::ptr_eq(&slot.value, value)) {
                Ok(entry) => Some(entry.remove().0),
                Err(_) => None,
            }
        };
        match removed {
            Some(slot) => keep(slot, garbage),
            // The key's `Hash` changed its mind: scan for it by identity.
            None => self.remove_by_scan(value, garbage),
        }
    }

    /// Removes the slots of the entries holding the given values, whose keys
    /// are expected to hash as given, locking their shards in ascending
    /// order, all at once. Removed slots whose key has drop glue go to
    /// `garbage`. No user code.
    pub(crate) fn remove(&self, victims: &[(u64, &Arc<V>)], garbage: &mut Vec<Slot<K, V>>) {
        let mut missing = Vec::new();
        {
            let mut shards: Vec<usize> = victims.iter().map(|(hash, _)| shard_of(*hash)).collect();
            shards.sort_unstable();
            shards.dedup();
            let mut guards: Vec<_> = shards
                .iter()
                .map(|&i| (i, self.shards[i].write()))
                .collect();
            for &(hash, value) in victims {
                let at = guards
                    .binary_search_by_key(&shard_of(hash), |(i, _)| *i)
                    .expect("larder: the victim's shard is locked");
                let table = &mut guards[at].1;
                match table.find_entry(hash, |slot| Arc::ptr_eq(&slot.value, value)) {
                    Ok(entry) => keep(entry.remove().0, garbage),
                    Err(_) => missing.push(value),
                }
            }
        }
        // Keys whose `Hash` changed its mind: scan for them by identity.
        for value in missing {
            self.remove_by_scan(value, garbage);
        }
    }

    fn remove_by_scan(&self, value: &Arc<V>, garbage: &mut Vec<Slot<K, V>>) {
        let same = |slot: &Slot<K, V>| Arc::ptr_eq(&slot.value, value);
        for shard in self.shards.iter() {
            let mut table = shard.write();
            let Some(hash) = table.iter().find(|slot| same(slot)).map(|slot| slot.hash) else {
                continue;
            };
            if let Ok(entry) = table.find_entry(hash, same) {
                keep(entry.remove().0, garbage);
            }
            return;
        }
        debug_assert!(false, "larder: a leaf entry without its slot");
    }

    /// The number of slots (for the tests).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|shard| shard.read().len()).sum()
    }

    /// Whether some slot holds `value` (for the tests).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn holds(&self, value: &Arc<V>) -> bool {
        self.shards.iter().any(|shard| {
            shard
                .read()
                .iter()
                .any(|slot| Arc::ptr_eq(&slot.value, value))
        })
    }
}

/// Keeps a removed slot for dropping after the locks are released, if
/// dropping its key runs user code; otherwise dropping it only decrements a
/// reference count that is not the last (the leaf's entry holds one).
fn keep<K, V>(slot: Slot<K, V>, garbage: &mut Vec<Slot<K, V>>) {
    if std::mem::needs_drop::<K>() {
        garbage.push(slot);
    }
}
