//! The lookups of [`LruCache`]: `get` (a clone of the value out),
//! `get_with` (a closure that reads the value in place), the uncounted
//! `peek` and `peek_with`, and `contains_key`.
//!
//! # What a hit writes
//!
//! - `EvictionPolicy::Exact`: a hit moves its entry to the front of its shard's
//!   list, so it takes the shard's exclusive lock anyway; its hit is counted
//!   in the shard's plain counters under that same lock (the lock's cache
//!   line and the shard's are written already; counting adds no other).
//! - `EvictionPolicy::Clock` and `EvictionPolicy::S3Fifo`: a hit takes the shard's *shared* lock (a write to
//!   the lock word, the one shared write of the path), sets the entry's
//!   reference bit only if it is clear (a hot entry's line stays shared
//!   between the cores that read it), and counts the hit in the calling
//!   thread's own padded stripe (`cache::Striped`), which no other thread
//!   writes.
//! - The value is stored in the entry itself: `get` clones it out under the
//!   lock (for `V = Arc<T>` that clone is a reference-count write every
//!   thread hitting the key shares; for a small `Copy`-like value it writes
//!   nothing shared), `get_with` reads it in place.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use super::LruCache;

impl<K: Hash + Eq, V, S: BuildHasher> LruCache<K, V, S> {
    /// The value of `key`, made the most recently used of its shard (under
    /// [`EvictionPolicy::Clock`](super::EvictionPolicy::Clock): marked as used). Counts a hit or a miss.
    ///
    /// Linearizable (one shard lock: exclusive under `Exact`, shared under
    /// `Clock`). Runs `K: Eq` under the lock, `Hash` before it.
    ///
    /// Returns a clone of the stored value (`V::clone`, under the shard's
    /// lock), as moka's and quick_cache's `get` do: store small values as
    /// they are, and large or shared ones as `V = Arc<T>` (the clone is
    /// then a reference-count increment, a write every thread reading that
    /// key shares). To read a value in place without cloning it, use
    /// [`get_with`](Self::get_with).
    ///
    /// # Deadlocks
    ///
    /// `V::clone` runs under the shard's lock: a `Clone` impl that calls
    /// this cache can deadlock (see [`get_with`](Self::get_with)).
    ///
    /// # Panics
    ///
    /// If `V::clone` panics; the cache stays consistent (see
    /// [`get_with`](Self::get_with)).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(4);
    /// cache.insert(String::from("k"), 1);
    /// assert_eq!(cache.get("k"), Some(1)); // lookup by &str
    /// assert_eq!(cache.get("x"), None);
    /// ```
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
        V: Clone,
    {
        let hash = self.hash(key);
        self.lookup(hash, key)
    }

    /// Calls `f` with the value of `key` and returns what it returns,
    /// without cloning the value; the entry is made the most recently
    /// used of its shard (under [`EvictionPolicy::Clock`](super::EvictionPolicy::Clock): marked as used).
    /// Counts a hit or a miss, like [`get`](Self::get).
    ///
    /// This is the hit path that writes nothing shared under
    /// [`EvictionPolicy::Clock`](super::EvictionPolicy::Clock) beyond the shard's shared lock: no
    /// reference-count write, the reference bit only if it is clear, the hit
    /// counted in the calling thread's own stripe, whatever `V` is. Under
    /// `Exact` the hit
    /// moves its entry under the shard's exclusive lock anyway.
    ///
    /// (moka's `get_with` is a get-or-insert; here that is
    /// [`get_or_init`](Self::get_or_init). Closures in this crate's `*_with`
    /// methods visit a value.)
    ///
    /// # Deadlocks
    ///
    /// `f` runs under the shard's lock (exclusive under `Exact`, shared
    /// under `Clock`): keep it short, and do not call this cache from it
    /// (a call that needs the same shard deadlocks).
    ///
    /// # Panics
    ///
    /// If `f` panics. The lookup was complete before `f` ran (the entry
    /// moved or marked, the hit counted), so the cache stays consistent; the
    /// lock is released as the panic unwinds, and nothing is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(4);
    /// cache.insert("greeting", String::from("hello"));
    /// assert_eq!(cache.get_with("greeting", |s| s.len()), Some(5));
    /// assert_eq!(cache.get_with("other", |s| s.len()), None);
    /// let stats = cache.stats();
    /// assert_eq!((stats.hits, stats.misses), (1, 1));
    /// ```
    #[inline]
    pub fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let hash = self.hash(key);
        self.layer.get_with(hash, key, f)
    }

    /// A counted lookup, marking a hit as a use: under the shard's
    /// exclusive lock (`Exact`) or its shared lock (`Clock`, `S3Fifo`).
    #[inline]
    pub(crate) fn lookup<Q>(&self, hash: u64, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
        V: Clone,
    {
        self.layer.get_with(hash, key, V::clone)
    }

    /// A clone of the value of `key` without making it more recent and
    /// without counting a hit or miss (`V::clone` runs under the shard's
    /// shared lock).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::builder().capacity(2).shards(1).build().unwrap();
    /// cache.insert(1, "a");
    /// cache.insert(2, "b");
    /// assert_eq!(cache.peek(&1), Some("a")); // 1 stays least recent
    /// cache.insert(3, "c");
    /// assert!(!cache.contains_key(&1));
    /// ```
    pub fn peek<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
        V: Clone,
    {
        self.layer.peek_with(key, V::clone)
    }

    /// Calls `f` with the value of `key` under the shard's shared lock,
    /// without making it more recent, without counting a hit or miss, and
    /// without cloning the value.
    ///
    /// # Deadlocks
    ///
    /// `f` runs under the shard's shared lock: do not write to this cache
    /// from it.
    ///
    /// # Panics
    ///
    /// If `f` panics; nothing was changed, and the lock is released as the
    /// panic unwinds.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(4);
    /// cache.insert(1, [1_u8; 32]);
    /// assert_eq!(cache.peek_with(&1, |bytes| bytes[0]), Some(1));
    /// assert_eq!(cache.stats().hits, 0);
    /// ```
    pub fn peek_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.layer.peek_with(key, f)
    }

    /// Whether `key` is present (no recency change, not counted).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(2);
    /// cache.insert(1, ());
    /// assert!(cache.contains_key(&1));
    /// assert!(!cache.contains_key(&2));
    /// ```
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.layer.contains(key)
    }
}
