//! The sequential core of one cache shard: a hash table of entries, the
//! CLOCK queue used for eviction and expiry sweeps, and the expiry policy.
//!
//! Everything here takes `&mut self` for writes and is called under the
//! shard's write lock by the concurrent wrapper (`raw.rs`); reads take
//! `&self` under the shard's read lock. The only interior mutability is a
//! slot's two access hints (`accessed`, `referenced`), written by readers
//! with relaxed atomics and read by eviction.
//!
//! # User code
//!
//! Every entry stores its key's full hash, computed by the caller before it
//! took the lock, and every CLOCK queue entry names its table entry by that
//! hash and a per-insertion id. So:
//!
//! - the table grows, shrinks and rehashes (in place, when tombstones pile
//!   up) from the stored hashes: the user's `Hash` never runs here;
//! - eviction, expiry sweeps and queue compaction find entries by stored
//!   hash and id: they run no user code at all;
//! - the user's `Eq` runs only in a lookup by key (`get`, `insert`,
//!   `remove`, `remove_expired`), and only on a full 64-bit hash match,
//!   *before* the operation's first change, so a panicking `Eq` leaves the
//!   core exactly as it was;
//! - nothing is dropped here: removed, replaced and evicted keys and values
//!   are handed back to the caller, who drops them after unlocking.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::time::Duration;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as TableEntry;

use crate::removal::{Removal, RemovalCause};
use crate::sync::{AtomicBool, AtomicU64, Ordering};

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
    pub(crate) value: V,
    /// Unique per insertion: tells a live CLOCK queue entry from a stale one.
    id: u64,
    created: u64,
    accessed: AtomicU64,
    referenced: AtomicBool,
}

impl<V> Slot<V> {
    fn new(value: V, id: u64, now: u64) -> Self {
        Self {
            value,
            id,
            created: now,
            accessed: AtomicU64::new(now),
            referenced: AtomicBool::new(false),
        }
    }
}

/// A key, its full hash (under the cache's hasher) and its slot.
pub(crate) struct Entry<K, V> {
    hash: u64,
    key: K,
    slot: Slot<V>,
}

/// A key and value removed from a shard and why, for the caller to hand
/// to the listener and drop unlocked.
pub(crate) type Removed<K, V> = Removal<K, V>;

type Table<K, V> = HashTable<Entry<K, V>>;

/// What [`Core::insert`] displaced.
pub(crate) struct Displaced<K, V> {
    /// The slot the key had (live or expired).
    pub(crate) old: Option<Slot<V>>,
    /// The key passed in, when the key was present (the stored key is kept,
    /// as `HashMap::insert` does).
    pub(crate) unused_key: Option<K>,
}

/// One shard's table and queue.
pub(crate) struct Core<K, V> {
    table: Table<K, V>,
    /// Insertion order with second chances (CLOCK), as `(hash, id)` of each
    /// entry; may hold stale entries (removed or replaced keys), recognised
    /// by finding no entry of that hash with that id.
    order: VecDeque<(u64, u64)>,
    track_order: bool,
    next_id: u64,
    /// Bumped by every user write (insert, invalidate, invalidate_all). An
    /// init that started before a bump does not cache its value.
    generation: u64,
    /// Where the expiry sweep's cursor stands in `order` (see `sweep`).
    sweep_at: usize,
}

/// The stored hash of an entry: the only hasher the table ever uses.
#[inline]
fn stored_hash<K, V>(entry: &Entry<K, V>) -> u64 {
    entry.hash
}

impl<K, V> Core<K, V> {
    pub(crate) fn new(track_order: bool) -> Self {
        Self {
            table: HashTable::new(),
            order: VecDeque::new(),
            track_order,
            next_id: 0,
            generation: 0,
            sweep_at: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Marks a user write: inits in progress in this shard will not cache.
    pub(crate) fn bump_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// The slot of `key` (whose hash is `hash`); calls `K: Eq` only on a
    /// full hash match.
    #[inline]
    pub(crate) fn get<Q>(&self, hash: u64, key: &Q) -> Option<&Slot<V>>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.table
            .find(hash, |e| e.hash == hash && e.key.borrow() == key)
            .map(|e| &e.slot)
    }

    /// The entry of `hash` inserted as `id`: no user code.
    fn find_id(&self, hash: u64, id: u64) -> Option<&Entry<K, V>> {
        self.table.find(hash, |e| e.slot.id == id)
    }

    /// Stores `value` under `key` (whose hash is `hash`); bumps the
    /// generation first if `user_write`. The user's `Eq` runs before any
    /// change; growth rehashes from stored hashes.
    pub(crate) fn insert(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        now: u64,
        user_write: bool,
    ) -> Displaced<K, V>
    where
        K: Eq,
    {
        let id = self.next_id;
        let slot = Slot::new(value, id, now);
        // The only user code: `K: Eq`, inside `entry`, before any change
        // (`entry` may grow the table first, from stored hashes: still
        // every entry in place).
        let found = self
            .table
            .entry(hash, |e| e.hash == hash && e.key == key, stored_hash);
        let displaced = match found {
            TableEntry::Occupied(mut occupied) => Displaced {
                old: Some(std::mem::replace(&mut occupied.get_mut().slot, slot)),
                unused_key: Some(key),
            },
            TableEntry::Vacant(vacant) => {
                vacant.insert(Entry { hash, key, slot });
                Displaced {
                    old: None,
                    unused_key: None,
                }
            }
        };
        self.next_id += 1;
        if user_write {
            self.bump_generation();
        }
        if self.track_order {
            self.order.push_back((hash, id));
        }
        self.compact_order();
        displaced
    }

    /// Removes `key` (whose hash is `hash`); returns its key and slot. `Eq`
    /// runs before any change.
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q) -> Option<(K, Slot<V>)>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let found = self
            .table
            .find_entry(hash, |e| e.hash == hash && e.key.borrow() == key);
        let (entry, _) = found.ok()?.remove();
        self.compact_order();
        Some((entry.key, entry.slot))
    }

    /// Removes `key` only if it is (still) expired. `Eq` runs before any
    /// change.
    pub(crate) fn remove_expired<Q>(
        &mut self,
        hash: u64,
        key: &Q,
        policy: &Policy,
        now: u64,
    ) -> Option<Removed<K, V>>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let found = self
            .table
            .find_entry(hash, |e| e.hash == hash && e.key.borrow() == key);
        let occupied = found.ok()?;
        if !policy.is_expired(&occupied.get().slot, now) {
            return None;
        }
        let (entry, _) = occupied.remove();
        self.compact_order();
        Some((entry.key, entry.slot.value, RemovalCause::Expired))
    }

    /// Empties the shard; moves every entry to `out`, as `Cleared` (or
    /// `Expired` if its time had passed). Runs no user code.
    pub(crate) fn take_all(&mut self, policy: &Policy, now: u64, out: &mut Vec<Removed<K, V>>) {
        self.order.clear();
        self.sweep_at = 0;
        out.extend(std::mem::take(&mut self.table).into_iter().map(|e| {
            let cause = if policy.is_expired(&e.slot, now) {
                RemovalCause::Expired
            } else {
                RemovalCause::Cleared
            };
            (e.key, e.slot.value, cause)
        }));
    }

    /// Removes the entry of `hash` inserted as `id`, if it is still there.
    fn remove_id(&mut self, hash: u64, id: u64, cause: RemovalCause) -> Option<Removed<K, V>> {
        let (entry, _) = self
            .table
            .find_entry(hash, |e| e.slot.id == id)
            .ok()?
            .remove();
        Some((entry.key, entry.slot.value, cause))
    }

    /// Evicts one entry: an expired one if the queue front has one, else the
    /// first whose CLOCK bit is clear (clearing set bits on the way, which
    /// gives each recently hit entry a second chance). Returns it. Runs no
    /// user code, and looks at each queue entry before it takes it.
    pub(crate) fn evict_one(&mut self, policy: &Policy, now: u64) -> Option<Removed<K, V>> {
        // Every live entry is in the queue; after one full pass every bit is
        // clear, so two passes always find a victim if there is any.
        let mut budget = 2 * self.order.len() + 1;
        while budget > 0 {
            budget -= 1;
            let &(hash, id) = self.order.front()?;
            let Some(entry) = self.find_id(hash, id) else {
                self.order.pop_front();
                continue;
            };
            let slot = &entry.slot;
            // Relaxed: we hold the write lock, which orders us after every
            // reader that set the bit (their read locks were released).
            let referenced = slot.referenced.load(Ordering::Relaxed);
            let expired = policy.is_expired(slot, now);
            if referenced && !expired {
                slot.referenced.store(false, Ordering::Relaxed);
                self.order.rotate_left(1);
                continue;
            }
            let cause = if expired {
                RemovalCause::Expired
            } else {
                RemovalCause::Evicted
            };
            let removed = self.remove_id(hash, id, cause);
            self.order.pop_front();
            self.compact_order();
            return removed;
        }
        None
    }

    /// Releases expired entries, looking at no more than `budget` queue
    /// entries (the amortized sweep of every write); moves them to `out`.
    /// Runs no user code.
    ///
    /// First the front of the queue, up to its first live entry: under a
    /// time to live alone the queue is in creation order, so the expired
    /// entries wait there. Then a cursor that walks on through the queue
    /// from one sweep to the next and wraps around, so an expired entry
    /// behind a live one (time to idle; an entry CLOCK moved to the back)
    /// is reached after at most about `order.len() / budget` sweeps.
    pub(crate) fn sweep(
        &mut self,
        policy: &Policy,
        now: u64,
        budget: usize,
        out: &mut Vec<Removed<K, V>>,
    ) {
        let mut looked = 0;
        while looked < budget {
            let Some(&(hash, id)) = self.order.front() else {
                break;
            };
            if let Some(entry) = self.find_id(hash, id) {
                if !policy.is_expired(&entry.slot, now) {
                    break;
                }
                out.extend(self.remove_id(hash, id, RemovalCause::Expired));
            }
            self.order.pop_front();
            self.sweep_at = self.sweep_at.saturating_sub(1);
            looked += 1;
        }
        while looked < budget && !self.order.is_empty() {
            if self.sweep_at >= self.order.len() {
                self.sweep_at = 0;
            }
            let (hash, id) = self.order[self.sweep_at];
            if self
                .find_id(hash, id)
                .is_some_and(|entry| policy.is_expired(&entry.slot, now))
            {
                // Its queue entry goes stale, dropped by `compact_order`.
                out.extend(self.remove_id(hash, id, RemovalCause::Expired));
            }
            self.sweep_at += 1;
            looked += 1;
        }
        self.compact_order();
    }

    /// Removes every expired entry, moving them to `out`. Runs no user code.
    pub(crate) fn purge_all(&mut self, policy: &Policy, now: u64, out: &mut Vec<Removed<K, V>>) {
        out.extend(
            self.table
                .extract_if(|e| policy.is_expired(&e.slot, now))
                .map(|e| (e.key, e.slot.value, RemovalCause::Expired)),
        );
        self.compact_order();
    }

    /// Drops stale queue entries once they outnumber the live ones. Runs no
    /// user code.
    fn compact_order(&mut self) {
        if self.track_order && self.order.len() > 2 * self.table.len() + 32 {
            let table = &self.table;
            self.order
                .retain(|&(hash, id)| table.find(hash, |e| e.slot.id == id).is_some());
        }
    }

    /// Calls `f` with each live entry's key and value, in table order. Runs
    /// no user code itself.
    pub(crate) fn for_each_live(&self, policy: &Policy, now: u64, mut f: impl FnMut(&K, &V)) {
        for entry in &self.table {
            if !policy.is_expired(&entry.slot, now) {
                f(&entry.key, &entry.slot.value);
            }
        }
    }

    /// Each entry's stored hash (for `check_invariants`).
    pub(crate) fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.table.iter().map(|e| e.hash)
    }

    /// Asserts the shard's invariants (for tests and fuzzing). Runs no user
    /// code.
    pub(crate) fn check_invariants(&self) {
        if !self.track_order {
            assert!(self.order.is_empty(), "queue kept without a policy");
            return;
        }
        let queued: std::collections::HashSet<(u64, u64)> = self.order.iter().copied().collect();
        for entry in &self.table {
            assert!(
                queued.contains(&(entry.hash, entry.slot.id)),
                "a live entry is missing from the CLOCK queue"
            );
            assert!(entry.slot.id < self.next_id, "slot id from the future");
        }
        assert!(
            self.order.len() <= 2 * self.table.len() + 32,
            "stale queue entries not compacted"
        );
    }
}
