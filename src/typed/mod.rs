//! [`TypedCache`] and [`AnyCache`]: per-key single initialization under
//! contention, with composable expiry and no poisoning.
//!
//! This is .NET's `ConcurrentDictionary<K, Lazy<V>>` done right in Rust:
//! `get_or_init(key, f)` runs `f` once per key however many threads ask at
//! once, never under a map lock, never poisoned by a panic, and never
//! caching an error.
//!
//! # The double init, and `get_or_init`
//!
//! ```
//! use larder::TypedCache;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! let cache: TypedCache<&str, String> = TypedCache::new();
//! let inits = AtomicUsize::new(0);
//! let expensive = || {
//!     inits.fetch_add(1, Ordering::SeqCst);
//!     "parsed".to_string()
//! };
//!
//! // BROKEN: check-then-act. Two threads can both miss, both run the
//! // expensive init, and the second insert replaces the first value.
//! if cache.get("schema").is_none() {
//!     cache.insert("schema", expensive());
//! }
//!
//! // CORRECT: the check, the init and the insert are one step per key;
//! // concurrent callers wait for the one init and share its value.
//! let value = cache.get_or_init(&"config", expensive);
//! assert_eq!(value, "parsed");
//! assert_eq!(inits.load(Ordering::SeqCst), 2); // one per key here
//! ```
//!
//! The loom models in `loom-tests/tests/typed.rs` check that concurrent
//! `get_or_init` calls run one init, and that the check-then-act variant
//! runs two.
//!
//! # Files
//!
//! This one ([`TypedCache`]), `any.rs` ([`AnyCache`]), `raw.rs` (the layer
//! both share), `bound.rs` (the global bound), `load_async.rs` (async
//! init), `builder.rs`, `broken.rs` (loom only), `tests.rs`.

mod any;
mod bound;
#[cfg(loom)]
mod broken;
mod builder;
mod load_async;
mod raw;

pub use any::AnyCache;
pub use builder::{AnyCacheBuilder, TypedCacheBuilder};

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};

use crate::cache::CacheStats;
use crate::sync::Arc;
use raw::Raw;

/// A concurrent map from keys to lazily initialized values: each key's
/// init runs once among concurrent callers.
///
/// Values are stored as given and cloned out (`V: Clone`), as moka and
/// quick_cache do: store small values as they are, and large or shared
/// ones (or ones that are not `Clone`, such as a connection) as `Arc<T>`,
/// so every caller of a key shares one instance.
///
/// # Guarantees
///
/// - **Exactly once.** Among concurrent `get_or_init` / `get_or_try_init`
///   callers for one key that find no value, one runs its `f`; the others
///   block (on a mutex and condition variable, not spinning) and receive
///   clones of the same value. A later caller finds the value cached.
/// - **Independence.** No map or shard lock is held while `f` runs: an init
///   in progress never blocks callers of other keys, hits included.
/// - **Errors are shared, never cached.** The caller whose init returned an
///   error gets it; callers already waiting on that init get the *same*
///   error (`Arc<E>`), and nothing is cached, so the next call starts a fresh
///   init. This is Go's `singleflight` and moka's choice. The alternative,
///   handing the init to the next waiter (quick_cache), turns one failing
///   backend call into N sequential retries from N waiters, each waiting
///   for the previous one to time out; sharing gives the backend one call
///   per burst and still lets a transient error go away with the burst.
/// - **Panics stay with the panicking caller.** If `f` panics, the panic
///   unwinds through that caller only; the key is released, one of the
///   waiters runs its own `f`, and nothing is poisoned (unlike `LazyLock`).
/// - **User code, and where it runs.** The key's `Hash` runs before any
///   lock is taken, and so does the clock in a write; the key's `Clone`
///   (an init's key, to store it) and the weigher before the shard lock
///   too; `f` with no lock held. Under a shard lock the only user code is
///   the key's `Eq`, on a full 64-bit hash match, in the lookup that
///   starts an operation and before its first change, and with expiry the
///   clock in a lookup (before any change too); besides them, only a hit's `V::clone` (or
///   [`get_with`](TypedCache::get_with)'s closure instead) and
///   [`to_vec`](TypedCache::to_vec)'s `K::clone` and `V::clone` run under a
///   shard's *read* lock (a hit's under its write lock with
///   [`EvictionPolicy::Exact`](crate::EvictionPolicy::Exact)). An `insert` or `remove` that hands the
///   removed value to the listener clones the caller's copy after
///   unlocking. Every entry stores its hash, so growing, rehashing, evicting
///   and expiring run no user code at all. Removed, replaced, expired and
///   evicted keys and values go to the removal listener and are dropped
///   after the lock is released.
/// - **A panic in user code loses nothing else.** A panicking `Hash`,
///   `Eq` or `Clone` leaves the cache as it was (`len`, every other entry,
///   the `capacity` bound); a panicking listener or `Drop` of removed
///   entries reaches the caller after the cache has reached its new state
///   (and the other removed entries are still handed over). The test suite
///   checks this by planting a panic at every call of every user trait in
///   every write operation.
/// - **Writes win over inits in progress.** An `insert`, `remove` or
///   `clear` that lands while an init of a key in the same shard
///   runs makes that init's value uncached (it is still returned to its
///   caller and waiters): an invalidation is never undone by an init that
///   started before it. (Tracked per key shard, so a write to another key of
///   the shard has the same effect: a rare extra init, never a stale value.)
///
/// # Expiry and size
///
/// Built with [`TypedCache::builder`]: time to live, time to idle and a
/// maximum entry count compose (an entry is gone once any says so). The
/// clock is injectable ([`ManualClock`](crate::ManualClock) for tests). Expired entries are
/// invisible at once and released without anyone scheduling it: every
/// write to a shard (an insert, an init's value being stored, an
/// invalidation) sweeps it, looking at no more than four entries (so no
/// write pays for the whole shard), and a read that finds an expired entry
/// releases it and sweeps its shard as a write does. [`purge_expired`](TypedCache::purge_expired) releases them
/// all at once. The builder's
/// [`eviction_listener`](TypedCacheBuilder::eviction_listener) hears each
/// entry that leaves, with its [`RemovalCause`](crate::RemovalCause).
///
/// ```
/// use larder::{ManualClock, TypedCache};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let cache = TypedCache::<u32, u32>::builder()
///     .time_to_live(Duration::from_secs(10))
///     .clock(clock.clone())
///     .build()
///     .unwrap();
/// cache.insert(1, 1);
/// clock.advance(Duration::from_secs(11));
/// assert_eq!(cache.len(), 1); // expired, held until something releases it
/// assert_eq!(cache.get(&1), None); // this read does
/// assert_eq!(cache.len(), 0);
/// ```
///
/// # Performance
///
/// A hit takes the key shard's read lock, which writes only the calling
/// thread's slice of the lock (a `ShardedLock`), looks the key up and clones
/// the value out: for a `u64` a copy, for an `Arc<T>` one increment of its
/// count (a write every reader of the key shares; visit the value with
/// [`get_with`](TypedCache::get_with) to avoid it). Statistics go to
/// per-thread padded counters; time to idle writes an entry's access time
/// only when it moved by `tti / 64`. The [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md)
/// compare it with moka, DashMap and quick_cache.
///
/// # Deadlocks
///
/// An init that asks the same cache for the *same key* on the same thread
/// panics (see [`get_or_init`](TypedCache::get_or_init)); asking for other
/// keys is fine. Two inits on different threads that each wait for the
/// other's key (`a`'s init needs `b` while `b`'s init needs `a`) deadlock,
/// as any pair of locks taken in opposite orders would; this is not
/// detected.
///
/// # Examples
///
/// ```
/// use larder::TypedCache;
/// use std::sync::Arc;
///
/// let schemas: Arc<TypedCache<String, Vec<String>>> = Arc::new(TypedCache::new());
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             let fields = schemas.get_or_init("users", || {
///                 vec!["id".into(), "name".into()] // runs once
///             });
///             assert_eq!(fields.len(), 2);
///         });
///     }
/// });
/// let stats = schemas.stats();
/// assert_eq!(stats.inits, 1);
/// assert_eq!(stats.hits + stats.misses, 4);
/// ```
pub struct TypedCache<K, V, S = ahash::RandomState> {
    raw: Raw<K, V, S>,
}

impl<K, V> TypedCache<K, V>
where
    K: Hash + Eq + Clone,
    V: Clone,
{
    /// An empty cache without expiry or size bound.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u32, String> = larder::TypedCache::new();
    /// assert!(cache.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::builder()
            .build()
            .expect("the default settings are valid")
    }

    /// A builder for expiry, a size bound, the clock and the hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let cache = larder::TypedCache::<u32, String>::builder()
    ///     .time_to_live(Duration::from_secs(60))
    ///     .capacity(1_000)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(cache.get_or_init(&1, || "one".into()), "one");
    /// ```
    pub fn builder() -> TypedCacheBuilder<K, V> {
        TypedCacheBuilder::new()
    }
}

impl<K, V> Default for TypedCache<K, V>
where
    K: Hash + Eq + Clone,
    V: Clone,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V, S> TypedCache<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    pub(crate) fn from_raw(raw: Raw<K, V, S>) -> Self {
        Self { raw }
    }

    /// The value of `key`, running `f` to create it if there is none.
    ///
    /// Among concurrent callers for one key that find no value, exactly one
    /// runs its `f` (with no lock held); the others block until it finishes
    /// and return clones of its value. The value is cached unless a write to the
    /// key's shard landed while `f` ran (see the type's guarantees). A hit
    /// is linearizable with the writes to the key; a hit counts as a read
    /// for time to idle.
    ///
    /// # Panics
    ///
    /// - If `f` panics, the panic resumes in this caller only; the key is
    ///   released and a waiting caller runs its own `f`.
    /// - If `f` asks this cache for the same key on the same thread (directly
    ///   or through other calls), that inner call panics with a message
    ///   starting `larder: re-entrant load` instead of waiting for itself
    ///   forever; the panic then unwinds through `f` as above.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TypedCache;
    /// use std::sync::Arc;
    ///
    /// // Shared values: store an `Arc`, and every caller gets the same one.
    /// let cache: TypedCache<u32, Arc<String>> = TypedCache::new();
    /// let a = cache.get_or_init(&7, || Arc::new("seven".to_string()));
    /// let b = cache.get_or_init(&7, || unreachable!("already cached"));
    /// assert!(Arc::ptr_eq(&a, &b));
    ///
    /// // Keys are borrowed: a hit on a `String` key allocates nothing.
    /// let names: TypedCache<String, usize> = TypedCache::new();
    /// assert_eq!(names.get_or_init("alice", || 5), 5);
    /// assert_eq!(names.get_or_init("alice", || unreachable!()), 5);
    /// ```
    #[inline]
    pub fn get_or_init<Q>(&self, key: &Q, f: impl FnOnce() -> V) -> V
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
    {
        match self.get_or_try_init(key, || Ok::<V, std::convert::Infallible>(f())) {
            Ok(value) => value,
            Err(never) => match *never {},
        }
    }

    /// The value of `key`, running the fallible `f` to create it if there is
    /// none; exactly once among concurrent callers, as
    /// [`get_or_init`](TypedCache::get_or_init).
    ///
    /// # Errors
    ///
    /// If the init this caller ran returned an error, that error; if this
    /// caller was waiting on another caller's init that failed, the *same*
    /// error, shared: hence `Arc<E>`. Nothing is cached on failure, so the
    /// next call starts a fresh init (a transient error does not stick). A
    /// waiter whose own `E` differs in type from the failed init's runs its
    /// own `f` instead.
    ///
    /// # Panics
    ///
    /// As [`get_or_init`](TypedCache::get_or_init).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TypedCache;
    ///
    /// let cache: TypedCache<String, u16> = TypedCache::new();
    /// let err = cache.get_or_try_init("port", || "80a".parse::<u16>()).unwrap_err();
    /// assert!(err.to_string().contains("invalid digit"));
    /// assert!(!cache.contains_key("port")); // the error was not cached
    /// let port = cache.get_or_try_init("port", || "80".parse::<u16>()).unwrap();
    /// assert_eq!(port, 80);
    /// ```
    #[inline]
    pub fn get_or_try_init<Q, E>(
        &self,
        key: &Q,
        f: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, Arc<E>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        E: Send + Sync + 'static,
    {
        self.raw
            .get_or_try_init(key, || key.to_owned(), f, V::clone)
    }

    /// A clone of the live value of `key`, if any (`V::clone` under the
    /// shard's read lock). Counts a hit or a miss, and a hit as a read for
    /// time to idle; never waits for an init in progress (it returns `None`
    /// while the first init of a key runs).
    ///
    /// # Deadlocks
    ///
    /// As [`get_with`](TypedCache::get_with): `V::clone` must not write to
    /// this cache.
    ///
    /// # Panics
    ///
    /// If `V::clone` panics (see [`get_with`](TypedCache::get_with)).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<String, u32> = larder::TypedCache::new();
    /// cache.insert("a".to_string(), 1);
    /// assert_eq!(cache.get("a"), Some(1)); // borrowed &str lookup
    /// assert_eq!(cache.get("b"), None);
    /// ```
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.raw.get(key, V::clone)
    }

    /// Calls `f` with the live value of `key` and returns what it returns,
    /// without cloning the value. Counts a hit or a miss and records
    /// a hit as a read, as [`get`](TypedCache::get) does; never waits for an
    /// init in progress.
    ///
    /// The hit path that writes nothing shared (under the default policy
    /// and `S3Fifo`; `Exact` takes the shard's write lock): the shard's read
    /// lock writes only the calling thread's slice of the lock, the policy's
    /// bit and the idle time are stored only when they would change, and the hit is
    /// counted in the calling thread's own stripe of the statistics. `get`
    /// adds the clone: for an `Arc<T>` value, one write every reader of the
    /// key shares (its reference count).
    ///
    /// (moka's `get_with` is a get-or-insert; here that is
    /// [`get_or_init`](TypedCache::get_or_init). Closures in this crate's
    /// `*_with` methods visit a value.)
    ///
    /// # Deadlocks
    ///
    /// `f` runs under the key's shard read lock: keep it short, and do not
    /// write to this cache from it (a write to the same shard deadlocks).
    ///
    /// # Panics
    ///
    /// If `f` panics. The hit was counted and recorded before `f` ran; the
    /// lock is released as the panic unwinds and nothing is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<String, Vec<u8>> = larder::TypedCache::new();
    /// cache.insert("blob".to_string(), vec![1, 2, 3]);
    /// assert_eq!(cache.get_with("blob", |bytes| bytes.len()), Some(3));
    /// assert_eq!(cache.get_with("none", |bytes| bytes.len()), None);
    /// assert_eq!((cache.stats().hits, cache.stats().misses), (1, 1));
    /// ```
    #[inline]
    pub fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.raw.get(key, |value| f(value))
    }

    /// A clone of the live value under `key`, without recording a use
    /// (the eviction policy does not see it) or counting a hit or miss.
    /// `V::clone` runs under the key's shard read lock.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, &str> = larder::TypedCache::new();
    /// cache.insert(1, "a");
    /// assert_eq!(cache.peek(&1), Some("a"));
    /// assert_eq!(cache.peek(&2), None);
    /// assert_eq!((cache.stats().hits, cache.stats().misses), (0, 0));
    /// ```
    pub fn peek<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.raw.peek(key, V::clone)
    }

    /// Runs `f` on the live value under `key` in place, as
    /// [`peek`](TypedCache::peek) does (no use recorded, nothing counted),
    /// under the key's shard read lock: keep `f` short, and do not write to
    /// this cache from it.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, String> = larder::TypedCache::new();
    /// cache.insert(1, "four".to_string());
    /// assert_eq!(cache.peek_with(&1, |s| s.len()), Some(4));
    /// ```
    pub fn peek_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.raw.peek(key, f)
    }

    /// Stores `value` under `key`, replacing any value; returns the live
    /// value it replaced. Atomic per key. An init of the same key in progress
    /// will not overwrite it (its value goes uncached). The replaced value
    /// goes to the removal listener too (`Replaced`, or `Expired` if it had
    /// expired), and the write releases a few expired entries of the key's
    /// shard (see [`purge_expired`](TypedCache::purge_expired)). With a
    /// listener, the listener gets the replaced value and the caller a
    /// clone of it, made with no lock held; without one, the caller gets
    /// the value itself.
    ///
    /// # Panics
    ///
    /// If the removal listener, a released value's `Drop` or the clone of
    /// the replaced value panics; the insert has completed (and every
    /// released entry has reached the listener).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, &str> = larder::TypedCache::new();
    /// assert_eq!(cache.insert(1, "a"), None);
    /// assert_eq!(cache.insert(1, "b"), Some("a"));
    /// assert_eq!(cache.get(&1), Some("b"));
    /// ```
    pub fn insert(&self, key: K, value: V) -> Option<V> {
        self.raw.insert(key, value)
    }

    /// Removes `key`; returns its value if it was live. An init of the key
    /// in progress will not cache its value afterwards. The removal
    /// listener gets the entry (`Removed`, or `Expired` if it had expired),
    /// and the write releases a few expired entries of the key's shard.
    /// With a listener the caller gets a clone, as in
    /// [`insert`](TypedCache::insert).
    ///
    /// # Panics
    ///
    /// If the removal listener, a released value's `Drop` or the clone of
    /// the removed value panics; the entry has been removed.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, char> = larder::TypedCache::new();
    /// cache.insert(1, 'x');
    /// assert_eq!(cache.remove(&1), Some('x'));
    /// assert_eq!(cache.remove(&1), None);
    /// ```
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.raw.remove(key)
    }

    /// Removes every entry. Each key shard is emptied atomically, one after
    /// another: an insert that lands in an already emptied shard while this
    /// runs survives it. Inits in progress do not cache their values. The
    /// removed entries go to the removal listener (`Cleared`, or `Expired`)
    /// and are dropped after every shard is empty, with no lock held, so a
    /// panicking listener or `Drop` (which then reaches the caller) leaves
    /// no entry behind.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, u8> = larder::TypedCache::new();
    /// cache.insert(1, 1);
    /// cache.insert(2, 2);
    /// cache.clear();
    /// assert!(cache.is_empty());
    /// ```
    pub fn clear(&self) {
        self.raw.clear();
    }

    /// Whether a live value is stored under `key`. No statistics; not a read
    /// for time to idle. The answer may be stale by the time it is used: do
    /// not follow it with `insert` (use `get_or_init`).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, u8> = larder::TypedCache::new();
    /// cache.insert(1, 1);
    /// assert!(cache.contains_key(&1));
    /// assert!(!cache.contains_key(&2));
    /// ```
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.raw.contains_key(key)
    }

    /// The most entries the cache holds (with a
    /// [`weigher`](TypedCacheBuilder::weigher), the most total weight), as built
    /// or last [`resize`](Self::resize)d; `None` for an unbounded cache.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TypedCache;
    ///
    /// let cache: TypedCache<u32, u32> = TypedCache::builder().capacity(100).build().unwrap();
    /// assert_eq!(cache.capacity(), Some(100));
    /// assert_eq!(TypedCache::<u32, u32>::new().capacity(), None);
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.raw.capacity()
    }

    /// Changes the capacity (with a [`weigher`](TypedCacheBuilder::weigher),
    /// the total weight), bounding a cache built without one. Shrinking
    /// evicts, from the shards over their share of the new capacity first,
    /// until the entries fit; the evicted entries go to the removal
    /// listener ([`RemovalCause::Evicted`](crate::RemovalCause::Evicted))
    /// after their shard's lock is released, and count as evictions.
    /// Resizes are serialized; a write running alongside evicts to
    /// whichever capacity it reads.
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroCapacity`](crate::BuildError::ZeroCapacity) for a
    /// capacity of 0; the cache is then unchanged.
    ///
    /// # Panics
    ///
    /// If the removal listener or an evicted entry's `Drop` panics; the
    /// capacity has changed and the cache is within it.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::TypedCache::<u32, u32>::builder().capacity(100).build().unwrap();
    /// for i in 0..100 {
    ///     cache.insert(i, i);
    /// }
    /// cache.resize(10).unwrap();
    /// assert_eq!(cache.len(), 10);
    /// assert_eq!(cache.stats().capacity, Some(10));
    /// assert!(cache.resize(0).is_err());
    /// ```
    pub fn resize(&self, capacity: usize) -> Result<(), crate::BuildError> {
        self.raw.resize(capacity)
    }

    /// Removes every expired entry now, in every shard; returns how many.
    /// The listener gets each as [`RemovalCause::Expired`](crate::RemovalCause::Expired).
    ///
    /// Not needed for expiry to work: every write to a shard (an insert, an
    /// init's value being stored, an invalidation) releases the shard's
    /// expired entries a few at a time (a bounded amount of work per
    /// write), and a read that finds an expired entry releases it. Call
    /// this to release everything at once, for example from a timer in a
    /// cache that is read often and written rarely.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ManualClock, TypedCache};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let cache = TypedCache::<u8, u8>::builder()
    ///     .time_to_live(Duration::from_secs(1))
    ///     .clock(clock.clone())
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, 1);
    /// clock.advance(Duration::from_secs(2));
    /// assert_eq!(cache.purge_expired(), 1);
    /// assert!(cache.is_empty());
    /// ```
    pub fn purge_expired(&self) -> usize {
        self.raw.purge_expired()
    }

    /// The number of key shards (see the builder's `shards`).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, u8> = larder::TypedCache::builder().capacity(256).build().unwrap();
    /// assert_eq!(cache.shard_count(), 4); // one per 64 entries
    /// assert_eq!(larder::TypedCache::<u8, u8>::new().shard_count(), 16);
    /// ```
    pub fn shard_count(&self) -> usize {
        self.raw.shard_count()
    }

    /// The number of entries stored, including expired ones not yet
    /// released (see [`purge_expired`](TypedCache::purge_expired) for when
    /// they are). Exact when no write is in progress; otherwise somewhere
    /// between the counts before and after the writes in progress.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, u8> = larder::TypedCache::new();
    /// cache.get_or_init(&1, || 1);
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// The total weight of the entries: with a
    /// [`weigher`](TypedCacheBuilder::weigher), the sum of their weights (a
    /// weight of 0 counting as 1, expired entries not yet released
    /// included); without one, the same as [`len`](TypedCache::len). Exact
    /// when no write is in progress, as `len` is.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::TypedCache::builder()
    ///     .capacity(10)
    ///     .weigher(|_key: &u8, value: &String| value.len() as u32)
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, "four".to_string());
    /// cache.insert(2, "three".to_string());
    /// assert_eq!((cache.len(), cache.weighted_size()), (2, 9));
    /// ```
    pub fn weighted_size(&self) -> usize {
        self.raw.weight().unwrap_or_else(|| self.raw.len())
    }

    /// Whether [`len`](TypedCache::len) is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(larder::TypedCache::<u8, u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every live entry (expired ones left out) copied into a `Vec`, in no
    /// particular order: O(n), keys and values cloned.
    ///
    /// Each of the cache's shards is copied under its read lock, one shard
    /// after another, so the snapshot holds each shard as it was at some
    /// moment during the call (a write that lands meanwhile may or may not
    /// be in it), and does not change afterwards. Not a read: no time to
    /// idle is refreshed, nothing is counted, nothing released.
    ///
    /// # User code
    ///
    /// `K::clone` and `V::clone` run under a shard's read lock: they must
    /// not write to this cache (that deadlocks).
    ///
    /// # Panics
    ///
    /// If `K::clone` or `V::clone` panics; the cache is unchanged (a shard
    /// is only read).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<String, u32> = larder::TypedCache::new();
    /// cache.insert("a".to_string(), 1);
    /// cache.insert("b".to_string(), 2);
    /// let mut entries: Vec<(String, u32)> = cache.to_vec();
    /// entries.sort();
    /// assert_eq!(entries, [("a".to_string(), 1), ("b".to_string(), 2)]);
    /// ```
    pub fn to_vec(&self) -> Vec<(K, V)> {
        self.raw.entries()
    }

    /// The counters so far (see [`CacheStats`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, u8> = larder::TypedCache::new();
    /// cache.get_or_init(&1, || 1);
    /// cache.get_or_init(&1, || 1);
    /// let stats = cache.stats();
    /// assert_eq!((stats.hits, stats.misses, stats.inits), (1, 1, 1));
    /// ```
    pub fn stats(&self) -> CacheStats {
        self.raw.stats()
    }

    /// Sets every counter of [`stats`](TypedCache::stats) to 0, leaving
    /// the entries.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::TypedCache<u8, u8> = larder::TypedCache::new();
    /// cache.get(&1);
    /// cache.reset_stats();
    /// assert_eq!(cache.stats().misses, 0);
    /// ```
    pub fn reset_stats(&self) {
        self.raw.reset_stats();
    }

    /// The hasher of keys.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasher;
    /// let cache: larder::TypedCache<u8, u8> = larder::TypedCache::new();
    /// let h = BuildHasher::hash_one(cache.hasher(), 1_u8);
    /// assert_eq!(h, BuildHasher::hash_one(cache.hasher(), 1_u8));
    /// ```
    pub fn hasher(&self) -> &S {
        self.raw.hasher()
    }

    /// Asserts internal invariants; for tests, with no other thread using
    /// the cache.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn check_invariants(&self) {
        self.raw.check_invariants();
    }
}

impl<K, V, S> fmt::Debug for TypedCache<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedCache")
            .field("raw", &self.raw)
            .finish()
    }
}

#[cfg(test)]
mod tests;
