//! [`LruCache`]: the engine's layer ([`Layer`]: [`PolicyShard`]s of exact
//! LRU, CLOCK or S3-FIFO behind reader-writer locks), each shard bounded
//! by its share of the capacity.
//!
//! # Locks
//!
//! One `parking_lot::RwLock` per shard, padded to its own cache lines; the
//! shard's entries and its statistics counters live inside it. Writes take it
//! exclusively; so do lookups under `EvictionPolicy::Exact` (a hit moves its
//! entry). Lookups under `EvictionPolicy::Clock` (a hit sets an atomic bit),
//! `peek`, `contains_key`, `len`, `to_vec` and `stats` take it shared. An
//! operation takes exactly one shard lock, except `resize` (the resize
//! mutex, then each shard in turn, never two shard locks at once), `len`,
//! `to_vec` and `clear` (each shard in turn), and `stats`, which holds every
//! shard lock at once (shared), taken in shard-index order: the only place
//! two shard locks are held, so there is no lock-order cycle. The
//! single-flight group has its own locks and is never entered with a shard
//! lock held.
//!
//! No user code runs under a shard lock except `K: Eq` inside a lookup
//! (which reads only, so a panic there changes nothing) and, with expiry,
//! the clock in a lookup or an insert (before it changes anything). Hashing, cloning of
//! keys, loaders, the eviction listener and the `Drop` of every removed key
//! and value run after the lock is released.

use std::fmt;
use std::hash::{BuildHasher, Hash};

use super::{EvictionPolicy, Listener, LruCacheBuilder};
use crate::cache::CacheStats;
use crate::cache::{
    Expiry, Layer, Locked, MAX_SHARD_CAPACITY, Padded, PolicyShard, Settings, Weigher,
};
use crate::removal::RemovalCause;
use crate::sync::{Arc, AtomicUsize, Mutex, Ordering, RwLockWriteGuard};
use crate::time::SystemClock;

/// The eviction listener, and `V::clone` beside it: `insert` and `remove`
/// return the value they displace and hand the listener a clone (so only a
/// cache with a listener needs `V: Clone` for its writes; the builder's
/// `eviction_listener` asks for it).
pub(crate) struct ValueListener<K, V> {
    pub(crate) call: Listener<K, V>,
    pub(crate) clone: fn(&V) -> V,
}

/// The options an [`LruCacheBuilder`] holds.
pub(crate) type LruSettings<K, V, S> =
    Settings<Option<ValueListener<K, V>>, Option<Weigher<K, V>>, S>;

/// A bounded, sharded, thread-safe LRU cache with statistics and
/// single-flight load-on-miss.
///
/// The concurrent form of Python's `functools.lru_cache`: a fixed number of
/// entries, the least recently used evicted first, hit/miss statistics
/// ([`stats`](Self::stats), like `cache_info()`), and a loader that runs once
/// per missing key however many threads ask ([`get_or_init`](Self::get_or_init)).
/// Values are stored as given and cloned out (`V: Clone`), as moka and
/// quick_cache do: store small values as they are, large or shared ones as
/// `Arc<T>`. No lock is ever held when a method returns.
///
/// # Policy and guarantees
///
/// - **Hard bound**: `len() <= capacity()` at every moment any thread can
///   observe. An insert into a full shard evicts under the same lock, so
///   there is no overshoot, ever (moka evicts later and overshoots).
/// - **Or a bound on weight**: with a
///   [`weigher`](LruCacheBuilder::weigher), `capacity` bounds the total
///   weight of the entries ([`weighted_size`](Self::weighted_size)) with
///   the same guarantee: an insert evicts as many entries as it takes to
///   fit, under the same lock.
/// - **Exact LRU per shard** (the default [`EvictionPolicy::Exact`]): keys are
///   spread over `shards` independent LRU lists by hash, each holding
///   `capacity / shards` entries. Within a shard the order is exact and every
///   operation is linearizable (one lock). Over the whole cache this
///   approximates global LRU; the test suite checks it stays within 1
///   percentage point of an exact global LRU's hit ratio on Zipf traces, and
///   `shards(1)` is exactly global LRU.
/// - **Every hit counts**: a [`get`](Self::get) moves its entry to the front
///   of its shard's list; nothing is sampled or dropped.
/// - **Or CLOCK, for hits that never wait for each other**:
///   [`EvictionPolicy::Clock`] replaces each shard's list by CLOCK (second
///   chance), so a hit only sets a bit under the shard's *shared* lock.
///   Operations stay linearizable; the eviction order is CLOCK's, not LRU's
///   (see [`EvictionPolicy`] for the trade and its measured hit ratio).
/// - **User code never runs under a lock while a shard changes**: `K: Eq`
///   runs in the lookup that starts an operation, on a full 64-bit hash
///   match, before the operation's first change; `V: Clone` in the reads
///   that return a value (`get`, `peek`, [`to_vec`](Self::to_vec), which also
///   clones keys), and the closures of `get_with` / `peek_with`, after the
///   lookup is complete (the entry moved or marked, the hit counted), with
///   nothing left to change. The key's `Hash` runs before the lock; `K:
///   Clone` of a loaded key and `V: Clone` of a loaded value before it;
///   loaders, the eviction listener, and the `Drop`
///   of evicted, replaced and removed keys and values after it is
///   released. Every entry stores its hash, so growing, shrinking,
///   rehashing and evicting run no user code.
/// - **Panic safety**: a panicking loader, listener, `Hash`, `Eq`, `Clone`
///   or `Drop` leaves the cache usable, within its bound, with every entry
///   the operation did not touch still there, and with consistent
///   statistics (`inits` is the number of loader runs,
///   even when storing a loaded value panics). The test suite checks this
///   by planting a panic at every call of every user trait in every write
///   operation, under both policies.
///
/// # Choosing the shard count
///
/// The default is 128 shards per core (rounded to a power of two, at most
/// 4096), reduced so each shard holds at least 32 entries. More shards mean
/// fewer threads meeting on one lock and fewer cache lines moving between
/// cores, for a hit ratio a fraction of a point below one global list
/// (the
/// [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#lrucache-hit-ratios)).
/// Use fewer
/// shards (down to 1, exact global LRU) when the order matters more than
/// scaling. Under [`EvictionPolicy::Clock`] the default is 512 per core with at
/// least 8 entries per shard: CLOCK's hit ratio holds up in smaller shards.
///
/// # Examples
///
/// ```
/// use larder::LruCache;
///
/// let cache = LruCache::new(2);
/// cache.insert("a", 1);
/// cache.insert("b", 2);
/// assert_eq!(cache.get("a"), Some(1)); // "a" is now the most recent
/// cache.insert("c", 3); // full: evicts "b", the least recently used
/// assert!(!cache.contains_key("b"));
/// assert_eq!(cache.len(), 2);
/// ```
///
/// The check-then-act race, and the atomic alternative:
///
/// ```
/// # use larder::LruCache;
/// # fn fetch(id: u32) -> String { format!("row {id}") }
/// let cache: LruCache<u32, String> = LruCache::new(100);
///
/// // BROKEN: two threads that miss at once both fetch and both insert.
/// let row = match cache.get(&7) {
///     Some(row) => row,
///     None => {
///         cache.insert(7, fetch(7));
///         cache.get(&7).unwrap() // and it may already be evicted again
///     }
/// };
///
/// // CORRECT: concurrent misses share one fetch, and the value is returned
/// // directly, never looked up again.
/// let row2 = cache.get_or_init(&7, || fetch(7));
/// assert_eq!(row, row2);
/// ```
pub struct LruCache<K, V, S = ahash::RandomState> {
    /// The shards, each bounded by its share of the capacity, and the
    /// hasher, the clock, the listener, the counters and the flights.
    pub(crate) layer: Layer<K, V, S, Padded<Locked<K, V>>, ()>,
    /// The sum of the shard capacities, or more while a resize is between
    /// shards (see `resize`).
    pub(crate) capacity: AtomicUsize,
    /// Serializes resizes.
    pub(crate) resize_lock: Mutex<()>,
    /// `V::clone`, kept with a listener (see [`ValueListener`]).
    pub(crate) copy: Option<fn(&V) -> V>,
    /// Weighs each entry before its insert takes the shard lock; `None`:
    /// every entry weighs 1.
    pub(crate) weigher: Option<Weigher<K, V>>,
}

/// The capacity of shard `index` of `shards` when the total is `capacity`:
/// its share, held to what one shard can index (`u32` node indices). The
/// shares then sum to at most `capacity`, so the bound holds.
pub(crate) fn shard_capacity(capacity: usize, shards: usize, index: usize) -> usize {
    (capacity / shards + usize::from(index < capacity % shards)).min(MAX_SHARD_CAPACITY)
}

impl<K: Hash + Eq, V> LruCache<K, V> {
    /// Creates a cache holding at most `capacity` entries, with the default
    /// shard count and hasher.
    ///
    /// Any capacity from 1 up is accepted, `usize::MAX` included: nothing
    /// is allocated in advance (shards grow as entries arrive).
    ///
    /// # Panics
    ///
    /// If `capacity` is 0. Use [`LruCache::builder`] to get an error
    /// instead.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<String, u64>::new(1024);
    /// assert_eq!(cache.capacity(), 1024);
    /// assert!(cache.is_empty());
    /// ```
    pub fn new(capacity: usize) -> Self {
        match Self::builder().capacity(capacity).build() {
            Ok(cache) => cache,
            Err(error) => panic!("LruCache::new: {error}"),
        }
    }

    /// A builder, to set the capacity (required), the shard count, the
    /// policy, the hasher, a weigher or an eviction listener.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u32, u32>::builder().capacity(64).shards(4).build()?;
    /// assert_eq!(cache.shard_count(), 4);
    /// # Ok::<(), larder::BuildError>(())
    /// ```
    pub fn builder() -> LruCacheBuilder<K, V> {
        LruCacheBuilder::new()
    }
}

impl<K, V, S> LruCache<K, V, S> {
    /// The most shards a cache may have ([`LruCacheBuilder::shards`] beyond
    /// it makes `build` fail).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::LruCache;
    /// let too_many = LruCache::<u8, u8>::MAX_SHARDS + 1;
    /// assert!(LruCache::<u8, u8>::builder().capacity(usize::MAX).shards(too_many).build().is_err());
    /// ```
    pub const MAX_SHARDS: usize = crate::cache::MAX_SHARDS;

    pub(crate) fn from_parts(
        settings: LruSettings<K, V, S>,
        capacity: usize,
        shards: usize,
        expiry: Option<Expiry>,
    ) -> Self {
        let Settings {
            policy,
            hasher,
            listener,
            weigher,
            clock,
            ..
        } = settings;
        let clock = expiry.map(|_| clock.unwrap_or_else(|| Arc::new(SystemClock::new())));
        let shard = |i| PolicyShard::new(policy, shard_capacity(capacity, shards, i), expiry);
        let mut layer = Layer::new(shards, shard, policy, clock, hasher, ());
        let copy = listener.map(|listener| {
            layer.listener = Some(listener.call);
            listener.clone
        });
        Self {
            layer,
            capacity: AtomicUsize::new(capacity),
            resize_lock: Mutex::new(()),
            copy,
            weigher,
        }
    }

    /// The clock's time, read only when entries can expire (else 0).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.layer.now()
    }

    /// The most entries the cache holds; with a
    /// [`weigher`](LruCacheBuilder::weigher), the most total weight.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(larder::LruCache::<u8, u8>::new(10).capacity(), 10);
    /// ```
    pub fn capacity(&self) -> usize {
        // Relaxed: `resize` orders this store against the shard capacities
        // through the shard mutexes (store before raising them, after
        // lowering them), and a reader that saw a shard's new capacity
        // acquired that shard's lock after the store.
        self.capacity.load(Ordering::Relaxed)
    }

    /// The eviction policy of every shard (see [`EvictionPolicy`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u8, u8>::new(8);
    /// assert_eq!(cache.policy(), larder::EvictionPolicy::Exact);
    /// ```
    pub fn policy(&self) -> EvictionPolicy {
        self.layer.policy
    }

    /// The number of shards.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u8, u8>::builder().capacity(8).shards(2).build().unwrap();
    /// assert_eq!(cache.shard_count(), 2);
    /// ```
    pub fn shard_count(&self) -> usize {
        self.layer.shards().len()
    }

    /// The number of entries.
    ///
    /// Sums the shards one lock at a time: exact when no other thread writes,
    /// otherwise a value each shard had at some moment during the call. Every
    /// shard is within its share of the capacity at every instant, so this is
    /// at most `capacity()` unless a [`resize`](Self::resize) runs during the
    /// call; [`stats`](Self::stats) gives a consistent `len` and `capacity`
    /// pair even then.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(1);
    /// cache.insert(1, "a");
    /// cache.insert(2, "b");
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.layer.len()
    }

    /// The total weight of the entries: with a
    /// [`weigher`](LruCacheBuilder::weigher), the sum of their weights (a
    /// weight of 0 counting as 1), at most [`capacity`](Self::capacity);
    /// without one, the same as [`len`](Self::len).
    ///
    /// Same consistency as [`len`](Self::len): one shard at a time;
    /// [`stats`](Self::stats) gives a consistent
    /// [`weighted_size`](CacheStats::weighted_size) and `capacity` pair.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::builder()
    ///     .capacity(10)
    ///     .shards(1)
    ///     .weigher(|_key: &u8, value: &String| value.len() as u32)
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, "four".to_string());
    /// cache.insert(2, "three".to_string());
    /// assert_eq!((cache.len(), cache.weighted_size()), (2, 9));
    /// ```
    pub fn weighted_size(&self) -> usize {
        self.layer.weight() as usize
    }

    /// Whether the cache holds no entry (same consistency as [`len`](Self::len)).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u8, u8>::new(1);
    /// assert!(cache.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The statistics: hits, misses, inserts, evictions, inits, init
    /// failures, length and capacity, like Python's `cache_info()`.
    ///
    /// A consistent snapshot: it holds every shard lock at once (shared, in
    /// shard order; no other operation holds two), so `len <= capacity`
    /// holds in the result even while other threads insert and resize, and
    /// the counters are those of one instant; except, under
    /// [`EvictionPolicy::Clock`], `hits` and `misses`, which lookups count in
    /// per-thread stripes outside the lock (each exact once the cache is
    /// quiet). That makes it slower than one operation (one lock per shard);
    /// call it for monitoring, not per request. See [`CacheStats`] for what
    /// each counter counts.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(8);
    /// cache.insert(1, "one");
    /// cache.get(&1);
    /// cache.get(&2);
    /// let stats = cache.stats();
    /// assert_eq!((stats.hits, stats.misses, stats.inserts), (1, 1, 1));
    /// ```
    pub fn stats(&self) -> CacheStats {
        let mut stats = CacheStats::default();
        // Read while every shard is locked: see `capacity()` and `resize`.
        let weight = (self.layer).count_into(&mut stats, |stats| {
            stats.capacity = Some(self.capacity());
        });
        stats.weighted_size = self.weigher.is_some().then_some(weight as usize);
        stats
    }

    /// Sets every counter to 0 (like `cache_clear()` does to `cache_info()`,
    /// without clearing the entries).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u8, u8>::new(8);
    /// cache.get(&1);
    /// cache.reset_stats();
    /// assert_eq!(cache.stats().misses, 0);
    /// ```
    pub fn reset_stats(&self) {
        self.layer.reset_stats();
    }

    /// Removes every entry. They go to the eviction listener (as
    /// [`RemovalCause::Cleared`]) and are dropped after every shard has been
    /// emptied and its lock released, so a panicking listener or `Drop`
    /// (which then reaches the caller) cannot leave entries behind. No
    /// eviction is counted.
    ///
    /// Clears one shard at a time: an insert racing with `clear` may survive
    /// it.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(8);
    /// cache.insert(1, 1);
    /// cache.clear();
    /// assert!(cache.is_empty());
    /// ```
    pub fn clear(&self) {
        self.layer.clear();
    }

    /// Removes every expired entry now, rather than as later writes reach
    /// them (each write releases a few), and returns how many it removed.
    /// They go to the listener as [`RemovalCause::Expired`]. Without
    /// expiry, does nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = larder::ManualClock::new();
    /// let cache = larder::LruCache::builder()
    ///     .capacity(8)
    ///     .time_to_live(Duration::from_secs(1))
    ///     .clock(clock.clone())
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, 1);
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(cache.purge_expired(), 1);
    /// ```
    pub fn purge_expired(&self) -> usize {
        self.layer.purge_expired()
    }

    /// Asserts internal invariants (each shard's table, list or ring, and
    /// bound; no load registered); for tests, with no other thread using
    /// the cache. Runs no user code.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn check_invariants(&self) {
        let (len, weight) = self.layer.check_invariants();
        let capacity = self.capacity();
        assert!(len <= capacity, "{len} entries over capacity {capacity}");
        assert!(
            weight <= capacity as u64,
            "weight {weight} over capacity {capacity}"
        );
    }

    /// Hands each removed entry to the listener with `cause`, then drops
    /// it (see `crate::removal::notify`). Runs with no lock held.
    pub(crate) fn dispose(&self, removed: impl IntoIterator<Item = (K, V)>, cause: RemovalCause) {
        self.layer.dispose(removed, cause);
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> LruCache<K, V, S> {
    #[inline]
    pub(crate) fn hash<Q: ?Sized + Hash>(&self, key: &Q) -> u64 {
        self.layer.hash(key)
    }

    /// The write lock of the shard of `hash`.
    #[inline]
    pub(crate) fn lock(&self, hash: u64) -> RwLockWriteGuard<'_, Locked<K, V>> {
        self.layer.shard(hash).write()
    }
}

impl<K: Clone, V: Clone, S> LruCache<K, V, S> {
    /// Every entry copied into a `Vec` (O(n); keys and values cloned), each
    /// shard from most to least recently used, shard after shard. With one shard (`shards(1)`) this is the
    /// exact recency order of the whole cache. Under [`EvictionPolicy::Clock`],
    /// "most recently used" is CLOCK's approximation: each shard's entries
    /// used since the hand last passed them, then the others, each group in
    /// the reverse of the order the hand would reach them.
    ///
    /// Each shard is copied under its shared lock (keys and values cloned),
    /// one shard at a time; the snapshot does not change afterwards and holds no
    /// lock. Recency is not changed and nothing is counted.
    ///
    /// # Panics
    ///
    /// If `K::clone` or `V::clone` panics; the cache is unchanged (the
    /// shard is only read, under its shared lock). Both run under that
    /// lock: a `Clone` that writes to this cache deadlocks.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::builder().capacity(3).shards(1).build().unwrap();
    /// cache.insert("a", 1);
    /// cache.insert("b", 2);
    /// cache.get("a");
    /// let keys: Vec<_> = cache.to_vec().into_iter().map(|(k, _)| k).collect();
    /// assert_eq!(keys, ["a", "b"]);
    /// ```
    pub fn to_vec(&self) -> Vec<(K, V)> {
        self.layer.to_vec()
    }
}

impl<K, V, S> fmt::Debug for LruCache<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LruCache")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("shards", &self.shard_count())
            .field("policy", &self.layer.policy)
            .field("weigher", &self.weigher.is_some())
            .field("loads_in_flight", &self.layer.flights.in_flight())
            .finish_non_exhaustive()
    }
}
