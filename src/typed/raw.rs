//! The concurrent wrapper shared by [`TypedCache`](super::TypedCache) and
//! [`AnyCache`](super::AnyCache): the engine's layer
//! ([`crate::cache::Layer`]: the shards, lookups, the clock, statistics)
//! over sharded reader-writer locks, with single-flight init through
//! [`FlightGroup`] and the global bound ([`Bound`]) as what this face adds.
//!
//! # Locks
//!
//! - Each key shard is a [`ShardedLock`]: a read locks only the calling
//!   thread's slice of the lock state, so hits on different cores share no
//!   written cache line; a write locks every slice (writes are rare: inits,
//!   inserts, invalidations).
//! - At most one shard lock is held at a time. Cross-shard work (eviction
//!   spilling over, `clear`) takes them one after another.
//! - The flight group's locks are never taken while a shard lock is held
//!   (the flight protocol calls our `lookup` and `publish` with none of its
//!   locks held).
//! - No user code runs under a shard lock except `K: Eq`, in a lookup by
//!   key, and in a lookup the clock (only when entries can expire), each
//!   before that operation's first change (see `cache/shard.rs`). The
//!   key's `Hash` runs before the lock is taken; `K: Clone`
//!   and `V: Clone` (an init's key and value, to store them) before it
//!   too; inits run with no lock held; and removed, replaced, expired and
//!   evicted keys and values go to the listener and are dropped after
//!   unlocking. Reads are the exception: a hit clones the value out
//!   (`V: Clone`) under the shard's *read* lock, and `to_vec` the key and
//!   value (see `entries`); a read lock leaves the shard consistent
//!   whatever they do. Under `EvictionPolicy::Exact` a hit takes the write
//!   lock instead, and clones after the hit is recorded (the shard is
//!   consistent then too).
//!
//! # Capacity
//!
//! The bound is global ([`Bound`]: entries, or with a weigher their total
//! weight): a store evicts while the total is over `capacity`, never the
//! entry it just stored, from its own shard while that holds more than its
//! share (`capacity / shards`), then from the shards over theirs, one lock at
//! a time, so that the shards stay level. `resize` changes the capacity and
//! evicts the same way, serialized with other resizes.
//!
//! # Expiry
//!
//! Every write to a shard (insert, an init's publish, remove) and every
//! read that finds an expired entry also runs the shard's sweep under the
//! write lock it holds: at most [`SWEEP_BUDGET`] entries looked at,
//! the expired ones released. Nobody has to call `purge_expired`.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};

use super::bound::{Bound, reject};
use crate::EvictionPolicy;
use crate::cache::CacheStats;
use crate::cache::{
    Event, Expiry, Layer, LoadFace, Locked, MAX_SHARD_CAPACITY, PolicyShard, SWEEP_BUDGET, Weigher,
};
use crate::error::BuildError;
use crate::flight::{FlightGroup, Looked};
use crate::removal::{Listener, Removal, RemovalCause, copy_unlocked, tagged};
use crate::sync::{Arc, ShardedLock};
use crate::time::Clock;

#[cfg(loom)]
use super::broken::{bump_for, raced, store, write_sweep};
#[cfg(not(loom))]
use {
    bump_for_user_write as bump_for, store_by_weight as store, sweep_budget as write_sweep,
    written_since as raced,
};

/// The most key shards a cache gets by default (an unbounded one gets
/// this many). More shards let more writes proceed at once; reads never
/// contend whatever the count.
pub(super) const SHARDS: usize = 16;

/// The default shard count: [`SHARDS`], or for a bounded cache one shard
/// per 64 of its capacity, between 1 and [`SHARDS`]. The bound is global
/// and each shard's policy orders only its own entries, so a shard of a
/// few entries evicts keys young: a small cache split into many shards
/// hits far less often than one shard (`docs/benchmarks.md`, "TypedCache
/// hit ratios").
pub(super) fn default_shards(capacity: Option<usize>) -> usize {
    capacity.map_or(SHARDS, |max| (max / 64).clamp(1, SHARDS))
}

/// The layer under a typed face: read-striped locks, the global bound as
/// its tally.
pub(crate) type TypedLayer<K, V, S> = Layer<K, V, S, ShardedLock<Locked<K, V>>, Bound<K, V>>;

pub(crate) struct Raw<K, V, S> {
    /// The shards, the global bound (the layer's tally) and the rest
    /// every face has (`crate::cache::Layer`).
    pub(super) layer: TypedLayer<K, V, S>,
}

impl<K, V, S> Raw<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    pub(crate) fn new(
        policy: EvictionPolicy,
        expiry: Option<Expiry>,
        capacity: Option<usize>,
        weigher: Option<Weigher<K, V>>,
        clock: Arc<dyn Clock>,
        hasher: S,
        shards: usize,
    ) -> Self {
        // Each shard unbounded: the bound is global (see `store`). Its
        // slab's growth and its policy's own structures (S3-FIFO's queues
        // and ghost) sized for its share of the capacity.
        let bound = Bound::new(capacity, weigher, shards);
        let share = bound.share();
        let shard = |_| {
            let mut entries = PolicyShard::new(policy, MAX_SHARD_CAPACITY, expiry);
            if let Some(share) = share {
                entries.size_for(share);
            }
            entries
        };
        let clock = expiry.map(|_| clock);
        Self {
            layer: Layer::new(shards, shard, policy, clock, hasher, bound),
        }
    }

    pub(crate) fn hasher(&self) -> &S {
        &self.layer.hasher
    }

    pub(crate) fn set_listener(&mut self, listener: Option<Listener<K, V>>) {
        self.layer.listener = listener;
    }

    /// Hands removed entries to the listener, then drops them. Call with no
    /// lock held.
    #[inline(always)]
    fn release(&self, removed: Vec<Removal<K, V>>) {
        for (_, _, cause) in &removed {
            if *cause == RemovalCause::Evicted {
                self.layer.striped.record(Event::Eviction);
            }
        }
        if !removed.is_empty() {
            self.layer.notify(removed);
        }
    }

    /// As [`release`](Self::release), and returns the value of
    /// `removed[at]` to the caller: the value itself when there is no
    /// listener, else a clone made here, with no lock held (a panicking
    /// clone still lets every removed entry reach the listener first).
    #[inline(always)]
    pub(super) fn release_returning(
        &self,
        mut removed: Vec<Removal<K, V>>,
        at: Option<usize>,
    ) -> Option<V> {
        let Some(at) = at else {
            self.release(removed);
            return None;
        };
        if self.layer.listener.is_none() {
            let (key, value, _) = removed.remove(at);
            self.release(removed);
            drop(key);
            return Some(value);
        }
        let copy = copy_unlocked(&removed[at].1, V::clone);
        self.release(removed);
        Some(copy.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    }

    /// The number of key shards.
    pub(crate) fn shard_count(&self) -> usize {
        self.layer.shards().len()
    }

    /// A read: counts a hit or a miss; removes an expired entry it finds.
    #[inline]
    pub(crate) fn get<Q, R>(&self, key: &Q, project: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.layer.get_with(self.layer.hash(key), key, project)
    }

    /// A read that records no access and counts nothing.
    pub(crate) fn peek<Q, R>(&self, key: &Q, project: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.layer.peek_with(key, project)
    }

    /// Whether a live entry exists; no statistics, no access recorded.
    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.layer.contains(key)
    }

    /// The hit path of `get_or_init`; the miss path is out of line.
    #[inline]
    pub(crate) fn get_or_try_init<Q, E, F, R, P>(
        &self,
        key: &Q,
        make_key: impl FnOnce() -> K,
        init: F,
        project: P,
    ) -> Result<R, Arc<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        E: Send + Sync + 'static,
        F: FnOnce() -> Result<V, E>,
        P: Fn(&V) -> R,
    {
        let hash = self.layer.hash(key);
        if let Some(found) = self.hit(hash, key, &project) {
            return Ok(found);
        }
        // The owned key is built only on a miss (user `ToOwned`, no lock
        // held).
        self.init_slow(hash, make_key(), init, &project)
    }

    #[cold]
    #[inline(never)]
    fn init_slow<E, F, R, P>(&self, hash: u64, key: K, init: F, project: &P) -> Result<R, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: FnOnce() -> Result<V, E>,
        P: Fn(&V) -> R,
    {
        crate::cache::load(self, hash, &key, init).map(|value| project(&value))
    }

    /// The async `get_or_try_init`, the one future every async form of
    /// `TypedCache` and `AnyCache` returns (or wraps once). It looks the key
    /// up when called: a hit returns a ready future holding the output and
    /// nothing else (nothing registered, nothing allocated, `init` dropped
    /// at once); a miss returns the flight group's async protocol, where a
    /// waiter allocates nothing and only the leader boxes its loader's
    /// state. `make_key` builds the owned
    /// key on a miss; `lift` turns the init's output into a `Result`;
    /// `finish` shapes the outcome (the infallible forms
    /// unwrap it), so the public forms need no future level of their own.
    ///
    /// Forced inline, as are the public forms over it, with the miss half
    /// out of line (`miss_async`): left to the compiler, the whole call
    /// stayed one out-of-line function, and an awaited hit paid a call and
    /// the return of the whole future through memory, well above the time
    /// of a sync hit; inlined, it costs what a sync hit costs
    /// (`design/benchmarks-history.md`, "After the async hit was forced
    /// inline").
    #[inline(always)]
    pub(crate) fn get_or_try_init_async<Q, E, F, Fut, R, P, O>(
        &self,
        key: &Q,
        make_key: impl Fn(&Q) -> K + Copy,
        init: F,
        lift: impl Fn(Fut::Output) -> Result<V, E> + Copy,
        project: P,
        finish: impl Fn(Result<R, Arc<E>>) -> O + Copy,
    ) -> impl std::future::Future<Output = O> + Unpin
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        E: Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: std::future::Future,
        P: Fn(&V) -> R + Copy,
    {
        let hash = self.layer.hash(key);
        if let Some(found) = self.hit(hash, key, project) {
            return Looked::Hit(Some(finish(Ok(found))));
        }
        // The miss half: `#[cold]`, out of line (see `cache::load_async`).
        let finish = move |outcome: Result<V, Arc<E>>| finish(outcome.map(|value| project(&value)));
        Looked::Miss(crate::cache::load_async(
            self, hash, key, init, make_key, lift, finish,
        ))
    }

    /// The hit path of the async forms: a live entry's projection (counted
    /// as a hit), or `None` (counted as a miss). Runs no future machinery,
    /// so an async caller can look up before it builds any state.
    #[inline]
    pub(crate) fn hit<Q, R>(&self, hash: u64, key: &Q, project: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.layer.get_with(hash, key, project)
    }

    #[inline(never)]
    pub(super) fn store_weighted(&self, h: u64, k: K, v: V, e: Option<u64>, u: bool) -> Option<V> {
        self.store_as::<true>(h, k, v, e, u)
    }

    #[inline(always)]
    pub(super) fn store_as<const W: bool>(
        &self,
        hash: u64,
        key: K,
        value: V,
        expect_generation: Option<u64>,
        user_write: bool,
    ) -> Option<V> {
        let Some(weight) = self.layer.tally.weigh::<W>(&key, &value) else {
            return self.store_rejected(hash, key, value, expect_generation, user_write);
        };
        let shard = self.layer.index(hash);
        let now = self.layer.now();
        let wants_old = user_write;
        let mut garbage = Vec::new();
        let replaced = {
            let mut core = self.layer.shards()[shard].write();
            if raced(&core, expect_generation) {
                // A user write landed while the init ran: it wins. The key
                // and value are dropped after unlocking.
                drop(core);
                drop((key, value));
                return None;
            }
            let budget = write_sweep(&self.layer);
            let before = self.layer.tally.size_as::<W>(&core);
            self.layer.striped.record(Event::Insert);
            // `K: Eq` runs here, before any change (the bump included).
            let mut swept = Vec::new();
            let (slot, displaced) = core.entries.insert_unevicting(
                hash,
                key,
                value,
                weight,
                || now,
                budget,
                &mut swept,
            );
            bump_for(&mut core, user_write);
            // The old value goes to the listener (under the key passed in,
            // equal to the stored one) first, and, if still live, to the
            // caller: `garbage[0]`, handed back by `release_returning`.
            let mut replaced = None;
            if let Some((key, old, expired)) = displaced {
                let cause = if expired {
                    RemovalCause::Expired
                } else {
                    replaced = wants_old.then_some(0);
                    RemovalCause::Replaced
                };
                garbage.push((key, old, cause));
            }
            if !swept.is_empty() {
                tagged(&mut garbage, swept, RemovalCause::Expired);
            }
            self.layer
                .tally
                .account_as::<W>(before, self.layer.tally.size_as::<W>(&core));
            // The capacity is read after the store (a resize sets it
            // before it evicts, so one of the two sees the other).
            if let Some(max) = self.layer.tally.capacity() {
                let kept = &mut Some(slot);
                (self.layer.tally).evict_locked(&mut core, max, kept, now, &mut garbage, true);
            }
            replaced
        };
        if let Some(max) = self.layer.tally.capacity() {
            let shards = self.layer.shards();
            (self.layer.tally).evict_elsewhere(shards, max, shard, now, &mut garbage);
        }
        self.release_returning(garbage, replaced)
    }

    /// [`store`](Self::store) of a value heavier than the capacity: not
    /// stored; the key's old entry is removed, the new one released as
    /// `Evicted` (unless a user write raced the init, as in `store`).
    #[cold]
    #[inline(never)]
    fn store_rejected(
        &self,
        hash: u64,
        key: K,
        value: V,
        expect: Option<u64>,
        user: bool,
    ) -> Option<V> {
        let now = self.layer.now();
        let budget = SWEEP_BUDGET * usize::from(self.layer.clock.is_some());
        let mut garbage = Vec::new();
        let live = self.layer.write(self.layer.index(hash), |core| {
            if expect.is_some_and(|seen| seen != core.generation) {
                return None;
            }
            self.layer.striped.record(Event::Insert);
            Some(reject(core, hash, &key, now, budget, user, &mut garbage))
        });
        // Dropped here, unlocked, if the init lost to a user write.
        live?;
        garbage.push((key, value, RemovalCause::Evicted));
        self.release_returning(garbage, (live == Some(true) && user).then_some(0))
    }

    /// The bound: entries, or with a weigher total weight; `None` when
    /// unbounded.
    pub(crate) fn capacity(&self) -> Option<usize> {
        self.layer.tally.capacity()
    }

    pub(crate) fn insert(&self, key: K, value: V) -> Option<V> {
        let hash = self.layer.hash(&key);
        store(self, hash, key, value, None, true)
    }

    pub(crate) fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.layer.hash(key);
        let now = self.layer.now();
        let mut garbage = Vec::new();
        let removed = self.layer.write(self.layer.index(hash), |core| {
            // `K: Eq` runs in `remove`, before any change (the generation
            // bump included).
            let removed = core.entries.remove(hash, key, now);
            core.bump_generation();
            if self.layer.clock.is_some() {
                let mut expired = Vec::new();
                core.entries.sweep(now, SWEEP_BUDGET, &mut expired);
                tagged(&mut garbage, expired, RemovalCause::Expired);
            }
            removed
        });
        // Handed over and dropped unlocked: the key, and the value (which
        // the caller gets too if it was live).
        let live = removed.and_then(|(key, value, expired)| {
            let cause = if expired {
                RemovalCause::Expired
            } else {
                RemovalCause::Removed
            };
            garbage.insert(0, (key, value, cause));
            (!expired).then_some(0)
        });
        self.release_returning(garbage, live)
    }

    /// Empties every shard, then drops what they held (unlocked): a
    /// panicking `Drop` reaches the caller only once every shard is empty.
    pub(crate) fn clear(&self) {
        self.layer.clear();
    }

    /// Changes the capacity; see `Bound::resize`.
    pub(crate) fn resize(&self, capacity: usize) -> Result<(), BuildError> {
        if capacity == 0 {
            return Err(BuildError::ZeroCapacity);
        }
        let (shards, now) = (self.layer.shards(), self.layer.now());
        let mut garbage = Vec::new();
        (self.layer.tally).resize(shards, capacity, now, &mut garbage);
        self.release(garbage);
        Ok(())
    }

    pub(crate) fn purge_expired(&self) -> usize {
        self.layer.purge_expired()
    }

    pub(crate) fn len(&self) -> usize {
        self.layer.tally.len()
    }

    /// The total weight with a weigher, else `None`.
    pub(crate) fn weight(&self) -> Option<usize> {
        self.layer.tally.weight()
    }

    /// A copy of the live entries (see `Layer::to_vec`).
    pub(crate) fn entries(&self) -> Vec<(K, V)> {
        self.layer.to_vec()
    }

    /// How many entries each shard holds, in shard order.
    #[cfg(test)]
    pub(crate) fn shard_lens(&self) -> Vec<usize> {
        let shards = self.layer.shards().iter();
        shards.map(|shard| shard.read().entries.len()).collect()
    }

    /// The entries each shard's slab has room for, in shard order.
    #[cfg(test)]
    pub(crate) fn shard_rooms(&self) -> Vec<usize> {
        let shards = self.layer.shards().iter();
        shards
            .map(|shard| shard.read().entries.slab_room())
            .collect()
    }

    pub(crate) fn stats(&self) -> CacheStats {
        let mut stats = CacheStats::default();
        self.layer.count_into(&mut stats, |_| {});
        stats.capacity = self.layer.tally.capacity();
        stats.weighted_size = self.layer.tally.weight();
        stats
    }

    pub(crate) fn reset_stats(&self) {
        self.layer.reset_stats();
    }

    /// Inits in progress.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.layer.flights.in_flight()
    }

    /// Asserts the cache's invariants; call when no other thread uses it.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_invariants(&self) {
        let (len, weight) = self.layer.check_invariants();
        self.layer.tally.check(len, weight);
    }
}

/// The store of both typed faces: `value` (from an init if `expect` is
/// `Some`, else from `insert`) is stored, then `capacity` enforced. Returns
/// the live value it replaced if `user` (an init's publish has no use for
/// it). Every removed key and value is dropped after the locks are
/// released. The weigher runs first, unlocked; the only user code under
/// the lock is `K: Eq` in the engine's insert, before its first change. A
/// value heavier than the capacity is not stored (`store_rejected`).
pub(super) fn store_by_weight<K, V, S>(
    raw: &Raw<K, V, S>,
    hash: u64,
    key: K,
    value: V,
    expect: Option<u64>,
    user: bool,
) -> Option<V>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    // The unweighted store inline, with no weight code; the weighted one
    // its own copy (`W`), as the engine's shards by type.
    match raw.layer.tally.weighted() {
        false => raw.store_as::<false>(hash, key, value, expect, user),
        true => raw.store_weighted(hash, key, value, expect, user),
    }
}

/// Whether a user write landed in the shard since an init's re-check saw
/// its write count `expect` (`None` for a user write, which never loses).
#[inline(always)]
pub(super) fn written_since<K, V>(shard: &Locked<K, V>, expect: Option<u64>) -> bool {
    expect.is_some_and(|seen| seen != shard.generation)
}

/// Counts a user write in its shard (an init in progress there then does
/// not cache its value); an init's publish is not one.
#[inline(always)]
pub(super) fn bump_for_user_write<K, V>(shard: &mut Locked<K, V>, user_write: bool) {
    if user_write {
        shard.bump_generation();
    }
}

/// How many entries a write sweeps for expired ones: [`SWEEP_BUDGET`] when
/// entries can expire.
#[inline(always)]
pub(super) fn sweep_budget<K, V, S>(layer: &TypedLayer<K, V, S>) -> usize {
    if layer.clock.is_some() {
        SWEEP_BUDGET
    } else {
        0
    }
}

/// The typed faces' side of the load glue (`crate::cache::load`): the
/// re-check hands the shard's write generation it saw to the store, so an
/// insert or invalidation after that point wins over the init; the store
/// releases what it displaced itself.
impl<K, V, S> LoadFace<K, V> for Raw<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    type Seen = u64;
    type Leftover = ();

    fn flights(&self) -> &FlightGroup<K, V> {
        &self.layer.flights
    }

    /// An init's re-check: a live entry's value (the access recorded), or
    /// the shard's write generation it saw.
    #[inline]
    fn recheck<Q>(&self, hash: u64, key: &Q) -> Result<V, u64>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.layer.recheck(hash, key)
    }

    fn count(&self, _hash: u64, event: Event) {
        self.layer.striped.record(event);
    }

    fn nothing() {}

    fn publish(&self, hash: u64, key: K, value: V, seen: Option<u64>, (): &mut ()) {
        drop(store(self, hash, key, value, seen, false));
    }

    fn release(&self, (): ()) {}
}

impl<K, V, S> fmt::Debug for Raw<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layer = &self.layer;
        f.debug_struct("Raw")
            .field("len", &layer.tally.len())
            .field("weight", &layer.tally.weight())
            .field("policy", &layer.policy)
            .field("capacity", &layer.tally.capacity())
            .field("clock", &layer.clock)
            .field("stats", &layer.striped)
            .field("in_flight", &layer.flights.in_flight())
            .finish()
    }
}
