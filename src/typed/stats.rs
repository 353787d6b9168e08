//! Statistics: per-thread padded stripes of counters, so that counting a hit
//! writes only a cache line the calling thread (almost always) owns.

use std::fmt;

use crate::sync::{self, AtomicU64, CachePadded, Ordering};

/// Number of owned counter stripes: threads numbered below this (see
/// `sync::thread_stripe`) each own one; later threads share a fallback.
const STRIPES: usize = 32;

/// A snapshot of a cache's counters, from [`TypedCache::stats`] or
/// [`AnyCache::stats`].
///
/// Counted per call: every `get`, `get_with`, `get_cloned`, `get_or_init`
/// and `get_or_try_init` call (async forms included) is exactly one hit or
/// one miss. A miss of a loading call (`get_or_init`, `get_or_try_init`)
/// then either ran the init (`inits`, and `init_failures` too if it
/// returned an error or panicked) or did not (`waits`: it waited for
/// another caller's init and got its value or its error, or found the value
/// another caller stored between its miss and its turn). So, once the
/// cache is quiet:
///
/// `misses == inits + waits + (misses of get, get_with, get_cloned)`
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

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    inits: AtomicU64,
    init_failures: AtomicU64,
    waits: AtomicU64,
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

/// The live counters of one cache: one padded stripe per thread for the
/// first `STRIPES` threads, written by that thread only, plus a shared
/// stripe for the rest (the last one).
pub(crate) struct Stats {
    stripes: Box<[CachePadded<Counters>]>,
}

impl Counters {
    fn get(&self, event: Event) -> &AtomicU64 {
        match event {
            Event::Hit => &self.hits,
            Event::Miss => &self.misses,
            Event::Init => &self.inits,
            Event::InitFailure => &self.init_failures,
            Event::Wait => &self.waits,
        }
    }
}

impl Stats {
    pub(crate) fn new() -> Self {
        Self {
            stripes: (0..=STRIPES)
                .map(|_| CachePadded::new(Counters::default()))
                .collect(),
        }
    }

    #[inline]
    pub(crate) fn record(&self, event: Event) {
        // `snapshot` promises each counter's total, not a cut across
        // counters, so Relaxed per-thread counting is enough.
        sync::count_striped(&self.stripes, |stripe| stripe.get(event));
    }

    pub(crate) fn snapshot(&self) -> TypedCacheStats {
        let mut total = TypedCacheStats::default();
        for stripe in self.stripes.iter() {
            // Relaxed: see `record`.
            total.hits += stripe.hits.load(Ordering::Relaxed);
            total.misses += stripe.misses.load(Ordering::Relaxed);
            total.inits += stripe.inits.load(Ordering::Relaxed);
            total.init_failures += stripe.init_failures.load(Ordering::Relaxed);
            total.waits += stripe.waits.load(Ordering::Relaxed);
        }
        total
    }
}

impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.snapshot(), f)
    }
}
