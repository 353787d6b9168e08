//! The key-sharded state of an [`IndexedStore`](super::IndexedStore): one
//! reader-writer lock per shard ([`ShardLock`]: plain, or striped in a
//! read-mostly store, where a read locks only the calling thread's stripe
//! and a write every stripe), each over a [`Core`] holding the objects
//! whose keys hash to it and its part of every index.
//!
//! # Lock protocol
//!
//! - A point operation (`get`, `insert`, `remove`) locks the one shard its
//!   key hashes to.
//! - A whole-store read (`len`, `keys`, `values`, `by_index`, the visits,
//!   ...) read-locks every shard (striped: its thread's stripe of each), in index
//!   order, and holds them all until it has read every shard: the result
//!   is one consistent cut, taken at the instant the last shard was locked.
//! - A write to several shards (`transaction`) write-locks the shards it
//!   touches in index order; one to all of them (`replace`, `clear`,
//!   `add_index`) write-locks every shard in index order.
//!
//! Every acquisition goes in ascending (shard, stripe) order, so no two of
//! them wait on each other in a cycle.

use super::core::Core;
use super::shard_lock::{ShardLock, ShardReadGuard, ShardWriteGuard};
use crate::sync::{CachePadded, lock_stripe};

/// The most shards a store has (a transaction's set of shards is two
/// words; the shard of a key is `shard_index.rs`'s mapping).
pub(crate) const MAX_SHARDS: usize = 128;

/// The shard count a store gets unless its builder says otherwise: four
/// per core, a power of two, at most [`MAX_SHARDS`] (`DashMap`'s count).
/// Two writers then meet on one shard an eighth of the time at most; each
/// shard adds one read lock and one bucket probe to a whole-store read
/// (the value's hash is computed once): more shards would make those reads
/// dearer (`docs/benchmarks.md` has the `by_index` rows at 4 to 32
/// shards).
pub(crate) fn default_count() -> usize {
    #[cfg(loom)]
    {
        2
    }
    #[cfg(not(loom))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (cores * 4).next_power_of_two().min(MAX_SHARDS)
    }
}

/// One shard: its lock, cache-padded so that shards do not share a line
/// (a striped lock's stripes are padded on their own).
type CoreShard<K, V> = CachePadded<ShardLock<Core<K, V>>>;

/// The shards, in index order.
pub(crate) struct Shards<K, V> {
    locks: Box<[CoreShard<K, V>]>,
    /// `count - 1`; the count is a power of two.
    mask: usize,
}

impl<K, V> Shards<K, V> {
    /// Shards over `cores`, whose count is a power of two no larger than
    /// [`MAX_SHARDS`], and which each hold only keys [`of`](Self::of)
    /// their position; striped locks when `read_mostly`.
    pub(crate) fn new(cores: Vec<Core<K, V>>, read_mostly: bool) -> Self {
        let count = cores.len();
        assert!(
            count.is_power_of_two() && count <= MAX_SHARDS,
            "larder: a shard count must be a power of two up to {MAX_SHARDS}"
        );
        Self {
            locks: cores
                .into_iter()
                .map(|core| CachePadded::new(ShardLock::new(core, read_mostly)))
                .collect(),
            mask: count - 1,
        }
    }

    /// How many shards there are.
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.locks.len()
    }

    /// The shard of a key whose hash is `hash`.
    #[inline]
    pub(crate) fn of(&self, hash: u64) -> usize {
        shard_of(hash, self.mask)
    }

    /// Read-locks shard `shard` (striped: the calling thread's stripe).
    #[inline]
    pub(crate) fn read(&self, shard: usize) -> ShardReadGuard<'_, Core<K, V>> {
        self.locks[shard].read()
    }

    /// Write-locks shard `shard` (striped: every stripe).
    #[inline]
    pub(crate) fn write(&self, shard: usize) -> ShardWriteGuard<'_, Core<K, V>> {
        self.locks[shard].write()
    }

    /// Read-locks every shard, in order, and holds them all: one
    /// consistent cut.
    pub(crate) fn read_all(&self) -> Cut<'_, K, V> {
        let striped = matches!(*self.locks[0], ShardLock::Striped(_));
        let stripe = if striped { lock_stripe() } else { 0 };
        Cut(self.locks.iter().map(|lock| lock.read_on(stripe)).collect())
    }

    /// Write-locks every shard, in order.
    pub(crate) fn write_all(&self) -> Vec<ShardWriteGuard<'_, Core<K, V>>> {
        self.locks.iter().map(|lock| lock.write()).collect()
    }

    /// Write-locks the shards of `mask` (bit `i`: shard `i`), in order,
    /// and returns their guards in that order.
    pub(crate) fn write_some(&self, mask: &ShardSet) -> Vec<ShardWriteGuard<'_, Core<K, V>>> {
        let mut guards = Vec::with_capacity(mask.len());
        guards.extend(mask.iter().map(|shard| self.locks[shard].write()));
        guards
    }
}

/// Every shard read-locked, in order (one read guard per shard).
pub(crate) struct Cut<'a, K, V>(Vec<ShardReadGuard<'a, Core<K, V>>>);

impl<K, V> Cut<'_, K, V> {
    /// Every shard's core, in shard order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Core<K, V>> {
        self.0.iter().map(|guard| &**guard)
    }

    /// Shard 0's core (every store has one).
    pub(crate) fn first(&self) -> &Core<K, V> {
        &self.0[0]
    }
}

/// The shard of a key whose hash is `hash`, among `mask + 1` shards.
#[inline]
pub(crate) fn shard_of(hash: u64, mask: usize) -> usize {
    crate::shard_index::shard_index(hash, mask + 1)
}

/// A set of shard positions (at most [`MAX_SHARDS`]).
#[derive(Default, Clone, Copy)]
pub(crate) struct ShardSet([u64; MAX_SHARDS / 64]);

impl ShardSet {
    pub(crate) fn insert(&mut self, shard: usize) {
        self.0[shard / 64] |= 1 << (shard % 64);
    }

    /// How many members there are.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }

    /// Each member's position among the members (ascending), by shard
    /// (`0` for a shard that is not one).
    pub(crate) fn positions(&self) -> [u8; MAX_SHARDS] {
        let mut positions = [0; MAX_SHARDS];
        for (position, shard) in self.iter().enumerate() {
            positions[shard] = position as u8;
        }
        positions
    }

    /// The members, in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(word, &bits)| {
            let mut bits = bits;
            std::iter::from_fn(move || {
                let bit = bits.trailing_zeros() as usize;
                (bits != 0).then(|| {
                    bits &= bits - 1;
                    word * 64 + bit
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_SHARDS, ShardSet};

    #[test]
    fn a_shard_set_lists_counts_and_positions_its_members() {
        let members = [0, 1, 5, 63, 64, 70, MAX_SHARDS - 1];
        let mut set = ShardSet::default();
        for shard in members {
            set.insert(shard);
        }
        assert_eq!(set.iter().collect::<Vec<_>>(), members);
        let positions = set.positions();
        for (position, shard) in members.into_iter().enumerate() {
            assert_eq!(usize::from(positions[shard]), position);
        }
        assert_eq!(set.len(), members.len());
        assert_eq!(ShardSet::default().iter().count(), 0);
        assert_eq!(ShardSet::default().len(), 0);
    }
}
