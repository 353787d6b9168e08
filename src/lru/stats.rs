//! [`CacheStats`]: the `cache_info()` of an [`LruCache`](super::LruCache),
//! and the per-shard counters it is summed from.
//!
//! The counters are plain integers inside each shard's state, updated under
//! the shard's exclusive lock that the operation takes anyway, except the
//! hits and misses of lookups under a shared lock (`LruPolicy::Clock`),
//! counted in per-thread stripes ([`Lookups`]): counting adds no shared
//! cache line to any path.

use std::fmt;

use crate::striped::StripedCounters;

/// Counters of one shard, guarded by the shard lock.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) inserts: u64,
    pub(crate) evictions: u64,
    pub(crate) loads: u64,
    pub(crate) load_failures: u64,
    pub(crate) waits: u64,
}

impl Counters {
    pub(crate) fn add_to(&self, stats: &mut CacheStats) {
        stats.hits += self.hits;
        stats.misses += self.misses;
        stats.inserts += self.inserts;
        stats.evictions += self.evictions;
        stats.loads += self.loads;
        stats.load_failures += self.load_failures;
        stats.waits += self.waits;
    }
}

/// Statistics of an [`LruCache`](super::LruCache), like Python's
/// `lru_cache(...).cache_info()`.
///
/// - `hits` / `misses`: lookups by [`get`](super::LruCache::get) and the
///   loading methods that found / did not find the key. `peek` and
///   `contains_key` are not counted.
/// - `inserts`: values stored by `insert` (new keys and replacements) and by
///   completed loads.
/// - `evictions`: entries removed to make room (by an insert, a load or a
///   shrinking `resize`); not `remove` or `clear`.
/// - `loads` / `load_failures`: loader runs by this cache's loading methods
///   that returned a value / an error or panicked.
/// - `waits`: calls of the loading methods that missed and did not run
///   their loader: they waited for another caller's load of the key (and
///   got its value or its error), or found the value another caller stored
///   between their miss and their turn to load.
/// - `len` / `capacity`: entries held, and the bound.
/// - `weighted_size`: with a weigher, their total weight, bounded by
///   `capacity`; `None` without one.
///
/// Every call of a loading method (`get_or_init`, `get_or_try_init`, their
/// async forms, [`LoadingLruCache`](super::LoadingLruCache)'s) that misses
/// counts exactly one of a load, a load failure or a wait, so once the
/// cache is quiet:
///
/// `misses == loads + load_failures + waits + (misses of get and get_with)`
///
/// (a call that never finishes its miss, a re-entrant load that panics or
/// an async call dropped while it waits, counts its miss only).
///
/// Summed shard by shard when [`stats`](super::LruCache::stats) is called:
/// each shard's counters are exact, but the sum is not one atomic snapshot
/// of a cache that other threads are using at that moment.
///
/// # Examples
///
/// ```
/// let cache = larder::LruCache::new(2);
/// cache.insert("a", 1);
/// assert!(cache.get("a").is_some());
/// assert!(cache.get("b").is_none());
/// let stats = cache.stats();
/// assert_eq!((stats.hits, stats.misses, stats.len, stats.capacity), (1, 1, 1, 2));
/// assert_eq!(stats.hit_ratio(), 0.5);
/// println!("{stats}"); // hits=1 misses=1 maxsize=2 currsize=1 ...
/// ```
#[non_exhaustive]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the key.
    pub hits: u64,
    /// Lookups that did not find the key.
    pub misses: u64,
    /// Values stored by inserts and completed loads.
    pub inserts: u64,
    /// Entries removed to make room.
    pub evictions: u64,
    /// Loader runs that returned a value.
    pub loads: u64,
    /// Loader runs that returned an error or panicked.
    pub load_failures: u64,
    /// Misses of the loading methods that did not run their loader (they
    /// waited for another caller's load, or found its value).
    pub waits: u64,
    /// Entries held.
    pub len: usize,
    /// With a [`weigher`](super::LruCacheBuilder::weigher): the total
    /// weight of the entries held (each at least 1), at most `capacity`.
    /// `None` without one (every entry weighs 1: the total is `len`).
    pub weighted_size: Option<usize>,
    /// The most entries the cache holds; with a weigher, the most total
    /// weight.
    pub capacity: usize,
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

    /// `hits / (hits + misses)`, or 0 before the first lookup.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u32, u32>::new(4);
    /// assert_eq!(cache.stats().hit_ratio(), 0.0);
    /// ```
    pub fn hit_ratio(&self) -> f64 {
        match self.requests() {
            0 => 0.0,
            n => self.hits as f64 / n as f64,
        }
    }
}

impl fmt::Display for CacheStats {
    /// Formats like Python's `CacheInfo`, plus the counters Python lacks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hits={} misses={} maxsize={} currsize={} inserts={} evictions={} loads={} load_failures={} waits={}",
            self.hits,
            self.misses,
            self.capacity,
            self.len,
            self.inserts,
            self.evictions,
            self.loads,
            self.load_failures,
            self.waits
        )
    }
}

/// Hits and misses of lookups made under a shard's *shared* lock
/// ([`LruPolicy::Clock`](super::LruPolicy::Clock) and
/// [`LruPolicy::S3Fifo`](super::LruPolicy::S3Fifo)), where the shard's
/// plain counters cannot be written: per-thread padded stripes
/// ([`StripedCounters`]), so a hit writes only a cache line its own thread
/// owns; summed on read.
pub(crate) struct Lookups(StripedCounters<2>);

/// The counters of [`Lookups`].
const HITS: usize = 0;
const MISSES: usize = 1;

impl Lookups {
    pub(crate) fn new() -> Self {
        Self(StripedCounters::new())
    }

    /// Counts one lookup: a hit if `hit`, else a miss.
    #[inline]
    pub(crate) fn record(&self, hit: bool) {
        self.0.record(if hit { HITS } else { MISSES });
    }

    /// Hits and misses since the last reset.
    pub(crate) fn totals(&self) -> (u64, u64) {
        let totals = self.0.totals();
        (totals[HITS], totals[MISSES])
    }

    /// Starts counting from 0 again.
    pub(crate) fn reset(&self) {
        self.0.reset();
    }
}
