//! The counters both concurrent faces sum their [`CacheStats`] from: one
//! set of names ([`Event`]), kept two ways. [`Counters`]: plain integers
//! inside a shard's state, written under the lock its operation takes
//! anyway (`LruCache`'s writes, and its hits under `EvictionPolicy::Exact`).
//! [`Striped`]: per-thread padded stripes ([`StripedCounters`]), for counts
//! made under a shared lock or none (`LruCache`'s shared-lock lookups,
//! every `TypedCache` / `AnyCache` count), so counting a hit writes only a
//! cache line the calling thread (almost always) owns. No count adds a
//! shared written cache line to any path.

use std::fmt;

use crate::stats::CacheStats;
use crate::striped::StripedCounters;

/// What is counted: one counter of [`CacheStats`] each.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    Hit,
    Miss,
    Insert,
    Eviction,
    Init,
    InitFailure,
    Wait,
}

/// How many [`Event`]s there are.
const EVENTS: usize = 7;

/// One count of each [`Event`], guarded by the lock of what holds it.
#[derive(Default, Clone, Copy)]
pub(crate) struct Counters([u64; EVENTS]);

impl Counters {
    #[inline]
    pub(crate) fn record(&mut self, event: Event) {
        self.add(event, 1);
    }

    #[inline]
    pub(crate) fn add(&mut self, event: Event, n: u64) {
        self.0[event as usize] += n;
    }

    /// Adds these counts to `stats`.
    pub(crate) fn add_to(&self, stats: &mut CacheStats) {
        let count = |event: Event| self.0[event as usize];
        stats.hits += count(Event::Hit);
        stats.misses += count(Event::Miss);
        stats.inserts += count(Event::Insert);
        stats.evictions += count(Event::Eviction);
        stats.inits += count(Event::Init);
        stats.init_failures += count(Event::InitFailure);
        stats.waits += count(Event::Wait);
    }
}

/// One count of each [`Event`], counted per thread and summed on read.
pub(crate) struct Striped(StripedCounters<EVENTS>);

impl Striped {
    pub(crate) fn new() -> Self {
        Self(StripedCounters::new())
    }

    #[inline]
    pub(crate) fn record(&self, event: Event) {
        self.0.record(event as usize);
    }

    /// BROKEN on purpose (loom negative control `LruFault::RacyStats`):
    /// counts `event` with a load and a separate store on a counter every
    /// thread shares.
    #[cfg(loom)]
    pub(crate) fn record_racily(&self, event: Event) {
        self.0.record_racily(event as usize);
    }

    /// The totals since the last reset: each counter's total, not a cut
    /// across counters.
    pub(crate) fn totals(&self) -> Counters {
        Counters(self.0.totals())
    }

    /// Starts counting from 0 again.
    pub(crate) fn reset(&self) {
        self.0.reset();
    }
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut stats = CacheStats::default();
        self.add_to(&mut stats);
        fmt::Debug::fmt(&stats, f)
    }
}

impl fmt::Debug for Striped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.totals(), f)
    }
}
