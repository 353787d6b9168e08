//! The reader-writer lock of an [`OrderedIndex`](super::OrderedIndex),
//! chosen per instance ([`OrderedLock`]): crossbeam's `ShardedLock` or one
//! parking_lot `RwLock`, behind one pair of guard types.
//!
//! The choice is made once, at construction, so the branch in `read` and
//! `write` always goes the same way and the predictor hides it.

use std::ops::{Deref, DerefMut};

use crate::sync::{
    RwLock, RwLockReadGuard, RwLockWriteGuard, ShardedLock, ShardedReadGuard, ShardedWriteGuard,
};

/// Which reader-writer lock an [`OrderedIndex`](super::OrderedIndex) guards
/// its map with; see
/// [`OrderedIndexBuilder::lock`](super::OrderedIndexBuilder::lock).
///
/// Measured on the 2-vCPU machine of `docs/benchmarks.md` at 2 threads
/// (`docs/ordered.md` has the table): `Single` writes about 1.5-1.7x faster,
/// `Sharded` point reads do not slow down when a second thread reads (with
/// `Single` they fell from 16.5 to 11.3 M/s at 64K keys).
///
/// # Examples
///
/// ```
/// use larder::{OrderedIndex, OrderedLock};
///
/// let index: OrderedIndex<u64, ()> = OrderedIndex::builder().lock(OrderedLock::Single).build();
/// assert_eq!(index.lock_kind(), OrderedLock::Single);
/// assert_eq!(OrderedLock::default(), OrderedLock::Sharded);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OrderedLock {
    /// crossbeam's `ShardedLock` (the default): a read locks only the
    /// calling thread's shard, so readers on different cores write
    /// different cache lines and reads scale with cores; a write locks all
    /// eight shards. For read-mostly indexes.
    #[default]
    Sharded,
    /// One parking_lot `RwLock`: a read and a write each take one lock word,
    /// so writes are cheaper, but every reader writes the same cache line.
    /// For write-heavy use, such as a consumer inserting and draining
    /// offsets at a high rate.
    Single,
    /// No lock over the whole map: the key space is cut into leaves of at
    /// most [`leaf_capacity`](super::OrderedIndexBuilder::leaf_capacity)
    /// entries (a sorted `Vec` each), every leaf under a parking_lot
    /// `RwLock` of its own, found through a router of leaf bounds under a
    /// `ShardedLock` that operations only read. Writers to different leaves
    /// run in parallel, and a reader writes only its leaf's lock word.
    /// Multi-leaf operations (`drain_to`, ranges, `len`, snapshots) lock
    /// their leaves in key order, all at once, so they stay atomic. Splits
    /// and merges take the router's write lock. No point-lookup table: a
    /// point read is two binary searches.
    Partitioned,
}

/// The lock itself.
pub(crate) enum CoreLock<T> {
    Sharded(ShardedLock<T>),
    Single(RwLock<T>),
}

impl<T> CoreLock<T> {
    pub(crate) fn new(kind: OrderedLock, value: T) -> Self {
        match kind {
            OrderedLock::Sharded => Self::Sharded(ShardedLock::new(value)),
            OrderedLock::Single => Self::Single(RwLock::new(value)),
            OrderedLock::Partitioned => unreachable!("larder: a partitioned index has no CoreLock"),
        }
    }

    pub(crate) fn kind(&self) -> OrderedLock {
        match self {
            Self::Sharded(_) => OrderedLock::Sharded,
            Self::Single(_) => OrderedLock::Single,
        }
    }

    #[inline]
    pub(crate) fn read(&self) -> ReadGuard<'_, T> {
        match self {
            Self::Sharded(lock) => ReadGuard::Sharded(lock.read()),
            Self::Single(lock) => ReadGuard::Single(lock.read()),
        }
    }

    #[inline]
    pub(crate) fn write(&self) -> WriteGuard<'_, T> {
        match self {
            Self::Sharded(lock) => WriteGuard::Sharded(lock.write()),
            Self::Single(lock) => WriteGuard::Single(lock.write()),
        }
    }
}

/// Shared guard of a [`CoreLock`].
pub(crate) enum ReadGuard<'a, T> {
    Sharded(ShardedReadGuard<'a, T>),
    Single(RwLockReadGuard<'a, T>),
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            Self::Sharded(guard) => guard,
            Self::Single(guard) => guard,
        }
    }
}

/// Exclusive guard of a [`CoreLock`].
pub(crate) enum WriteGuard<'a, T> {
    Sharded(ShardedWriteGuard<'a, T>),
    Single(RwLockWriteGuard<'a, T>),
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            Self::Sharded(guard) => guard,
            Self::Single(guard) => guard,
        }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        match self {
            Self::Sharded(guard) => guard,
            Self::Single(guard) => guard,
        }
    }
}
