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
//! half of all sizes (`design/open-work.md` records a cache of 1M entries
//! whose tables doubled so).
//!
//! With a [`Room`] beside it, the table is rebuilt at its size, deleted
//! buckets dropped, while it is under two thirds full, and doubled only
//! past that. A rebuild moves every item once and leaves room for half the
//! items at least; the next comes only once deleted buckets have used that
//! room up, so it costs a few moves per removal at most. Rebuilds hash items with the
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

    /// The room is gone: rebuilt at the same size while under two thirds
    /// full (deleted buckets took the room), else at twice the size. Either
    /// way the fresh table has room for half its items at least.
    #[cold]
    #[inline(never)]
    fn make_cold<T>(&mut self, table: &mut HashTable<T>, hash: impl Fn(&T) -> u64) {
        // `len <= full`: the table never holds more than its buckets take.
        let len = table.len();
        let room = if len.saturating_mul(3) < self.full.saturating_mul(2) {
            self.full
        } else {
            self.full.saturating_add(1)
        };
        self.rebuild(table, room, hash);
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A hash as random as a real hasher's (splitmix64's finalizer): buckets
    /// fill in clusters, as they do under ahash, where a plain multiply's
    /// evenly spread low bits leave no bucket deleted.
    pub(crate) fn mixed(key: u64) -> u64 {
        let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Keeps `live` keys in a table while inserting `churn` new ones (each
    /// after removing the oldest), making room before each insert; checks
    /// that a rebuild always leaves room for half the items at least (so
    /// rebuilds are rare), and returns the bytes allocated at the end
    /// against those when first filled.
    fn churned(live: u64, churn: u64) -> (usize, usize) {
        let mut table = HashTable::new();
        let mut room = Room::default();
        let mut filled = 0;
        for key in 0..live + churn {
            if key >= live {
                let old = key - live;
                match table.find_entry(mixed(old), |&k| k == old) {
                    Ok(found) => drop(found.remove()),
                    Err(_) => panic!("key {old} missing"),
                }
            }
            let rebuilds = table.len() == table.capacity();
            room.make(&mut table, |&k| mixed(k));
            if rebuilds {
                let free = table.capacity() - table.len();
                assert!(
                    free >= table.len() / 2,
                    "a rebuild left room for {free} more of {} items",
                    table.len()
                );
            }
            table.insert_unique(mixed(key), key, |&k| mixed(k));
            if key + 1 == live {
                filled = table.allocation_size();
            }
        }
        (filled, table.allocation_size())
    }

    #[test]
    fn a_table_of_steady_size_keeps_its_size_and_its_room() {
        // 1,000 items: 49% of 2,048 buckets (hashbrown would double it
        // once deleted buckets used up its room); 1,500: 73%, past two
        // thirds of the 1,792 the buckets take, so it doubles once and
        // stays there.
        let (filled, after) = churned(1_000, 100_000);
        assert_eq!(after, filled, "1,000 items: the table grew");
        let (filled, after) = churned(1_500, 100_000);
        assert!(
            after <= 2 * filled,
            "1,500 items: {after} bytes from {filled}"
        );
    }
}
