//! Keys whose hashes collide, through the key's own `Hash` (legal: equal
//! keys hash equal, distinct keys may too) with the default hasher, so
//! distinct keys share all 64 bits of their hash. Every structure that
//! hashes keys keeps each promise it documents (the bound, `len`, one init
//! per key, one worker per key, no lost entry) and every operation
//! returns: a constant hash makes a hash table a list, nothing worse.
//!
//! The caches' every case also runs with colliding hashes in
//! `conformance.rs` (`one_hash`, `two_hashes`), and each structure's
//! property test takes a colliding hasher as a parameter.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use larder::{
    AnyCache, EvictionPolicy, IndexedStore, LruCache, OrderedIndex, TypedCache, WorkQueue,
};

/// Every test here finishes in well under a second; a spin fails it.
const LIMIT: Duration = Duration::from_secs(60);

/// A key whose `Hash` writes the same byte for every key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct OneHash(u32);

impl Hash for OneHash {
    fn hash<H: Hasher>(&self, state: &mut H) {
        0u8.hash(state);
    }
}

/// A key whose `Hash` writes one of two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct TwoHashes(u32);

impl Hash for TwoHashes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        ((self.0 % 2) as u8).hash(state);
    }
}

const POLICIES: [EvictionPolicy; 3] = [
    EvictionPolicy::Exact,
    EvictionPolicy::Clock,
    EvictionPolicy::S3Fifo,
];

/// Inserts 60 keys one after another into a cache of capacity 4: once
/// full it holds exactly 4 after every insert, the newest among them.
fn fills_to_its_bound<K: Copy + std::fmt::Debug>(
    name: &str,
    key: impl Fn(u32) -> K,
    insert: impl Fn(K, u32),
    len: impl Fn() -> usize,
    get: impl Fn(K) -> Option<u32>,
) {
    for k in 0..60 {
        insert(key(k), k);
        assert_eq!(len(), (k as usize + 1).min(4), "{name}: after {k}");
        assert_eq!(get(key(k)), Some(k), "{name}: {k} just stored, gone");
    }
}

#[test]
fn every_cache_keeps_its_bound_when_every_key_hashes_alike() {
    let _watchdog = watchdog::arm(LIMIT);
    for policy in POLICIES {
        for shards in [None, Some(16)] {
            let name = format!("TypedCache {policy:?} shards {shards:?}");
            let mut builder = TypedCache::<OneHash, u32>::builder()
                .capacity(4)
                .policy(policy);
            if let Some(shards) = shards {
                builder = builder.shards(shards);
            }
            let cache = builder.build().unwrap();
            fills_to_its_bound(
                &name,
                OneHash,
                |k, v| {
                    cache.insert(k, v);
                },
                || cache.len(),
                |k| cache.get(&k),
            );
            cache.check_invariants();

            let name = format!("AnyCache {policy:?} shards {shards:?}");
            let mut builder = AnyCache::<OneHash>::builder().capacity(4).policy(policy);
            if let Some(shards) = shards {
                builder = builder.shards(shards);
            }
            let cache = builder.build().unwrap();
            fills_to_its_bound(
                &name,
                OneHash,
                |k, v| {
                    cache.insert(k, v);
                },
                || cache.len(),
                |k| cache.get::<u32, _>(&k).map(|v| *v),
            );
            cache.check_invariants();
        }
        let cache = LruCache::<OneHash, u32>::builder()
            .capacity(4)
            .shards(1)
            .policy(policy)
            .build()
            .unwrap();
        fills_to_its_bound(
            &format!("LruCache {policy:?}"),
            OneHash,
            |k, v| {
                cache.insert(k, v);
            },
            || cache.len(),
            |k| cache.get(&k),
        );
        cache.check_invariants();
    }
}

#[test]
fn every_cache_keeps_its_bound_when_keys_share_two_hashes() {
    let _watchdog = watchdog::arm(LIMIT);
    for policy in POLICIES {
        let cache = TypedCache::<TwoHashes, u32>::builder()
            .capacity(4)
            .shards(2)
            .policy(policy)
            .build()
            .unwrap();
        fills_to_its_bound(
            &format!("TypedCache {policy:?}"),
            TwoHashes,
            |k, v| {
                cache.insert(k, v);
            },
            || cache.len(),
            |k| cache.get(&k),
        );
        cache.check_invariants();
        let cache = LruCache::<TwoHashes, u32>::builder()
            .capacity(4)
            .shards(1)
            .policy(policy)
            .build()
            .unwrap();
        fills_to_its_bound(
            &format!("LruCache {policy:?}"),
            TwoHashes,
            |k, v| {
                cache.insert(k, v);
            },
            || cache.len(),
            |k| cache.get(&k),
        );
        cache.check_invariants();
    }
}

/// A resize down evicts to the new bound among keys of one hash.
#[test]
fn a_resize_evicts_to_the_new_bound_when_every_key_hashes_alike() {
    let _watchdog = watchdog::arm(LIMIT);
    for policy in POLICIES {
        let cache = TypedCache::<OneHash, u32>::builder()
            .capacity(32)
            .policy(policy)
            .build()
            .unwrap();
        for k in 0..32 {
            cache.insert(OneHash(k), k);
        }
        cache.resize(3).unwrap();
        assert_eq!(cache.len(), 3, "{policy:?}");
        cache.check_invariants();
        let lru = LruCache::<OneHash, u32>::builder()
            .capacity(32)
            .shards(1)
            .policy(policy)
            .build()
            .unwrap();
        for k in 0..32 {
            lru.insert(OneHash(k), k);
        }
        lru.resize(3).unwrap();
        assert_eq!(lru.len(), 3, "{policy:?}");
        lru.check_invariants();
    }
}

/// Threads that miss the same keys, all of one hash: each key's init runs
/// once, and every caller gets its value (the flight group tells keys
/// apart by equality, never by hash).
#[test]
fn each_key_inits_once_when_every_key_hashes_alike() {
    const THREADS: usize = 4;
    const KEYS: u32 = 16;
    let _watchdog = watchdog::arm(LIMIT);
    let typed = TypedCache::<OneHash, u32>::new();
    let lru = LruCache::<OneHash, u32>::new(64);
    let inits: Vec<AtomicUsize> = (0..2 * KEYS).map(|_| AtomicUsize::new(0)).collect();
    let start = Barrier::new(THREADS);
    thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                start.wait();
                for k in 0..KEYS {
                    let got = typed.get_or_init(&OneHash(k), || {
                        inits[k as usize].fetch_add(1, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(2));
                        k * 10
                    });
                    assert_eq!(got, k * 10);
                    let got = lru.get_or_init(&OneHash(k), || {
                        inits[(KEYS + k) as usize].fetch_add(1, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(2));
                        k * 100
                    });
                    assert_eq!(got, k * 100);
                }
            });
        }
    });
    for (k, count) in inits.iter().enumerate() {
        assert_eq!(count.load(Ordering::SeqCst), 1, "key {k} inits");
    }
    assert_eq!(typed.len(), KEYS as usize);
    assert_eq!(lru.len(), KEYS as usize);
}

/// An indexed store whose keys and index values all hash alike answers
/// every lookup as a map would, and an index lookup finds exactly its
/// keys.
#[test]
fn an_indexed_store_answers_exactly_when_keys_and_index_values_collide() {
    let _watchdog = watchdog::arm(LIMIT);
    let store: IndexedStore<OneHash, u32> = IndexedStore::builder()
        .index("parity", |v: &u32| vec![(v % 2).to_string()])
        .build()
        .unwrap();
    for k in 0..200 {
        store.insert(OneHash(k), k).unwrap();
    }
    for k in (0..200).step_by(3) {
        assert_eq!(store.remove(&OneHash(k)), Some(k));
    }
    let live: Vec<u32> = (0..200).filter(|k| k % 3 != 0).collect();
    assert_eq!(store.len(), live.len());
    for k in 0..200 {
        let expected = (k % 3 != 0).then_some(k);
        assert_eq!(store.get(&OneHash(k)), expected, "{k}");
    }
    let mut even = store.index_keys("parity", "0").unwrap();
    even.sort();
    let expected: Vec<OneHash> = live
        .iter()
        .filter(|k| *k % 2 == 0)
        .map(|&k| OneHash(k))
        .collect();
    assert_eq!(even, expected);
    store.check_invariants();
}

/// An ordered index with point lookups over keys of one hash: every
/// lookup and removal finds its own key.
#[test]
fn an_ordered_index_finds_each_key_when_every_key_hashes_alike() {
    let _watchdog = watchdog::arm(LIMIT);
    let index: OrderedIndex<OneHash, u32> =
        OrderedIndex::builder().point_lookups(true).build().unwrap();
    for k in 0..300 {
        index.insert(OneHash(k), k);
    }
    for k in (0..300).step_by(2) {
        assert_eq!(index.remove(&OneHash(k)).map(|v| *v), Some(k));
    }
    for k in 0..300 {
        assert_eq!(
            index.get(&OneHash(k)).map(|v| *v),
            (k % 2 == 1).then_some(k)
        );
    }
    assert_eq!(index.len(), 150);
    assert_eq!(index.first().map(|(k, _)| k), Some(OneHash(1)));
}

/// A work queue of keys of one hash: no key is held by two workers at
/// once, no add is lost, duplicates are merged.
#[test]
fn a_work_queue_runs_each_key_once_at_a_time_when_every_key_hashes_alike() {
    const KEYS: u32 = 32;
    const WORKERS: usize = 3;
    let _watchdog = watchdog::arm(LIMIT);
    let queue = Arc::new(WorkQueue::<OneHash>::new());
    let held = Arc::new(Mutex::new(HashSet::new()));
    let processed = Arc::new(AtomicUsize::new(0));
    for round in 0..3 {
        for k in 0..KEYS {
            queue.add(OneHash(k));
            // A duplicate while queued: merged.
            queue.add(OneHash(k));
        }
        assert_eq!(
            queue.len(),
            KEYS as usize,
            "round {round}: duplicates merged"
        );
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (queue, held, processed) = (
                    Arc::clone(&queue),
                    Arc::clone(&held),
                    Arc::clone(&processed),
                );
                thread::spawn(move || {
                    while let Ok(key) = queue.try_get() {
                        assert!(held.lock().unwrap().insert(key), "{key:?} held twice");
                        thread::yield_now();
                        held.lock().unwrap().remove(&key);
                        processed.fetch_add(1, Ordering::SeqCst);
                        queue.done(&key);
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(
            processed.load(Ordering::SeqCst),
            (round + 1) * KEYS as usize
        );
        assert_eq!(queue.len(), 0);
    }
    queue.check_invariants();
}
