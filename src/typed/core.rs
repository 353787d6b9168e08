//! The sequential core of one cache shard: a hash map of slots, the CLOCK
//! queue used for eviction and expiry sweeps, and the expiry policy.
//!
//! Everything here takes `&mut self` for writes and is called under the
//! shard's write lock by the concurrent wrapper (`raw.rs`); reads take
//! `&self` under the shard's read lock. The only interior mutability is a
//! slot's two access hints (`accessed`, `referenced`), written by readers
//! with relaxed atomics and read by eviction.

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering};

/// Idle time is recorded with a resolution of `time_to_idle / TTI_STEPS`: a
/// hit writes the slot's access time only when it moved by at least that
/// much, so hits on a hot entry write it rarely.
const TTI_STEPS: u64 = 64;

/// The expiry and size policy of a cache (all times in nanoseconds of its
/// clock).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Policy {
    pub(crate) time_to_live: Option<u64>,
    pub(crate) time_to_idle: Option<u64>,
    /// The smallest change of access time worth recording.
    pub(crate) idle_resolution: u64,
    pub(crate) max_entries: Option<usize>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Policy {
    pub(crate) fn new(
        time_to_live: Option<Duration>,
        time_to_idle: Option<Duration>,
        max_entries: Option<usize>,
    ) -> Self {
        let time_to_idle = time_to_idle.map(nanos);
        Self {
            time_to_live: time_to_live.map(nanos),
            time_to_idle,
            idle_resolution: time_to_idle.map_or(0, |tti| (tti / TTI_STEPS).max(1)),
            max_entries,
        }
    }

    /// Whether entries can expire (so the clock must be read).
    #[inline]
    pub(crate) fn expires(&self) -> bool {
        self.time_to_live.is_some() || self.time_to_idle.is_some()
    }

    /// Whether the shard keeps its CLOCK queue (needed to evict or sweep).
    pub(crate) fn tracks_order(&self) -> bool {
        self.expires() || self.max_entries.is_some()
    }

    #[inline]
    pub(crate) fn is_expired<V>(&self, slot: &Slot<V>, now: u64) -> bool {
        if let Some(ttl) = self.time_to_live {
            if now.saturating_sub(slot.created) >= ttl {
                return true;
            }
        }
        if let Some(tti) = self.time_to_idle {
            // Relaxed: `accessed` is a hint that publishes no other data; a
            // stale read can only make the entry look idle up to one
            // resolution step earlier or later than exactly.
            if now.saturating_sub(slot.accessed.load(Ordering::Relaxed)) >= tti {
                return true;
            }
        }
        false
    }

    /// Records a hit: refreshes the idle timer and sets the CLOCK bit, each
    /// only if it would change, so a hot entry's line is written rarely.
    #[inline]
    pub(crate) fn touch<V>(&self, slot: &Slot<V>, now: u64) {
        if self.time_to_idle.is_some() {
            // Relaxed (both): a standalone hint, see `is_expired`. Two racing
            // hits may store their `now`s out of order; the recorded time is
            // then behind by the gap between the two reads of the clock.
            let last = slot.accessed.load(Ordering::Relaxed);
            if now.saturating_sub(last) >= self.idle_resolution {
                slot.accessed.store(now, Ordering::Relaxed);
            }
        }
        // Relaxed (both): the CLOCK bit is a hint read by eviction under the
        // shard's write lock, which orders it with this read lock.
        if self.max_entries.is_some() && !slot.referenced.load(Ordering::Relaxed) {
            slot.referenced.store(true, Ordering::Relaxed);
        }
    }
}

/// One cached value and its bookkeeping.
pub(crate) struct Slot<V> {
    pub(crate) value: Arc<V>,
    /// Unique per insertion: tells a live CLOCK queue entry from a stale one.
    id: u64,
    created: u64,
    accessed: AtomicU64,
    referenced: AtomicBool,
}

/// One shard's map and queue.
pub(crate) struct Core<K, V, S> {
    map: HashMap<K, Slot<V>, S>,
    /// Insertion order with second chances (CLOCK); may hold stale entries
    /// (removed or replaced keys), recognised by a mismatching id.
    order: VecDeque<(K, u64)>,
    track_order: bool,
    next_id: u64,
    /// Bumped by every user write (insert, invalidate, invalidate_all). An
    /// init that started before a bump does not cache its value.
    generation: u64,
}

impl<K, V, S> Core<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    pub(crate) fn new(hasher: S, track_order: bool) -> Self {
        Self {
            map: HashMap::with_hasher(hasher),
            order: VecDeque::new(),
            track_order,
            next_id: 0,
            generation: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Marks a user write: inits in progress in this shard will not cache.
    pub(crate) fn bump_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    #[inline]
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&Slot<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.get(key)
    }

    /// Stores `value` under `key`; returns the value it replaced (for the
    /// caller to drop after unlocking).
    pub(crate) fn insert(&mut self, key: K, value: Arc<V>, now: u64) -> Option<Arc<V>> {
        let id = self.next_id;
        self.next_id += 1;
        if self.track_order {
            self.order.push_back((key.clone(), id));
        }
        let slot = Slot {
            value,
            id,
            created: now,
            accessed: AtomicU64::new(now),
            referenced: AtomicBool::new(false),
        };
        let old = self.map.insert(key, slot).map(|old| old.value);
        self.compact_order();
        old
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let value = self.map.remove(key).map(|slot| slot.value);
        self.compact_order();
        value
    }

    /// Removes `key` only if it is (still) expired.
    pub(crate) fn remove_expired<Q>(&mut self, key: &Q, policy: &Policy, now: u64) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match self.map.get(key) {
            Some(slot) if policy.is_expired(slot, now) => self.remove(key),
            _ => None,
        }
    }

    /// Empties the shard; returns the old map for the caller to drop after
    /// unlocking.
    pub(crate) fn take_all(&mut self) -> HashMap<K, Slot<V>, S>
    where
        S: Clone,
    {
        self.order.clear();
        let empty = HashMap::with_hasher(self.map.hasher().clone());
        std::mem::replace(&mut self.map, empty)
    }

    /// Evicts one entry: an expired one if the queue front has one, else the
    /// first whose CLOCK bit is clear (clearing set bits on the way, which
    /// gives each recently hit entry a second chance). Returns its value.
    pub(crate) fn evict_one(&mut self, policy: &Policy, now: u64) -> Option<Arc<V>> {
        // Every live entry is in the queue; after one full pass every bit is
        // clear, so two passes always find a victim if there is any.
        let mut budget = 2 * self.order.len() + 1;
        while budget > 0 {
            budget -= 1;
            let (key, id) = self.order.pop_front()?;
            let Some(slot) = self.map.get(&key) else {
                continue;
            };
            if slot.id != id {
                continue;
            }
            // Relaxed: we hold the write lock, which orders us after every
            // reader that set the bit (their read locks were released).
            let referenced = slot.referenced.load(Ordering::Relaxed);
            if referenced && !policy.is_expired(slot, now) {
                slot.referenced.store(false, Ordering::Relaxed);
                self.order.push_back((key, id));
                continue;
            }
            let value = self.map.remove(&key).map(|slot| slot.value);
            self.compact_order();
            return value;
        }
        None
    }

    /// Removes expired entries from the front of the queue, looking at most
    /// at `budget` entries (an amortised sweep on each insert); returns the
    /// removed values.
    pub(crate) fn purge_front(
        &mut self,
        policy: &Policy,
        now: u64,
        budget: usize,
        out: &mut Vec<Arc<V>>,
    ) {
        self.purge_front_inner(policy, now, budget, out);
        self.compact_order();
    }

    fn purge_front_inner(
        &mut self,
        policy: &Policy,
        now: u64,
        budget: usize,
        out: &mut Vec<Arc<V>>,
    ) {
        for _ in 0..budget {
            let Some((key, id)) = self.order.front() else {
                return;
            };
            match self.map.get(key) {
                Some(slot) if slot.id == *id => {
                    if !policy.is_expired(slot, now) {
                        return;
                    }
                    let (key, _) = self.order.pop_front().expect("front exists");
                    out.extend(self.map.remove(&key).map(|slot| slot.value));
                }
                _ => {
                    self.order.pop_front();
                }
            }
        }
    }

    /// Removes every expired entry; returns the removed values.
    pub(crate) fn purge_all(&mut self, policy: &Policy, now: u64, out: &mut Vec<Arc<V>>) {
        let expired: Vec<K> = self
            .map
            .iter()
            .filter(|(_, slot)| policy.is_expired(slot, now))
            .map(|(key, _)| key.clone())
            .collect();
        for key in expired {
            out.extend(self.map.remove(&key).map(|slot| slot.value));
        }
        self.compact_order();
    }

    /// Drops stale queue entries once they outnumber the live ones.
    fn compact_order(&mut self) {
        if self.track_order && self.order.len() > 2 * self.map.len() + 32 {
            let map = &self.map;
            self.order
                .retain(|(key, id)| map.get(key).is_some_and(|slot| slot.id == *id));
        }
    }

    /// Asserts the shard's invariants (for tests and fuzzing).
    pub(crate) fn check_invariants(&self) {
        if !self.track_order {
            assert!(self.order.is_empty(), "queue kept without a policy");
            return;
        }
        for (key, slot) in &self.map {
            assert!(
                self.order.iter().any(|(k, id)| k == key && *id == slot.id),
                "a live entry is missing from the CLOCK queue"
            );
            assert!(slot.id < self.next_id, "slot id from the future");
        }
        assert!(
            self.order.len() <= 2 * self.map.len() + 32,
            "stale queue entries not compacted"
        );
    }
}
