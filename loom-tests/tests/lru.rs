//! loom models of `LruCache`: every interleaving of 2-3 threads, with the
//! real cache code over loom's stand-ins for the shard mutexes, the
//! single-flight group's locks and the atomics. Each model has a negative
//! control that runs a deliberately broken protocol and must fail.
#![cfg(loom)]

use larder::{LruCache, LruFault};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

/// A full one-shard cache of capacity 1; two threads insert new keys while
/// the main thread reads `len()`: it never exceeds the capacity, and the
/// counts are exact at the end.
fn bound_holds_under_concurrent_inserts(fault: LruFault) {
    loom::model(move || {
        let cache = Arc::new(LruCache::<u32, u32>::with_fault(1, 1, fault));
        cache.insert(0, 0);
        let inserters: Vec<_> = [1, 2]
            .into_iter()
            .map(|key| {
                let cache = Arc::clone(&cache);
                thread::spawn(move || {
                    cache.insert(key, key);
                })
            })
            .collect();
        let seen = cache.len();
        assert!(seen <= 1, "bound exceeded: len {seen} over capacity 1");
        for inserter in inserters {
            inserter.join().unwrap();
        }
        let stats = cache.stats();
        assert_eq!((stats.len, stats.inserts, stats.evictions), (1, 3, 2));
    });
}

#[test]
fn lru_bound_holds_under_concurrent_inserts() {
    bound_holds_under_concurrent_inserts(LruFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn lru_bound_negative_control_split_eviction() {
    bound_holds_under_concurrent_inserts(LruFault::SplitEviction);
}

/// Two threads each make two gets (one hit, one miss) on one shard while the
/// main thread inserts: `hits + misses` is exactly the number of gets.
fn hits_plus_misses_equal_gets(fault: LruFault) {
    loom::model(move || {
        let cache = Arc::new(LruCache::<u32, u32>::with_fault(2, 1, fault));
        cache.insert(1, 1);
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let cache = Arc::clone(&cache);
                thread::spawn(move || {
                    assert!(cache.get(&1).is_some());
                    cache.get(&2);
                })
            })
            .collect();
        cache.insert(2, 2);
        for reader in readers {
            reader.join().unwrap();
        }
        let stats = cache.stats();
        assert_eq!(
            stats.hits + stats.misses,
            4,
            "hits + misses != gets: {stats:?}"
        );
        assert!(stats.hits >= 2);
    });
}

#[test]
fn lru_hits_plus_misses_equal_gets() {
    hits_plus_misses_equal_gets(LruFault::None);
}

#[test]
#[should_panic(expected = "hits + misses != gets")]
fn lru_stats_negative_control_racy_counter() {
    hits_plus_misses_equal_gets(LruFault::RacyStats);
}

/// Two threads race `get_or_load` on one missing key: the loader runs once,
/// both get its value, and the stats count one load and two misses.
fn get_or_load_runs_the_loader_once(fault: LruFault) {
    loom::model(move || {
        let cache = Arc::new(LruCache::<u32, u32>::with_fault(2, 1, fault));
        let runs = Arc::new(AtomicUsize::new(0));
        let racer = || {
            let cache = Arc::clone(&cache);
            let runs = Arc::clone(&runs);
            thread::spawn(move || {
                *cache.get_or_load(&7, || {
                    // SeqCst: a test counter, read after both joins.
                    runs.fetch_add(1, Ordering::SeqCst);
                    70
                })
            })
        };
        let a = racer();
        let b = racer();
        assert_eq!((a.join().unwrap(), b.join().unwrap()), (70, 70));
        let runs = runs.load(Ordering::SeqCst);
        assert_eq!(runs, 1, "the loader ran {runs} times");
        let stats = cache.stats();
        assert_eq!((stats.loads, stats.len), (1, 1));
        assert_eq!(stats.hits + stats.misses, 2);
    });
}

#[test]
fn lru_get_or_load_runs_the_loader_once() {
    get_or_load_runs_the_loader_once(LruFault::None);
}

#[test]
#[should_panic(expected = "the loader ran 2 times")]
fn lru_get_or_load_negative_control_skip_flight() {
    get_or_load_runs_the_loader_once(LruFault::SkipFlight);
}
