//! A core whose schema has no index: a store used as a plain concurrent
//! map, and its inline layout.
//!
//! Until it needs slot ids, such a core keeps each entry (stored hash, key,
//! object) in its key's bucket of `inline`, as `HashMap` and `DashMap` do:
//! a probe reads the control bytes and then the one bucket that holds both
//! the key it compares and the object, where the slotted layout reads the
//! bucket, then the slot its id names (two dependent reads of memory, one
//! more line a write dirties). Growth and rebuilds move entries by their
//! stored hashes, never calling `K`'s `Hash`.
//!
//! Slot ids are what an `add_index` records while it computes with no lock
//! held, and what a transaction's probes hand to its writes, so the first
//! [`watch`](Core::watch), transaction or revision write moves the core to
//! slots for good ([`slot`](Core::slot)): one pass over its entries, under
//! the write lock it already holds, running no user code.

use std::borrow::Borrow;

use hashbrown::{HashTable, hash_table};

use super::index_lists::Id;
use super::{Core, LiveSlot, Removed, bucket_id, stored};
use crate::indexed::index_fn::AllValues;
use crate::table_room::Room;

impl<K, V> Core<K, V> {
    /// Stores `value` under `key` in a core whose schema has no index (the
    /// caller checked it under the same lock; only the loom negative
    /// control calls it on one that has) and returns the object it
    /// replaced. `key` and `value` stay the caller's until the probe (`K`'s
    /// `Eq`) is over: if it panics, they drop in the caller's frame, after
    /// its lock guard. A stored key keeps its key, so `key` stays the
    /// caller's then too, to drop after the unlock. Past the probe this
    /// runs no user code.
    #[inline]
    pub(crate) fn upsert_plain(
        &mut self,
        hash: u64,
        key: &mut Option<K>,
        value: &mut Option<V>,
    ) -> Option<V>
    where
        K: Eq,
    {
        if !self.slotted {
            return self.upsert_inline(hash, key, value);
        }
        self.upsert_slotted(hash, key, value)
    }

    /// [`upsert_plain`](Self::upsert_plain) in a slotted core. Out of line:
    /// a plain store's writes are inline unless a transaction moved it.
    #[inline(never)]
    fn upsert_slotted(&mut self, hash: u64, key: &mut Option<K>, value: &mut Option<V>) -> Option<V>
    where
        K: Eq,
    {
        let probe = key.as_ref().expect("larder: an upsert is given its key");
        let (entry, mut slots) = self.probe_entry(hash, probe);
        let vacant = match entry {
            hash_table::Entry::Occupied(found) => {
                let id = *found.get() as usize;
                let entry = slots.entries[id]
                    .as_mut()
                    .expect("larder: a probed slot id is live");
                let value = value.take().expect("larder: an upsert is given its object");
                let previous = std::mem::replace(&mut entry.value, value);
                self.wrote(id);
                return Some(previous);
            }
            hash_table::Entry::Vacant(vacant) => vacant,
        };
        // Room first (the table has its bucket already), so that nothing
        // below can fail half way.
        let id = slots.room();
        vacant.insert(id);
        let key = key.take().expect("larder: an upsert is given its key");
        let value = value.take().expect("larder: an upsert is given its object");
        slots.fill(id, LiveSlot { hash, key, value }, AllValues::default());
        self.wrote(id as usize);
        None
    }

    /// [`upsert_plain`](Self::upsert_plain) in the inline layout: one
    /// probe, then the object is written into the key's bucket, or the
    /// entry into the bucket the probe found free.
    #[inline(always)]
    fn upsert_inline(&mut self, hash: u64, key: &mut Option<K>, value: &mut Option<V>) -> Option<V>
    where
        K: Eq,
    {
        // Room first (rebuilt from the stored hashes): the probe below
        // then never grows the table.
        self.room.make(&mut self.inline, |entry| entry.hash);
        let full = self.inline.len() >= Id::MAX as usize;
        let probe = key.as_ref().expect("larder: an upsert is given its key");
        match self
            .inline
            .entry(hash, |entry| entry.key == *probe, |entry| entry.hash)
        {
            hash_table::Entry::Occupied(mut found) => {
                let value = value.take().expect("larder: an upsert is given its object");
                Some(std::mem::replace(&mut found.get_mut().value, value))
            }
            hash_table::Entry::Vacant(vacant) => {
                // The bound slot ids would have (checked before any
                // change, so that moving to slots never fails for it).
                assert!(
                    !full,
                    "larder: an IndexedStore shard holds at most {} objects",
                    Id::MAX
                );
                let key = key.take().expect("larder: an upsert is given its key");
                let value = value.take().expect("larder: an upsert is given its object");
                vacant.insert(LiveSlot { hash, key, value });
                None
            }
        }
    }

    /// The entry of `key` (hash `hash`) in the inline layout. Runs `K`'s
    /// `Eq`.
    #[inline]
    pub(super) fn find_inline<Q>(&self, hash: u64, key: &Q) -> Option<&LiveSlot<K, V>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.inline.find(hash, |entry| entry.key.borrow() == key)
    }

    /// Takes the entry of `key` (hash `hash`) out of the inline layout: one
    /// probe, which runs `K`'s `Eq` before the change.
    #[inline]
    pub(super) fn remove_inline<Q>(&mut self, hash: u64, key: &Q) -> Option<Removed<K, V>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let found = self
            .inline
            .find_entry(hash, |entry| entry.key.borrow() == key)
            .ok()?;
        let (entry, _) = found.remove();
        Some(Removed {
            value: entry.value,
            rest: (entry.key, AllValues::default()),
        })
    }

    /// Every live entry, in either layout (the other one is empty).
    #[inline]
    pub(super) fn every_entry(&self) -> impl Iterator<Item = &LiveSlot<K, V>> {
        self.inline.iter().chain(self.entries.iter().flatten())
    }

    /// Every live entry, moved out, in either layout.
    pub(super) fn into_every_entry(self) -> impl Iterator<Item = LiveSlot<K, V>> {
        self.inline
            .into_iter()
            .chain(self.entries.into_iter().flatten())
    }

    /// Whether the objects are in slots (else inline).
    #[cfg(test)]
    pub(crate) fn is_slotted(&self) -> bool {
        self.slotted
    }

    /// Moves an inline core to slots, for good (nothing to do on a slotted
    /// one): entry `n` of the table's order takes slot `n`, and the key
    /// table is rebuilt from the stored hashes. Allocates before it moves
    /// anything, and runs no user code.
    #[inline]
    pub(crate) fn slot(&mut self) {
        if !self.slotted {
            self.slot_cold();
        }
    }

    #[cold]
    #[inline(never)]
    fn slot_cold(&mut self) {
        let len = self.inline.len();
        let mut entries = Vec::with_capacity(len);
        let mut table = HashTable::with_capacity(len);
        entries.extend(std::mem::take(&mut self.inline).into_iter().map(Some));
        for (id, entry) in entries.iter().enumerate() {
            let hash = entry.as_ref().map_or(0, |entry| entry.hash);
            // The capacity is there: the hasher is never called.
            table.insert_unique(hash, bucket_id(id), |&id| stored(&entries, id));
        }
        self.room = Room::of(&table);
        self.table = table;
        self.entries = entries;
        self.slotted = true;
    }
}
