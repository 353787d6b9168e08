//! `LruCache` with a weigher (`LruCacheBuilder::weigher`): the bound is the
//! total weight of the entries.
//!
//! - A one-shard exact cache against a sequential weighted-LRU model: every
//!   result, every entry handed to the eviction listener (with its cause,
//!   in order), the eviction count, the total weight and the recency order,
//!   after every operation.
//! - Under every policy and shard count: `weighted_size <= capacity` and
//!   the shard invariants (each core checks its weight sum) after every
//!   operation, and `weighted_size` equals the weights of what `iter` sees.
//! - The edges: an entry heavier than its shard, weights of 0, a weigher
//!   that panics (the cache is unchanged) or uses the cache (no lock is
//!   held), and a threaded stress with a watcher checking the bound.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use larder::{EvictionPolicy, LruCache, RemovalCause};
use proptest::prelude::*;

/// A value carries its weight: `(id, weight)`.
type Value = (u32, u32);
type Event = (u8, Value, RemovalCause);

fn by_weight(_key: &u8, value: &Value) -> u32 {
    value.1
}

/// A cache whose listener records every removal.
fn recorded(
    capacity: usize,
    shards: usize,
    policy: EvictionPolicy,
) -> (LruCache<u8, Value>, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let cache = LruCache::builder()
        .capacity(capacity)
        .shards(shards)
        .policy(policy)
        .weigher(by_weight)
        .eviction_listener(move |key, value: Value, cause| {
            log.lock().unwrap().push((key, value, cause));
        })
        .build()
        .unwrap();
    (cache, events)
}

/// Exact LRU by weight, sequential: the front is the most recently used.
struct Model {
    entries: VecDeque<(u8, Value)>,
    capacity: u64,
    events: Vec<Event>,
    evictions: u64,
}

impl Model {
    fn weight(&self) -> u64 {
        self.entries
            .iter()
            .map(|(_, v)| u64::from(v.1.max(1)))
            .sum()
    }

    fn take(&mut self, key: u8) -> Option<Value> {
        let at = self.entries.iter().position(|(k, _)| *k == key)?;
        self.entries.remove(at).map(|(_, v)| v)
    }

    fn evict_to(&mut self, room: u64) {
        while self.weight() + room > self.capacity {
            let (key, value) = self.entries.pop_back().expect("over capacity, not empty");
            self.events.push((key, value, RemovalCause::Evicted));
            self.evictions += 1;
        }
    }

    fn insert(&mut self, key: u8, value: Value) -> Option<Value> {
        let old = self.take(key);
        if let Some(old) = old {
            self.events.push((key, old, RemovalCause::Replaced));
        }
        let weight = u64::from(value.1.max(1));
        if weight > self.capacity {
            self.events.push((key, value, RemovalCause::Evicted));
            self.evictions += 1;
            return old;
        }
        self.evict_to(weight);
        self.entries.push_front((key, value));
        old
    }

    fn get(&mut self, key: u8) -> Option<Value> {
        let value = self.take(key)?;
        self.entries.push_front((key, value));
        Some(value)
    }

    fn remove(&mut self, key: u8) -> Option<Value> {
        let value = self.take(key)?;
        self.events.push((key, value, RemovalCause::Removed));
        Some(value)
    }

    fn resize(&mut self, capacity: usize) {
        self.capacity = capacity as u64;
        self.evict_to(0);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, u32),
    Get(u8),
    Remove(u8),
    Resize(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..12u8, 0..12u32).prop_map(|(k, w)| Op::Insert(k, w)),
        3 => (0..12u8).prop_map(Op::Get),
        1 => (0..12u8).prop_map(Op::Remove),
        1 => (1..30usize).prop_map(Op::Resize),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn one_shard_matches_a_weighted_lru_model(
        capacity in 1..30usize,
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let (cache, events) = recorded(capacity, 1, EvictionPolicy::Exact);
        let mut model = Model {
            entries: VecDeque::new(),
            capacity: capacity as u64,
            events: Vec::new(),
            evictions: 0,
        };
        for (id, op) in ops.into_iter().enumerate() {
            let id = id as u32;
            match op {
                Op::Insert(k, w) => {
                    let got = cache.insert(k, (id, w));
                    prop_assert_eq!(got, model.insert(k, (id, w)));
                }
                Op::Get(k) => {
                    prop_assert_eq!(cache.get(&k), model.get(k));
                }
                Op::Remove(k) => {
                    prop_assert_eq!(cache.remove(&k), model.remove(k));
                }
                Op::Resize(c) => {
                    cache.resize(c).unwrap();
                    model.resize(c);
                }
            }
            cache.check_invariants();
            let seen = std::mem::take(&mut *events.lock().unwrap());
            prop_assert_eq!(seen, std::mem::take(&mut model.events));
            let stats = cache.stats();
            prop_assert_eq!(stats.weighted_size.map(|w| w as u64), Some(model.weight()));
            prop_assert_eq!(cache.weighted_size() as u64, model.weight());
            prop_assert!(stats.weighted_size.unwrap() <= stats.capacity.unwrap());
            prop_assert_eq!(stats.evictions, model.evictions);
            prop_assert_eq!(stats.len, model.entries.len());
            let order: Vec<_> = cache.to_vec().into_iter().collect();
            let expected: Vec<_> = model.entries.iter().copied().collect();
            prop_assert_eq!(order, expected);
        }
    }

    #[test]
    fn every_policy_keeps_the_weight_bound(
        policy in prop_oneof![
            Just(EvictionPolicy::Exact),
            Just(EvictionPolicy::Clock),
            Just(EvictionPolicy::S3Fifo),
        ],
        shards in 1..4usize,
        capacity in 4..60usize,
        ops in prop::collection::vec(op(), 1..200),
    ) {
        let (cache, events) = recorded(capacity, shards, policy);
        for (id, op) in ops.into_iter().enumerate() {
            match op {
                Op::Insert(k, w) => {
                    cache.insert(k, (id as u32, w));
                }
                Op::Get(k) => {
                    cache.get(&k);
                }
                Op::Remove(k) => {
                    cache.remove(&k);
                }
                Op::Resize(c) => {
                    cache.resize(c.max(shards)).unwrap();
                }
            }
            cache.check_invariants();
            let stats = cache.stats();
            prop_assert!(
                stats.weighted_size.unwrap() <= stats.capacity.unwrap(),
                "weight {:?} over capacity {}", stats.weighted_size, stats.capacity.unwrap()
            );
            let weights: usize = cache.to_vec().into_iter().map(|(_, v)| v.1.max(1) as usize).sum();
            prop_assert_eq!(Some(weights), stats.weighted_size);
            let evicted = events
                .lock()
                .unwrap()
                .iter()
                .filter(|e| e.2 == RemovalCause::Evicted)
                .count();
            prop_assert_eq!(evicted as u64, stats.evictions);
        }
    }
}

#[test]
fn an_entry_heavier_than_its_shard_is_not_stored() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        // Two shards of 5.
        let (cache, events) = recorded(10, 2, policy);
        assert_eq!(cache.insert(1, (1, 6)), None);
        assert!(!cache.contains_key(&1), "{policy:?}");
        assert_eq!(cache.stats().evictions, 1);
        assert_eq!(
            *events.lock().unwrap(),
            [(1, (1, 6), RemovalCause::Evicted)]
        );
        events.lock().unwrap().clear();
        // With an old value: that one leaves as replaced, and is returned.
        cache.insert(1, (2, 3));
        assert_eq!(cache.insert(1, (3, 6)), Some((2, 3)));
        assert!(!cache.contains_key(&1));
        assert_eq!(
            *events.lock().unwrap(),
            [
                (1, (2, 3), RemovalCause::Replaced),
                (1, (3, 6), RemovalCause::Evicted),
            ]
        );
        assert_eq!((cache.len(), cache.weighted_size()), (0, 0));
        assert_eq!(cache.stats().evictions, 2);
        cache.check_invariants();
    }
}

#[test]
fn a_loaded_value_heavier_than_its_shard_is_returned_not_cached() {
    let (cache, events) = recorded(10, 2, EvictionPolicy::Exact);
    assert_eq!(cache.get_or_init(&1, || (7, 6)), (7, 6));
    assert!(!cache.contains_key(&1));
    let stats = cache.stats();
    assert_eq!((stats.inits, stats.evictions, stats.len), (1, 1, 0));
    assert_eq!(
        *events.lock().unwrap(),
        [(1, (7, 6), RemovalCause::Evicted)]
    );
    cache.check_invariants();
}

#[test]
fn a_heavier_replacement_evicts_others() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let (cache, events) = recorded(10, 1, policy);
        for k in 0..5 {
            cache.insert(k, (u32::from(k), 2));
        }
        assert_eq!(cache.weighted_size(), 10);
        assert_eq!(cache.insert(4, (9, 6)), Some((4, 2)));
        assert!(cache.contains_key(&4), "{policy:?}");
        assert_eq!((cache.len(), cache.weighted_size()), (3, 10), "{policy:?}");
        let evicted = events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.2 == RemovalCause::Evicted)
            .count();
        assert_eq!(evicted, 2);
        cache.check_invariants();
    }
}

#[test]
fn a_weight_of_zero_counts_as_one() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let cache = LruCache::builder()
            .capacity(3)
            .shards(1)
            .policy(policy)
            .weigher(|_: &u32, _: &u32| 0)
            .build()
            .unwrap();
        for k in 0..10 {
            cache.insert(k, k);
        }
        assert_eq!((cache.len(), cache.weighted_size()), (3, 3), "{policy:?}");
        assert_eq!(cache.stats().evictions, 7);
        cache.check_invariants();
    }
}

#[test]
fn without_a_weigher_the_weight_is_the_entry_count() {
    let cache = LruCache::new(4);
    for k in 0..10 {
        cache.insert(k, k);
    }
    let stats = cache.stats();
    assert_eq!(
        (stats.len, stats.weighted_size, cache.weighted_size()),
        (4, None, 4)
    );
}

/// The weigher's value that makes it panic.
const POISON: u32 = 666;

#[test]
fn a_panicking_weigher_leaves_the_cache_unchanged() {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&"poisoned weight") {
                report(info);
            }
        }));
    });
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let cache = LruCache::builder()
            .capacity(8)
            .shards(1)
            .policy(policy)
            .weigher(|_: &u32, value: &u32| {
                assert!(*value != POISON, "poisoned weight");
                2
            })
            .build()
            .unwrap();
        for k in 0..4 {
            cache.insert(k, k);
        }
        let before: Vec<_> = cache.to_vec().into_iter().collect();
        let stats = cache.stats();
        // A new key into a full cache (it would evict), and a replacement.
        for key in [9, 2] {
            let result = catch_unwind(AssertUnwindSafe(|| cache.insert(key, POISON)));
            assert!(result.is_err());
            let after: Vec<_> = cache.to_vec().into_iter().collect();
            assert_eq!(after, before, "{policy:?}");
            assert_eq!(cache.stats(), stats);
            cache.check_invariants();
        }
        // A load whose value the weigher rejects: the loader ran and the
        // failure is counted; nothing is stored and nothing stays in flight.
        let result = catch_unwind(AssertUnwindSafe(|| cache.get_or_init(&7, || POISON)));
        assert!(result.is_err());
        assert!(!cache.contains_key(&7));
        cache.check_invariants();
        let after = cache.stats();
        assert_eq!(after.inits, 1, "{policy:?}");
        assert_eq!(cache.get_or_init(&7, || 70), 70);
        assert_eq!(cache.weighted_size(), 8);
    }
}

#[test]
fn the_weigher_runs_with_no_lock_held() {
    watchdog::with_timeout(watchdog::STRESS_LIMIT, || {
        for policy in [
            EvictionPolicy::Exact,
            EvictionPolicy::Clock,
            EvictionPolicy::S3Fifo,
        ] {
            let slot: Arc<OnceLock<Arc<LruCache<u32, u32>>>> = Arc::new(OnceLock::new());
            let inside = Arc::clone(&slot);
            let reentered = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&reentered);
            let cache = Arc::new(
                LruCache::builder()
                    .capacity(8)
                    .shards(1)
                    .policy(policy)
                    .weigher(move |key: &u32, _: &u32| {
                        // Reads and writes the cache from inside the
                        // weigher: a held shard lock would deadlock here.
                        if *key == 5 {
                            let cache = inside.get().expect("set");
                            let _ = cache.get(&1);
                            let _ = cache.weighted_size();
                            let _ = cache.stats();
                            cache.insert(6, 6);
                            flag.store(true, Ordering::Relaxed);
                        }
                        2
                    })
                    .build()
                    .unwrap(),
            );
            slot.set(Arc::clone(&cache)).unwrap();
            for k in 0..4 {
                cache.insert(k, k);
            }
            cache.insert(5, 5);
            assert!(reentered.load(Ordering::Relaxed));
            assert!(cache.contains_key(&5) && cache.contains_key(&6));
            assert_eq!(cache.weighted_size(), 8);
            cache.check_invariants();
        }
    });
}

#[test]
fn threaded_inserts_keep_the_weight_bound() {
    watchdog::with_timeout(watchdog::STRESS_LIMIT, || {
        for policy in [
            EvictionPolicy::Exact,
            EvictionPolicy::Clock,
            EvictionPolicy::S3Fifo,
        ] {
            let cache: LruCache<u64, u64> = LruCache::builder()
                .capacity(400)
                .shards(4)
                .policy(policy)
                .weigher(|_: &u64, value: &u64| (*value % 13) as u32)
                .build()
                .unwrap();
            let done = AtomicBool::new(false);
            let inserts = AtomicU64::new(0);
            let checks = AtomicU64::new(0);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    while !done.load(Ordering::Relaxed) {
                        let stats = cache.stats();
                        assert!(
                            stats.weighted_size.unwrap() <= stats.capacity.unwrap(),
                            "{policy:?}: weight {:?} over capacity {}",
                            stats.weighted_size,
                            stats.capacity.unwrap()
                        );
                        assert!(stats.len <= stats.weighted_size.unwrap());
                        checks.fetch_add(1, Ordering::Relaxed);
                    }
                });
                let writers: Vec<_> = (0..4u64)
                    .map(|t| {
                        let (cache, inserts) = (&cache, &inserts);
                        scope.spawn(move || {
                            let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                            for _ in 0..5_000 {
                                x ^= x << 13;
                                x ^= x >> 7;
                                x ^= x << 17;
                                cache.insert(x % 300, x);
                                inserts.fetch_add(1, Ordering::Relaxed);
                                if x % 97 == 0 {
                                    cache.resize(200 + (x % 300) as usize).unwrap();
                                }
                            }
                        })
                    })
                    .collect();
                for writer in writers {
                    writer.join().unwrap();
                }
                done.store(true, Ordering::Relaxed);
            });
            assert!(checks.load(Ordering::Relaxed) > 0);
            cache.check_invariants();
            let stats = cache.stats();
            assert_eq!(stats.inserts, inserts.load(Ordering::Relaxed));
            let weights: usize = cache
                .to_vec()
                .into_iter()
                .map(|(_, v)| (v % 13).max(1) as usize)
                .sum();
            assert_eq!(Some(weights), stats.weighted_size);
            assert!(stats.weighted_size.unwrap() <= stats.capacity.unwrap());
        }
    });
}
