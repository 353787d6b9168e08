//! Statistics: the counters of a [`CacheStats`], counted in per-thread padded stripes
//! (the crate's `StripedCounters`, shared with `LruCache`), so that counting
//! a hit writes only a cache line the calling thread (almost always) owns.

use std::fmt;

use crate::stats::CacheStats;
use crate::striped::StripedCounters;

/// Which counter to bump.
#[derive(Clone, Copy)]
pub(crate) enum Event {
    Hit,
    Miss,
    Init,
    InitFailure,
    Wait,
    Insert,
    Eviction,
}

/// The live counters of one cache, one per [`Event`], counted per thread
/// ([`StripedCounters`]) so that counting a hit writes only a cache line
/// the calling thread (almost always) owns.
pub(crate) struct Stats {
    counters: StripedCounters<7>,
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

    /// The counters; `len` and `capacity` are the caller's to fill in.
    pub(crate) fn snapshot(&self) -> CacheStats {
        let totals = self.counters.totals();
        CacheStats {
            hits: totals[Event::Hit as usize],
            misses: totals[Event::Miss as usize],
            inserts: totals[Event::Insert as usize],
            evictions: totals[Event::Eviction as usize],
            inits: totals[Event::Init as usize],
            init_failures: totals[Event::InitFailure as usize],
            waits: totals[Event::Wait as usize],
            ..CacheStats::default()
        }
    }
}

impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.snapshot(), f)
    }
}
