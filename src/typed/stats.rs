//! Statistics: [`TypedCacheStats`], counted in per-thread padded stripes
//! (the crate's `StripedCounters`, shared with `LruCache`), so that counting
//! a hit writes only a cache line the calling thread (almost always) owns.

use std::fmt;

use crate::striped::StripedCounters;

/// A snapshot of a cache's counters, from [`TypedCache::stats`] or
/// [`AnyCache::stats`].
///
/// Counted per call: every `get`, `get_with`, `get_or_init`
/// and `get_or_try_init` call (async forms included) is exactly one hit or
/// one miss. A miss of a loading call (`get_or_init`, `get_or_try_init`)
/// then either ran the init (`inits`, and `init_failures` too if it
/// returned an error or panicked) or did not (`waits`: it waited for
/// another caller's init and got its value or its error, or found the value
/// another caller stored between its miss and its turn). So, once the
/// cache is quiet:
///
/// `misses == inits + waits + (misses of get and get_with)`
///
/// (a call that never finishes its miss, a re-entrant init that panics or
/// an async call dropped while it waits, counts its miss only).
///
/// The counters are summed from per-thread stripes without a lock: while
/// other threads work, the snapshot is not an atomic cut (each counter is
/// exact, but two counters may be read at slightly different moments).
///
/// [`TypedCache::stats`]: crate::TypedCache::stats
/// [`AnyCache::stats`]: crate::AnyCache::stats
///
/// # Examples
///
/// ```
/// use larder::TypedCache;
///
/// let cache: TypedCache<u32, String> = TypedCache::new();
/// cache.get_or_init(&1, || "one".to_string()); // miss, init
/// cache.get_or_init(&1, || unreachable!());    // hit
/// assert_eq!(cache.get(&2), None);              // miss
/// let stats = cache.stats();
/// assert_eq!((stats.hits, stats.misses, stats.inits), (1, 2, 1));
/// assert_eq!(stats.hit_ratio(), 1.0 / 3.0);
/// assert_eq!(
///     stats.to_string(),
///     "hits=1 misses=2 inits=1 init_failures=0 waits=0"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TypedCacheStats {
    /// Calls answered from the cache.
    pub hits: u64,
    /// Calls that did not find a live value.
    pub misses: u64,
    /// Init closures run (each by the one caller that led the init).
    pub inits: u64,
    /// Init closures that returned an error or panicked.
    pub init_failures: u64,
    /// Misses of the loading calls that did not run their init: they waited
    /// for another caller's init (or found its value).
    pub waits: u64,
}

impl TypedCacheStats {
    /// `hits / (hits + misses)`, or 0 before the first call.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(larder::TypedCacheStats::default().hit_ratio(), 0.0);
    /// ```
    pub fn hit_ratio(&self) -> f64 {
        let calls = self.hits + self.misses;
        if calls == 0 {
            0.0
        } else {
            self.hits as f64 / calls as f64
        }
    }
}

impl fmt::Display for TypedCacheStats {
    /// One line of `name=value` pairs, like
    /// [`CacheStats`](crate::CacheStats)'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hits={} misses={} inits={} init_failures={} waits={}",
            self.hits, self.misses, self.inits, self.init_failures, self.waits
        )
    }
}

/// Which counter to bump.
#[derive(Clone, Copy)]
pub(crate) enum Event {
    Hit,
    Miss,
    Init,
    InitFailure,
    Wait,
}

/// The live counters of one cache, one per [`Event`], counted per thread
/// ([`StripedCounters`]) so that counting a hit writes only a cache line
/// the calling thread (almost always) owns.
pub(crate) struct Stats {
    counters: StripedCounters<5>,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Self {
            counters: StripedCounters::new(),
        }
    }

    #[inline]
    pub(crate) fn record(&self, event: Event) {
        // `snapshot` promises each counter's total, not a cut across
        // counters, so per-thread counting is enough.
        self.counters.record(event as usize);
    }

    pub(crate) fn snapshot(&self) -> TypedCacheStats {
        let totals = self.counters.totals();
        TypedCacheStats {
            hits: totals[Event::Hit as usize],
            misses: totals[Event::Miss as usize],
            inits: totals[Event::Init as usize],
            init_failures: totals[Event::InitFailure as usize],
            waits: totals[Event::Wait as usize],
        }
    }
}

impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.snapshot(), f)
    }
}
