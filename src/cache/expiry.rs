//! Expiry for any [`Shard`](super::Shard): a time to live, a time to idle,
//! and the [`Times`] side table of each entry's creation and access times,
//! kept only when entries can expire.
//!
//! # Costs
//!
//! A shard without expiry (`Shard<_, _, _, false>`) compiles every check
//! away: it keeps no times and never reads the clock. With expiry, an
//! entry costs 16 bytes more, beside it (so the entries themselves keep
//! their size).
//!
//! # Idle time
//!
//! A hit records its time only when it moved by at least
//! `time_to_idle / TTI_STEPS`, so hits on a hot entry write its access time
//! rarely (and, under a shared lock, as a relaxed atomic: a hint that
//! publishes nothing else).
//!
//! # Sweeping
//!
//! A cursor walks the slots from one [`sweep`](super::Shard::sweep) to the
//! next and wraps, so with a budget of `b` looks per write every entry is
//! looked at about once every `len / b` writes; nobody has to purge.

use std::time::Duration;

use crate::sync::{AtomicU64, Ordering};

/// Idle time is recorded with a resolution of `time_to_idle / TTI_STEPS`.
const TTI_STEPS: u64 = 64;

/// How many slots a write looks at to release expired entries: the bound on
/// the expiry work one operation pays.
pub(crate) const SWEEP_BUDGET: usize = 4;

/// What a lookup found.
pub(crate) enum Lookup<R> {
    Live(R),
    Expired,
    Missing,
}

impl<R> Lookup<R> {
    /// The live value, if any.
    #[inline]
    pub(crate) fn live(self) -> Option<R> {
        match self {
            Lookup::Live(found) => Some(found),
            _ => None,
        }
    }
}

/// A duration in nanoseconds, saturated.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// When entries expire (all times in nanoseconds of the cache's clock).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expiry {
    time_to_live: Option<u64>,
    time_to_idle: Option<u64>,
    /// The smallest change of access time worth recording.
    idle_resolution: u64,
}

impl Expiry {
    /// The expiry of these times, or `None` if entries never expire.
    pub(crate) fn new(
        time_to_live: Option<Duration>,
        time_to_idle: Option<Duration>,
    ) -> Option<Self> {
        if time_to_live.is_none() && time_to_idle.is_none() {
            return None;
        }
        let time_to_idle = time_to_idle.map(nanos);
        Some(Self {
            time_to_live: time_to_live.map(nanos),
            time_to_idle,
            idle_resolution: time_to_idle.map_or(0, |tti| (tti / TTI_STEPS).max(1)),
        })
    }

    /// Whether an entry with these times has expired at `now`.
    #[inline]
    fn expired(&self, stamp: &Stamp, now: u64) -> bool {
        if let Some(ttl) = self.time_to_live {
            if now.saturating_sub(stamp.created) >= ttl {
                return true;
            }
        }
        if let Some(tti) = self.time_to_idle {
            // Relaxed: `accessed` is a hint that publishes no other data; a
            // stale read can only make the entry look idle up to one
            // resolution step earlier or later than exactly.
            if now.saturating_sub(stamp.accessed.load(Ordering::Relaxed)) >= tti {
                return true;
            }
        }
        false
    }

    /// Records a use at `now`, only if it moved the idle time by at least
    /// one resolution step.
    #[inline]
    fn touch(&self, stamp: &Stamp, now: u64) {
        if self.time_to_idle.is_some() {
            // Relaxed (both): a standalone hint, see `expired`. Two racing
            // hits may store their `now`s out of order; the recorded time is
            // then behind by the gap between the two reads of the clock.
            let last = stamp.accessed.load(Ordering::Relaxed);
            if now.saturating_sub(last) >= self.idle_resolution {
                stamp.accessed.store(now, Ordering::Relaxed);
            }
        }
    }
}

/// When an entry was stored and last used.
struct Stamp {
    created: u64,
    accessed: AtomicU64,
}

impl Stamp {
    fn new(now: u64) -> Self {
        Self {
            created: now,
            accessed: AtomicU64::new(now),
        }
    }
}

/// The entries' times by slot, and the sweep's cursor: empty, and never
/// consulted, without expiry.
#[derive(Default)]
pub(crate) struct Times {
    expiry: Option<Expiry>,
    stamps: Vec<Stamp>,
    /// The slot the sweep looks at next (may equal the length: wraps).
    sweep_at: usize,
}

impl Times {
    pub(crate) fn new(expiry: Option<Expiry>) -> Self {
        Self {
            expiry,
            stamps: Vec::new(),
            sweep_at: 0,
        }
    }

    /// Whether entries can expire.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn expires(&self) -> bool {
        self.expiry.is_some()
    }

    /// Whether slot `i` has expired at `now` (never, without expiry).
    #[inline]
    pub(crate) fn expired(&self, i: u32, now: u64) -> bool {
        match &self.expiry {
            None => false,
            Some(expiry) => expiry.expired(&self.stamps[i as usize], now),
        }
    }

    /// Records a use of slot `i` at `now` (shared access suffices).
    #[inline]
    pub(crate) fn touch(&self, i: u32, now: u64) {
        if let Some(expiry) = &self.expiry {
            expiry.touch(&self.stamps[i as usize], now);
        }
    }

    /// Whether slot `i` is live at `now` (expiry on), recording the use if
    /// so. Out of line: a cache without expiry never calls it.
    #[cold]
    #[inline(never)]
    pub(crate) fn use_if_live(&self, i: u32, now: u64) -> bool {
        if self.expired(i, now) {
            return false;
        }
        self.touch(i, now);
        true
    }

    /// Slot `i` holds a new entry, stored at `now`.
    #[inline]
    pub(crate) fn reset(&mut self, i: u32, now: u64) {
        if self.expiry.is_some() {
            self.stamps[i as usize] = Stamp::new(now);
        }
    }

    /// An entry stored at `now` was appended.
    #[inline]
    pub(crate) fn push(&mut self, now: u64) {
        if self.expiry.is_some() {
            self.stamps.push(Stamp::new(now));
        }
    }

    /// Room for `more` entries beyond those held.
    pub(crate) fn reserve_exact(&mut self, more: usize) {
        if self.expiry.is_some() {
            self.stamps.reserve_exact(more);
        }
    }

    /// Slot `i` was removed, the last moving into it.
    #[inline]
    pub(crate) fn swap_remove(&mut self, i: u32) {
        if self.expiry.is_some() {
            self.stamps.swap_remove(i as usize);
            if self.sweep_at > self.stamps.len() {
                self.sweep_at = 0;
            }
        }
    }

    /// Every entry is gone.
    pub(crate) fn clear(&mut self) {
        self.stamps = Vec::new();
        self.sweep_at = 0;
    }

    /// Gives back memory beyond `capacity` slots.
    pub(crate) fn shrink_to(&mut self, capacity: usize) {
        self.stamps.shrink_to(capacity);
    }

    /// Slots the stamps have room for (for tests of memory release).
    #[cfg(test)]
    pub(crate) fn room(&self) -> usize {
        self.stamps.capacity()
    }

    /// The next slot for the sweep to look at, of `len` (not 0).
    #[inline]
    pub(crate) fn sweep_cursor(&mut self, len: usize) -> u32 {
        if self.sweep_at >= len {
            self.sweep_at = 0;
        }
        self.sweep_at as u32
    }

    /// The sweep found the slot under its cursor live: on to the next.
    #[inline]
    pub(crate) fn sweep_past(&mut self) {
        self.sweep_at += 1;
    }

    /// Asserts the table is in step with `len` entries.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check(&self, len: usize) {
        let expected = if self.expires() { len } else { 0 };
        assert_eq!(
            self.stamps.len(),
            expected,
            "times out of step with the entries"
        );
        assert!(
            self.sweep_at <= len,
            "sweep cursor {} beyond {len} entries",
            self.sweep_at
        );
    }
}
