//! The per-shard counters an [`LruCache`](super::LruCache)'s
//! [`CacheStats`] is summed from.
//!
//! The counters are plain integers inside each shard's state, updated under
//! the shard's exclusive lock that the operation takes anyway, except the
//! hits and misses of lookups under a shared lock (`EvictionPolicy::Clock`),
//! counted in per-thread stripes ([`Lookups`]): counting adds no shared
//! cache line to any path.

use crate::stats::CacheStats;
use crate::striped::StripedCounters;

/// Counters of one shard, guarded by the shard lock.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) inserts: u64,
    pub(crate) evictions: u64,
    pub(crate) inits: u64,
    pub(crate) init_failures: u64,
    pub(crate) waits: u64,
}

impl Counters {
    pub(crate) fn add_to(&self, stats: &mut CacheStats) {
        stats.hits += self.hits;
        stats.misses += self.misses;
        stats.inserts += self.inserts;
        stats.evictions += self.evictions;
        stats.inits += self.inits;
        stats.init_failures += self.init_failures;
        stats.waits += self.waits;
    }
}

/// Hits and misses of lookups made under a shard's *shared* lock
/// ([`EvictionPolicy::Clock`](super::EvictionPolicy::Clock) and
/// [`EvictionPolicy::S3Fifo`](super::EvictionPolicy::S3Fifo)), where the shard's
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
