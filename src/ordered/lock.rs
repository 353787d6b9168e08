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

/// How an [`OrderedIndex`](super::OrderedIndex) is locked; see
/// [`OrderedIndexBuilder::lock`](super::OrderedIndexBuilder::lock).
///
/// At 2 threads `Partitioned` is as fast or faster on every workload but
/// short ranges, most of all when writes are frequent (one lock makes
/// writers wait for each other and for every reader; the
/// [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#orderedindex)).
/// With one thread, or
/// for O(1) snapshots, one lock is cheaper: `Single` writes faster,
/// `Sharded` reads scale better.
///
/// # Examples
///
/// ```
/// use larder::{OrderedIndex, OrderedLock};
///
/// let index: OrderedIndex<u64, ()> = OrderedIndex::builder().lock(OrderedLock::Single).build().unwrap();
/// assert_eq!(index.lock_kind(), OrderedLock::Single);
/// assert_eq!(OrderedLock::default(), OrderedLock::Partitioned);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OrderedLock {
    /// One `BTreeMap` under crossbeam's `ShardedLock`: a read locks only
    /// the calling thread's shard, so readers on different cores write
    /// different cache lines and reads scale with cores; a write locks all
    /// eight shards. Snapshots are O(1).
    Sharded,
    /// One `BTreeMap` under one parking_lot `RwLock`: a read and a write
    /// each take one lock word, so writes are cheaper than with `Sharded`,
    /// but every reader writes the same cache line. Snapshots are O(1).
    Single,
    /// No lock over the whole map: the key space is cut into leaves of at
    /// most [`leaf_size`](super::OrderedIndexBuilder::leaf_size)
    /// entries (sorted keys and values in two `Vec`s), every leaf under a parking_lot
    /// `RwLock` of its own, found through a router of leaf bounds under a
    /// `ShardedLock` that operations only read. Writers to different leaves
    /// run in parallel, and a reader writes only its leaf's lock word.
    /// Multi-leaf operations (`drain_to`, ranges, `len`, snapshots) lock
    /// their leaves in key order, all at once, so they stay atomic. Splits
    /// and merges take the router's write lock. No point-lookup table: a
    /// The default.
    #[default]
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
