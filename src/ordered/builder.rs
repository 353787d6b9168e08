//! [`OrderedIndexBuilder`]: the locking, the leaf size, the point-lookup
//! table and the hasher of an [`OrderedIndex`].

use std::fmt;
use std::marker::PhantomData;

use std::hash::{BuildHasher, Hash};

use super::lock::{CoreLock, OrderedLock};
use super::partitioned::{DEFAULT_LEAF_SIZE, Partitioned};
use super::sequential::{Map, OrderedCore};
use super::{Engine, OrderedIndex};
use crate::error::BuildError;

/// Builds an [`OrderedIndex`]: how it is locked, how big its leaves grow,
/// whether point lookups go through a hash table, and which hasher that
/// table uses. Made by [`OrderedIndex::builder`]; every setting has a
/// default, and none can be wrong (a leaf size below 2 counts as 2), so
/// [`build`](Self::build) never returns its error today; it returns a
/// `Result` as every builder in this crate does.
///
/// | setting | default | choose the other when |
/// |---|---|---|
/// | [`lock`](Self::lock) | [`OrderedLock::Partitioned`]: leaves under a lock each, writers in parallel | one thread, or O(1) snapshots: [`OrderedLock::Single`] or [`OrderedLock::Sharded`] (one `BTreeMap` under one lock) |
/// | [`leaf_size`](Self::leaf_size) | 128 entries | see its docs; only the partitioned engine has leaves |
/// | [`point_lookups`](Self::point_lookups) | `true`: `get`, `get_with` and `contains_key` are one hash probe | keys are never looked up one by one (a consumer that only inserts and drains): `false` saves a key clone, a hash, a lock and a table update per write, and the table's memory |
/// | [`hasher`](Self::hasher) | ahash's `RandomState` | keys need another hash (a fixed seed, a faster hash for trusted keys) |
///
/// # Examples
///
/// ```
/// use larder::{OrderedIndex, OrderedLock};
///
/// let index: OrderedIndex<String, u32> = OrderedIndex::builder()
///     .lock(OrderedLock::Single)
///     .build()
///     .unwrap();
/// index.insert("b".into(), 2);
/// index.insert("a".into(), 1);
/// assert_eq!(index.get("a").as_deref(), Some(&1));
/// assert_eq!(index.lock_kind(), OrderedLock::Single);
/// assert!(index.has_point_lookups());
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct OrderedIndexBuilder<K, V, S = ahash::RandomState> {
    lock: OrderedLock,
    point_lookups: bool,
    leaf_size: usize,
    hasher: S,
    /// The index type to build (so that `build` needs no turbofish).
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> OrderedIndexBuilder<K, V> {
    /// The defaults: sharded lock, point-lookup table on, ahash.
    pub(super) fn new() -> Self {
        Self {
            lock: OrderedLock::default(),
            point_lookups: true,
            leaf_size: DEFAULT_LEAF_SIZE,
            hasher: crate::sync::default_hasher(),
            types: PhantomData,
        }
    }
}

impl<K, V, S> OrderedIndexBuilder<K, V, S> {
    /// How the index is locked (default [`OrderedLock::Partitioned`]).
    pub fn lock(mut self, lock: OrderedLock) -> Self {
        self.lock = lock;
        self
    }

    /// Whether `get`, `get_with` and `contains_key` probe a hash table kept
    /// beside the ordered entries (`true`, the default) or search them.
    ///
    /// Without the table, a write does one search and no hashing, key clone
    /// or table update, and the index holds no second copy of its keys;
    /// point reads cost a tree search (O(log n) comparisons). Everything
    /// ordered behaves the same either way.
    ///
    /// With [`OrderedLock::Partitioned`] the table is split by hash into
    /// shards under a lock each; without it a point read searches the
    /// router and one leaf.
    pub fn point_lookups(mut self, on: bool) -> Self {
        self.point_lookups = on;
        self
    }

    /// With [`OrderedLock::Partitioned`], the most entries a leaf holds
    /// before it splits in two (default 128; values below 2 count as 2,
    /// values above 2^20 as 2^20).
    /// Ignored by the other locks.
    ///
    /// Smaller leaves mean less copying per write (a leaf is a sorted
    /// `Vec`) and fewer writers meeting on one leaf, but more leaves to
    /// route through and lock along a range, and more splits and merges,
    /// each of which briefly excludes every other operation.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{OrderedIndex, OrderedLock};
    ///
    /// let index: OrderedIndex<u32, ()> =
    ///     OrderedIndex::builder().lock(OrderedLock::Partitioned).leaf_size(0).build().unwrap();
    /// assert_eq!(index.leaf_size(), Some(2));
    /// ```
    pub fn leaf_size(mut self, entries: usize) -> Self {
        self.leaf_size = entries;
        self
    }

    /// The hasher of the point-lookup table (default ahash's `RandomState`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    ///
    /// let index: larder::OrderedIndex<u8, (), RandomState> =
    ///     larder::OrderedIndex::builder().hasher(RandomState::new()).build().unwrap();
    /// index.insert(1, ());
    /// assert!(index.contains_key(&1));
    /// ```
    pub fn hasher<H>(self, hasher: H) -> OrderedIndexBuilder<K, V, H> {
        OrderedIndexBuilder {
            lock: self.lock,
            point_lookups: self.point_lookups,
            leaf_size: self.leaf_size,
            hasher,
            types: PhantomData,
        }
    }

    /// An empty index with these settings.
    ///
    /// # Errors
    ///
    /// None at present: every setting is valid or clamped, as its docs say.
    /// The `Result` is every builder's shape in this crate (a later setting
    /// may be refusable without a breaking change).
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u32, &str> = larder::OrderedIndex::builder().build()?;
    /// assert!(index.is_empty());
    /// # Ok::<(), larder::BuildError>(())
    /// ```
    pub fn build(self) -> Result<OrderedIndex<K, V, S>, BuildError> {
        Ok(self.build_index())
    }

    /// [`build`](Self::build), which cannot fail.
    pub(crate) fn build_index(self) -> OrderedIndex<K, V, S> {
        let (engine, point_lookups) = match self.lock {
            OrderedLock::Partitioned => (
                Engine::Partitioned(Partitioned::new(self.leaf_size, self.point_lookups)),
                self.point_lookups,
            ),
            lock @ (OrderedLock::Sharded | OrderedLock::Single) => (
                Engine::Locked(CoreLock::new(lock, OrderedCore::new(self.point_lookups))),
                self.point_lookups,
            ),
        };
        OrderedIndex::from_engine(engine, self.hasher, point_lookups)
    }

    /// Builds the index holding `map`'s entries (for `FromIterator`).
    pub(super) fn build_from(self, map: Map<K, V>) -> OrderedIndex<K, V, S>
    where
        K: Clone + Hash,
        S: BuildHasher,
    {
        let (engine, point_lookups) = match self.lock {
            OrderedLock::Partitioned => (
                Engine::Partitioned(Partitioned::from_map(
                    map,
                    self.leaf_size,
                    self.point_lookups,
                    |key| self.hasher.hash_one(key),
                )),
                self.point_lookups,
            ),
            lock @ (OrderedLock::Sharded | OrderedLock::Single) => {
                let core = if self.point_lookups {
                    OrderedCore::from_map(map, |key| self.hasher.hash_one(key))
                } else {
                    OrderedCore::from_map_without_table(map)
                };
                (
                    Engine::Locked(CoreLock::new(lock, core)),
                    self.point_lookups,
                )
            }
        };
        OrderedIndex::from_engine(engine, self.hasher, point_lookups)
    }
}

impl<K, V, S> fmt::Debug for OrderedIndexBuilder<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrderedIndexBuilder")
            .field("lock", &self.lock)
            .field("point_lookups", &self.point_lookups)
            .field("leaf_size", &self.leaf_size)
            .finish_non_exhaustive()
    }
}
