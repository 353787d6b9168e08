//! [`IndexedStoreBuilder`]: registers named index functions, then builds an
//! [`IndexedStore`].

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use super::IndexedStore;
use super::core::Core;
use super::error::IndexError;
use super::index_fn::{BoxError, IndexDef, Schema};
use super::shards;
use crate::error::BuildError;
use crate::sync::Arc;

/// Builds an [`IndexedStore`] with named index functions, an initial capacity
/// and a hasher. Created by [`IndexedStore::builder`].
///
/// An index function maps an object to zero, one or many index values (a
/// namespace; every `label=value` pair). The values are strings, as in
/// client-go: anything that converts into `Arc<str>` (`String`, `&'static
/// str`, `Arc<str>`, `Box<str>`), returned as any `IntoIterator` (`[v]`,
/// `Some(v)`, `Vec`, an iterator that owns its data). Duplicates are ignored.
///
/// # Examples
///
/// ```
/// use larder::IndexedStore;
///
/// #[derive(Debug)]
/// struct Pod { namespace: String, labels: Vec<(String, String)> }
///
/// let pods: IndexedStore<String, Pod> = IndexedStore::builder()
///     .index("namespace", |pod: &Pod| [pod.namespace.clone()])
///     .index("label", |pod: &Pod| {
///         pod.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>()
///     })
///     .initial_capacity(1024)
///     .build()
///     .unwrap();
/// assert_eq!(pods.index_names(), ["namespace", "label"]);
/// ```
pub struct IndexedStoreBuilder<K, V, S = ahash::RandomState> {
    defs: Vec<IndexDef<V>>,
    initial_capacity: usize,
    shards: Option<usize>,
    read_mostly: bool,
    hasher: S,
    _keys: PhantomData<fn() -> K>,
}

impl<K, V> IndexedStoreBuilder<K, V> {
    pub(crate) fn new() -> Self {
        Self {
            defs: Vec::new(),
            initial_capacity: 0,
            shards: None,
            read_mostly: false,
            hasher: crate::sync::default_hasher(),
            _keys: PhantomData,
        }
    }
}

impl<K, V, S> IndexedStoreBuilder<K, V, S> {
    /// Registers an infallible index function under `name`.
    ///
    /// The function is user code: the store calls it with no lock held,
    /// once per written object and index, and never on removal (the values
    /// are remembered). It should be deterministic: the same object must
    /// always give the same values.
    ///
    /// A closure cannot return an iterator that borrows from its argument;
    /// collect into a `Vec` instead (see the type's example).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, String>::builder()
    ///     .index("len", |s: &String| [s.len().to_string()])
    ///     .build()
    ///     .unwrap();
    /// store.insert(1, "abc".to_string()).unwrap();
    /// assert_eq!(store.index_keys("len", "3").unwrap(), [1]);
    /// ```
    pub fn index<F, I>(mut self, name: &str, func: F) -> Self
    where
        F: Fn(&V) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: Into<Arc<str>>,
        V: 'static,
    {
        self.defs.push(IndexDef::infallible(name, func));
        self
    }

    /// Registers a fallible index function under `name`: when it returns
    /// `Err`, the write that needed it is rejected with
    /// [`IndexError::IndexFunction`](crate::IndexError::IndexFunction) and
    /// the store is left unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, String>::builder()
    ///     .try_index("number", |s: &String| {
    ///         s.parse::<u64>().map(|n| [(n % 10).to_string()])
    ///     })
    ///     .build()
    ///     .unwrap();
    /// assert!(store.insert(1, "42".to_string()).is_ok());
    /// assert!(store.insert(2, "forty-two".to_string()).is_err());
    /// assert_eq!(store.len(), 1);
    /// ```
    pub fn try_index<F, I, E>(mut self, name: &str, func: F) -> Self
    where
        F: Fn(&V) -> Result<I, E> + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: Into<Arc<str>>,
        E: Into<BoxError>,
        V: 'static,
    {
        self.defs.push(IndexDef::fallible(name, func));
        self
    }

    /// Reserves room for `initial_capacity` objects up front. Not a bound:
    /// the store grows past it as needed. [`build`](Self::build) fails with
    /// [`BuildError::CapacityOverflow`] if that much room cannot be
    /// had.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::builder().initial_capacity(100).build().unwrap();
    /// assert!(store.is_empty());
    /// ```
    pub fn initial_capacity(mut self, initial_capacity: usize) -> Self {
        self.initial_capacity = initial_capacity;
        self
    }

    /// Sets how many shards the store's state is split into, rounded up to
    /// a power of two. A point write locks the one shard its key hashes to;
    /// a whole-store read (`by_index`, `values_to_vec`, ...) locks every shard, so
    /// more shards let more writers run at once and make those reads cost
    /// more: a read lock and a bucket probe per shard (about 130
    /// instructions: the
    /// [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#indexedstore)).
    /// The default is four per core, rounded up to a power of two, at most 128
    /// (8 on a 2-core machine, 32 on 8 cores). `build` fails if this is 0
    /// or more than 128.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::builder().shards(4).build().unwrap();
    /// assert_eq!(store.shard_count(), 4);
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Makes reads scale across cores at the cost of every write (default
    /// `false`).
    ///
    /// Each shard's lock gets one read stripe per core (cores rounded up to
    /// a power of two, 2 to 8), each on its own 128-byte line: a read locks
    /// only its thread's stripe, so readers on different cores write no
    /// shared line; a write locks every stripe of its shard. Use it when
    /// reads far outnumber writes and run on several cores at once, e.g. an
    /// informer's store read by many workers; keep the default for
    /// write-heavy or single-threaded use. Costs 128 bytes per stripe per
    /// shard.
    ///
    /// On one thread, and wherever writes are more than a few in a hundred
    /// operations, it is slower than the plain lock; at two threads with
    /// 98% reads it is about level with it (the
    /// [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#indexedstore-read-mostly-stores)).
    /// Two cores are the least where it can pay: each added core reading
    /// at once adds to a plain lock word's traffic and not to a stripe's.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::builder().read_mostly(true).build().unwrap();
    /// store.insert(1, 2).unwrap();
    /// assert_eq!(store.get(&1), Some(2));
    /// ```
    pub fn read_mostly(mut self, read_mostly: bool) -> Self {
        self.read_mostly = read_mostly;
        self
    }

    /// Uses `hasher` for the keys (the default is ahash's `RandomState`,
    /// which resists hash flooding). Index values are always hashed with
    /// ahash.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    ///
    /// let store = larder::IndexedStore::<u32, u32>::builder()
    ///     .hasher(RandomState::new())
    ///     .build()
    ///     .unwrap();
    /// store.insert(1, 1).unwrap();
    /// assert!(store.contains_key(&1));
    /// ```
    pub fn hasher<S2>(self, hasher: S2) -> IndexedStoreBuilder<K, V, S2> {
        IndexedStoreBuilder {
            defs: self.defs,
            initial_capacity: self.initial_capacity,
            shards: self.shards,
            read_mostly: self.read_mostly,
            hasher,
            _keys: PhantomData,
        }
    }

    /// Builds the store.
    ///
    /// # Errors
    ///
    /// [`BuildError::Index`] with [`IndexError::DuplicateIndex`] if two
    /// indexes share a name;
    /// [`BuildError::CapacityOverflow`] if the
    /// [`initial_capacity`](Self::initial_capacity) cannot be reserved (it overflows the
    /// table's size, or the allocator refuses it).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, String>::builder()
    ///     .index("upper", |s: &String| [s.to_uppercase()])
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(store.index_names(), ["upper"]);
    /// ```
    pub fn build(self) -> Result<IndexedStore<K, V, S>, BuildError>
    where
        K: Hash + Eq + Clone,
        S: BuildHasher,
    {
        let schema = Schema::new(self.defs)
            .map_err(|name| {
                BuildError::Index(IndexError::DuplicateIndex {
                    name: name.to_string(),
                })
            })?
            .seeded_from(&self.hasher);
        let count = match self.shards {
            None => shards::default_count(),
            Some(0) => return Err(BuildError::ZeroShards),
            Some(n) if n > shards::MAX_SHARDS => {
                return Err(BuildError::TooManyShards {
                    shards: n,
                    max: shards::MAX_SHARDS,
                });
            }
            Some(n) => n.next_power_of_two(),
        };
        let schema = Arc::new(schema);
        let per_shard = self.initial_capacity.div_ceil(count);
        let cores = (0..count)
            .map(|_| Core::with_capacity(Arc::clone(&schema), per_shard))
            .collect::<Option<Vec<_>>>()
            .ok_or(BuildError::CapacityOverflow {
                initial_capacity: self.initial_capacity,
            })?;
        Ok(IndexedStore::from_parts(
            cores,
            self.hasher,
            self.read_mostly,
        ))
    }
}

impl<K, V, S> fmt::Debug for IndexedStoreBuilder<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexedStoreBuilder")
            .field(
                "indexes",
                &self.defs.iter().map(|def| &*def.name).collect::<Vec<_>>(),
            )
            .field("initial_capacity", &self.initial_capacity)
            .field("shards", &self.shards)
            .field("read_mostly", &self.read_mostly)
            .finish_non_exhaustive()
    }
}
