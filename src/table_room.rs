//! [`Room`]: when a hashbrown table that entries keep leaving and arriving
//! grows, decided by the table's owner rather than by hashbrown.
//!
//! hashbrown marks a removed bucket deleted rather than empty when the
//! group around it is full, and a deleted bucket uses up the room left for
//! inserts as a live one does. Once that room is gone, hashbrown rehashes in
//! place a table at most seven sixteenths full, and doubles any fuller one,
//! though it holds no more than before. A structure whose size stays level
//! while its keys change (a cache at capacity, a store whose objects are
//! replaced by others) then doubles its table under churn alone, at about
//! half of all sizes: 1M entries over 256 cache shards took 46 resident
//! bytes an entry after 2M inserts and 58 after 20M.
//!
//! With a [`Room`] beside it, the table is rebuilt at its size, deleted
//! buckets dropped, while it is at most two thirds full, and doubled only
//! past that. A rebuild moves every item once; it comes when deleted buckets
//! have used up the room, a third of the buckets' worth at least, so it
//! costs a few moves per removal at most. Rebuilds hash items with the
//! caller's function, which reads stored hashes: no user code.

use hashbrown::HashTable;

/// The size a table was last built for.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Room {
    /// The most items the table's buckets take (hashbrown keeps an eighth
    /// of them empty), as of its last rebuild.
    full: usize,
}

impl Room {
    /// The room of `table` as it is now, freshly built (nothing deleted).
    pub(crate) fn of<T>(table: &HashTable<T>) -> Self {
        Self {
            full: table.capacity(),
        }
    }

    /// Makes sure `table` can take one more item without hashbrown growing
    /// it: call before every insert. `hash` gives an item's hash.
    #[inline(always)]
    pub(crate) fn make<T>(&mut self, table: &mut HashTable<T>, hash: impl Fn(&T) -> u64) {
        if table.len() == table.capacity() {
            self.make_cold(table, hash);
        }
    }

    /// The room is gone: rebuilt at the same size while at most two thirds
    /// full (deleted buckets took the room), else at twice the size.
    #[cold]
    #[inline(never)]
    fn make_cold<T>(&mut self, table: &mut HashTable<T>, hash: impl Fn(&T) -> u64) {
        let len = table.len();
        let room = if len.saturating_mul(3) <= self.full.saturating_mul(2) {
            self.full
        } else {
            self.full.saturating_add(1)
        };
        self.rebuild(table, room.max(len + 1), hash);
    }

    /// Moves every item of `table` into a fresh table with room for `room`
    /// (at least its length): no deleted buckets, no more buckets than that
    /// room needs.
    pub(crate) fn rebuild<T>(
        &mut self,
        table: &mut HashTable<T>,
        room: usize,
        hash: impl Fn(&T) -> u64,
    ) {
        let mut fresh = HashTable::with_capacity(room.max(table.len()));
        for item in std::mem::take(table) {
            // The room is there: `hash` is not called to grow.
            fresh.insert_unique(hash(&item), item, &hash);
        }
        *self = Self::of(&fresh);
        *table = fresh;
    }
}
