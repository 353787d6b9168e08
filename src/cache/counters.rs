//! The counters both concurrent faces sum their [`CacheStats`] from: one
//! set of names ([`Event`]), kept two ways. [`ShardCounters`]: plain integers
//! inside a shard's state, written under the lock its operation takes
//! anyway (`LruCache`'s writes, and its hits under `EvictionPolicy::Exact`).
//! [`Striped`]: per-thread padded stripes ([`StripedCounters`]), for counts
//! made under a shared lock or none (`LruCache`'s shared-lock lookups,
//! every `TypedCache` / `AnyCache` count), so counting a hit writes only a
//! cache line the calling thread (almost always) owns. No count adds a
//! shared written cache line to any path.
//!
//! [`StripedCounters`]: one padded stripe of `N` counters per thread for
//! the first [`STRIPES`] threads, written by that thread only (a load and a
//! store, no locked instruction: `sync::count_striped`), plus a last stripe
//! shared by every later thread (a real `fetch_add`). Reading sums the
//! stripes.

use std::fmt;

use super::CacheStats;
use crate::sync::{self, AtomicU64, CachePadded, Mutex, Ordering};

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
pub(crate) struct ShardCounters([u64; EVENTS]);

impl ShardCounters {
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
    pub(crate) fn totals(&self) -> ShardCounters {
        ShardCounters(self.0.totals())
    }

    /// Starts counting from 0 again.
    pub(crate) fn reset(&self) {
        self.0.reset();
    }
}

impl fmt::Debug for ShardCounters {
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

/// Number of owned stripes: threads numbered below this (see
/// `sync::thread_stripe`) each own one; later threads share a fallback.
const STRIPES: usize = 32;

/// `N` event counters, counted per thread and summed on read.
pub(crate) struct StripedCounters<const N: usize> {
    /// A fixed count, so the hot path's stripe pick has no bounds check.
    stripes: Box<[CachePadded<[AtomicU64; N]>; STRIPES + 1]>,
    /// The sums at the last reset. Stripes only grow, and a reset subtracts
    /// instead of storing 0, which an owner's load-and-store could undo.
    base: Mutex<[u64; N]>,
}

impl<const N: usize> StripedCounters<N> {
    pub(crate) fn new() -> Self {
        Self {
            stripes: match (0..=STRIPES)
                .map(|_| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect::<Box<[_]>>()
                .try_into()
            {
                Ok(stripes) => stripes,
                Err(_) => unreachable!("larder: STRIPES + 1 stripes made"),
            },
            base: Mutex::new([0; N]),
        }
    }

    /// Adds 1 to counter `counter` (< `N`) in the calling thread's stripe.
    #[inline]
    pub(crate) fn record(&self, counter: usize) {
        sync::count_striped(&self.stripes[..], |stripe| &stripe[counter]);
    }

    /// BROKEN on purpose, for the loom negative control
    /// `LruFault::RacyStats`: adds 1 to counter `counter` of the shared
    /// stripe with a load and a separate store (lost updates when two
    /// threads count at once).
    #[cfg(loom)]
    pub(crate) fn record_racily(&self, counter: usize) {
        let counter = &self.stripes[STRIPES][counter];
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    fn sums(&self) -> [u64; N] {
        let mut sums = [0; N];
        for stripe in self.stripes.iter() {
            for (sum, counter) in sums.iter_mut().zip(stripe.iter()) {
                // Relaxed: counters that publish no other data; the totals
                // promise each counter's value, not a cut across counters.
                *sum += counter.load(Ordering::Relaxed);
            }
        }
        sums
    }

    /// Each counter's count since the last [`reset`](Self::reset). Exact
    /// per counter once the counting threads are quiet; while they count,
    /// two counters may be read at slightly different moments.
    pub(crate) fn totals(&self) -> [u64; N] {
        // The base lock orders this read of the stripes after the sums a
        // reset stored: stripes only grow, so the differences are >= 0.
        let base = self.base.lock();
        let mut totals = self.sums();
        for (total, base) in totals.iter_mut().zip(base.iter()) {
            *total -= base;
        }
        totals
    }

    /// Starts every counter from 0 again.
    pub(crate) fn reset(&self) {
        let mut base = self.base.lock();
        *base = self.sums();
    }
}

impl<const N: usize> fmt::Debug for StripedCounters<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StripedCounters")
            .field("totals", &self.totals())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_count_every_thread_and_reset_subtracts() {
        let counters = StripedCounters::<3>::new();
        std::thread::scope(|s| {
            // More threads than owned stripes: the shared stripe is used too.
            for t in 0..(STRIPES + 8) {
                let counters = &counters;
                s.spawn(move || {
                    for _ in 0..100 {
                        counters.record(t % 3);
                    }
                });
            }
        });
        let each = [
            (0..STRIPES + 8).filter(|t| t % 3 == 0).count() as u64 * 100,
            (0..STRIPES + 8).filter(|t| t % 3 == 1).count() as u64 * 100,
            (0..STRIPES + 8).filter(|t| t % 3 == 2).count() as u64 * 100,
        ];
        assert_eq!(counters.totals(), each);
        counters.reset();
        assert_eq!(counters.totals(), [0; 3]);
        counters.record(1);
        assert_eq!(counters.totals(), [0, 1, 0]);
    }
}
