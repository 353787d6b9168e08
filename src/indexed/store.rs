//! [`IndexedStore`]: the concurrent wrapper around the sequential
//! [`Core`](super::core::Core)s, one per shard (`shards.rs`): the type, its
//! construction, the point reads and the whole-store cut. The writes are in
//! `write.rs`.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};

use super::builder::IndexedStoreBuilder;
use super::core::Core;
use super::index_fn::Schema;
use super::shards::{self, Shards};
use super::transaction::Spare;
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex};

#[cfg(loom)]
use super::broken::read_cut;
#[cfg(not(loom))]
use cut_at_once as read_cut;

/// A keyed store of objects with named secondary indexes that always agree
/// with the objects: client-go's `ThreadSafeStore`/`Indexer` for Rust.
///
/// Objects are stored as given (`V`) and read out as clones (`V: Clone`),
/// as [`LruCache`](crate::LruCache) and [`TypedCache`](crate::TypedCache)
/// do: a small object costs no allocation of its own. For large objects,
/// or objects shared with other code, store `Arc<T>`
/// (`IndexedStore<K, Arc<T>>`): a read then clones the `Arc`, and
/// [`get_with`](IndexedStore::get_with) reads in place without cloning.
///
/// Each index is a function from an object to zero, one or many string
/// values (its namespace; each `label=value` pair), registered with the
/// [`builder`](IndexedStore::builder) or later with
/// [`add_index`](IndexedStore::add_index). [`by_index`](IndexedStore::by_index)
/// then returns the objects having a value in time proportional to the
/// answer, instead of scanning every object.
///
/// # Guarantees
///
/// - **Indexes agree with objects at every observable point.** No reader
///   ever finds an object under an index value it does not have, or misses
///   a stored object from a bucket of one of its values. Each shard holds
///   its objects and their index entries behind one lock.
/// - **Every read is a consistent cut**: each method returns what the store
///   held at one instant (`values`, `keys`, `by_index`, `index_values`, ...
///   never mix two writes' effects).
/// - **Every write is atomic and linearizable**: `insert`, `remove`,
///   `replace` (a whole new content), `clear` and `transaction` (several
///   inserts and removes) each take effect at one instant, in one total
///   order; a read sees every write that completed before it started.
/// - **A failing or panicking index function changes nothing**: index
///   functions run before the write lock is taken; an `Err` rejects the
///   write with [`IndexError::IndexFunction`](super::IndexError::IndexFunction) (client-go panics here), a
///   panic unwinds to the caller with the store untouched.
/// - **Objects cannot change behind their index**: the store never hands
///   out a mutable reference to an object it holds, only clones. Do not
///   give `V` interior mutability that affects its index values (an
///   `Arc<Mutex<T>>` whose `T` the index reads); replace the object
///   instead.
/// - Index memory tracks live objects: a bucket is dropped when its last
///   object leaves it.
///
/// # Why `insert` returns a `Result`
///
/// Writes that run index functions (`insert`, `replace`, `transaction`) return `Result<_, IndexError>` even on a store with no
/// fallible index, because the type does not say which kind of index
/// functions a store has, and [`add_try_index`](IndexedStore::add_try_index)
/// can add a fallible one to a live store. With only infallible functions
/// ([`index`](crate::IndexedStoreBuilder::index),
/// [`add_index`](IndexedStore::add_index)) these writes never fail; say so
/// where you call them:
///
/// ```
/// let store = larder::IndexedStore::<u32, u32>::builder()
///     .index("parity", |n: &u32| [(n % 2).to_string()])
///     .build()
///     .expect("distinct index names");
/// let previous = store.insert(1, 1).expect("infallible index functions");
/// assert!(previous.is_none());
/// ```
///
/// # User code and locks
///
/// Which user code runs where:
///
/// | User code | Where it runs |
/// |---|---|
/// | `K`'s `Hash` (and `S`'s hashing) | once per key per operation, with no lock held, before anything changes; never again: the table keeps each key's hash and grows and rehashes from it |
/// | `K`'s `Eq` | under the lock, in the probe that finds a key: in a write, before its first change |
/// | `K::clone` | [`transaction`](IndexedStore::transaction)'s recorded inserts and removes: with no lock held, before anything changes (`insert` and `remove` never clone a key); reads that return keys ([`keys_to_vec`](IndexedStore::keys_to_vec), [`to_vec`](IndexedStore::to_vec), [`index_keys`](IndexedStore::index_keys), [`by_index_entries`](IndexedStore::by_index_entries)): under the read lock, changing nothing |
/// | `V::clone` | reads that return objects ([`get`](IndexedStore::get), [`values_to_vec`](IndexedStore::values_to_vec), [`to_vec`](IndexedStore::to_vec), [`by_index`](IndexedStore::by_index), [`matching`](IndexedStore::matching), [`by_index_entries`](IndexedStore::by_index_entries)): under the read lock, changing nothing; [`add_index`](IndexedStore::add_index), to compute the new index with no lock held: under the read lock |
/// | `K`'s `Ord` | [`index_keys`](IndexedStore::index_keys)' sort, with no lock held |
/// | index functions | with no lock held, before anything changes |
/// | the closure of [`for_each_by_index`](IndexedStore::for_each_by_index) and [`try_for_each_by_index`](IndexedStore::try_for_each_by_index) | under the read lock, changing nothing |
/// | `Drop` of keys and objects a write replaced or removed | after the lock is released |
///
/// So a panic in any of them, at any call, leaves the store exactly as it
/// was before the operation, or (a panicking `Drop`) exactly as the
/// operation left it: every write, a [`transaction`](IndexedStore::transaction)
/// included, is applied whole or not at all, and no other entry is ever
/// lost. The lock is released by the unwinding and nothing is poisoned.
///
/// A `Hash` that gives a key another value than when it was stored makes
/// lookups of that key miss (or an insert store it a second time), as in
/// any hash map; it never corrupts the store: the table does not use the
/// new value to move anything, and every entry stays reachable through
/// [`to_vec`](IndexedStore::to_vec) and [`clear`](IndexedStore::clear).
///
/// # Deadlocks
///
/// No method blocks while holding a lock that user code could need, with
/// these exceptions, which run under the lock and must not call back into
/// the same store: `K`'s `Eq`, `K::clone` in reads that return keys,
/// `V::clone` in reads that return objects, and
/// the visit closures of [`for_each_by_index`](IndexedStore::for_each_by_index)
/// and [`try_for_each_by_index`](IndexedStore::try_for_each_by_index). A
/// write from there waits for the read lock its own thread holds: a
/// deadlock (on some platforms, a panic), every time. A read from there takes the read lock a second
/// time, which deadlocks if a writer arrived in between (a waiting writer
/// goes first). Index functions and the closure of
/// [`transaction`](IndexedStore::transaction) run with no lock held and may
/// use the store.
///
/// # Performance
///
/// The state is split into shards by key hash (four per core by default,
/// [`IndexedStoreBuilder::shards`]), each a reader-writer lock over its
/// objects and its part of every index. A point read or write (`get`,
/// `insert`, `remove`) locks the one shard of its key, so writes to
/// different shards run in parallel, as in a sharded map. A whole-store
/// read (`by_index`, `values`, `len`, the visits, ...) read-locks every
/// shard in order and holds them all until it is done: one consistent cut,
/// for the price of one lock per shard. A `transaction` write-locks the
/// shards its keys fall in, in order; `replace`, `clear` and `add_index`
/// lock them all. The
/// [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md) compare it with the kube-rs,
/// client-go and DashMap designs.
///
/// # Examples
///
/// ```
/// use larder::IndexedStore;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Pod { namespace: String, app: String }
///
/// let pods: IndexedStore<String, Pod> = IndexedStore::builder()
///     .index("namespace", |pod: &Pod| [pod.namespace.clone()])
///     .index("app", |pod: &Pod| [pod.app.clone()])
///     .build()
///     .unwrap();
///
/// let pod = |ns: &str, app: &str| Pod { namespace: ns.into(), app: app.into() };
/// pods.insert("default/web-1".into(), pod("default", "web")).unwrap();
/// pods.insert("default/db-1".into(), pod("default", "db")).unwrap();
/// pods.insert("prod/web-1".into(), pod("prod", "web")).unwrap();
///
/// assert_eq!(pods.by_index("namespace", "default").unwrap().len(), 2);
/// assert_eq!(pods.index_keys("app", "web").unwrap(), ["default/web-1", "prod/web-1"]);
///
/// // Moving a pod to another app updates the index in the same atomic step.
/// pods.insert("default/db-1".into(), pod("default", "web")).unwrap();
/// assert_eq!(pods.index_values("app").unwrap(), ["web"]);
/// ```
pub struct IndexedStore<K, V, S = ahash::RandomState> {
    /// The objects and indexes, sharded by key hash.
    pub(super) shards: Shards<K, V>,
    /// The revision of the last revisioned write, stored while that write
    /// holds its shards' write locks (`revision.rs`).
    pub(super) revision: AtomicU64,
    /// Whether the schema has had an index (set by `add_index` under every
    /// shard's write lock, never cleared). While it is false a write skips
    /// reading the schema: its values are empty whatever the schema, and
    /// the write lock's check (`defs.is_empty()`) is the authority.
    pub(super) indexed: AtomicBool,
    /// Hashes keys, with no lock held; the core stores each key's hash.
    pub(super) hasher: S,
    /// The buffers of the last transaction or burst, empty, for the next
    /// to reuse (`transaction.rs`).
    pub(super) spare: Mutex<Spare<K, V>>,
    /// Held by an `add_index` from start to end: one at a time watches the
    /// shards' writes (`lookup.rs`).
    pub(super) adding: Mutex<()>,
}

impl<K, V> IndexedStore<K, V>
where
    K: Hash + Eq + Clone,
{
    /// An empty store with no indexes (add some with
    /// [`add_index`](IndexedStore::add_index)), or use
    /// [`builder`](IndexedStore::builder).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<&str, u32>::new();
    /// store.insert("a", 1).unwrap();
    /// assert_eq!(store.get("a"), Some(1));
    /// ```
    pub fn new() -> Self {
        let schema = Arc::new(Schema::new(Vec::new()).expect("no index, no clash"));
        let cores = (0..shards::default_count())
            .map(|_| Core::new(Arc::clone(&schema)))
            .collect();
        Self::from_parts(cores, crate::sync::default_hasher(), false)
    }

    /// A builder to register index functions, an initial capacity and a hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, String>::builder()
    ///     .index("first", |s: &String| s.chars().next().map(String::from))
    ///     .build()
    ///     .unwrap();
    /// store.insert(1, "apple".into()).unwrap();
    /// store.insert(2, String::new()).unwrap(); // no values: in no bucket
    /// assert_eq!(store.index_keys("first", "a").unwrap(), [1]);
    /// ```
    pub fn builder() -> IndexedStoreBuilder<K, V> {
        IndexedStoreBuilder::new()
    }
}

impl<K, V> Default for IndexedStore<K, V>
where
    K: Hash + Eq + Clone,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V, S> IndexedStore<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// A store over `cores` (a power of two of them, all empty, all with
    /// the same schema), with striped shard locks when `read_mostly`.
    pub(crate) fn from_parts(cores: Vec<Core<K, V>>, hasher: S, read_mostly: bool) -> Self {
        let indexed = cores
            .first()
            .is_some_and(|core| !core.schema().defs.is_empty());
        Self {
            indexed: AtomicBool::new(indexed),
            shards: Shards::new(cores, read_mostly),
            revision: AtomicU64::new(0),
            hasher,
            spare: Mutex::new(Spare::default()),
            adding: Mutex::new(()),
        }
    }

    /// How many shards the store's state is split into (see
    /// [`IndexedStoreBuilder::shards`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// assert!(store.shard_count().is_power_of_two());
    /// ```
    pub fn shard_count(&self) -> usize {
        self.shards.count()
    }

    /// The shard `key` belongs to, for tests that place keys on chosen
    /// shards.
    #[doc(hidden)]
    pub fn shard_of<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash,
    {
        self.shards.of(self.hasher.hash_one(key))
    }

    /// A clone of the object stored under `key`.
    ///
    /// Read-locks the key's shard for one hash lookup and clones the object
    /// under the lock (`V::clone` must not call into the same store); sees
    /// every write completed before the call. Cloning an `Arc<T>` writes
    /// its reference count, which every reader of the object shares: on a
    /// hot key read from several cores, [`get_with`](IndexedStore::get_with)
    /// is the read that writes nothing shared.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, u32>::new();
    /// store.insert("a".to_string(), 1).unwrap();
    /// assert_eq!(store.get("a"), Some(1));
    /// assert_eq!(store.get("b"), None);
    /// ```
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
        V: Clone,
    {
        let hash = self.hasher.hash_one(key);
        self.shards
            .read(self.shards.of(hash))
            .get(hash, key)
            .cloned()
    }

    /// Runs `f` on the object stored under `key`, under the read lock, and
    /// returns what it returns; `None` when `key` is absent.
    ///
    /// The fastest point read: unlike [`get`](IndexedStore::get) it does not
    /// clone the object (an `Arc`'s clone writes the reference count that
    /// every reader of the key shares). Use it to copy out or compute from
    /// an object; use `get` to keep it.
    ///
    /// # Deadlocks
    ///
    /// `f` runs while the read lock is held: it must not call into the same
    /// store at all. A write from `f` waits for its own read lock (a
    /// deadlock), and so can a read, once a writer is queued between the
    /// two. A panic in `f` releases the lock and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, String>::new();
    /// store.insert("a".to_string(), "apple".to_string()).unwrap();
    /// assert_eq!(store.get_with("a", |object| object.len()), Some(5));
    /// assert_eq!(store.get_with("b", |object| object.len()), None);
    /// ```
    #[inline]
    pub fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let hash = self.hasher.hash_one(key);
        self.shards.read(self.shards.of(hash)).get(hash, key).map(f)
    }

    /// Whether an object is stored under `key` (at the instant of the call).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store.insert(7, 49).unwrap();
    /// assert!(store.contains_key(&7));
    /// assert!(!store.contains_key(&8));
    /// ```
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let hash = self.hasher.hash_one(key);
        self.shards
            .read(self.shards.of(hash))
            .contains_key(hash, key)
    }

    /// The number of objects.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store.insert(1, 1).unwrap();
    /// store.insert(1, 2).unwrap(); // an update
    /// assert_eq!(store.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.shards.read_all().iter().map(|core| core.len()).sum()
    }

    /// Whether the store holds no object.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// assert!(store.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every key, in no particular order, taken at one instant
    /// (O(n), every key cloned under the read locks).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, &str>::new();
    /// store.insert(2, "b").unwrap();
    /// store.insert(1, "a").unwrap();
    /// let mut keys = store.keys_to_vec();
    /// keys.sort();
    /// assert_eq!(keys, [1, 2]);
    /// ```
    pub fn keys_to_vec(&self) -> Vec<K> {
        // Declared before the guards: a panicking `K::clone` drops the
        // guards first, then the keys cloned so far, with no lock held.
        let mut keys = Vec::new();
        let cores = self.shards.read_all();
        keys.reserve_exact(cores.iter().map(|core| core.len()).sum());
        for core in cores.iter() {
            core.keys_into(&mut keys);
        }
        drop(cores);
        keys
    }

    /// A copy of every object, in no particular order, taken at one
    /// instant (client-go's `List`; O(n), every object cloned under the
    /// read locks).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store.insert(1, 10).unwrap();
    /// store.insert(2, 20).unwrap();
    /// let sum: u32 = store.values_to_vec().iter().sum();
    /// assert_eq!(sum, 30);
    /// ```
    pub fn values_to_vec(&self) -> Vec<V>
    where
        V: Clone,
    {
        // Declared before the guards, as in `keys_to_vec`.
        let mut values = Vec::new();
        let cores = self.shards.read_all();
        values.reserve_exact(cores.iter().map(|core| core.len()).sum());
        for core in cores.iter() {
            core.values_into(&mut values);
        }
        drop(cores);
        values
    }

    /// Every `(key, object)` pair, in no particular order, copied into a
    /// `Vec` as one atomic cut (keys and objects cloned under the read
    /// lock): O(n). The `Vec` holds no lock; later writes do not show up
    /// in it.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store.insert(1, 10).unwrap();
    /// for (key, value) in store.to_vec() {
    ///     store.remove(&key); // allowed: the Vec is a copy
    ///     assert_eq!(value, 10);
    /// }
    /// assert!(store.is_empty());
    /// ```
    pub fn to_vec(&self) -> Vec<(K, V)>
    where
        V: Clone,
    {
        // Declared before the guards, as in `keys_to_vec`.
        let mut entries = Vec::new();
        self.cut(|core| -> Result<(), std::convert::Infallible> {
            core.entries_into(&mut entries);
            Ok(())
        })
        .unwrap_or_else(|never| match never {});
        entries
    }

    /// Checks that every index agrees exactly with the objects: the
    /// structure at one consistent cut, then every object's stored values
    /// against a fresh call of each index function (made under the read
    /// locks: an index function that uses the store deadlocks here). For
    /// tests.
    ///
    /// # Panics
    ///
    /// With a message starting "invariant violated" if anything disagrees.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn check_invariants(&self) {
        let cores = self.shards.read_all();
        let schema = Arc::clone(cores.first().schema());
        let mut objects = Vec::new();
        for (shard, core) in cores.iter().enumerate() {
            assert!(
                Arc::ptr_eq(core.schema(), &schema),
                "invariant violated: shards hold different schemas"
            );
            objects.extend(core.check(|hash| self.shards.of(hash) == shard));
        }
        for (object, stored) in objects {
            for (def, stored) in schema.defs.iter().zip(&stored) {
                let fresh = def.compute(object).unwrap_or_else(|e| {
                    panic!("invariant violated: index function now fails: {e}")
                });
                assert!(
                    fresh == *stored,
                    "invariant violated: index disagrees with objects: stored values of {} \
                     differ from the index function's",
                    def.name
                );
            }
        }
    }

    /// Runs `f` on every shard's core at one consistent cut: every shard
    /// read-locked in ascending order, all held until the last call of `f`
    /// returns. Stops at the first `Err`. The whole-store reads go through
    /// here (or through [`Shards::read_all`], which holds the same locks).
    pub(super) fn cut<E>(&self, f: impl FnMut(&Core<K, V>) -> Result<(), E>) -> Result<(), E> {
        read_cut(self, f)
    }

    /// The current schema (read lock held briefly).
    pub(super) fn schema(&self) -> Arc<Schema<V>> {
        Arc::clone(self.shards.read(0).schema())
    }
}

impl<K, V, S> fmt::Debug for IndexedStore<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cores = self.shards.read_all();
        f.debug_struct("IndexedStore")
            .field("len", &cores.iter().map(|core| core.len()).sum::<usize>())
            .field("shards", &self.shards.count())
            .field("indexes", cores.first().schema())
            .finish_non_exhaustive()
    }
}

/// [`IndexedStore::cut`]'s step: every shard read-locked in ascending
/// order, all held until the last call of `f` returns.
#[inline(always)]
pub(super) fn cut_at_once<K, V, S, E>(
    store: &IndexedStore<K, V, S>,
    mut f: impl FnMut(&Core<K, V>) -> Result<(), E>,
) -> Result<(), E> {
    let cores = store.shards.read_all();
    for core in cores.iter() {
        f(core)?;
    }
    Ok(())
}
