//! [`EvictionPolicy`], and [`PolicyShard`]: one engine shard under the policy
//! chosen at run time.

use std::borrow::Borrow;

use super::{Displaced, Exact, Expiry, Lookup, S3Fifo, SWEEP_BUDGET, SecondChance, Shard};

#[cfg(loom)]
use super::broken::take_expired;
#[cfg(not(loom))]
use take_if_expired as take_expired;

/// How each shard of a cache picks what to evict, and so which lock a hit
/// takes. Set with [`LruCacheBuilder::policy`](crate::LruCacheBuilder::policy)
/// (default `Exact`: an `LruCache` is a least-recently-used cache unless
/// asked otherwise) or [`TypedCacheBuilder::policy`](crate::TypedCacheBuilder::policy)
/// (default `Clock`: a `TypedCache` is read far more than it is written,
/// and `Clock`'s hits share the shard's lock at LRU's hit ratio).
///
/// | | `Exact` | `Clock` | `S3Fifo` |
/// |---|---|---|---|
/// | eviction | the least recently used entry of the shard | the first entry the hand finds not used since it last passed | a new key used once leaves first; a proven key leaves once unused for a full pass |
/// | a hit | moves the entry to the front: the shard's **exclusive** lock | sets the entry's reference bit: the shard's **shared** lock | bumps a 2-bit counter: the shard's **shared** lock |
/// | hits on one shard | one after another | at the same time | at the same time |
/// | a scan or one-hit wonders | flush the hot set | flush it too | pass through a small probation queue |
/// | `to_vec()` order | exact recency, per shard | hit entries first, then the others, each in the hand's reverse order | main queue, then probation, each newest first |
///
/// Which to pick, by workload (hit ratios in [the `LruCache`
/// guide](https://github.com/larder-rs/larder/blob/main/docs/lru.md#which-policy)):
///
/// | workload | pick |
/// |---|---|
/// | skewed (Zipf-like) keys, hit ratio matters | `S3Fifo`: the highest hit ratio here, 10 points above `Exact` on Zipf 0.9 at 1% capacity ([benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#lrucache-hit-ratios)) |
/// | scans, batch jobs or one-off keys mixed with a hot set | `S3Fifo`: the scans do not flush the hot set |
/// | strict recency semantics (the least recently used entry must be the one to go) | `Exact` |
/// | many threads hitting the same entries, recency close enough | `Clock` or `S3Fifo` |
///
/// `Clock` is CLOCK (second chance), the classic approximation of LRU: an
/// entry is evicted only after the hand has passed it once with no hit in
/// between. Its hit ratio stays close to LRU's on skewed workloads,
/// slightly above it on the Zipf traces of the
/// [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#lrucache-hit-ratios),
/// but it is not LRU: a scan, or keys used once each, can evict
/// differently. Choose it when many threads hit the same entries and
/// throughput matters more than the exact order: its hits share the
/// shard's lock where `Exact`'s take turns, so hit-heavy work runs faster
/// on several cores, while miss-heavy work gains little (every miss takes
/// the exclusive lock to evict under either policy);
/// everything else (the hard bound, statistics, loading, panic safety,
/// listeners) is the same under both policies.
///
/// # Examples
///
/// ```
/// use larder::{LruCache, EvictionPolicy};
///
/// let cache = LruCache::builder()
///     .capacity(2)
///     .shards(1)
///     .policy(EvictionPolicy::Clock)
///     .build()
///     .unwrap();
/// cache.insert("a", 1);
/// cache.insert("b", 2);
/// assert!(cache.get("a").is_some()); // "a" gets a second chance
/// cache.insert("c", 3); // the hand clears "a"'s bit and evicts "b"
/// assert!(cache.contains_key("a") && !cache.contains_key("b"));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum EvictionPolicy {
    /// Exact LRU within each shard: every hit makes its entry the most
    /// recently used, under the shard's exclusive lock.
    #[default]
    Exact,
    /// CLOCK (second chance) within each shard: a hit sets a reference bit
    /// under the shard's shared lock, so hits never wait for each other.
    Clock,
    /// S3-FIFO within each shard (Yang et al., SOSP 2023): new keys enter a
    /// small probation queue (1/48 of the shard) and leave it unless used
    /// again; keys used again move to the main queue, which evicts a key
    /// only once it went unused for a whole pass; a ghost list of recently
    /// evicted hashes readmits a returning key straight to main. A hit
    /// bumps a 2-bit counter under the shard's shared lock. Scan-resistant,
    /// and the best hit ratio of the three on skewed workloads.
    S3Fifo,
}

impl EvictionPolicy {
    /// Whether a hit takes the shard's shared lock (it writes only an
    /// atomic in the entry) rather than its exclusive one.
    pub(crate) fn shared_hits(self) -> bool {
        matches!(self, EvictionPolicy::Clock | EvictionPolicy::S3Fifo)
    }
}

/// One engine shard under the cache's policy, with or without expiry (a
/// variant of its own, so a cache without expiry runs code that has none).
pub(crate) enum PolicyShard<K, V> {
    Exact(Shard<K, V, Exact>),
    Clock(Shard<K, V, SecondChance>),
    S3Fifo(Shard<K, V, S3Fifo>),
    ExactExpiring(Shard<K, V, Exact, true>),
    ClockExpiring(Shard<K, V, SecondChance, true>),
    S3FifoExpiring(Shard<K, V, S3Fifo, true>),
}

/// Forwards a call to the shard of whichever policy this is.
macro_rules! dispatch {
    ($shard:expr, $s:ident => $call:expr) => {
        match $shard {
            PolicyShard::Exact($s) => $call,
            PolicyShard::Clock($s) => $call,
            PolicyShard::S3Fifo($s) => $call,
            PolicyShard::ExactExpiring($s) => $call,
            PolicyShard::ClockExpiring($s) => $call,
            PolicyShard::S3FifoExpiring($s) => $call,
        }
    };
}

/// `release_expired`'s removal: the key's entry, if it is (still) expired
/// at `now` (`K: Eq` runs first, before any change).
pub(super) fn take_if_expired<K, V, Q>(
    shard: &mut PolicyShard<K, V>,
    hash: u64,
    key: &Q,
    now: u64,
) -> Option<(K, V)>
where
    K: Borrow<Q>,
    Q: ?Sized + Eq,
{
    dispatch!(shard, s => s.remove_expired(hash, key, now))
}

impl<K, V> PolicyShard<K, V> {
    pub(crate) fn new(policy: EvictionPolicy, capacity: usize, expiry: Option<Expiry>) -> Self {
        let (c, e) = (capacity, expiry);
        match (policy, expiry.is_some()) {
            (EvictionPolicy::Exact, false) => Self::Exact(Shard::with_expiry(c, None)),
            (EvictionPolicy::Clock, false) => Self::Clock(Shard::with_expiry(c, None)),
            (EvictionPolicy::S3Fifo, false) => Self::S3Fifo(Shard::with_expiry(c, None)),
            (EvictionPolicy::Exact, true) => Self::ExactExpiring(Shard::with_expiry(c, e)),
            (EvictionPolicy::Clock, true) => Self::ClockExpiring(Shard::with_expiry(c, e)),
            (EvictionPolicy::S3Fifo, true) => Self::S3FifoExpiring(Shard::with_expiry(c, e)),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        dispatch!(self, s => s.len())
    }

    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        dispatch!(self, s => s.capacity())
    }

    pub(crate) fn contains<Q>(&self, hash: u64, key: &Q, now: u64) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        dispatch!(self, s => s.contains(hash, key, now))
    }

    /// A hit under the exclusive lock (any policy). `now` is called only
    /// when entries can expire.
    #[inline(always)]
    pub(crate) fn get<Q>(&mut self, hash: u64, key: &Q, now: impl FnOnce() -> u64) -> Lookup<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        match self {
            Self::Exact(s) => s.get(hash, key, 0),
            Self::Clock(s) => s.get(hash, key, 0),
            Self::S3Fifo(s) => s.get(hash, key, 0),
            Self::ExactExpiring(s) => s.get(hash, key, now()),
            Self::ClockExpiring(s) => s.get(hash, key, now()),
            Self::S3FifoExpiring(s) => s.get(hash, key, now()),
        }
    }

    /// A hit under the shared lock. Under `Exact` a use needs the exclusive
    /// lock, so the cache never calls this there (it would be a `peek`).
    /// `now` is called only when entries can expire.
    #[inline(always)]
    pub(crate) fn get_shared<Q>(&self, hash: u64, key: &Q, now: impl FnOnce() -> u64) -> Lookup<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        debug_assert!(
            !matches!(self, Self::Exact(_) | Self::ExactExpiring(_)),
            "larder: a shared-lock hit on an exact LRU shard"
        );
        match self {
            Self::Exact(s) => s.get_shared(hash, key, 0, false),
            Self::Clock(s) => s.get_shared(hash, key, 0, true),
            Self::S3Fifo(s) => s.get_shared(hash, key, 0, true),
            Self::ExactExpiring(s) => s.get_shared(hash, key, now(), false),
            Self::ClockExpiring(s) => s.get_shared(hash, key, now(), true),
            Self::S3FifoExpiring(s) => s.get_shared(hash, key, now(), true),
        }
    }

    pub(crate) fn peek<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        dispatch!(self, s => s.peek(hash, key, now))
    }

    /// Inserts the key's value of `weight` (at least 1) into `inserted`
    /// (which holds nothing yet), first releasing up to `sweep` expired
    /// entries, evicting until it fits (see [`Displaced`]). `now` is called
    /// only when entries can expire.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_into(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        now: impl FnOnce() -> u64,
        sweep: usize,
        inserted: &mut Displaced<K, V>,
    ) where
        K: Eq,
    {
        let out = inserted;
        match self {
            Self::Exact(s) => s.insert_into(hash, key, value, weight, 0, sweep, out),
            Self::Clock(s) => s.insert_into(hash, key, value, weight, 0, sweep, out),
            Self::S3Fifo(s) => s.insert_into(hash, key, value, weight, 0, sweep, out),
            Self::ExactExpiring(s) => s.insert_into(hash, key, value, weight, now(), sweep, out),
            Self::ClockExpiring(s) => s.insert_into(hash, key, value, weight, now(), sweep, out),
            Self::S3FifoExpiring(s) => s.insert_into(hash, key, value, weight, now(), sweep, out),
        }
    }

    /// See [`Shard::insert_unevicting`]. `now` is called only when entries
    /// can expire.
    #[inline(always)]
    pub(crate) fn insert_unevicting(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        now: impl FnOnce() -> u64,
        sweep: usize,
        swept: &mut Vec<(K, V)>,
    ) -> (u32, Option<(K, V, bool)>)
    where
        K: Eq,
    {
        match self {
            Self::Exact(s) => s.insert_unevicting(hash, key, value, weight, 0, 0, swept),
            Self::Clock(s) => s.insert_unevicting(hash, key, value, weight, 0, 0, swept),
            Self::S3Fifo(s) => s.insert_unevicting(hash, key, value, weight, 0, 0, swept),
            Self::ExactExpiring(s) => {
                s.insert_unevicting(hash, key, value, weight, now(), sweep, swept)
            }
            Self::ClockExpiring(s) => {
                s.insert_unevicting(hash, key, value, weight, now(), sweep, swept)
            }
            Self::S3FifoExpiring(s) => {
                s.insert_unevicting(hash, key, value, weight, now(), sweep, swept)
            }
        }
    }

    /// Releases up to `budget` expired entries into `out`.
    pub(crate) fn sweep(&mut self, now: u64, budget: usize, out: &mut Vec<(K, V)>) {
        dispatch!(self, s => s.sweep(now, budget, |entry| out.push(entry)))
    }

    /// Releases every expired entry into `out`.
    pub(crate) fn purge(&mut self, now: u64, out: &mut Vec<(K, V)>) {
        dispatch!(self, s => s.purge(now, |entry| out.push(entry)))
    }

    /// What a read that found the key's entry expired (under a lock it has
    /// since dropped) does under the write lock, on both faces: removes the
    /// key only if its entry is (still) expired at `now` (`K: Eq` runs
    /// first, before any change), then sweeps the shard as a write does;
    /// what expired goes into `out`.
    pub(crate) fn release_expired<Q>(&mut self, hash: u64, key: &Q, now: u64, out: &mut Vec<(K, V)>)
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        out.extend(take_expired(self, hash, key, now));
        self.sweep(now, SWEEP_BUDGET, out);
    }

    /// The sum of the entries' weights (`len` when unweighted).
    #[inline]
    pub(crate) fn weight(&self) -> u64 {
        dispatch!(self, s => s.weight())
    }

    /// Removes the key: its entry, and whether it had expired at `now`.
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Option<(K, V, bool)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        dispatch!(self, s => s.remove(hash, key, now))
    }

    /// Evicts the policy's next victim other than the entry at slot `kept`,
    /// which it follows (see [`Shard::evict_one`]).
    pub(crate) fn evict_one(&mut self, now: u64, kept: &mut Option<u32>) -> Option<(K, V, bool)> {
        dispatch!(self, s => s.evict_one(now, kept))
    }

    /// See [`Shard::size_for`](crate::cache::Shard::size_for).
    pub(crate) fn size_for(&mut self, entries: usize) {
        dispatch!(self, s => s.size_for(entries))
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn hashes(&self) -> Vec<u64> {
        dispatch!(self, s => s.hashes().collect())
    }

    pub(crate) fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<(K, V)>) {
        dispatch!(self, s => s.set_capacity(capacity, evicted))
    }

    #[cfg(loom)]
    pub(crate) fn evict_overflow(&mut self, evicted: &mut Vec<(K, V)>) {
        dispatch!(self, s => s.evict_overflow(evicted))
    }

    #[cfg(loom)]
    pub(crate) fn set_capacity_lazily(&mut self, capacity: usize) -> usize {
        dispatch!(self, s => s.set_capacity_lazily(capacity))
    }

    /// Empties the shard: the entries live at `now`, and those expired
    /// into `expired`.
    pub(crate) fn take_all(&mut self, now: u64, expired: &mut Vec<(K, V)>) -> Vec<(K, V)> {
        dispatch!(self, s => s.take_all(now, expired))
    }

    /// Calls `f` with each entry live at `now`, most recently used first
    /// (see [`EvictionPolicy`] for what that means under `Clock` and
    /// `S3Fifo`).
    pub(crate) fn for_each(&self, now: u64, f: impl FnMut(&K, &V)) {
        dispatch!(self, s => s.for_each(now, f))
    }

    /// Slots the slab has room for (tests of memory).
    #[cfg(test)]
    pub(crate) fn slab_room(&self) -> usize {
        dispatch!(self, s => s.room().0)
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_invariants(&self) {
        dispatch!(self, s => s.check_invariants())
    }
}
