//! The sequential core of one shard of [`IndexedStore`](super::IndexedStore):
//! the objects whose keys hash to the shard, and the shard's part of every
//! index; `&mut self`, no locks, no user code except `K`'s `Eq` in lookups.
//! The caller hashes keys (user `Hash`) before calling in.
//!
//! # Layout
//!
//! Two layouts; a core is in one of them, and the other's fields are
//! empty. A core whose schema has never had an index starts *inline*
//! (`core/plain.rs`): `inline: HashTable<LiveSlot>`, each entry (key's hash,
//! key, object) in its key's bucket, as in `HashMap`. It moves to *slots*,
//! for good, the first time something needs slot ids: `add_index`, a
//! transaction, a write that records a revision. A core built for a schema
//! with an index starts in slots:
//!
//! - `entries: Vec<Option<LiveSlot>>`: slot id -> (key's hash, key, object).
//!   Ids are dense and reused through `free`; `by_index` reads each object
//!   it finds in a bucket from here.
//! - `table: HashTable<u32>`: the key index, holding slot ids only (four
//!   bytes and a control byte a bucket). A probe compares the key in the
//!   entry; growth rehashes from the entries' stored hashes, never calling
//!   `K`'s `Hash`.
//! - `values: Vec<AllValues>`: slot id -> the object's values for every
//!   index, kept only while the schema has an index (a store with none pays
//!   nothing for it): one boxed slice a slot, holding an index's one value
//!   inline and only a multi-valued index's values in a list of their own
//!   (`values.rs`).
//! - `indexes[i]: HashTable<(value, Vec<slot id>)>`: one bucket per index
//!   value, a dense list of the slot ids (`u32`) of the objects that have
//!   it (`core/index_lists.rs`). Every shard hashes values with the schema's
//!   hasher, so a whole-store lookup hashes its value once. Buckets hold ids, not keys or objects, so
//!   maintaining them never runs `K`'s `Hash`, an entry costs four bytes,
//!   a lookup walks a slice, and an update that changes no index value
//!   does not touch them at all.
//! - `positions`: slot id -> where its id sits in each of its buckets, so
//!   that removal swap-removes in O(1) (`core/positions.rs`: one arena,
//!   4 bytes a value and 8 a slot).
//!
//! A new object's slot comes from `core/slots.rs`; the reads that gather
//! objects, keys and buckets for whole-store and by-index lookups are in
//! `core/reads.rs`; what `add_index` needs while it computes (the slots
//! written meanwhile, the install) in `core/index_build.rs`; the invariant
//! checker in `core/check.rs`.
//!
//! Each slot stores the values its object had for every index when it was
//! written, so removing or updating an object never calls an index function
//! again (client-go re-runs the function on the old object). Those values
//! are interned: a slot holds clones of its buckets' own `Arc<str>` keys, so
//! the values of 100K objects share a few hundred strings. An update
//! compares per index and only moves the slot between the buckets of the
//! values that changed; its freshly computed copies of the unchanged values
//! go back to the caller, dropped after the lock is released. An empty
//! bucket is removed at once, so index memory tracks the live objects.
//!
//! # Files
//!
//! In its folder: `plain.rs` (the inline layout), `slots.rs` (a new object's
//! slot), `index_lists.rs` (one index: its buckets of slot ids),
//! `positions.rs` (where each id sits in its buckets), `id_hasher.rs` (the
//! hasher of `matching`'s sets of slot ids), `reads.rs` (whole-store and
//! by-index gathering), `index_build.rs` (what `add_index` needs while it
//! computes), `check.rs` (the invariant checker).
//!
//! # User code: `K`'s `Eq`, and only in lookups
//!
//! Every method takes the key's hash, computed by the caller (with no lock
//! held). The only user code the core runs is `K`'s `Eq` while it probes
//! the table ([`find`](Core::find), `get`, `contains_key`), and every write
//! makes that probe before it modifies anything: [`insert_at`](Core::insert_at)
//! and [`remove_at`](Core::remove_at) take the probe's answer (a slot id).
//! Growing or rehashing the table uses the stored hashes, and past the probe
//! a write touches integer-keyed sets and `Arc<str>`-keyed maps only. So a
//! panic in `Eq`, at any call, leaves the core as it was. `Drop` of keys and
//! objects never runs here either: what a write displaces goes back to the
//! caller.

use std::borrow::Borrow;
use std::cmp::Ordering;

use hashbrown::{HashTable, hash_table};

use crate::table_room::Room;

use super::index_fn::{AllValues, Schema, Values, discard};
use crate::sync::Arc;
#[cfg(test)]
pub(crate) use id_hasher::IdHasher;
use index_lists::{Buckets, Id, bucket, unbucket};
use positions::{Positions, Run};
use slots::Slots;

#[cfg(any(test, feature = "testing"))]
mod check;
mod id_hasher;
mod index_build;
mod index_lists;
mod plain;
mod positions;
mod reads;
mod slots;
#[cfg(loom)]
pub(super) use index_build::drop_stale;

/// The bucket id of slot `id` (below `u32::MAX`: checked when the slot was
/// created).
#[inline]
fn bucket_id(id: usize) -> Id {
    id as Id
}

/// One live slot: the key's hash (computed once, when the key came in), the
/// key and the object.
struct LiveSlot<K, V> {
    hash: u64,
    key: K,
    value: V,
}

/// The stored hash of slot `id`: the table's only hasher.
#[inline]
fn stored<K, V>(entries: &[Option<LiveSlot<K, V>>], id: Id) -> u64 {
    entries[id as usize]
        .as_ref()
        .expect("invariant violated: the table lists a free slot")
        .hash
}

/// What an insert replaced; dropped by the caller after unlocking.
pub(crate) enum Inserted<K, V> {
    /// The key was new; the key is in the store.
    New,
    /// The key existed: the previous object, the key the write brought but
    /// did not need, and the previous index values.
    Updated {
        previous: V,
        unused: K,
        values: AllValues,
    },
}

/// What a remove took out; dropped by the caller after unlocking.
pub(crate) struct Removed<K, V> {
    pub(crate) value: V,
    /// Only held to be dropped with the rest, after the lock is released.
    #[allow(dead_code)]
    pub(crate) rest: (K, AllValues),
}

impl<K, V> Removed<K, V> {
    /// The removed object; the key and the index values drop here (call
    /// it with no lock held).
    #[inline]
    pub(crate) fn into_value(self) -> V {
        let (key, values) = self.rest;
        drop(key);
        discard(values);
        self.value
    }
}

/// Objects plus indexes, kept exactly consistent by every `&mut self` method.
pub(crate) struct Core<K, V> {
    /// The inline layout's objects (`core/plain.rs`): empty once
    /// `slotted`.
    inline: HashTable<LiveSlot<K, V>>,
    /// Whether objects live in slots (`table` + `entries`), or inline in
    /// their keys' buckets (`inline`): the latter only in a core built for
    /// a schema with no index, until something needs slot ids
    /// ([`slot`](Self::slot): `add_index`, a transaction, a revision
    /// write).
    slotted: bool,
    table: HashTable<Id>,
    /// When `table` (or `inline`) grows (`table_room.rs`): a shard whose
    /// objects are replaced by others keeps its table's size.
    room: Room,
    entries: Vec<Option<LiveSlot<K, V>>>,
    /// Slot id -> its values for every index; empty while the schema has
    /// no index.
    values: Vec<AllValues>,
    /// Slot id -> the positions of its id in the buckets of its values;
    /// kept exactly when `values` is.
    positions: Positions,
    free: Vec<Id>,
    indexes: Vec<Buckets>,
    schema: Arc<Schema<V>>,
    /// While an `add_index` computes with no lock held: the slots written
    /// since it last looked (`lookup.rs`); `None` otherwise.
    watch: Option<Vec<Id>>,
}

impl<K, V> Core<K, V> {
    /// An empty core with room for `capacity` objects, or `None` if that
    /// much room cannot be had (the capacity overflows, or the allocator
    /// refuses).
    pub(crate) fn with_capacity(schema: Arc<Schema<V>>, capacity: usize) -> Option<Self> {
        let mut core = Self::new(schema);
        if capacity >= Id::MAX as usize {
            return None;
        }
        if !core.slotted {
            core.inline
                .try_reserve(capacity, |_| {
                    unreachable!("an empty table rehashes nothing")
                })
                .ok()?;
            core.room = Room::of(&core.inline);
            return Some(core);
        }
        core.table
            .try_reserve(capacity, |_| {
                unreachable!("an empty table rehashes nothing")
            })
            .ok()?;
        core.room = Room::of(&core.table);
        core.entries.try_reserve(capacity).ok()?;
        if core.indexed() {
            core.values.try_reserve(capacity).ok()?;
            core.positions.try_reserve(capacity)?;
        }
        Some(core)
    }

    /// An empty core.
    pub(crate) fn new(schema: Arc<Schema<V>>) -> Self {
        Self {
            inline: HashTable::new(),
            slotted: !schema.defs.is_empty(),
            table: HashTable::new(),
            room: Room::default(),
            entries: Vec::new(),
            values: Vec::new(),
            positions: Positions::default(),
            free: Vec::new(),
            indexes: schema
                .defs
                .iter()
                .map(|_| Buckets::with_hasher(schema.value_hasher.clone()))
                .collect(),
            schema,
            watch: None,
        }
    }

    /// Whether the schema has an index (and `values` is kept).
    #[inline]
    fn indexed(&self) -> bool {
        !self.schema.defs.is_empty()
    }

    /// Room in the table for one more key, before a write probes it (the
    /// probe of `HashTable::entry` reserves it otherwise, by hashbrown's
    /// rule): rebuilds from the stored hashes, no user code.
    #[inline(always)]
    fn make_room(&mut self) {
        let entries = &self.entries;
        self.room.make(&mut self.table, |&id| stored(entries, id));
    }

    /// The table, and the slot vectors apart from it.
    #[inline]
    fn split(&mut self) -> (&mut HashTable<Id>, Slots<'_, K, V>) {
        let indexed = self.indexed();
        let slots = Slots {
            entries: &mut self.entries,
            values: &mut self.values,
            positions: &mut self.positions,
            free: &mut self.free,
            indexed,
        };
        (&mut self.table, slots)
    }

    pub(crate) fn schema(&self) -> &Arc<Schema<V>> {
        &self.schema
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        if self.slotted {
            self.table.len()
        } else {
            self.inline.len()
        }
    }

    /// Bytes the key table has allocated (tests of memory).
    #[cfg(test)]
    pub(crate) fn table_bytes(&self) -> usize {
        self.table.allocation_size() + self.inline.allocation_size()
    }

    /// The object stored under `key`, whose hash is `hash`. Runs `K`'s `Eq`.
    #[inline]
    pub(crate) fn get<Q>(&self, hash: u64, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        if !self.slotted {
            return self.find_inline(hash, key).map(|entry| &entry.value);
        }
        self.find(hash, key).map(|id| &self.entry(id).value)
    }

    #[inline]
    pub(crate) fn contains_key<Q>(&self, hash: u64, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.get(hash, key).is_some()
    }

    /// The slot id of `key`, whose hash is `hash`: the probe every write
    /// on slots makes before its first change (a slotted core's: see
    /// [`slot`](Self::slot)). Runs `K`'s `Eq`.
    #[inline]
    pub(crate) fn find<Q>(&self, hash: u64, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        debug_assert!(self.slotted, "larder: slot ids of an inline core");
        let entries = &self.entries;
        self.table
            .find(hash, |&id| match &entries[id as usize] {
                Some(entry) => entry.key.borrow() == key,
                None => false,
            })
            .map(|&id| id as usize)
    }

    /// Adds or replaces the object under `key` (hash `hash`). `values` must
    /// come from `self.schema`. Runs `K`'s `Eq` (the probe) before any
    /// change.
    pub(crate) fn insert(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        values: AllValues,
    ) -> Inserted<K, V>
    where
        K: Eq,
    {
        self.slot();
        let found = self.find(hash, &key);
        self.insert_at(hash, found, key, value, values).0
    }

    /// [`insert`](Self::insert) given the probe's answer: `found` is the
    /// slot id of `key` (or `None` if absent), as [`find`](Self::find) gave
    /// it with no change since. Runs no user code. Returns the slot id.
    #[inline]
    pub(crate) fn insert_at(
        &mut self,
        hash: u64,
        found: Option<usize>,
        key: K,
        value: V,
        values: AllValues,
    ) -> (Inserted<K, V>, usize) {
        let (mut inserted, id, mut old) = self.insert_unindexed(hash, found, key, value, values);
        if id < self.values.len() {
            self.reindex(id, old.as_deref_mut());
        }
        if let (Inserted::Updated { values, .. }, Some(old)) = (&mut inserted, old) {
            // Dropped by the caller, after the lock is released.
            *values = old;
        }
        (inserted, id)
    }

    /// Makes room for one more key, then probes the table for `probe`
    /// (runs `K`'s `Eq`): its entry (occupied: the key's slot id; vacant:
    /// the bucket a new key takes), and the slot vectors beside it.
    #[inline(always)]
    fn probe_entry(&mut self, hash: u64, probe: &K) -> (hash_table::Entry<'_, Id>, Slots<'_, K, V>)
    where
        K: Eq,
    {
        self.make_room();
        let (table, slots) = self.split();
        let entries = &*slots.entries;
        let entry = table.entry(
            hash,
            |&id| matches!(&entries[id as usize], Some(entry) if entry.key == *probe),
            |&id| stored(entries, id),
        );
        (entry, slots)
    }

    /// [`insert`](Self::insert) in one pass over the table: the probe that
    /// finds the key also finds the bucket a new key takes. `key` and
    /// `value` stay the caller's (`Some`) until the probe is over: if `K`'s
    /// `Eq` panics, they drop in the caller's frame, after its lock guard.
    /// Past the probe this runs no user code.
    pub(crate) fn upsert(
        &mut self,
        hash: u64,
        key: &mut Option<K>,
        value: &mut Option<V>,
        values: AllValues,
    ) -> Inserted<K, V>
    where
        K: Eq,
    {
        self.slot();
        let probe = key.as_ref().expect("larder: an upsert is given its key");
        let (entry, mut slots) = self.probe_entry(hash, probe);
        let vacant = match entry {
            hash_table::Entry::Occupied(found) => {
                let id = *found.get() as usize;
                let key = key.take().expect("larder: an upsert is given its key");
                let value = value.take().expect("larder: an upsert is given its object");
                return self.insert_at(hash, Some(id), key, value, values).0;
            }
            hash_table::Entry::Vacant(vacant) => vacant,
        };
        // Room first (the table has its bucket already), so that nothing
        // below can fail half way.
        let id = slots.room();
        vacant.insert(id);
        let key = key.take().expect("larder: an upsert is given its key");
        let value = value.take().expect("larder: an upsert is given its object");
        if slots.fill(id, LiveSlot { hash, key, value }, values) {
            self.reindex(id as usize, None);
        }
        self.wrote(id as usize);
        Inserted::New
    }

    /// The object half of `insert_at`: entry and slot values, leaving the
    /// buckets as they were. Returns the slot id and its previous index
    /// values, for [`reindex`](Self::reindex). Only `insert_at` and the
    /// loom negative control call it.
    #[inline]
    pub(crate) fn insert_unindexed(
        &mut self,
        hash: u64,
        found: Option<usize>,
        key: K,
        value: V,
        values: AllValues,
    ) -> (Inserted<K, V>, usize, Option<AllValues>) {
        if let Some(id) = found {
            self.wrote(id);
            let entry = self.entries[id]
                .as_mut()
                .expect("larder: a probed slot id is live");
            let previous = std::mem::replace(&mut entry.value, value);
            // `reindex` diffs the old values against these (and keeps the
            // interned copies of an index whose values did not change).
            let old = match self.values.get_mut(id) {
                Some(kept) => Some(std::mem::replace(kept, values)),
                None => {
                    discard(values);
                    None
                }
            };
            let inserted = Inserted::Updated {
                previous,
                unused: key,
                values: AllValues::default(),
            };
            return (inserted, id, old);
        }
        // Room first (growing rehashes from the stored hashes: no user
        // code), so that nothing below can fail half way.
        self.make_room();
        let (table, mut slots) = self.split();
        let id = slots.room();
        slots.fill(id, LiveSlot { hash, key, value }, values);
        let entries = &*slots.entries;
        table.insert_unique(hash, id, |&id| stored(entries, id));
        self.wrote(id as usize);
        (Inserted::New, id as usize, None)
    }

    /// The index half of `insert_at`: moves slot `id` from the buckets of its
    /// `old` values (none for a new object) to those of its current values, and interns the values it gained (the
    /// slot keeps the bucket's own `Arc<str>`). An index whose values did
    /// not change keeps its positions without touching its buckets. Both
    /// lists are sorted, so the rest is one merge.
    ///
    /// Where an index's values did not change, the slot keeps the interned
    /// copies, and the fresh ones go back in `old` (dropped by the caller).
    pub(crate) fn reindex(&mut self, id: usize, old: Option<&mut [Values]>) {
        if self.values.len() <= id {
            return;
        }
        // Out of `values` while it changes: the ids a removal moves are
        // other slots', whose values the fix-up reads.
        let mut slot = std::mem::take(&mut self.values[id]);
        let mut old = old.map(|old| old.iter_mut());
        let old_at = Run::from_slice(self.positions.get(id));
        let mut at = Run::new();
        let mut offset = 0;
        let slot_id = bucket_id(id);
        for (index, (buckets, new)) in self.indexes.iter_mut().zip(slot.iter_mut()).enumerate() {
            let (old, unchanged) = match old.as_mut().and_then(Iterator::next) {
                Some(old) => {
                    // One comparison per index: an unchanged index keeps
                    // its interned copies (the fresh ones go back in `old`).
                    let unchanged = *old == *new;
                    if unchanged {
                        std::mem::swap(old, new);
                    }
                    (&old[..], unchanged)
                }
                None => (&[][..], new.is_empty()),
            };
            let Some(old_at) = old_at.get(offset..offset + old.len()) else {
                panic!("invariant violated: a slot's positions do not match its values");
            };
            offset += old.len();
            if unchanged {
                at.extend_from_slice(old_at);
                continue;
            }
            let (mut i, mut j) = (0, 0);
            while i < old.len() || j < new.len() {
                let order = match (old.get(i), new.get(j)) {
                    (Some(o), Some(n)) => o.cmp(n),
                    (Some(_), None) => Ordering::Less,
                    (None, _) => Ordering::Greater,
                };
                match order {
                    Ordering::Equal => {
                        // Still listed; keep the interned copy.
                        let (o, n) = (&old[i], &mut new[j]);
                        if !Arc::ptr_eq(o, n) {
                            *n = Arc::clone(o);
                        }
                        at.push(old_at[i]);
                        i += 1;
                        j += 1;
                    }
                    Ordering::Less => {
                        let values = &self.values;
                        unbucket(
                            buckets,
                            index,
                            &old[i],
                            slot_id,
                            old_at[i],
                            values,
                            &mut self.positions,
                        );
                        i += 1;
                    }
                    Ordering::Greater => {
                        at.push(bucket(buckets, &mut new[j], slot_id));
                        j += 1;
                    }
                }
            }
        }
        self.values[id] = slot;
        self.positions.set(id, &at);
    }

    /// [`insert`](Self::insert) into a core being built (not shared yet,
    /// so no lock is held and what a repeated key displaces drops here): a
    /// new key's values go straight into their buckets, its positions onto
    /// the end of the arena. Runs `K`'s `Eq` (the probe) before any change.
    pub(crate) fn build_insert(&mut self, hash: u64, key: K, value: V, values: AllValues)
    where
        K: Eq,
    {
        if !self.slotted {
            // What a repeated key displaces drops here.
            drop(self.upsert_plain(hash, &mut Some(key), &mut Some(value)));
            discard(values);
            return;
        }
        let indexed = self.indexed();
        if !self.free.is_empty() || self.entries.len() >= Id::MAX as usize {
            // Not a core being built from scratch (or a full one, which
            // `insert` reports): the general insert.
            drop(self.insert(hash, key, value, values));
            return;
        }
        // Room first, then one probe that finds the key or its place.
        self.make_room();
        self.entries.reserve(1);
        if indexed {
            self.values.reserve(1);
            self.positions.reserve(1);
        }
        let entries = &self.entries;
        let vacant = match self.table.entry(
            hash,
            |&id| matches!(&entries[id as usize], Some(entry) if entry.key == key),
            |&id| stored(entries, id),
        ) {
            hash_table::Entry::Occupied(found) => {
                let found = Some(*found.get() as usize);
                drop(self.insert_at(hash, found, key, value, values));
                return;
            }
            hash_table::Entry::Vacant(vacant) => vacant,
        };
        let id = self.entries.len();
        vacant.insert(bucket_id(id));
        self.entries.push(Some(LiveSlot { hash, key, value }));
        self.wrote(id);
        if !indexed {
            return;
        }
        self.values.push(values);
        self.positions.push_slot();
        let slot = &mut self.values[id];
        for (buckets, values) in self.indexes.iter_mut().zip(slot.iter_mut()) {
            for value in values.iter_mut() {
                let at = bucket(buckets, value, bucket_id(id));
                self.positions.append(id, at);
            }
        }
    }

    /// Removes the object under `key` (hash `hash`) from the table, the
    /// slots and every index. Runs `K`'s `Eq` (the probe) before any change.
    #[inline]
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q) -> Option<Removed<K, V>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        if !self.slotted {
            return self.remove_inline(hash, key);
        }
        // One probe, by key, that also unmaps the slot: `K`'s `Eq` runs
        // before the first change.
        let entries = &self.entries;
        let found = self
            .table
            .find_entry(hash, |&id| match &entries[id as usize] {
                Some(entry) => entry.key.borrow() == key,
                None => false,
            })
            .ok()?;
        let id = found.remove().0 as usize;
        if self.values.is_empty() {
            // No index (a core keeps index values only while its schema
            // has one): the slot alone, with no values or positions to
            // take and move.
            return Some(self.vacate(id));
        }
        let (mut removed, (values, at)) = self.take_slot(id);
        if !values.is_empty() {
            self.unindex(id, &values, &at);
        }
        removed.rest.1 = values;
        Some(removed)
    }

    /// [`remove`](Self::remove) given the probe's answer: the slot id of a
    /// key whose hash is `hash`. Runs no user code.
    pub(crate) fn remove_at(&mut self, hash: u64, id: usize) -> Removed<K, V> {
        let (mut removed, (values, at)) = self.remove_unindexed(hash, id);
        self.unindex(id, &values, &at);
        // Dropped by the caller, after the lock is released.
        removed.rest.1 = values;
        removed
    }

    /// The object half of `remove_at`; [`unindex`](Self::unindex) is the
    /// index half. Only `remove_at` and the loom negative control call it.
    pub(crate) fn remove_unindexed(
        &mut self,
        hash: u64,
        id: usize,
    ) -> (Removed<K, V>, (AllValues, Run)) {
        let slot = bucket_id(id);
        match self.table.find_entry(hash, |&other| other == slot) {
            Ok(found) => drop(found.remove()),
            Err(_) => panic!("larder: a probed slot id is mapped"),
        }
        self.take_slot(id)
    }

    /// The rest of a removal once slot `id` is out of the table: empties
    /// the slot and hands back what it held, its index values and their
    /// bucket positions (for [`unindex`](Self::unindex)).
    #[inline]
    fn take_slot(&mut self, id: usize) -> (Removed<K, V>, (AllValues, Run)) {
        let removed = self.vacate(id);
        let values = self
            .values
            .get_mut(id)
            .map(std::mem::take)
            .unwrap_or_default();
        let at = if id < self.positions.len() {
            self.positions.take(id)
        } else {
            Run::new()
        };
        (removed, (values, at))
    }

    /// Empties slot `id` (out of the table already) onto the free list and
    /// hands back its key and object.
    #[inline]
    fn vacate(&mut self, id: usize) -> Removed<K, V> {
        let entry = self.entries[id].take().expect("a mapped slot id is live");
        // Not recorded for a watching `add_index`: a free slot's values
        // are never installed, and its next object records its write.
        self.free.push(bucket_id(id));
        Removed {
            value: entry.value,
            rest: (entry.key, AllValues::default()),
        }
    }

    /// Takes removed slot `id` out of the buckets of its `values`, at its
    /// positions `at`.
    pub(crate) fn unindex(&mut self, id: usize, values: &[Values], at: &[u32]) {
        let id = bucket_id(id);
        let mut at = at.iter();
        for (index, (buckets, values)) in self.indexes.iter_mut().zip(values).enumerate() {
            for (value, &at) in values.iter().zip(&mut at) {
                unbucket(
                    buckets,
                    index,
                    value,
                    id,
                    at,
                    &self.values,
                    &mut self.positions,
                );
            }
        }
    }

    /// Every live entry, in slot order.
    fn live(&self) -> impl Iterator<Item = (usize, &LiveSlot<K, V>)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(id, entry)| entry.as_ref().map(|entry| (id, entry)))
    }

    /// The live entry in slot `id`, which the table or an index lists.
    #[inline]
    fn entry(&self, id: usize) -> &LiveSlot<K, V> {
        self.entries[id]
            .as_ref()
            .expect("invariant violated: an index lists a removed object")
    }
}
