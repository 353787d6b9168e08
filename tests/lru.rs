//! Public-API tests of `LruCache`: a proptest against a `VecDeque` LRU
//! model, API details, panic safety (`lru/panics.rs`) and the closure forms
//! of the hit path
//! (hit ratios are in `lru_hit_ratio.rs`, stress tests in `lru_stress.rs`;
//! what every cache face shares, such as loads, their errors and panics,
//! the bound and `resize`, in `conformance.rs`).

#[path = "common/hasher.rs"]
mod hasher;
#[path = "lru/panics.rs"]
mod panics;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use larder::{
    BuildError, CacheStats, EvictionPolicy, LoadingLruCache, LruCache, LruCacheBuilder,
    RemovalCause,
};
use proptest::prelude::*;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn public_types_are_send_and_sync() {
    assert_send_sync::<LruCache<String, Vec<u8>>>();
    assert_send_sync::<LruCacheBuilder<String, Vec<u8>>>();
    assert_send_sync::<LoadingLruCache<String, u32>>();
    assert_send_sync::<LoadingLruCache<String, u32, std::io::Error>>();
    assert_send_sync::<CacheStats>();
    assert_send_sync::<BuildError>();
    assert_send_sync::<EvictionPolicy>();
    assert_send_sync::<LruCache<String, Vec<u8>>>();
}

fn policy() -> impl Strategy<Value = EvictionPolicy> {
    prop_oneof![
        Just(EvictionPolicy::Exact),
        Just(EvictionPolicy::Clock),
        Just(EvictionPolicy::S3Fifo)
    ]
}

// ---------------------------------------------------------------------------
// proptest against a VecDeque model (one shard: the cache is exact global LRU)

/// A trivially correct LRU: front = most recently used.
#[derive(Default)]
struct Model {
    entries: VecDeque<(u8, u16)>,
    capacity: usize,
    stats: CacheStats,
    /// What the listener should have seen, in order.
    removed: Vec<(u8, u16, RemovalCause)>,
}

impl Model {
    fn position(&self, key: u8) -> Option<usize> {
        self.entries.iter().position(|(k, _)| *k == key)
    }
    fn get(&mut self, key: u8) -> Option<u16> {
        match self.position(key) {
            Some(at) => {
                let entry = self.entries.remove(at).unwrap();
                self.entries.push_front(entry);
                self.stats.hits += 1;
                Some(entry.1)
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }
    fn insert(&mut self, key: u8, value: u16) -> Option<u16> {
        self.stats.inserts += 1;
        let old = self
            .position(key)
            .map(|at| self.entries.remove(at).unwrap().1);
        if let Some(old) = old {
            self.removed.push((key, old, RemovalCause::Replaced));
        }
        if old.is_none() && self.entries.len() == self.capacity {
            let (k, v) = self.entries.pop_back().unwrap();
            self.removed.push((k, v, RemovalCause::Evicted));
            self.stats.evictions += 1;
        }
        self.entries.push_front((key, value));
        old
    }
    fn shrink(&mut self) {
        while self.entries.len() > self.capacity {
            let (k, v) = self.entries.pop_back().unwrap();
            self.removed.push((k, v, RemovalCause::Evicted));
            self.stats.evictions += 1;
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    GetWith(u8),
    Peek(u8),
    PeekWith(u8),
    Contains(u8),
    Insert(u8, u16),
    Remove(u8),
    Resize(usize),
    Clear,
    Load(u8, u16),
    FailLoad(u8),
    ResetStats,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..20).prop_map(Op::Get),
        3 => (0u8..20).prop_map(Op::GetWith),
        1 => (0u8..20).prop_map(Op::Peek),
        1 => (0u8..20).prop_map(Op::PeekWith),
        1 => (0u8..20).prop_map(Op::Contains),
        6 => (0u8..20, any::<u16>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => (0u8..20).prop_map(Op::Remove),
        1 => (1usize..10).prop_map(Op::Resize),
        1 => Just(Op::Clear),
        2 => (0u8..20, any::<u16>()).prop_map(|(k, v)| Op::Load(k, v)),
        1 => (0u8..20).prop_map(Op::FailLoad),
        1 => Just(Op::ResetStats),
    ]
}

/// One shard against the `VecDeque` model: every answer, the order, the
/// statistics and the listener's events agree after every operation.
fn one_shard_against_the_model<S: BuildHasher>(
    hasher: S,
    capacity: usize,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let evicted = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&evicted);
    let cache = LruCache::builder()
        .capacity(capacity)
        .shards(1)
        .hasher(hasher)
        .eviction_listener(move |k: u8, v: u16, cause: RemovalCause| {
            log.lock().unwrap().push((k, v, cause));
        })
        .build()
        .unwrap();
    let mut model = Model {
        capacity,
        ..Model::default()
    };
    for op in ops {
        match op {
            Op::Get(k) => prop_assert_eq!(cache.get(&k), model.get(k)),
            Op::GetWith(k) => prop_assert_eq!(cache.get_with(&k, |v| *v), model.get(k)),
            Op::Peek(k) => {
                let expected = model.position(k).map(|at| model.entries[at].1);
                prop_assert_eq!(cache.peek(&k), expected);
            }
            Op::PeekWith(k) => {
                let expected = model.position(k).map(|at| model.entries[at].1);
                prop_assert_eq!(cache.peek_with(&k, |v| *v), expected);
            }
            Op::Contains(k) => prop_assert_eq!(cache.contains_key(&k), model.position(k).is_some()),
            Op::Insert(k, v) => prop_assert_eq!(cache.insert(k, v), model.insert(k, v)),
            Op::Remove(k) => {
                let expected = model
                    .position(k)
                    .map(|at| model.entries.remove(at).unwrap().1);
                if let Some(v) = expected {
                    model.removed.push((k, v, RemovalCause::Removed));
                }
                prop_assert_eq!(cache.remove(&k), expected);
            }
            Op::Resize(c) => {
                cache.resize(c).unwrap();
                model.capacity = c;
                model.shrink();
            }
            Op::Clear => {
                let logged = evicted.lock().unwrap().len();
                cache.clear();
                // The shard hands its entries over in no set order.
                evicted.lock().unwrap()[logged..].sort_unstable_by_key(|&(k, v, _)| (k, v));
                let mut cleared: Vec<_> = model.entries.drain(..).collect();
                cleared.sort_unstable();
                model.removed.extend(
                    cleared
                        .into_iter()
                        .map(|(k, v)| (k, v, RemovalCause::Cleared)),
                );
            }
            Op::Load(k, v) => {
                let got = cache.get_or_init(&k, || v);
                let expected = match model.get(k) {
                    Some(old) => old,
                    None => {
                        model.insert(k, v);
                        model.stats.inits += 1;
                        v
                    }
                };
                prop_assert_eq!(got, expected);
            }
            Op::FailLoad(k) => {
                let got = cache.get_or_try_init(&k, || Err::<u16, _>("down"));
                match model.get(k) {
                    Some(old) => prop_assert_eq!(got.ok(), Some(old)),
                    None => {
                        model.stats.inits += 1;
                        model.stats.init_failures += 1;
                        prop_assert_eq!(*got.unwrap_err(), "down");
                    }
                }
            }
            Op::ResetStats => {
                cache.reset_stats();
                model.stats = CacheStats::default();
            }
        }
        let order: Vec<_> = cache.to_vec().into_iter().collect();
        let expected: Vec<_> = model.entries.iter().copied().collect();
        prop_assert_eq!(order, expected);
        let mut stats = model.stats;
        stats.len = model.entries.len();
        stats.capacity = Some(model.capacity);
        prop_assert_eq!(cache.stats(), stats);
        prop_assert_eq!(&*evicted.lock().unwrap(), &model.removed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn one_shard_matches_the_model(capacity in 1usize..8, ops in prop::collection::vec(op(), 1..150)) {
        one_shard_against_the_model(ahash::RandomState::new(), capacity, ops)?;
    }

    /// The same with keys whose hashes collide: every key hashes to 0, or
    /// to one of two hashes (exact LRU orders by use, never by hash).
    #[test]
    fn one_shard_matches_the_model_when_hashes_collide(
        two in any::<bool>(),
        capacity in 1usize..8,
        ops in prop::collection::vec(op(), 1..150),
    ) {
        let _watchdog = watchdog::arm(std::time::Duration::from_secs(60));
        let collide = if two { hasher::Collide::Two } else { hasher::Collide::All };
        one_shard_against_the_model(hasher::TestState::colliding(collide), capacity, ops)?;
    }

    #[test]
    fn many_shards_stay_within_bound(
        capacity in 4usize..40,
        policy in policy(),
        collide in prop_oneof![
            Just(hasher::Collide::Not),
            Just(hasher::Collide::All),
            Just(hasher::Collide::Two),
        ],
        ops in prop::collection::vec(op(), 1..150),
    ) {
        let _watchdog = watchdog::arm(std::time::Duration::from_secs(60));
        let cache = LruCache::builder()
            .capacity(capacity)
            .shards(4)
            .policy(policy)
            .hasher(hasher::TestState::colliding(collide))
            .build()
            .unwrap();
        let mut gets = 0;
        for op in ops {
            match op {
                Op::Get(k) => { gets += 1; cache.get(&k); }
                Op::GetWith(k) => {
                    gets += 1;
                    let found = cache.get_with(&k, |v| *v);
                    prop_assert_eq!(found, cache.peek_with(&k, |v| *v));
                }
                Op::Insert(k, v) => {
                    cache.insert(k, v);
                    // The entry just inserted is present (under either
                    // policy, a shard never evicts the entry it inserts).
                    prop_assert_eq!(cache.peek(&k), Some(v));
                }
                Op::Remove(k) => { cache.remove(&k); prop_assert!(!cache.contains_key(&k)); }
                Op::Resize(c) => { cache.resize(c.max(4)).unwrap(); }
                Op::ResetStats => { cache.reset_stats(); gets = 0; }
                _ => {}
            }
            let stats = cache.stats();
            prop_assert!(Some(stats.len) <= stats.capacity);
            prop_assert_eq!(stats.len, cache.to_vec().into_iter().len());
            prop_assert_eq!(stats.hits + stats.misses, gets);
        }
    }
}

// ---------------------------------------------------------------------------
// API details

#[test]
fn builder_rejects_nonsense() {
    assert!(matches!(
        LruCache::<u8, u8>::builder()
            .capacity(0)
            .build()
            .unwrap_err(),
        BuildError::ZeroCapacity
    ));
    assert!(matches!(
        LruCache::<u8, u8>::builder()
            .capacity(4)
            .shards(0)
            .build()
            .unwrap_err(),
        BuildError::ZeroShards
    ));
    assert!(matches!(
        LruCache::<u8, u8>::builder()
            .capacity(3)
            .shards(4)
            .build()
            .unwrap_err(),
        BuildError::MoreShardsThanCapacity {
            shards: 4,
            capacity: 3
        }
    ));
    let err = LruCache::<u8, u8>::builder()
        .capacity(0)
        .build_with_loader(|k: &u8| *k)
        .unwrap_err();
    assert!(err.to_string().contains("at least 1"));
    let cache = LruCache::<u8, u8>::builder()
        .capacity(4)
        .shards(4)
        .build()
        .unwrap();
    assert!(cache.resize(3).is_err());
    assert_eq!(cache.capacity(), 4);
}

#[test]
#[should_panic(expected = "capacity must be at least 1")]
fn new_with_zero_capacity_panics() {
    let _ = LruCache::<u8, u8>::new(0);
}

#[test]
fn loading_cache_loads_once_and_counts() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let cache = LruCache::with_loader(4, move |k: &u32| {
        counted.fetch_add(1, Ordering::SeqCst);
        k * 2
    });
    assert_eq!(cache.get_or_load(&5), 10);
    assert_eq!(cache.get_or_load(&5), 10);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let stats = cache.cache().stats();
    assert_eq!(
        (stats.hits, stats.misses, stats.inits, stats.inserts),
        (1, 1, 1, 1)
    );
    assert_eq!(cache.cache().get(&5), Some(10)); // Deref to the cache
}

#[test]
fn reentrant_load_of_the_same_key_panics_instead_of_hanging() {
    let cache = LruCache::<u32, u32>::new(4);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        cache.get_or_init(&1, || cache.get_or_init(&1, || 1))
    }));
    let message = outcome.unwrap_err();
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("re-entrant load"), "got {text:?}");
    // Nothing is left stuck: the key loads normally now.
    assert_eq!(cache.get_or_init(&1, || 7), 7);
    // A loader may load *other* keys of the same cache.
    assert_eq!(cache.get_or_init(&2, || cache.get_or_init(&3, || 3) + 1), 4);
}

// ---------------------------------------------------------------------------
// the closure forms of the hit path

#[test]
fn get_with_visits_in_place_and_counts_like_get() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let cache = LruCache::builder()
            .capacity(4)
            .shards(1)
            .policy(policy)
            .build()
            .unwrap();
        let value = String::from("hello");
        let stored = value.as_ptr();
        cache.insert("k", value);
        // The closure sees the stored value itself, not a copy.
        let same = cache.get_with("k", |v: &String| v.as_ptr() == stored);
        assert_eq!(same, Some(true), "{policy:?}");
        // `get` hands out a copy.
        let copy = cache.get("k").unwrap();
        assert_eq!((copy.as_str(), copy.as_ptr() == stored), ("hello", false));
        assert_eq!(cache.get_with("missing", |v| v.len()), None);
        assert_eq!(cache.peek_with("k", String::len), Some(5));
        assert_eq!(cache.peek_with("missing", String::len), None);
        let stats = cache.stats();
        // peek_with is not counted; the two gets hit, one missed.
        assert_eq!((stats.hits, stats.misses), (2, 1), "{policy:?}");
    }
}

#[test]
fn get_with_makes_the_entry_most_recent_and_peek_with_does_not() {
    let cache = LruCache::builder().capacity(2).shards(1).build().unwrap();
    cache.insert(1, 10);
    cache.insert(2, 20);
    assert_eq!(cache.peek_with(&1, |v| *v), Some(10)); // 1 stays least recent
    assert_eq!(cache.get_with(&2, |v| *v), Some(20));
    cache.insert(3, 30);
    assert!(!cache.contains_key(&1));
    assert_eq!(cache.get_with(&2, |v| *v), Some(20)); // 2 is now the most recent
    cache.insert(4, 40);
    assert!(cache.contains_key(&2) && !cache.contains_key(&3));
}

/// A panic in the closure of `get_with` or `peek_with` (or in `V::clone`
/// of `get`) happens after the lookup is complete: the cache stays
/// consistent, the hit stays counted, and the shard lock is released (a
/// write to the same shard from another thread completes; the watchdog
/// fails the test if it hangs).
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

    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let cache = LruCache::builder()
            .capacity(2)
            .shards(1)
            .policy(policy)
            .build()
            .unwrap();
        cache.insert(1, CloneBomb(1));
        cache.insert(2, CloneBomb(2));
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            cache.get_with(&1, |_| -> u32 { panic!("visitor panics") })
        }));
        assert!(panicked.is_err());
        assert!(catch_unwind(AssertUnwindSafe(|| cache.get(&2))).is_err());
        assert!(
            catch_unwind(AssertUnwindSafe(|| cache.peek_with(&1, |_| panic!("peek")))).is_err()
        );
        cache.check_invariants();
        let stats = cache.stats();
        assert_eq!(
            (stats.hits, stats.misses, stats.len),
            (2, 0, 2),
            "{policy:?}"
        );
        // The one shard's lock was released by the unwinding: another
        // thread writes to it.
        std::thread::scope(|s| {
            s.spawn(|| {
                cache.insert(3, CloneBomb(3));
                assert_eq!(cache.get_with(&3, |v| v.0), Some(3));
            });
        });
        cache.check_invariants();
        assert_eq!(cache.len(), 2);
        if policy == EvictionPolicy::Exact {
            // Both panicking gets still made their entry the most recent,
            // 2 after 1; inserting 3 then evicted 1.
            assert!(!cache.contains_key(&1), "{policy:?}");
            assert!(cache.contains_key(&2) && cache.contains_key(&3));
        }
    }
}

/// A value that counts its drops.
struct Counted(Arc<AtomicUsize>);

/// A clone (a value the cache hands out: `iter`, and with a listener the
/// value `insert` and `remove` return) takes one off the count in advance
/// of its own drop, so the count stays the number of values *stored* that
/// were dropped.
impl Clone for Counted {
    fn clone(&self) -> Self {
        self.0.fetch_sub(1, Ordering::SeqCst);
        Counted(Arc::clone(&self.0))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Every value the cache lets go of is dropped exactly once, with or
/// without a listener: evicted, replaced, removed, cleared, or left in the
/// cache when it is dropped.
#[test]
fn every_value_let_go_is_dropped_once_under_every_policy() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        for listener in [false, true] {
            let drops = Arc::new(AtomicUsize::new(0));
            let heard = Arc::new(AtomicUsize::new(0));
            let builder = LruCache::builder().capacity(8).shards(2).policy(policy);
            let builder = if listener {
                let heard = Arc::clone(&heard);
                builder.eviction_listener(move |_: u32, _: Counted, _| {
                    heard.fetch_add(1, Ordering::SeqCst);
                })
            } else {
                builder
            };
            let cache = builder.build().unwrap();
            let mut made = 0;
            for key in 0..100u32 {
                cache.insert(key, Counted(Arc::clone(&drops)));
                made += 1;
            }
            // Evictions only so far: every value not held was dropped.
            assert_eq!(
                drops.load(Ordering::SeqCst),
                made - cache.len(),
                "{policy:?}, listener {listener}: after evictions"
            );
            let present = cache
                .to_vec()
                .into_iter()
                .next()
                .map(|(key, _)| key)
                .unwrap();
            cache.insert(present, Counted(Arc::clone(&drops)));
            made += 1;
            cache.remove(&present);
            assert_eq!(drops.load(Ordering::SeqCst), made - cache.len());
            cache.clear();
            assert_eq!(drops.load(Ordering::SeqCst), made);
            cache.insert(1000, Counted(Arc::clone(&drops)));
            drop(cache);
            assert_eq!(drops.load(Ordering::SeqCst), made + 1);
            if listener {
                // Every value let go before the cache was dropped was heard.
                assert_eq!(heard.load(Ordering::SeqCst), made);
            }
        }
    }
}

/// The accessors report what the builder set.
#[test]
fn accessors_report_the_configuration() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let cache: LruCache<u32, u32> = LruCache::builder()
            .capacity(64)
            .shards(4)
            .policy(policy)
            .build()
            .unwrap();
        assert_eq!(cache.policy(), policy);
        assert_eq!(cache.shard_count(), 4);
        assert_eq!(cache.capacity(), 64);
    }
}

/// `is_empty`, `stats().len` and `Debug` follow the entries in every shard.
#[test]
fn emptiness_length_and_debug_follow_the_entries() {
    let cache: LruCache<u32, u32> = LruCache::builder().capacity(64).shards(4).build().unwrap();
    assert!(cache.is_empty());
    assert_eq!(cache.stats().len, 0);
    for key in 0..20 {
        cache.insert(key, key);
    }
    assert!(!cache.is_empty());
    assert_eq!(cache.stats().len, cache.len());
    assert_eq!(cache.len(), 20);
    let debug = format!("{cache:?}");
    for part in ["LruCache", "len: 20", "capacity: 64", "shards: 4", "Exact"] {
        assert!(debug.contains(part), "{debug}");
    }
    cache.clear();
    assert!(cache.is_empty());
    assert_eq!(cache.stats().len, 0);
    // The loading wrapper shows its cache.
    let loading: LoadingLruCache<u32, u32> = LruCache::with_loader(8, |key: &u32| *key);
    loading.get_or_load(&3);
    let debug = format!("{loading:?}");
    for part in ["LoadingLruCache", "LruCache", "len: 1", "capacity: 8"] {
        assert!(debug.contains(part), "{debug}");
    }
}

/// With a listener, `insert` and `remove` hand the listener the value they
/// displace and return a clone of it; a panicking clone reaches the caller
/// only after the listener has heard the displaced entry, with the write
/// complete.
#[test]
fn a_listener_gets_the_displaced_value_and_the_caller_a_clone() {
    #[derive(Debug, PartialEq)]
    struct Marked(u32);
    /// A clone is marked (+100), so the test tells the copy from the
    /// original; the clone of 13 panics.
    impl Clone for Marked {
        fn clone(&self) -> Self {
            assert_ne!(self.0, 13, "clone of 13");
            Marked(self.0 + 100)
        }
    }
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let cache = LruCache::builder()
            .capacity(4)
            .shards(1)
            .policy(policy)
            .eviction_listener(move |key: u32, value: Marked, cause| {
                log.lock().unwrap().push((key, value.0, cause));
            })
            .build()
            .unwrap();
        cache.insert(1, Marked(1));
        assert_eq!(cache.insert(1, Marked(2)), Some(Marked(101)), "{policy:?}");
        assert_eq!(cache.remove(&1), Some(Marked(102)));
        assert_eq!(cache.get(&1), None);
        cache.insert(2, Marked(13));
        let panicked = catch_unwind(AssertUnwindSafe(|| cache.insert(2, Marked(3))));
        assert!(panicked.is_err());
        assert_eq!(cache.get_with(&2, |v| v.0), Some(3), "the insert completed");
        assert_eq!(
            *heard.lock().unwrap(),
            [
                (1, 1, RemovalCause::Replaced),
                (1, 2, RemovalCause::Removed),
                (2, 13, RemovalCause::Replaced),
            ],
            "{policy:?}"
        );
        cache.check_invariants();
    }
}
