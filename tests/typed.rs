//! Public-API tests of `TypedCache` and `AnyCache`: property tests against
//! std reference models (unbounded, and TTL with TTI), expiry on a manual
//! clock, panic safety, and writers racing inits. What every cache face
//! shares (single-flight init, init errors and panics, the bound, TTL and
//! TTI deadlines, statistics) is in `conformance.rs`.

#[path = "common/hasher.rs"]
mod hasher;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::thread;
use std::time::Duration;

use larder::{
    AnyCache, AnyCacheBuilder, BuildError, CacheStats, EvictionPolicy, ManualClock, SystemClock,
    TypedCache, TypedCacheBuilder,
};
use proptest::prelude::*;

use hasher::{Collide, TestState};

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn public_types_are_send_and_sync() {
    assert_send_sync::<TypedCache<String, Vec<u8>>>();
    assert_send_sync::<AnyCache<String>>();
    assert_send_sync::<CacheStats>();
    assert_send_sync::<ManualClock>();
    assert_send_sync::<SystemClock>();
    assert_send_sync::<BuildError>();
    assert_send::<TypedCacheBuilder<String, Vec<u8>>>();
    assert_send::<AnyCacheBuilder<String>>();
}

// ---------------------------------------------------------------------------
// Property tests against std models.

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    GetWith(u8),
    Insert(u8, u32),
    Invalidate(u8),
    GetOrInit(u8, u32),
    GetOrTryInitFails(u8),
    ContainsKey(u8),
    InvalidateAll,
    Advance(u8),
    PurgeExpired,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..12;
    prop_oneof![
        4 => key.clone().prop_map(Op::Get),
        2 => key.clone().prop_map(Op::GetWith),
        3 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => key.clone().prop_map(Op::Invalidate),
        4 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::GetOrInit(k, v)),
        1 => key.clone().prop_map(Op::GetOrTryInitFails),
        2 => key.prop_map(Op::ContainsKey),
        1 => Just(Op::InvalidateAll),
        3 => (0u8..5).prop_map(Op::Advance),
        1 => Just(Op::PurgeExpired),
    ]
}

/// A reference entry: value, stored at, last read at (as recorded).
#[derive(Debug, Clone, Copy)]
struct Entry {
    value: u32,
    created: u64,
    accessed: u64,
}

/// The std model of expiry: TTL and TTI in seconds, reads recorded with
/// the cache's documented resolution (tti / 64).
struct Model {
    map: HashMap<u8, Entry>,
    ttl: Option<u64>,
    tti: Option<u64>,
    now: u64,
}

const SECOND: u64 = 1_000_000_000;

impl Model {
    fn live(&self, e: &Entry) -> bool {
        !(self.ttl.is_some_and(|ttl| self.now - e.created >= ttl)
            || self.tti.is_some_and(|tti| self.now - e.accessed >= tti))
    }
    fn get(&mut self, k: u8) -> Option<u32> {
        let now = self.now;
        let resolution = self.tti.map_or(0, |tti| (tti / 64).max(1));
        match self.map.get(&k).copied() {
            Some(e) if self.live(&e) => {
                let e = self.map.get_mut(&k).unwrap();
                if now - e.accessed >= resolution {
                    e.accessed = now;
                }
                Some(e.value)
            }
            Some(_) => {
                self.map.remove(&k);
                None
            }
            None => None,
        }
    }
    fn insert(&mut self, k: u8, value: u32) -> Option<u32> {
        let old = self.map.get(&k).copied().filter(|e| self.live(e));
        let now = self.now;
        self.map.insert(
            k,
            Entry {
                value,
                created: now,
                accessed: now,
            },
        );
        old.map(|e| e.value)
    }
    fn live_len(&self) -> usize {
        self.map.values().filter(|e| self.live(e)).count()
    }
}

fn run_against_model(ops: Vec<Op>, ttl: Option<u64>, tti: Option<u64>, collide: Collide) {
    let clock = ManualClock::new();
    let mut builder = TypedCache::<u8, u32>::builder()
        .hasher(TestState::colliding(collide))
        .clock(clock.clone());
    if let Some(ttl) = ttl {
        builder = builder.time_to_live(Duration::from_nanos(ttl));
    }
    if let Some(tti) = tti {
        builder = builder.time_to_idle(Duration::from_nanos(tti));
    }
    let cache = builder.build().unwrap();
    let expires = ttl.is_some() || tti.is_some();
    let mut model = Model {
        map: HashMap::new(),
        ttl,
        tti,
        now: 0,
    };
    for op in ops {
        match op {
            Op::Get(k) => assert_eq!(cache.get(&k), model.get(k), "{op:?}"),
            Op::GetWith(k) => assert_eq!(cache.get_with(&k, |v| *v), model.get(k), "{op:?}"),
            Op::Insert(k, v) => {
                assert_eq!(cache.insert(k, v), model.insert(k, v), "{op:?}")
            }
            Op::Invalidate(k) => {
                let expected = model
                    .map
                    .remove(&k)
                    .filter(|e| model.live(e))
                    .map(|e| e.value);
                assert_eq!(cache.remove(&k), expected, "{op:?}");
            }
            Op::GetOrInit(k, v) => {
                let expected = match model.get(k) {
                    Some(found) => found,
                    None => {
                        model.insert(k, v);
                        v
                    }
                };
                assert_eq!(cache.get_or_init(&k, || v), expected, "{op:?}");
            }
            Op::GetOrTryInitFails(k) => {
                let expected = model.get(k).ok_or("refused");
                let got = cache
                    .get_or_try_init(&k, || Err::<u32, _>("refused"))
                    .map_err(|e| *e);
                assert_eq!(got, expected, "{op:?}");
            }
            Op::ContainsKey(k) => {
                let expected = model.map.get(&k).is_some_and(|e| model.live(e));
                assert_eq!(cache.contains_key(&k), expected, "{op:?}");
            }
            Op::InvalidateAll => {
                cache.clear();
                model.map.clear();
            }
            Op::Advance(seconds) => {
                clock.advance(Duration::from_nanos(u64::from(seconds) * SECOND));
                model.now += u64::from(seconds) * SECOND;
            }
            Op::PurgeExpired => {
                cache.purge_expired();
                let now_live: Vec<u8> = model
                    .map
                    .iter()
                    .filter(|(_, e)| model.live(e))
                    .map(|(k, _)| *k)
                    .collect();
                model.map.retain(|k, _| now_live.contains(k));
                assert_eq!(cache.len(), model.live_len());
            }
        }
        if !expires {
            assert_eq!(cache.len(), model.map.len());
        }
        assert!(cache.len() >= model.live_len());
        cache.check_invariants();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn matches_hashmap_without_expiry(ops in prop::collection::vec(op(), 1..80)) {
        run_against_model(ops, None, None, Collide::Not);
    }

    /// The same with keys whose hashes collide (all one hash, or two).
    #[test]
    fn matches_hashmap_when_hashes_collide(
        two in any::<bool>(),
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let _watchdog = watchdog::arm(Duration::from_secs(60));
        let collide = if two { Collide::Two } else { Collide::All };
        run_against_model(ops, None, None, collide);
    }

    #[test]
    fn matches_model_with_ttl_and_tti(
        ops in prop::collection::vec(op(), 1..80),
        ttl in prop::option::of(1u64..12),
        tti in prop::option::of(1u64..6),
    ) {
        // TTI a multiple of 64 s so whole-second steps are whole resolution
        // steps; TTL in whole seconds.
        let (ttl, tti) = (ttl.map(|s| s * SECOND), tti.map(|s| s * 64 * SECOND / 16));
        run_against_model(ops, ttl, tti, Collide::Not);
    }
}

// ---------------------------------------------------------------------------
// Expiry on the injected clock: no sleeps.

fn clocked(
    builder: TypedCacheBuilder<&'static str, u32>,
) -> (TypedCache<&'static str, u32>, ManualClock) {
    let clock = ManualClock::new();
    (builder.clock(clock.clone()).build().unwrap(), clock)
}

const S: Duration = Duration::from_secs(1);

#[test]
fn ttl_and_tti_compose() {
    let (cache, clock) = clocked(
        TypedCache::builder()
            .time_to_live(100 * S)
            .time_to_idle(64 * S),
    );
    cache.insert("read", 1);
    cache.insert("idle", 2);
    for _ in 0..9 {
        clock.advance(10 * S);
        cache.get("read");
    }
    // 90 s: "read" is kept alive by reads, "idle" idled out at 64 s.
    assert!(cache.contains_key("read"));
    assert!(!cache.contains_key("idle"));
    clock.advance(10 * S);
    // 100 s: the time to live ends "read" despite the reads.
    assert!(!cache.contains_key("read"));
}

#[test]
fn max_entries_with_expiry_keeps_the_bound_and_the_new_entry() {
    let (cache, clock) = clocked(TypedCache::builder().time_to_live(10 * S).capacity(2));
    cache.insert("old", 1);
    clock.advance(9 * S);
    cache.insert("young", 2);
    cache.get("old");
    clock.advance(2 * S); // "old" expired (11 s), "young" alive (2 s)
    cache.insert("new", 3);
    assert!(cache.contains_key("new"));
    assert!(!cache.contains_key("old"));
    assert!(cache.len() <= 2);
    cache.purge_expired();
    // Left: "new", and "young" unless the eviction took it (eviction looks
    // for expired entries in the new key's shard, not everywhere).
    let live = 1 + usize::from(cache.contains_key("young"));
    assert_eq!(cache.len(), live);
    cache.check_invariants();
}

#[test]
fn builder_rejects_zero_settings() {
    let zero = Duration::ZERO;
    let ttl = TypedCache::<u8, u8>::builder().time_to_live(zero).build();
    let tti = TypedCache::<u8, u8>::builder().time_to_idle(zero).build();
    let max = TypedCache::<u8, u8>::builder().capacity(0).build();
    assert!(matches!(ttl.unwrap_err(), BuildError::ZeroTimeToLive));
    assert!(matches!(tti.unwrap_err(), BuildError::ZeroTimeToIdle));
    assert!(matches!(max.unwrap_err(), BuildError::ZeroCapacity));
    let err: Box<dyn std::error::Error> = Box::new(BuildError::ZeroCapacity);
    assert!(err.to_string().contains("capacity"));
}

// ---------------------------------------------------------------------------
// Panic safety.

#[test]
fn panicking_hasher_key_leaves_the_cache_usable() {
    #[derive(Clone, PartialEq, Eq)]
    struct Touchy(u32);
    impl std::hash::Hash for Touchy {
        fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
            assert!(self.0 != 13, "unlucky key");
            self.0.hash(state);
        }
    }
    let cache: TypedCache<Touchy, u32> = TypedCache::new();
    cache.insert(Touchy(1), 1);
    for call in 0..3 {
        let outcome = catch_unwind(AssertUnwindSafe(|| match call {
            0 => drop(cache.get_or_init(&Touchy(13), || 13)),
            1 => drop(cache.insert(Touchy(13), 13)),
            _ => drop(cache.get(&Touchy(13))),
        }));
        assert!(outcome.is_err());
    }
    cache.check_invariants();
    assert_eq!(cache.get(&Touchy(1)), Some(1));
    assert_eq!(cache.len(), 1);
}

/// A value whose `Drop` reads the cache: it would deadlock if a removed
/// value were dropped under a shard lock.
#[derive(Clone)]
struct ReadsCacheOnDrop(u32);

static DROP_CACHE: OnceLock<TypedCache<u32, ReadsCacheOnDrop>> = OnceLock::new();
static DROPS: AtomicUsize = AtomicUsize::new(0);

impl Drop for ReadsCacheOnDrop {
    fn drop(&mut self) {
        if let Some(cache) = DROP_CACHE.get() {
            let _ = cache.get_with(&self.0, |_| ());
            let _ = cache.contains_key(&(self.0 + 1));
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn removed_values_are_dropped_with_no_lock_held() {
    let cache = DROP_CACHE.get_or_init(|| TypedCache::builder().capacity(4).build().unwrap());
    for k in 0..10 {
        cache.insert(k, ReadsCacheOnDrop(k)); // evictions drop values
    }
    cache.insert(9, ReadsCacheOnDrop(90)); // replaced value dropped by us
    cache.remove(&9);
    cache.clear();
    assert!(DROPS.load(Ordering::SeqCst) >= 10);
    cache.check_invariants();
}

// ---------------------------------------------------------------------------
// Under contention: more threads than cores.

#[test]
fn mixed_writers_and_inits_keep_invariants() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const THREADS: usize = 8;
    let cache = TypedCache::<u32, u32>::builder()
        .capacity(20)
        .build()
        .unwrap();
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (cache, barrier) = (&cache, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..2_000u32 {
                    let k = (i * 7 + t as u32) % 40;
                    match i % 5 {
                        0 => drop(cache.insert(k, k)),
                        1 => drop(cache.remove(&k)),
                        _ => assert_eq!(cache.get_or_init(&k, || k), k),
                    }
                }
            });
        }
    });
    cache.check_invariants();
    assert!(cache.len() <= 20);
}

// ---------------------------------------------------------------------------
// AnyCache.

#[test]
fn any_cache_types_under_one_key_never_collide() {
    let cache: AnyCache<String> = AnyCache::new();
    let n: Arc<u32> = cache.get_or_init(&"k".to_string(), || 1);
    let s: Arc<String> = cache.get_or_init(&"k".to_string(), || "one".to_string());
    let v: Arc<Vec<u8>> = cache.get_or_init(&"k".to_string(), || vec![1]);
    assert_eq!((*n, s.as_str(), v.as_slice()), (1, "one", &[1u8][..]));
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.get::<u32, _>("k").as_deref(), Some(&1));
    assert_eq!(cache.get::<u64, _>("k"), None);
    assert_eq!(
        cache
            .remove::<String, _>("k")
            .as_deref()
            .map(String::as_str),
        Some("one")
    );
    assert!(cache.contains_key::<u32, _>("k"));
    assert!(!cache.contains_key::<String, _>("k"));
    assert_eq!(cache.insert("k".to_string(), 2_u32).as_deref(), Some(&1));
    cache.check_invariants();
}

#[test]
fn any_cache_exactly_one_init_per_key_and_type() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const THREADS: usize = 8;
    let cache: AnyCache<u32> = AnyCache::new();
    let inits = AtomicUsize::new(0);
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                for k in 0..16u32 {
                    let a = cache.get_or_init(&k, || {
                        inits.fetch_add(1, Ordering::SeqCst);
                        k
                    });
                    let b = cache.get_or_init(&k, || {
                        inits.fetch_add(1, Ordering::SeqCst);
                        u64::from(k) * 2
                    });
                    assert_eq!((*a, *b), (k, u64::from(k) * 2));
                }
            });
        }
    });
    assert_eq!(inits.load(Ordering::SeqCst), 32);
    assert_eq!(cache.len(), 32);
    assert_eq!(cache.stats().inits, 32);
    cache.check_invariants();
}

#[test]
fn stats_are_exact_with_more_threads_than_owned_stripes() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    // 40 live threads: more than the 32 that own a counter stripe, so some
    // share the atomic fallback stripe; no count may be lost either way.
    const THREADS: usize = 40;
    const CALLS: u64 = 500;
    let cache: TypedCache<u64, u64> = TypedCache::new();
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS as u64 {
            let (cache, barrier) = (&cache, &barrier);
            s.spawn(move || {
                barrier.wait(); // all alive at once
                for i in 0..CALLS {
                    assert_eq!(cache.get_or_init(&(i % 10), || i % 10), i % 10);
                    // The three read forms, all counted in the same stripes.
                    match i % 3 {
                        0 => assert_eq!(cache.get(&(100 + t)), None),
                        1 => assert_eq!(cache.get_with(&(100 + t), |v| *v), None),
                        _ => assert_eq!(cache.get_with(&(i % 10), |v| *v), Some(i % 10)),
                    }
                }
            });
        }
    });
    let stats = cache.stats();
    let calls = THREADS as u64 * CALLS;
    assert_eq!(stats.hits + stats.misses, 2 * calls);
    assert_eq!(stats.inits, 10);
    // The gets of absent keys (two calls in three) miss; the get_with
    // of a key just initialized (one in three) hits.
    let absent = THREADS as u64 * (CALLS - CALLS / 3);
    let hits_of_get_with = THREADS as u64 * (CALLS / 3);
    assert!(
        stats.misses >= absent,
        "every get of an absent key is a miss: {stats:?}"
    );
    assert!(stats.hits >= hits_of_get_with, "{stats:?}");
}

/// A value whose `Drop` panics when it is the chosen one.
#[derive(Clone)]
struct PanicsOnDrop(u32);

static PANIC_ON_DROP_OF: AtomicUsize = AtomicUsize::new(usize::MAX);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if self.0 as usize == PANIC_ON_DROP_OF.load(Ordering::SeqCst) {
            panic!("drop of {} panics", self.0);
        }
    }
}

#[test]
fn invalidate_all_empties_every_shard_before_a_drop_panics() {
    let cache: TypedCache<u32, PanicsOnDrop> = TypedCache::new();
    for k in 0..512 {
        cache.insert(k, PanicsOnDrop(k));
    }
    // One value in the middle of the key space panics when dropped.
    PANIC_ON_DROP_OF.store(200, Ordering::SeqCst);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cache.clear();
    }));
    PANIC_ON_DROP_OF.store(usize::MAX, Ordering::SeqCst);
    assert!(outcome.is_err(), "the panicking Drop must reach the caller");
    // Every shard was emptied before any value was dropped.
    assert_eq!(cache.len(), 0);
    assert!((0..512).all(|k| !cache.contains_key(&k)));
    cache.check_invariants();
    // And the cache still works.
    cache.insert(7, PanicsOnDrop(7));
    assert_eq!(cache.get(&7).map(|v| v.0), Some(7));
}

// ---------------------------------------------------------------------------
// the closure forms of the hit path

#[test]
fn get_with_visits_in_place_and_counts_like_get() {
    let cache: TypedCache<&str, Arc<String>> = TypedCache::new();
    let stored = cache.get_or_init(&"k", || Arc::new("hello".to_string()));
    assert_eq!(cache.get_with("k", |v| Arc::ptr_eq(v, &stored)), Some(true));
    // No clone: only `stored` and the cache hold the `Arc` during the visit.
    assert_eq!(cache.get_with("k", |_| Arc::strong_count(&stored)), Some(2));
    assert_eq!(cache.get("k").as_deref().map(String::as_str), Some("hello"));
    assert_eq!(cache.get_with("missing", |v| v.len()), None);
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses, stats.inits), (3, 2, 1));
}

/// A panic in the closure of `get_with` (or in `V::clone` of `get`)
/// runs after the lookup: the hit stays counted, the cache consistent, and
/// the shard's read lock is released (a write to the same key from another
/// thread completes; the watchdog fails the test if it hangs).
#[test]
fn a_panicking_closure_leaves_the_cache_consistent_and_unlocked() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);

    #[derive(Debug)]
    struct CloneBomb(u32);
    impl Clone for CloneBomb {
        fn clone(&self) -> Self {
            panic!("clone bomb {}", self.0)
        }
    }

    let cache: TypedCache<u32, CloneBomb> = TypedCache::builder().capacity(4).build().unwrap();
    cache.insert(1, CloneBomb(1));
    let visit = catch_unwind(AssertUnwindSafe(|| {
        cache.get_with(&1, |_| -> u32 { panic!("visitor panics") })
    }));
    assert!(visit.is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| cache.get(&1))).is_err());
    cache.check_invariants();
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (2, 0));
    thread::scope(|s| {
        s.spawn(|| {
            cache.insert(1, CloneBomb(10));
            assert_eq!(cache.remove(&1).map(|v| v.0), Some(10));
        });
    });
    cache.check_invariants();
    assert!(cache.is_empty());
}

/// Every policy, on both faces: the bound holds, the entry just stored is
/// kept, and a read entry outlives unread ones under the shared-lock
/// policies (one read before the next store). Exact LRU keeps the most
/// recently read.
#[test]
fn each_policy_keeps_the_bound_and_the_entry_just_stored() {
    for policy in [
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
        EvictionPolicy::Exact,
    ] {
        let typed = TypedCache::<u32, u32>::builder()
            .capacity(8)
            .policy(policy)
            .build()
            .unwrap();
        let any = AnyCache::<u32>::builder()
            .capacity(8)
            .policy(policy)
            .build()
            .unwrap();
        for k in 0..200 {
            assert_eq!(typed.get_or_init(&k, || k), k);
            assert_eq!(*any.get_or_init(&k, || u64::from(k)), u64::from(k));
            assert!(typed.contains_key(&k), "{policy:?}: {k} not kept");
            assert!(any.get::<u64, _>(&k).is_some(), "{policy:?}: {k} not kept");
            assert!(typed.len() <= 8 && any.len() <= 8, "{policy:?}");
            typed.check_invariants();
            any.check_invariants();
        }
        assert_eq!(typed.stats().evictions, 192, "{policy:?}");
    }
}

/// A bounded cache gets one shard per 64 entries, between 1 and 16; an
/// unbounded one 16; `shards(n)` sets any count from 1 (more than the
/// capacity too: the bound is global), and 0 or too many fail the build.
#[test]
fn shard_counts_follow_the_capacity_unless_set() {
    let typed = |capacity: Option<usize>, shards: Option<usize>| {
        let mut builder = TypedCache::<u32, u32>::builder();
        if let Some(capacity) = capacity {
            builder = builder.capacity(capacity);
        }
        if let Some(shards) = shards {
            builder = builder.shards(shards);
        }
        builder.build().map(|cache| cache.shard_count())
    };
    assert_eq!(typed(None, None).unwrap(), 16);
    assert_eq!(typed(Some(16), None).unwrap(), 1);
    assert_eq!(typed(Some(256), None).unwrap(), 4);
    assert_eq!(typed(Some(1_000), None).unwrap(), 15);
    assert_eq!(typed(Some(100_000), None).unwrap(), 16);
    assert_eq!(typed(Some(1), Some(16)).unwrap(), 16);
    assert_eq!(typed(None, Some(3)).unwrap(), 3);
    assert!(matches!(typed(None, Some(0)), Err(BuildError::ZeroShards)));
    assert!(matches!(
        typed(None, Some((1 << 16) + 1)),
        Err(BuildError::TooManyShards { .. })
    ));
    let any = AnyCache::<u32>::builder().capacity(128).build().unwrap();
    assert_eq!(any.shard_count(), 2);
    let any = AnyCache::<u32>::builder().shards(5).build().unwrap();
    assert_eq!(any.shard_count(), 5);
    assert!(matches!(
        AnyCache::<u32>::builder().shards(0).build(),
        Err(BuildError::ZeroShards)
    ));
}

/// A cache of one entry over 16 shards holds at most one entry, and the
/// last key stored, whichever shard it lands in.
#[test]
fn one_entry_over_many_shards_keeps_the_last_key() {
    let cache = TypedCache::<u32, u32>::builder()
        .capacity(1)
        .shards(16)
        .build()
        .unwrap();
    for key in 0..200 {
        cache.insert(key, key);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&key), Some(key));
    }
    cache.check_invariants();
}

/// Resizes racing writers and inits: every inserted value is either still
/// cached or heard by the listener exactly once (an init's value too, when
/// it was cached: a write landing during an init leaves it uncached), the
/// totals stay in step with the shards, and once the writers stop the
/// cache is within the last capacity set.
#[test]
fn resizes_race_writers_and_keep_the_bound() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    let cache: TypedCache<u32, u32> = TypedCache::builder()
        .capacity(256)
        .eviction_listener(move |_, value, _| log.lock().unwrap().push(value))
        .build()
        .unwrap();
    let barrier = Barrier::new(3);
    // Inserted values are even, initialized ones odd.
    let (inserted, initialized) = thread::scope(|s| {
        let writers: Vec<_> = (0..2u32)
            .map(|t| {
                let (cache, barrier) = (&cache, &barrier);
                s.spawn(move || {
                    let (mut inserted, mut initialized) = (Vec::new(), Vec::new());
                    barrier.wait();
                    for i in 0..20_000u32 {
                        let (k, v) = ((i * 7 + t * 13) % 1_024, t * 100_000 + i);
                        if i % 2 == 0 {
                            cache.insert(k, v);
                            inserted.push(v);
                        } else {
                            cache.get_or_init(&k, || {
                                initialized.push(v);
                                v
                            });
                        }
                    }
                    (inserted, initialized)
                })
            })
            .collect();
        barrier.wait();
        for round in 0..200usize {
            cache.resize(16 + (round * 37) % 300).unwrap();
        }
        cache.resize(40).unwrap();
        let (mut inserted, mut initialized) = (Vec::new(), Vec::new());
        for writer in writers {
            let (a, b) = writer.join().unwrap();
            inserted.extend(a);
            initialized.extend(b);
        }
        (inserted, initialized)
    });
    let stats = cache.stats();
    assert!(
        stats.len <= 40,
        "{} entries over a capacity of 40",
        stats.len
    );
    assert_eq!(stats.capacity, Some(40));
    let mut accounted = heard.lock().unwrap().clone();
    accounted.extend(cache.to_vec().into_iter().map(|(_, v)| v));
    let (mut even, odd): (Vec<u32>, Vec<u32>) = accounted.into_iter().partition(|v| v % 2 == 0);
    even.sort_unstable();
    let mut inserted = inserted;
    inserted.sort_unstable();
    assert!(
        even == inserted,
        "{} inserted values accounted for, of {}",
        even.len(),
        inserted.len()
    );
    let mut odd_unique = odd.clone();
    odd_unique.sort_unstable();
    odd_unique.dedup();
    assert_eq!(
        odd_unique.len(),
        odd.len(),
        "an initialized value heard twice"
    );
    let mut initialized = initialized;
    initialized.sort_unstable();
    assert!(
        odd.iter().all(|v| initialized.binary_search(v).is_ok()),
        "a value no init made"
    );
    cache.check_invariants();
}
