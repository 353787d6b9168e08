//! [`Layer`]: the concurrent layer both faces stand on. The shards (each an
//! engine shard under the chosen policy, [`Locked`], behind a lock chosen
//! by the face, [`LayerLock`]), hash-to-shard, the clock, the listener, the
//! counters and the flights; the lookups (`get`, `peek`, `contains`), and
//! what every operation over all shards does (clear, purge, copy out,
//! count, check), each written once.
//!
//! A face adds its bound and its writes: `LruCache` a bound per shard,
//! kept by the engine's insert under the shard's lock; `TypedCache` a
//! global one over all shards (`typed/bound.rs`), whose totals follow every
//! change a shard makes ([`Tally`]).
//!
//! # Locks
//!
//! The lock is the face's ([`LayerLock`]): `LruCache` takes one padded
//! parking_lot `RwLock` a shard (a write is one lock word; misses insert, so
//! writes are frequent); `TypedCache` crossbeam's `ShardedLock` (a read
//! writes only the reader's stripe, so warm hits on two cores share no
//! written line; a write locks every stripe, and writes are rare). On two
//! cores, `TypedCache` warm hits over padded `RwLock`s ran at well under
//! half the rate of `ShardedLock`'s, every hit writing the one lock word
//! (`design/open-work.md` has the figures).
//!
//! An operation takes one shard lock at a time; the flights' locks are
//! never taken while a shard lock is held. No user code runs under a
//! shard lock except `K: Eq` in a lookup (before any change) and, for
//! reads, `V: Clone` or the caller's closure after the lookup is complete;
//! removed entries go to the listener, and are dropped, after unlocking.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::ops::{Deref, DerefMut};

use super::{Event, EvictionPolicy, Lookup, PolicyShard, ShardCounters, Striped, nanos};
use crate::cache::CacheStats;
use crate::flight::FlightGroup;
use crate::removal::{Listener, Removal, RemovalCause, notify};
use crate::sync::{
    Arc, CachePadded, RwLock, RwLockReadGuard, RwLockWriteGuard, ShardedLock, ShardedReadGuard,
    ShardedWriteGuard,
};
use crate::time::Clock;

#[cfg(loom)]
use super::broken::{empty_shard, get_exclusive, get_shared};
#[cfg(not(loom))]
use {
    count_exclusive_lookup as get_exclusive, count_shared_lookup as get_shared,
    take_all_and_bump as empty_shard,
};

/// A shard's lock, as the layer takes it.
pub(crate) trait LayerLock<T> {
    type Read<'a>: Deref<Target = T>
    where
        Self: 'a;
    type Write<'a>: DerefMut<Target = T>
    where
        Self: 'a;
    /// Whether a shared-lock hit on a shard whose entries can expire runs
    /// inline in the hit path (`TypedCache`, whose warm hits are its point:
    /// inlined, a hit with expiry runs fewer instructions) or out of line
    /// (`LruCache`, whose hit path without expiry the inlined code would
    /// lengthen; `design/typed.md` has the counts).
    const INLINE_EXPIRY: bool;
    fn new(value: T) -> Self;
    fn read(&self) -> Self::Read<'_>;
    fn write(&self) -> Self::Write<'_>;
}

/// parking_lot's `RwLock` on cache lines of its own: a write is one lock
/// word, and so is a read (every reader writes it).
pub(crate) type Padded<T> = CachePadded<RwLock<T>>;

impl<T> LayerLock<T> for Padded<T> {
    const INLINE_EXPIRY: bool = false;
    type Read<'a>
        = RwLockReadGuard<'a, T>
    where
        T: 'a;
    type Write<'a>
        = RwLockWriteGuard<'a, T>
    where
        T: 'a;

    fn new(value: T) -> Self {
        CachePadded::new(RwLock::new(value))
    }
    #[inline(always)]
    fn read(&self) -> Self::Read<'_> {
        RwLock::read(self)
    }
    #[inline(always)]
    fn write(&self) -> Self::Write<'_> {
        RwLock::write(self)
    }
}

impl<T> LayerLock<T> for ShardedLock<T> {
    const INLINE_EXPIRY: bool = true;
    type Read<'a>
        = ShardedReadGuard<'a, T>
    where
        T: 'a;
    type Write<'a>
        = ShardedWriteGuard<'a, T>
    where
        T: 'a;

    fn new(value: T) -> Self {
        ShardedLock::new(value)
    }
    #[inline(always)]
    fn read(&self) -> Self::Read<'_> {
        ShardedLock::read(self)
    }
    #[inline(always)]
    fn write(&self) -> Self::Write<'_> {
        ShardedLock::write(self)
    }
}

/// One shard's state: its entries, the counts made under its lock
/// (`LruCache`'s writes, and its hits under `EvictionPolicy::Exact`), and
/// the count of user writes to it, which an init checks (`TypedCache`).
pub(crate) struct Locked<K, V> {
    pub(crate) entries: PolicyShard<K, V>,
    pub(crate) counters: ShardCounters,
    /// Bumped by every user write (insert, remove, clear) of a face that
    /// checks it: an init that started before a bump does not cache its
    /// value.
    pub(crate) generation: u64,
}

impl<K, V> Locked<K, V> {
    pub(crate) fn new(entries: PolicyShard<K, V>) -> Self {
        Self {
            entries,
            counters: ShardCounters::default(),
            generation: 0,
        }
    }

    pub(crate) fn bump_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }
}

/// What a face keeps over all shards and updates as one changes: nothing
/// (`()`, `LruCache`: its bound is each shard's), or totals
/// (`TypedCache`'s global bound).
pub(crate) trait Tally<K, V> {
    /// A shard's size before a change.
    type Before: Copy;
    fn before(&self, shard: &Locked<K, V>) -> Self::Before;
    /// Applies the change since `before` (under the shard's write lock).
    fn after(&self, before: Self::Before, shard: &Locked<K, V>);
}

impl<K, V> Tally<K, V> for () {
    type Before = ();
    #[inline(always)]
    fn before(&self, _: &Locked<K, V>) {}
    #[inline(always)]
    fn after(&self, (): (), _: &Locked<K, V>) {}
}

/// The shards and what every face needs beside them (see the module
/// docs). `L` is the face's lock, `T` what it tallies over all shards.
pub(crate) struct Layer<K, V, S, L, T> {
    shards: Box<[L]>,
    pub(crate) hasher: S,
    pub(crate) policy: EvictionPolicy,
    /// The clock, kept only when entries can expire.
    pub(crate) clock: Option<Arc<dyn Clock>>,
    pub(crate) listener: Option<Listener<K, V>>,
    /// The counts made under a shared lock or none, per thread.
    pub(crate) striped: Striped,
    pub(crate) flights: FlightGroup<K, V>,
    pub(crate) tally: T,
}

impl<K, V, S, L: LayerLock<Locked<K, V>>, T: Tally<K, V>> Layer<K, V, S, L, T> {
    /// The layer over `shards` engine shards, shard `i` made by `make(i)`.
    pub(crate) fn new(
        shards: usize,
        make: impl FnMut(usize) -> PolicyShard<K, V>,
        policy: EvictionPolicy,
        clock: Option<Arc<dyn Clock>>,
        hasher: S,
        tally: T,
    ) -> Self {
        Self {
            shards: (0..shards)
                .map(make)
                .map(|s| L::new(Locked::new(s)))
                .collect(),
            hasher,
            policy,
            clock,
            listener: None,
            striped: Striped::new(),
            flights: FlightGroup::new(),
            tally,
        }
    }

    /// The shards, in index order.
    #[inline]
    pub(crate) fn shards(&self) -> &[L] {
        &self.shards
    }

    /// The index of the shard of `hash` (`shard_index.rs`).
    #[inline]
    pub(crate) fn index(&self, hash: u64) -> usize {
        crate::shard_index::shard_index(hash, self.shards.len())
    }

    /// The shard of `hash`.
    #[inline]
    pub(crate) fn shard(&self, hash: u64) -> &L {
        &self.shards[self.index(hash)]
    }

    /// The clock's time, read only when entries can expire (else 0).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match &self.clock {
            None => 0,
            Some(clock) => nanos(clock.now()),
        }
    }

    /// Runs `f` under shard `index`'s write lock, keeping the tally in
    /// step.
    #[inline]
    pub(crate) fn write<R>(&self, index: usize, f: impl FnOnce(&mut Locked<K, V>) -> R) -> R {
        let mut shard = self.shards[index].write();
        let before = self.tally.before(&shard);
        let out = f(&mut shard);
        self.tally.after(before, &shard);
        out
    }

    /// Hands each removed entry to the listener (if any), in order, then
    /// drops it. Call with no lock held.
    #[inline]
    pub(crate) fn notify(&self, removed: impl IntoIterator<Item = Removal<K, V>>) {
        notify(self.listener.as_ref(), removed);
    }

    /// [`notify`](Self::notify) of entries removed for one `cause`.
    pub(crate) fn dispose(&self, removed: impl IntoIterator<Item = (K, V)>, cause: RemovalCause) {
        self.notify(removed.into_iter().map(|(key, value)| (key, value, cause)));
    }

    /// Empties every shard (one at a time, each user-write count bumped),
    /// then hands what they held to the listener and drops it, unlocked: a
    /// panicking `Drop` reaches the caller only once every shard is empty.
    pub(crate) fn clear(&self) {
        let now = self.now();
        let (mut live, mut expired) = (Vec::new(), Vec::new());
        for index in 0..self.shards.len() {
            self.write(index, |shard| {
                live.extend(empty_shard(shard, now, &mut expired))
            });
        }
        // One `notify`, so a panicking listener still hears every entry.
        let expired = expired
            .into_iter()
            .map(|(k, v)| (k, v, RemovalCause::Expired));
        let live = live.into_iter().map(|(k, v)| (k, v, RemovalCause::Cleared));
        self.notify(expired.chain(live));
    }

    /// Removes every expired entry now and returns how many.
    pub(crate) fn purge_expired(&self) -> usize {
        if self.clock.is_none() {
            return 0;
        }
        let now = self.now();
        let mut removed = 0;
        for index in 0..self.shards.len() {
            let mut expired = Vec::new();
            self.write(index, |shard| shard.entries.purge(now, &mut expired));
            removed += expired.len();
            self.dispose(expired, RemovalCause::Expired);
        }
        removed
    }

    /// The entries held, shard by shard (expired ones not yet removed
    /// included).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().entries.len()).sum()
    }

    /// The total weight held, shard by shard.
    pub(crate) fn weight(&self) -> u64 {
        self.shards.iter().map(|s| s.read().entries.weight()).sum()
    }

    /// Every shard's counters and the per-thread ones, added to `stats`,
    /// with every shard read-locked at once (in index order) so the counts
    /// and `len` are one cut, as is what `locked` reads (it runs before
    /// they are unlocked); returns the total weight.
    pub(crate) fn count_into(
        &self,
        stats: &mut CacheStats,
        locked: impl FnOnce(&mut CacheStats),
    ) -> u64 {
        let guards: Vec<_> = self.shards.iter().map(|shard| shard.read()).collect();
        let mut weight = 0;
        for shard in &guards {
            shard.counters.add_to(stats);
            stats.len += shard.entries.len();
            weight += shard.entries.weight();
        }
        self.striped.totals().add_to(stats);
        locked(stats);
        drop(guards);
        weight
    }

    /// Starts every counter from 0 again.
    pub(crate) fn reset_stats(&self) {
        for shard in self.shards.iter() {
            shard.write().counters = ShardCounters::default();
        }
        self.striped.reset();
    }

    /// Asserts every shard's invariants and that each entry is in the
    /// shard of its stored hash (no user code: a key whose `Hash` changed
    /// since is still found by its old hash); returns the entries and the
    /// weight held. Call when no other thread uses the cache.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_invariants(&self) -> (usize, u64) {
        let (mut len, mut weight) = (0, 0);
        for (index, shard) in self.shards.iter().enumerate() {
            let shard = shard.read();
            shard.entries.check_invariants();
            for hash in shard.entries.hashes() {
                assert_eq!(self.index(hash), index, "entry in the wrong shard");
            }
            len += shard.entries.len();
            weight += shard.entries.weight();
        }
        assert_eq!(self.flights.in_flight(), 0, "a load is still registered");
        (len, weight)
    }
}

impl<K: Clone, V: Clone, S, L: LayerLock<Locked<K, V>>, T: Tally<K, V>> Layer<K, V, S, L, T> {
    /// Every live entry copied out, shard after shard, each under its read
    /// lock (`K: Clone` and `V: Clone`, user code, run under it; the shard
    /// is only read). No access recorded, nothing counted.
    pub(crate) fn to_vec(&self) -> Vec<(K, V)> {
        let now = self.now();
        let mut entries = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.read();
            entries.reserve(shard.entries.len());
            (shard.entries).for_each(now, |key, value| entries.push((key.clone(), value.clone())));
        }
        entries
    }
}

impl<K: Hash + Eq, V, S: BuildHasher, L: LayerLock<Locked<K, V>>, T: Tally<K, V>>
    Layer<K, V, S, L, T>
{
    #[inline]
    pub(crate) fn hash<Q: ?Sized + Hash>(&self, key: &Q) -> u64 {
        self.hasher.hash_one(key)
    }

    /// A counted lookup that marks a hit as a use, projecting the value
    /// through `project` after the hit is marked and counted: under the
    /// shard's write lock under `Exact` (counted in the shard), its read
    /// lock under the others (counted in the calling thread's stripe). An
    /// expired entry is a miss, and is released after the lock is.
    #[inline]
    pub(crate) fn get_with<Q, R>(
        &self,
        hash: u64,
        key: &Q,
        project: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        if self.policy.shared_hits() {
            return get_shared(self, hash, key, project);
        }
        get_exclusive(self, hash, key, project)
    }

    /// [`get_with`](Self::get_with) under `Exact` in a shard whose entries
    /// can expire, on the write lock it holds. The clock is read under the
    /// lock, before any change (user code, as in an insert). Out of line
    /// under both locks: `Exact` hits take the write lock anyway.
    #[inline(never)]
    pub(super) fn get_expiring<Q, R>(
        &self,
        mut guard: L::Write<'_>,
        hash: u64,
        key: &Q,
        project: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let shard = &mut *guard;
        match shard.entries.get(hash, key, || self.now()) {
            Lookup::Live(value) => {
                shard.counters.record(Event::Hit);
                Some(project(value))
            }
            Lookup::Missing => {
                shard.counters.record(Event::Miss);
                None
            }
            Lookup::Expired => {
                shard.counters.record(Event::Miss);
                drop(guard);
                self.release_expired(hash, key);
                None
            }
        }
    }

    /// [`count_shared_lookup`] in a shard whose entries can
    /// expire, on the read lock it holds. The clock is read under the
    /// lock (a read lock: the shard stays consistent whatever it does).
    #[inline(always)]
    pub(super) fn get_shared_expiring<Q, R>(
        &self,
        shard: L::Read<'_>,
        hash: u64,
        key: &Q,
        project: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        match shard.entries.get_shared(hash, key, || self.now()) {
            Lookup::Live(value) => {
                self.striped.record(Event::Hit);
                Some(project(value))
            }
            Lookup::Missing => {
                self.striped.record(Event::Miss);
                None
            }
            Lookup::Expired => {
                drop(shard);
                self.striped.record(Event::Miss);
                self.release_expired(hash, key);
                None
            }
        }
    }

    /// [`get_shared_expiring`](Self::get_shared_expiring) out of line.
    #[inline(never)]
    pub(super) fn get_shared_expiring_cold<Q, R>(
        &self,
        shard: L::Read<'_>,
        hash: u64,
        key: &Q,
        project: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.get_shared_expiring(shard, hash, key, project)
    }

    /// Removes the key's entry if it has expired (found so by a lookup;
    /// checked again at the clock's time, read before locking), and
    /// sweeps its shard as a write does, under the write lock the removal
    /// takes anyway; hands what expired to the listener unlocked.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_expired<Q>(&self, hash: u64, key: &Q)
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let now = self.now();
        let mut expired = Vec::new();
        self.write(self.index(hash), |shard| {
            shard.entries.release_expired(hash, key, now, &mut expired)
        });
        self.dispose(expired, RemovalCause::Expired);
    }

    /// The leader's re-check of a load: a live entry's value, the access
    /// recorded (no hit or miss counted), or the shard's user-write count
    /// it saw. `V::clone` runs under the lock, as in `get`.
    #[inline]
    pub(crate) fn recheck<Q>(&self, hash: u64, key: &Q) -> Result<V, u64>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
        V: Clone,
    {
        // The clock is user code: read with no lock held.
        let now = self.now();
        if !self.policy.shared_hits() {
            let mut shard = self.shard(hash).write();
            let generation = shard.generation;
            let found = shard.entries.get(hash, key, || now).live().cloned();
            return found.ok_or(generation);
        }
        let shard = self.shard(hash).read();
        let found = shard.entries.get_shared(hash, key, || now).live().cloned();
        found.ok_or(shard.generation)
    }

    /// The value of `key` projected through `f` under the shard's read
    /// lock, without recording a use or counting.
    #[inline]
    pub(crate) fn peek_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let hash = self.hash(key);
        let now = self.now();
        self.shard(hash).read().entries.peek(hash, key, now).map(f)
    }

    /// Whether a live entry exists; nothing recorded or counted.
    pub(crate) fn contains<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let hash = self.hash(key);
        let now = self.now();
        self.shard(hash).read().entries.contains(hash, key, now)
    }
}

/// `clear`'s step for one shard, under its write lock: bumps its user-write
/// count (an init in progress must not publish a value read before the
/// clear), then empties it: the entries live at `now`, and those expired
/// into `expired`.
pub(super) fn take_all_and_bump<K, V>(
    shard: &mut Locked<K, V>,
    now: u64,
    expired: &mut Vec<(K, V)>,
) -> Vec<(K, V)> {
    shard.bump_generation();
    shard.entries.take_all(now, expired)
}

/// [`Layer::get_with`] under `Exact`: the shard's write lock, the hit or
/// miss counted in the shard under it.
#[inline]
pub(super) fn count_exclusive_lookup<K, V, S, L, T, Q, R>(
    layer: &Layer<K, V, S, L, T>,
    hash: u64,
    key: &Q,
    project: impl FnOnce(&V) -> R,
) -> Option<R>
where
    K: Hash + Eq + Borrow<Q>,
    S: BuildHasher,
    L: LayerLock<Locked<K, V>>,
    T: Tally<K, V>,
    Q: ?Sized + Eq,
{
    let mut guard = layer.shard(hash).write();
    let shard = &mut *guard;
    let found = match &mut shard.entries {
        // No expiry: a lookup finds the entry or nothing.
        PolicyShard::Exact(entries) => entries.get(hash, key, 0).live(),
        _ => return layer.get_expiring(guard, hash, key, project),
    };
    // Counted before `project` runs, so a panicking projection leaves
    // the counters matching the lookups made. One constant event an
    // arm (a computed one costs the hit a bounds check).
    match found {
        Some(value) => {
            shard.counters.record(Event::Hit);
            Some(project(value))
        }
        None => {
            shard.counters.record(Event::Miss);
            None
        }
    }
}

/// [`Layer::get_with`] under `Clock` or `S3Fifo`: the shard's read lock,
/// so hits on one shard run at the same time; the hit or miss counted in
/// the calling thread's stripe.
#[inline]
pub(super) fn count_shared_lookup<K, V, S, L, T, Q, R>(
    layer: &Layer<K, V, S, L, T>,
    hash: u64,
    key: &Q,
    project: impl FnOnce(&V) -> R,
) -> Option<R>
where
    K: Hash + Eq + Borrow<Q>,
    S: BuildHasher,
    L: LayerLock<Locked<K, V>>,
    T: Tally<K, V>,
    Q: ?Sized + Eq,
{
    let shard = layer.shard(hash).read();
    let found = match &shard.entries {
        // No expiry: a lookup finds the entry or nothing.
        PolicyShard::Clock(entries) => entries.get_shared(hash, key, 0, true).live(),
        PolicyShard::S3Fifo(entries) => entries.get_shared(hash, key, 0, true).live(),
        _ if L::INLINE_EXPIRY => {
            return layer.get_shared_expiring(shard, hash, key, project);
        }
        _ => return layer.get_shared_expiring_cold(shard, hash, key, project),
    };
    // The calling thread's own stripe: no shared write. One constant
    // event an arm (a computed one costs the hit a bounds check).
    match found {
        Some(value) => {
            layer.striped.record(Event::Hit);
            Some(project(value))
        }
        None => {
            layer.striped.record(Event::Miss);
            None
        }
    }
}
