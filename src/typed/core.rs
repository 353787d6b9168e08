//! The sequential core of one cache shard: the entries in a dense `Vec` of
//! nodes found through a [`NodeIndex`] (the layout `LruCache`'s cores
//! share), the CLOCK hand that picks eviction victims, the cursor of the
//! expiry sweep, and the expiry policy.
//!
//! Everything here takes `&mut self` for writes and is called under the
//! shard's write lock by the concurrent wrapper (`raw.rs`); reads take
//! `&self` under the shard's read lock. The only interior mutability is an
//! entry's two access hints (`accessed`, `referenced`), written by readers
//! with relaxed atomics and read by eviction.
//!
//! # Memory
//!
//! A node is the key's hash, the key, the value and the reference bit: 32
//! bytes for `u64 -> u64`. The creation and access times (16 bytes) live in
//! a second `Vec` kept beside the nodes only when entries can expire, so a
//! cache without expiry pays nothing for them. The table holds a `u32` node
//! index per bucket.
//!
//! # User code
//!
//! Every node stores its key's full hash, computed by the caller before it
//! took the lock. So:
//!
//! - the table grows, shrinks and rehashes from the stored hashes: the
//!   user's `Hash` never runs here;
//! - eviction and expiry sweeps walk the nodes by position and move them by
//!   stored hash: they run no user code at all;
//! - the user's `Eq` runs only in a lookup by key (`get`, `insert`,
//!   `remove`, `remove_expired`), and only on a full 64-bit hash match,
//!   *before* the operation's first change, so a panicking `Eq` leaves the
//!   core exactly as it was;
//! - nothing is dropped here: removed, replaced and evicted keys and values
//!   are handed back to the caller, who drops them after unlocking.

use std::borrow::Borrow;
use std::time::Duration;

use crate::node_index::{NodeIndex, keyed_node};
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
    pub(crate) capacity: Option<usize>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Policy {
    pub(crate) fn new(
        time_to_live: Option<Duration>,
        time_to_idle: Option<Duration>,
        capacity: Option<usize>,
    ) -> Self {
        let time_to_idle = time_to_idle.map(nanos);
        Self {
            time_to_live: time_to_live.map(nanos),
            time_to_idle,
            idle_resolution: time_to_idle.map_or(0, |tti| (tti / TTI_STEPS).max(1)),
            capacity,
        }
    }

    /// Whether entries can expire (so the clock must be read).
    #[inline]
    pub(crate) fn expires(&self) -> bool {
        self.time_to_live.is_some() || self.time_to_idle.is_some()
    }

    /// Whether an entry with these times has expired at `now`.
    #[inline]
    fn expired(&self, times: &Times, now: u64) -> bool {
        if let Some(ttl) = self.time_to_live {
            if now.saturating_sub(times.created) >= ttl {
                return true;
            }
        }
        if let Some(tti) = self.time_to_idle {
            // Relaxed: `accessed` is a hint that publishes no other data; a
            // stale read can only make the entry look idle up to one
            // resolution step earlier or later than exactly.
            if now.saturating_sub(times.accessed.load(Ordering::Relaxed)) >= tti {
                return true;
            }
        }
        false
    }

    /// Whether the entry has expired at `now` (never, in a cache whose
    /// entries do not expire: it keeps no times).
    #[inline]
    pub(crate) fn is_expired<V>(&self, slot: &Slot<'_, V>, now: u64) -> bool {
        slot.times.is_some_and(|times| self.expired(times, now))
    }

    /// Records a hit: refreshes the idle timer and sets the CLOCK bit, each
    /// only if it would change, so a hot entry's line is written rarely.
    #[inline]
    pub(crate) fn touch<V>(&self, slot: &Slot<'_, V>, now: u64) {
        if let (Some(_), Some(times)) = (self.time_to_idle, slot.times) {
            // Relaxed (both): a standalone hint, see `expired`. Two racing
            // hits may store their `now`s out of order; the recorded time is
            // then behind by the gap between the two reads of the clock.
            let last = times.accessed.load(Ordering::Relaxed);
            if now.saturating_sub(last) >= self.idle_resolution {
                times.accessed.store(now, Ordering::Relaxed);
            }
        }
        // Relaxed (both): the CLOCK bit is a hint read by eviction under the
        // shard's write lock, which orders it with this read lock.
        if self.capacity.is_some() && !slot.referenced.load(Ordering::Relaxed) {
            slot.referenced.store(true, Ordering::Relaxed);
        }
    }
}

/// One entry: its key's full hash, the key, the value and the CLOCK bit.
///
/// In this order (`repr(C)`): a lookup reads the hash and the key, then the
/// value right after them, so a hit touches one cache line more often than
/// with the value first (the compiler's choice for a large `V`).
#[repr(C)]
struct Node<K, V> {
    hash: u64,
    key: K,
    value: V,
    /// Set by a hit (under the shard's read lock) when clear, cleared by the
    /// hand (under its write lock).
    referenced: AtomicBool,
}

keyed_node!(Node);

/// When an entry was stored and last read: kept, beside its node, only by
/// a shard whose entries can expire.
pub(crate) struct Times {
    created: u64,
    accessed: AtomicU64,
}

impl Times {
    fn new(now: u64) -> Self {
        Self {
            created: now,
            accessed: AtomicU64::new(now),
        }
    }
}

/// A live view of one entry, for a lookup under the shard's lock.
pub(crate) struct Slot<'a, V> {
    pub(crate) value: &'a V,
    referenced: &'a AtomicBool,
    times: Option<&'a Times>,
}

/// A key and value removed from a shard and why, for the caller to hand
/// to the listener and drop unlocked.
pub(crate) type Removed<K, V> = Removal<K, V>;

/// What [`Core::insert`] displaced.
pub(crate) struct Displaced<K, V> {
    /// The value the key had, and whether it had expired.
    pub(crate) old: Option<(V, bool)>,
    /// The key passed in, when the key was present (the stored key is kept,
    /// as `HashMap::insert` does).
    pub(crate) unused_key: Option<K>,
}

/// One shard's entries.
pub(crate) struct Core<K, V> {
    table: NodeIndex,
    nodes: Vec<Node<K, V>>,
    /// `times[i]` belongs to `nodes[i]`; empty unless entries can expire.
    times: Vec<Times>,
    keeps_times: bool,
    /// The node the CLOCK hand looks at next (may equal `nodes.len()`:
    /// wraps).
    hand: usize,
    /// The node the expiry sweep looks at next (may equal `nodes.len()`).
    sweep_at: usize,
    /// Bumped by every user write (insert, remove, clear). An
    /// init that started before a bump does not cache its value.
    generation: u64,
}

impl<K, V> Core<K, V> {
    /// An empty shard; it keeps creation and access times if `keeps_times`
    /// (entries can expire).
    pub(crate) fn new(keeps_times: bool) -> Self {
        Self {
            table: NodeIndex::new(),
            nodes: Vec::new(),
            times: Vec::new(),
            keeps_times,
            hand: 0,
            sweep_at: 0,
            generation: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Marks a user write: inits in progress in this shard will not cache.
    pub(crate) fn bump_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// The view of node `i`.
    #[inline]
    fn slot(&self, i: usize) -> Slot<'_, V> {
        let node = &self.nodes[i];
        Slot {
            value: &node.value,
            referenced: &node.referenced,
            times: self.times.get(i),
        }
    }

    /// Whether node `i` has expired at `now`.
    #[inline]
    fn expired_at(&self, i: usize, policy: &Policy, now: u64) -> bool {
        self.times
            .get(i)
            .is_some_and(|times| policy.expired(times, now))
    }

    /// The entry of `key` (whose hash is `hash`); calls `K: Eq` only on a
    /// full hash match.
    #[inline]
    pub(crate) fn get<Q>(&self, hash: u64, key: &Q) -> Option<Slot<'_, V>>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let i = self.table.find(&self.nodes, hash, key)?;
        Some(self.slot(i as usize))
    }

    /// Stores `value` under `key` (whose hash is `hash`), in place if the
    /// key is present (as a new entry: fresh times, bit clear); bumps the
    /// generation first if `user_write`; sweeps up to `sweep_budget`
    /// entries (see [`sweep`](Self::sweep)) into `swept`, before a new
    /// entry joins (so the sweep never spends a look on it). The user's
    /// `Eq` runs before any change; growth rehashes from stored hashes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        policy: &Policy,
        now: u64,
        user_write: bool,
        sweep_budget: usize,
        swept: &mut Vec<Removed<K, V>>,
    ) -> Displaced<K, V>
    where
        K: Eq,
    {
        // The only user code: `K: Eq`, before any change.
        let found = self.table.find(&self.nodes, hash, &key);
        if user_write {
            self.bump_generation();
        }
        if let Some(i) = found {
            let i = i as usize;
            let expired = self.expired_at(i, policy, now);
            if let Some(times) = self.times.get_mut(i) {
                *times = Times::new(now);
            }
            let node = &mut self.nodes[i];
            // Relaxed: under the write lock.
            node.referenced.store(false, Ordering::Relaxed);
            let old = std::mem::replace(&mut node.value, value);
            self.sweep(policy, now, sweep_budget, swept);
            return Displaced {
                old: Some((old, expired)),
                unused_key: Some(key),
            };
        }
        self.sweep(policy, now, sweep_budget, swept);
        self.push_behind_hand(
            Node {
                hash,
                key,
                value,
                referenced: AtomicBool::new(false),
            },
            now,
        );
        Displaced {
            old: None,
            unused_key: None,
        }
    }

    /// Adds a new node where the CLOCK hand reaches it last: at the hand's
    /// place, the node that was there moving to the end, and the hand one
    /// step on (so a new entry is never the next victim).
    fn push_behind_hand(&mut self, node: Node<K, V>, now: u64) {
        let i = self.nodes.len();
        self.nodes.push(node);
        if self.keeps_times {
            self.times.push(Times::new(now));
        }
        let at = self.hand;
        if at < i {
            self.nodes.swap(at, i);
            if self.keeps_times {
                self.times.swap(at, i);
            }
            self.table.moved(self.nodes[i].hash, at as u32, i as u32);
            self.table.insert(&self.nodes, at as u32);
        } else {
            self.table.insert(&self.nodes, i as u32);
        }
        self.hand = at.min(i) + 1;
    }

    /// Removes node `i`: the last node moves into its place (its times with
    /// it). Returns the key, the value and whether it had expired. No user
    /// code.
    fn remove_index(&mut self, i: usize, policy: &Policy, now: u64) -> (K, V, bool) {
        let expired = self.expired_at(i, policy, now);
        self.table.remove(&self.nodes, i as u32);
        let last = self.nodes.len() - 1;
        let node = self.nodes.swap_remove(i);
        if self.keeps_times {
            self.times.swap_remove(i);
        }
        if i != last {
            self.table.moved(self.nodes[i].hash, last as u32, i as u32);
        }
        self.after_removal();
        (node.key, node.value, expired)
    }

    /// Removes `key` (whose hash is `hash`); returns its key, its value and
    /// whether it had expired. `Eq` runs before any change.
    pub(crate) fn remove<Q>(
        &mut self,
        hash: u64,
        key: &Q,
        policy: &Policy,
        now: u64,
    ) -> Option<(K, V, bool)>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let i = self.table.find(&self.nodes, hash, key)?;
        Some(self.remove_index(i as usize, policy, now))
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
        let i = self.table.find(&self.nodes, hash, key)? as usize;
        if !self.expired_at(i, policy, now) {
            return None;
        }
        let (key, value, _) = self.remove_index(i, policy, now);
        Some((key, value, RemovalCause::Expired))
    }

    /// Empties the shard; moves every entry to `out`, as `Cleared` (or
    /// `Expired` if its time had passed). Runs no user code.
    pub(crate) fn take_all(&mut self, policy: &Policy, now: u64, out: &mut Vec<Removed<K, V>>) {
        let times = std::mem::take(&mut self.times);
        self.table.clear();
        self.hand = 0;
        self.sweep_at = 0;
        out.extend(
            std::mem::take(&mut self.nodes)
                .into_iter()
                .enumerate()
                .map(|(i, node)| {
                    let expired = times.get(i).is_some_and(|t| policy.expired(t, now));
                    let cause = if expired {
                        RemovalCause::Expired
                    } else {
                        RemovalCause::Cleared
                    };
                    (node.key, node.value, cause)
                }),
        );
    }

    /// Evicts one entry: the first the CLOCK hand finds expired or
    /// unreferenced, clearing set bits on the way (which gives each recently
    /// hit entry a second chance). The last node takes the victim's place,
    /// where the hand looks next. Runs no user code.
    pub(crate) fn evict_one(&mut self, policy: &Policy, now: u64) -> Option<Removed<K, V>> {
        if self.nodes.is_empty() {
            return None;
        }
        // After one lap every bit is clear, so a second lap finds a victim.
        loop {
            if self.hand >= self.nodes.len() {
                self.hand = 0;
            }
            let i = self.hand;
            let expired = self.expired_at(i, policy, now);
            let node = &self.nodes[i];
            // Relaxed: we hold the write lock, which orders us after every
            // reader that set the bit (their read locks were released).
            if node.referenced.load(Ordering::Relaxed) && !expired {
                node.referenced.store(false, Ordering::Relaxed);
                self.hand += 1;
                continue;
            }
            let (key, value, _) = self.remove_index(i, policy, now);
            let cause = if expired {
                RemovalCause::Expired
            } else {
                RemovalCause::Evicted
            };
            return Some((key, value, cause));
        }
    }

    /// Keeps the cursors in range after a removal (one past the end wraps
    /// to the start when next used).
    fn after_removal(&mut self) {
        let len = self.nodes.len();
        if self.hand > len {
            self.hand = 0;
        }
        if self.sweep_at > len {
            self.sweep_at = 0;
        }
    }

    /// Releases expired entries, looking at no more than `budget` of them
    /// (the amortized sweep of every write); moves them to `out`. Runs no
    /// user code.
    ///
    /// A cursor walks the nodes from one sweep to the next and wraps, so
    /// every entry is looked at about once every `len / budget` sweeps. A
    /// removal moves the last node into the cursor's place, where the
    /// cursor looks next.
    pub(crate) fn sweep(
        &mut self,
        policy: &Policy,
        now: u64,
        budget: usize,
        out: &mut Vec<Removed<K, V>>,
    ) {
        // No more looks than entries: one sweep looks at each at most once.
        for _ in 0..budget.min(self.nodes.len()) {
            if self.nodes.is_empty() {
                return;
            }
            if self.sweep_at >= self.nodes.len() {
                self.sweep_at = 0;
            }
            let i = self.sweep_at;
            if self.expired_at(i, policy, now) {
                let (key, value, _) = self.remove_index(i, policy, now);
                out.push((key, value, RemovalCause::Expired));
            } else {
                self.sweep_at = i + 1;
            }
        }
    }

    /// Removes every expired entry, moving them to `out`. Runs no user code.
    pub(crate) fn purge_all(&mut self, policy: &Policy, now: u64, out: &mut Vec<Removed<K, V>>) {
        let mut i = 0;
        while i < self.nodes.len() {
            if self.expired_at(i, policy, now) {
                let (key, value, _) = self.remove_index(i, policy, now);
                out.push((key, value, RemovalCause::Expired));
                // The last node moved into `i`: look at it next.
            } else {
                i += 1;
            }
        }
        let len = self.nodes.len();
        self.table.shrink(&mut self.nodes, len);
        if self.keeps_times {
            self.times.shrink_to(self.nodes.capacity());
        }
    }

    /// Calls `f` with each live entry's key and value, in node order. Runs
    /// no user code itself.
    pub(crate) fn for_each_live(&self, policy: &Policy, now: u64, mut f: impl FnMut(&K, &V)) {
        for (i, node) in self.nodes.iter().enumerate() {
            if !self.expired_at(i, policy, now) {
                f(&node.key, &node.value);
            }
        }
    }

    /// Each entry's stored hash (for `check_invariants`).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.nodes.iter().map(|node| node.hash)
    }

    /// Asserts the shard's invariants (for tests and fuzzing). Runs no user
    /// code.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_invariants(&self) {
        let n = self.nodes.len();
        assert_eq!(self.table.len(), n, "table and node counts differ");
        let times = if self.keeps_times { n } else { 0 };
        assert_eq!(self.times.len(), times, "times out of step with the nodes");
        assert!(self.hand <= n, "hand {} beyond {n} nodes", self.hand);
        assert!(
            self.sweep_at <= n,
            "sweep cursor {} beyond {n} nodes",
            self.sweep_at
        );
        for (i, node) in self.nodes.iter().enumerate() {
            assert!(
                self.table.locates(node.hash, i as u32),
                "node {i} not reachable from the table"
            );
        }
    }
}
