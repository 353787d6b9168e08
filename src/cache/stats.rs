//! [`CacheStats`]: the one statistics type of the caches ([`LruCache`],
//! [`TypedCache`] and [`AnyCache`]), with one set of counter names.
//!
//! [`LruCache`]: crate::LruCache
//! [`TypedCache`]: crate::TypedCache
//! [`AnyCache`]: crate::AnyCache

use std::fmt;

/// A snapshot of a cache's counters, from [`LruCache::stats`],
/// [`TypedCache::stats`] or [`AnyCache::stats`], like Python's
/// `lru_cache(...).cache_info()`.
///
/// - `hits` / `misses`: calls of `get`, `get_with` and the loading methods
///   (`get_or_init`, `get_or_try_init`, their async forms) that found / did
///   not find a live value. `LruCache`'s `peek`, `peek_with` and every
///   `contains_key` are not counted.
/// - `inserts`: values stored by `insert` (new keys and replacements) and by
///   completed inits.
/// - `evictions`: entries removed to make room for others (to stay within
///   `capacity`); not `remove`, `clear` or expiry.
/// - `inits` / `init_failures`: init closures run (each by the one caller
///   that led the init), and of those the ones that returned an error or
///   panicked.
/// - `waits`: misses of the loading methods that did not run their init:
///   they waited for another caller's init of the key (and got its value or
///   its error), or found the value another caller stored between their
///   miss and their turn.
/// - `len`: entries held (for `TypedCache` and `AnyCache`, expired entries
///   not yet released included).
/// - `capacity`: the bound on entries (with a weigher, on total weight);
///   `None` for a cache built without one.
/// - `weighted_size`: with a weigher (`LruCache`, `TypedCache`), the total
///   weight held, at most `capacity`; `None` without one.
///
/// Every call of a loading method that misses counts exactly one init or
/// one wait, so once the cache is quiet:
///
/// `misses == inits + waits + (misses of get and get_with)`
///
/// (a call that never finishes its miss, a re-entrant init that panics or
/// an async call dropped while it waits, counts its miss only).
///
/// The counters are summed shard by shard, or stripe by stripe, when
/// `stats` is called: each counter is exact, but the sum is not one atomic
/// cut of a cache that other threads are using at that moment.
///
/// [`LruCache::stats`]: crate::LruCache::stats
/// [`TypedCache::stats`]: crate::TypedCache::stats
/// [`AnyCache::stats`]: crate::AnyCache::stats
///
/// # Examples
///
/// ```
/// let cache = larder::LruCache::new(2);
/// cache.insert("a", 1);
/// assert!(cache.get("a").is_some());
/// assert!(cache.get("b").is_none());
/// let stats = cache.stats();
/// assert_eq!((stats.hits, stats.misses, stats.len, stats.capacity), (1, 1, 1, Some(2)));
/// assert_eq!(stats.hit_ratio(), 0.5);
///
/// let typed: larder::TypedCache<u32, String> = larder::TypedCache::new();
/// typed.get_or_init(&1, || "one".to_string()); // miss, init
/// typed.get_or_init(&1, || unreachable!());    // hit
/// let stats = typed.stats();
/// assert_eq!((stats.hits, stats.misses, stats.inits, stats.inserts), (1, 1, 1, 1));
/// assert_eq!(
///     stats.to_string(),
///     "hits=1 misses=1 inserts=1 evictions=0 inits=1 init_failures=0 waits=0 len=1 capacity=none"
/// );
/// ```
#[non_exhaustive]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Calls answered from the cache.
    pub hits: u64,
    /// Calls that did not find a live value.
    pub misses: u64,
    /// Values stored by inserts and completed inits.
    pub inserts: u64,
    /// Entries removed to make room.
    pub evictions: u64,
    /// Init closures run (each by the one caller that led the init).
    pub inits: u64,
    /// Init closures that returned an error or panicked.
    pub init_failures: u64,
    /// Misses of the loading methods that did not run their init (they
    /// waited for another caller's init, or found its value).
    pub waits: u64,
    /// Entries held.
    pub len: usize,
    /// The most entries the cache holds (with a weigher, the most
    /// total weight); `None` when it was built without a bound.
    pub capacity: Option<usize>,
    /// With [`LruCacheBuilder::weigher`](crate::LruCacheBuilder::weigher) or
    /// [`TypedCacheBuilder::weigher`](crate::TypedCacheBuilder::weigher):
    /// the total weight of the entries held (each at least 1), at most
    /// `capacity`. `None` without a weigher (every entry weighs 1: the total
    /// is `len`).
    pub weighted_size: Option<usize>,
}

impl CacheStats {
    /// `hits + misses`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u32, u32>::new(4);
    /// cache.get(&1);
    /// assert_eq!(cache.stats().requests(), 1);
    /// ```
    pub fn requests(&self) -> u64 {
        self.hits + self.misses
    }

    /// `hits / (hits + misses)`, or 0 before the first call.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(larder::CacheStats::default().hit_ratio(), 0.0);
    /// ```
    pub fn hit_ratio(&self) -> f64 {
        match self.requests() {
            0 => 0.0,
            n => self.hits as f64 / n as f64,
        }
    }
}

impl fmt::Display for CacheStats {
    /// One line of `name=value` pairs, named as the fields are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hits={} misses={} inserts={} evictions={} inits={} init_failures={} waits={} len={}",
            self.hits,
            self.misses,
            self.inserts,
            self.evictions,
            self.inits,
            self.init_failures,
            self.waits,
            self.len
        )?;
        match self.capacity {
            Some(capacity) => write!(f, " capacity={capacity}")?,
            None => f.write_str(" capacity=none")?,
        }
        if let Some(weighted_size) = self.weighted_size {
            write!(f, " weighted_size={weighted_size}")?;
        }
        Ok(())
    }
}
