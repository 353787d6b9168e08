//! [`Bound`]: the global bound of a [`TypedCache`](super::TypedCache) or
//! [`AnyCache`](super::AnyCache): the entry count over all key shards and,
//! with a weigher, their total weight; eviction across shards to keep the
//! total within `capacity`.
//!
//! Each shard's change reaches the totals under that shard's write lock
//! ([`Bound::account`]). Every access is `SeqCst`: inserters in different
//! shards decide evictions from the total, and one order over all its
//! updates and reads keeps them from both acting on a stale total.
//!
//! Without a weigher the bound counts entries: no weight is read and the
//! weight total is never written. The store path picks its variant once
//! (`W`, "weighted", of the methods below), as the engine's shards pick
//! theirs by type, so an unweighted store runs no weight code at all.

use crate::cache::{Locked, MAX_SHARD_CAPACITY, Tally, Weigher};
use crate::removal::{Removal, RemovalCause, tagged};
use crate::sync::{AtomicU64, AtomicUsize, CachePadded, Mutex, Ordering, ShardedLock};

#[cfg(loom)]
use super::broken::{account_eviction, apply_capacity};
#[cfg(not(loom))]
use {account_size as account_eviction, set_capacity_then_evict as apply_capacity};

/// The totals over all shards, on one cache line (written together).
struct Totals {
    /// Entries stored (including expired ones not yet removed).
    len: AtomicUsize,
    /// The sum of their weights; kept only with a weigher.
    weight: AtomicU64,
}

/// A shard's size as the bound counts it.
#[derive(Clone, Copy)]
pub(crate) struct Size {
    len: usize,
    /// 0 without a weigher.
    pub(super) weight: u64,
}

/// The capacity of an unbounded cache (a capacity of 0 is refused).
const UNBOUNDED: usize = 0;

pub(crate) struct Bound<K, V> {
    /// The most entries, or with a weigher the most total weight;
    /// [`UNBOUNDED`] for no bound. Changed only by `resize`.
    capacity: AtomicUsize,
    /// Each shard's share of the capacity (rounded up): eviction takes
    /// from the shards over it first (see `evict_locked`).
    share: AtomicU64,
    weigher: Option<Weigher<K, V>>,
    totals: CachePadded<Totals>,
    /// Serializes resizes.
    resizing: Mutex<()>,
}

impl<K, V> Bound<K, V> {
    /// A bound of `capacity` (a total weight with a weigher, held to
    /// [`MAX_SHARD_CAPACITY`]: every shard may come to hold it all).
    pub(crate) fn new(
        capacity: Option<usize>,
        weigher: Option<Weigher<K, V>>,
        shards: usize,
    ) -> Self {
        let bound = Self {
            capacity: AtomicUsize::new(UNBOUNDED),
            share: AtomicU64::new(0),
            weigher,
            totals: CachePadded::new(Totals {
                len: AtomicUsize::new(0),
                weight: AtomicU64::new(0),
            }),
            resizing: Mutex::new(()),
        };
        if let Some(max) = capacity {
            bound.set_capacity(max, shards);
        }
        bound
    }

    /// Sets the capacity (with a weigher held to [`MAX_SHARD_CAPACITY`])
    /// and each of `shards` shards' share of it; returns the capacity set.
    pub(super) fn set_capacity(&self, capacity: usize, shards: usize) -> usize {
        debug_assert_ne!(capacity, UNBOUNDED, "a capacity of 0 is refused earlier");
        let capacity = match self.weigher {
            Some(_) => capacity.min(MAX_SHARD_CAPACITY),
            None => capacity,
        };
        let share = capacity.div_ceil(shards) as u64;
        self.share.store(share, Ordering::SeqCst);
        self.capacity.store(capacity, Ordering::SeqCst);
        capacity
    }

    #[inline]
    pub(crate) fn capacity(&self) -> Option<usize> {
        let capacity = self.capacity.load(Ordering::SeqCst);
        (capacity != UNBOUNDED).then_some(capacity)
    }

    /// Each shard's share of the capacity, `None` when unbounded.
    pub(crate) fn share(&self) -> Option<usize> {
        let share = self.share.load(Ordering::SeqCst) as usize;
        self.capacity().map(|_| share)
    }

    /// Changes the capacity to `capacity`, then evicts until the totals
    /// fit: first from the shards over their new share, each down to it,
    /// then from any. Resizes are serialized; concurrent writes evict to
    /// whichever capacity they read.
    pub(crate) fn resize(
        &self,
        shards: &[ShardedLock<Locked<K, V>>],
        capacity: usize,
        now: u64,
        garbage: &mut Vec<Removal<K, V>>,
    ) {
        let _serial = self.resizing.lock();
        apply_capacity(self, shards, capacity, now, garbage);
        // Each shard's slab growth and policy structures (S3-FIFO's queues
        // and ghost) follow its new share, as at build (`Raw::new`).
        let share = self.share.load(Ordering::SeqCst) as usize;
        for shard in shards {
            shard.write().entries.size_for(share);
        }
    }

    /// Whether a weigher is set (the `W` of the methods below).
    #[inline]
    pub(crate) fn weighted(&self) -> bool {
        self.weigher.is_some()
    }

    /// The weight an entry counts for (the weigher's, 0 raised to 1; 1
    /// without one), or `None` if it alone is heavier than the capacity.
    /// User code: call with no lock held.
    #[inline(always)]
    pub(crate) fn weigh<const W: bool>(&self, key: &K, value: &V) -> Option<u32> {
        let Some(weigher) = self.weigher.as_ref().filter(|_| W) else {
            return Some(1);
        };
        let weight = weigher(key, value).max(1);
        match self.capacity() {
            Some(max) if weight as usize > max => None,
            _ => Some(weight),
        }
    }

    /// A shard's size, read under its lock.
    #[inline]
    pub(crate) fn size(&self, shard: &Locked<K, V>) -> Size {
        match self.weighted() {
            true => self.size_as::<true>(shard),
            false => self.size_as::<false>(shard),
        }
    }

    /// [`size`](Self::size), weighted or not (`W`: a weigher is set).
    #[inline(always)]
    pub(crate) fn size_as<const W: bool>(&self, shard: &Locked<K, V>) -> Size {
        Size {
            len: shard.entries.len(),
            weight: if W { shard.entries.weight() } else { 0 },
        }
    }

    /// Applies a shard's change of size to the totals (under that shard's
    /// write lock).
    #[inline]
    pub(crate) fn account(&self, before: Size, after: Size) {
        match self.weighted() {
            true => self.account_as::<true>(before, after),
            false => self.account_as::<false>(before, after),
        }
    }

    /// [`account`](Self::account), weighted or not (`W`: a weigher is set).
    #[inline(always)]
    pub(crate) fn account_as<const W: bool>(&self, before: Size, after: Size) {
        let totals = &*self.totals;
        if after.len > before.len {
            totals
                .len
                .fetch_add(after.len - before.len, Ordering::SeqCst);
        } else if before.len > after.len {
            totals
                .len
                .fetch_sub(before.len - after.len, Ordering::SeqCst);
        }
        if !W {
            return;
        }
        if after.weight > before.weight {
            let grew = after.weight - before.weight;
            totals.weight.fetch_add(grew, Ordering::SeqCst);
        } else if before.weight > after.weight {
            let fell = before.weight - after.weight;
            totals.weight.fetch_sub(fell, Ordering::SeqCst);
        }
    }

    /// Whether the totals are over `max`.
    #[inline]
    fn over(&self, max: usize) -> bool {
        match self.weigher {
            Some(_) => self.totals.weight.load(Ordering::SeqCst) > max as u64,
            None => self.totals.len.load(Ordering::SeqCst) > max,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.totals.len.load(Ordering::SeqCst)
    }

    /// The total weight with a weigher, else `None`.
    pub(crate) fn weight(&self) -> Option<usize> {
        let weight = self.totals.weight.load(Ordering::SeqCst);
        self.weigher.as_ref().map(|_| weight as usize)
    }

    /// What a shard holds against its share: its weight with a weigher,
    /// else its entries.
    #[inline]
    fn held(&self, size: Size) -> u64 {
        match self.weigher {
            Some(_) => size.weight,
            None => size.len as u64,
        }
    }

    /// Evicts from the locked shard while the cache is over `capacity`,
    /// never the entry at slot `kept` (the one just stored, named by its
    /// slot, which follows it as evictions move it: entries whose hashes
    /// equal its own are victims like any other); with `down_to_share`,
    /// only while the shard holds more than its share of the capacity.
    /// Stops when the shard has no other entry.
    ///
    /// The share keeps the shards level. Evicting from the writer's own
    /// shard whatever it holds would let each shard's size wander: a
    /// victim heavier than the room needed, a removal or an expiry in one
    /// shard leave slack that the next insert in any shard takes, so sizes
    /// walk apart with nothing pulling them back (some shards shrink to a
    /// few entries while others hold more than twice their share), and a
    /// small shard evicts its keys young, which costs hit ratio against
    /// one exact LRU over the whole capacity (`design/typed.md` has the
    /// figures).
    pub(crate) fn evict_locked(
        &self,
        core: &mut Locked<K, V>,
        max: usize,
        kept: &mut Option<u32>,
        now: u64,
        garbage: &mut Vec<Removal<K, V>>,
        down_to_share: bool,
    ) {
        while self.over(max) {
            let before = self.size(core);
            if down_to_share && self.held(before) <= self.share.load(Ordering::SeqCst) {
                break;
            }
            if !evict_one(core, kept, now, garbage) {
                break;
            }
            account_eviction(self, before, self.size(core));
        }
    }

    /// Evicts every shard down to `max` (no entry to keep): shard 0 first,
    /// then the others as [`evict_elsewhere`](Self::evict_elsewhere) does.
    pub(super) fn evict_to(
        &self,
        shards: &[ShardedLock<Locked<K, V>>],
        max: usize,
        now: u64,
        garbage: &mut Vec<Removal<K, V>>,
    ) {
        self.evict_locked(&mut shards[0].write(), max, &mut None, now, garbage, true);
        self.evict_elsewhere(shards, max, 0, now, garbage);
    }

    /// Evicts from other shards, one lock at a time, while the cache is
    /// still over `capacity` (the stored entry's own shard, `start`, is
    /// down to its share): first from the shards over their share (a read
    /// lock tells which), each down to it, then, if the total is still
    /// over (every shard at or under its share: the shares add up to a
    /// little more than the capacity), from any shard, `start` last.
    ///
    /// The entry just stored is spared only while its shard's lock is
    /// held (its slot names it only then): `start` comes last, when the
    /// other shards have nothing left to give, which only concurrent
    /// writes to `start` can bring about.
    pub(crate) fn evict_elsewhere(
        &self,
        shards: &[ShardedLock<Locked<K, V>>],
        max: usize,
        start: usize,
        now: u64,
        garbage: &mut Vec<Removal<K, V>>,
    ) {
        let n = shards.len();
        for step in 1..n {
            if !self.over(max) {
                return;
            }
            let shard = &shards[(start + step) % n];
            if self.held(self.size(&shard.read())) <= self.share.load(Ordering::SeqCst) {
                continue;
            }
            self.evict_locked(&mut shard.write(), max, &mut None, now, garbage, true);
        }
        for step in 1..=n {
            if !self.over(max) {
                return;
            }
            let mut core = shards[(start + step) % n].write();
            self.evict_locked(&mut core, max, &mut None, now, garbage, false);
        }
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check(&self, len: usize, weight: u64) {
        assert_eq!(len, self.len(), "len out of step with the shards");
        if self.weigher.is_some() {
            let total = self.totals.weight.load(Ordering::SeqCst);
            assert_eq!(weight, total, "weight out of step with the shards");
        }
        if let Some(max) = self.capacity() {
            let held = if self.weigher.is_some() {
                weight
            } else {
                len as u64
            };
            assert!(held <= max as u64, "{held} over capacity {max}");
        }
    }
}

/// The layer's tally of a typed face: every shard's change of size reaches
/// the totals under that shard's write lock.
impl<K, V> Tally<K, V> for Bound<K, V> {
    type Before = Size;

    #[inline]
    fn before(&self, shard: &Locked<K, V>) -> Size {
        self.size(shard)
    }

    #[inline]
    fn after(&self, before: Size, shard: &Locked<K, V>) {
        self.account(before, self.size(shard));
    }
}

/// `resize`'s step: sets the new capacity, then evicts every shard down to
/// it (no entry to keep), so a write that lands in between evicts to the
/// new capacity too.
pub(super) fn set_capacity_then_evict<K, V>(
    bound: &Bound<K, V>,
    shards: &[ShardedLock<Locked<K, V>>],
    capacity: usize,
    now: u64,
    garbage: &mut Vec<Removal<K, V>>,
) {
    let max = bound.set_capacity(capacity, shards.len());
    bound.evict_to(shards, max, now, garbage);
}

/// An eviction's step: the shard's change of size reaches the totals.
#[inline]
pub(super) fn account_size<K, V>(bound: &Bound<K, V>, before: Size, after: Size) {
    bound.account(before, after);
}

/// The locked half of storing a value heavier than the capacity (not
/// stored): removes the key's entry (`K: Eq` runs first, before any
/// change) into `garbage` (`Replaced`, or `Expired`), bumps the generation
/// for a user write, sweeps up to `budget` expired entries. Returns whether
/// the removed entry was live.
pub(crate) fn reject<K: Eq, V>(
    shard: &mut Locked<K, V>,
    hash: u64,
    key: &K,
    now: u64,
    budget: usize,
    user_write: bool,
    garbage: &mut Vec<Removal<K, V>>,
) -> bool {
    let old = shard.entries.remove(hash, key, now);
    if user_write {
        shard.bump_generation();
    }
    let live = matches!(old, Some((_, _, false)));
    if let Some((key, value, expired)) = old {
        let cause = if expired {
            RemovalCause::Expired
        } else {
            RemovalCause::Replaced
        };
        garbage.push((key, value, cause));
    }
    let mut swept = Vec::new();
    shard.entries.sweep(now, budget, &mut swept);
    tagged(garbage, swept, RemovalCause::Expired);
    live
}

/// Evicts the policy's next victim other than the entry at slot `kept`
/// (which it follows) into `garbage` (as `Expired` if it had, else
/// `Evicted`); `false` if there was none.
fn evict_one<K, V>(
    shard: &mut Locked<K, V>,
    kept: &mut Option<u32>,
    now: u64,
    garbage: &mut Vec<Removal<K, V>>,
) -> bool {
    let Some((key, value, expired)) = shard.entries.evict_one(now, kept) else {
        return false;
    };
    let cause = if expired {
        RemovalCause::Expired
    } else {
        RemovalCause::Evicted
    };
    garbage.push((key, value, cause));
    true
}
