//! Panic safety: panicking listeners, `Hash`, `Eq` and `Drop` leave the
//! cache consistent.

use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use larder::{EvictionPolicy, LruCache, RemovalCause};

#[test]
fn a_panicking_listener_leaves_the_cache_consistent() {
    let cache = LruCache::builder()
        .capacity(2)
        .shards(1)
        .eviction_listener(|key: u32, _value: u32, _cause: RemovalCause| {
            if key == 1 {
                panic!("listener");
            }
        })
        .build()
        .unwrap();
    cache.insert(1, 1);
    cache.insert(2, 2);
    // Evicts key 1: the listener panics after the insert completed.
    let outcome = catch_unwind(AssertUnwindSafe(|| cache.insert(3, 3)));
    assert!(outcome.is_err());
    assert_eq!(cache.len(), 2);
    assert!(cache.contains_key(&3) && cache.contains_key(&2) && !cache.contains_key(&1));
    let stats = cache.stats();
    assert_eq!((stats.inserts, stats.evictions), (3, 1));
    // Later evictions run the listener as usual.
    cache.insert(4, 4);
    assert_eq!(cache.stats().evictions, 2);
    // A panicking listener during a load: the value is cached anyway.
    let cache2 = LruCache::builder()
        .capacity(1)
        .eviction_listener(|_key: u32, _value: u32, _cause| panic!("listener"))
        .build()
        .unwrap();
    cache2.insert(1, 1);
    assert!(catch_unwind(AssertUnwindSafe(|| cache2.get_or_init(&2, || 2))).is_err());
    assert_eq!(cache2.get(&2), Some(2));
    assert_eq!(cache2.stats().inits, 1);
}

/// A key whose `Hash` or `Eq` panics while the shared switch says so.
#[derive(Clone, Debug)]
struct Touchy {
    id: u32,
    panic_hash: &'static AtomicBool,
    panic_eq: &'static AtomicBool,
}

impl Hash for Touchy {
    fn hash<H: Hasher>(&self, state: &mut H) {
        if self.panic_hash.load(Ordering::SeqCst) {
            panic!("hash");
        }
        // Every key collides, so every lookup calls `Eq`.
        0u32.hash(state);
    }
}

impl PartialEq for Touchy {
    fn eq(&self, other: &Self) -> bool {
        if self.panic_eq.load(Ordering::SeqCst) {
            panic!("eq");
        }
        self.id == other.id
    }
}

impl Eq for Touchy {}

#[test]
fn panicking_hash_and_eq_leave_the_cache_consistent() {
    static HASH: AtomicBool = AtomicBool::new(false);
    static EQ: AtomicBool = AtomicBool::new(false);
    panicking_hash_and_eq_under(EvictionPolicy::Exact, &HASH, &EQ);
}

#[test]
fn panicking_hash_and_eq_leave_a_clock_cache_consistent() {
    static HASH: AtomicBool = AtomicBool::new(false);
    static EQ: AtomicBool = AtomicBool::new(false);
    panicking_hash_and_eq_under(EvictionPolicy::Clock, &HASH, &EQ);
}

fn panicking_hash_and_eq_under(
    policy: EvictionPolicy,
    hash: &'static AtomicBool,
    eq: &'static AtomicBool,
) {
    let key = |id| Touchy {
        id,
        panic_hash: hash,
        panic_eq: eq,
    };
    let cache = LruCache::builder()
        .capacity(3)
        .shards(1)
        .policy(policy)
        .build()
        .unwrap();
    for id in 0..3 {
        cache.insert(key(id), id);
    }
    for (switch, what) in [(hash, "hash"), (eq, "eq")] {
        switch.store(true, Ordering::SeqCst);
        let ops: [&dyn Fn(); 5] = [
            &|| {
                let _ = cache.insert(key(9), 9);
            },
            &|| {
                let _ = cache.get(&key(1));
            },
            &|| {
                let _ = cache.remove(&key(0));
            },
            &|| {
                let _ = cache.get_or_init(&key(8), || 8);
            },
            &|| assert!(cache.contains_key(&key(2))),
        ];
        for op in ops {
            assert!(
                catch_unwind(AssertUnwindSafe(op)).is_err(),
                "{what} did not panic"
            );
        }
        switch.store(false, Ordering::SeqCst);
        // Nothing changed: same entries, same order (CLOCK: no hit, so the
        // hand's reverse order), no counts.
        let ids: Vec<_> = cache.to_vec().into_iter().map(|(k, v)| (k.id, v)).collect();
        assert_eq!(ids, [(2, 2), (1, 1), (0, 0)], "after {what}");
        let stats = cache.stats();
        assert_eq!(
            (stats.hits, stats.misses, stats.inserts, stats.len),
            (0, 0, 3, 3)
        );
    }
    // And it still works.
    cache.insert(key(5), 5);
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.get(&key(5)), Some(5));
    assert!(!cache.contains_key(&key(0)));
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
fn clear_empties_every_shard_before_a_drop_panics() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        let cache = LruCache::builder()
            .capacity(1024)
            .shards(16)
            .policy(policy)
            .build()
            .unwrap();
        for k in 0..512 {
            cache.insert(k, PanicsOnDrop(k));
        }
        assert_eq!(cache.len(), 512);
        PANIC_ON_DROP_OF.store(200, Ordering::SeqCst);
        let outcome = catch_unwind(AssertUnwindSafe(|| cache.clear()));
        PANIC_ON_DROP_OF.store(usize::MAX, Ordering::SeqCst);
        assert!(outcome.is_err(), "the panicking Drop must reach the caller");
        // Every shard was emptied before any value was dropped.
        assert_eq!(cache.len(), 0, "{policy:?}");
        assert!(cache.to_vec().into_iter().next().is_none());
        let stats = cache.stats();
        assert_eq!((stats.len, stats.evictions), (0, 0));
        cache.insert(7, PanicsOnDrop(7));
        assert_eq!(cache.get(&7).map(|v| v.0), Some(7));
    }
}
