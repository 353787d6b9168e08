//! Public-API tests of `CacheStats`, shared by `LruCache` and
//! `TypedCache`: the identity that accounts for every miss of their
//! loading calls (`misses == inits + waits`), first with one waiter made certain, then under
//! contention with more threads than cores and failing loaders; and the
//! `Display` forms.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use larder::{LruCache, TypedCache};

/// Spins (yielding) until `done()`; the watchdog fails a test stuck here.
fn wait_until(done: impl Fn() -> bool) {
    while !done() {
        std::thread::yield_now();
    }
}

#[test]
fn a_caller_that_waits_on_another_callers_load_counts_a_wait() {
    let _watchdog = watchdog::arm(Duration::from_secs(60));
    let cache: LruCache<u32, u32> = LruCache::new(16);
    let loading = AtomicBool::new(false);
    std::thread::scope(|s| {
        // The loader returns only once the second caller has missed, so
        // that caller either waits on this load or finds its value on its
        // re-check: a wait either way, never a load.
        // The second caller starts only once the loader runs, so the flight
        // is registered by then: it cannot become the leader itself.
        let leader = s.spawn(|| {
            cache.get_or_init(&1, || {
                loading.store(true, Ordering::SeqCst);
                wait_until(|| cache.stats().misses >= 2);
                10
            })
        });
        wait_until(|| loading.load(Ordering::SeqCst));
        let waiter = cache.get_or_init(&1, || unreachable!("the leader loads"));
        assert_eq!((waiter, leader.join().unwrap()), (10, 10));
    });
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.inits, stats.waits), (2, 1, 1));
    assert_eq!(stats.misses, stats.inits + stats.waits);
}

#[test]
fn a_caller_that_waits_on_another_callers_init_counts_a_wait() {
    let _watchdog = watchdog::arm(Duration::from_secs(60));
    let cache: TypedCache<u32, u32> = TypedCache::new();
    let loading = AtomicBool::new(false);
    std::thread::scope(|s| {
        // As above: the second caller starts once the init runs.
        let leader = s.spawn(|| {
            cache.get_or_init(&1, || {
                loading.store(true, Ordering::SeqCst);
                wait_until(|| cache.stats().misses >= 2);
                10
            })
        });
        wait_until(|| loading.load(Ordering::SeqCst));
        let waiter = cache.get_or_init(&1, || unreachable!("the leader inits"));
        assert_eq!((waiter, leader.join().unwrap()), (10, 10));
    });
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.inits, stats.waits), (2, 1, 1));
    assert_eq!(stats.misses, stats.inits + stats.waits);
}

const THREADS: usize = 8;
const ROUNDS: u32 = 200;

#[test]
fn every_lru_miss_is_a_load_a_failure_or_a_wait_under_contention() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let cache: LruCache<u32, u32> = LruCache::builder().capacity(64).shards(4).build().unwrap();
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (cache, barrier) = (&cache, &barrier);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    barrier.wait();
                    let key = round % 96; // more keys than room: evictions
                    if round % 5 == 0 {
                        let _ = cache.get_or_try_init(&key, || {
                            std::thread::yield_now();
                            Err::<u32, _>("down")
                        });
                    } else {
                        let value = cache.get_or_init(&key, || {
                            std::thread::yield_now();
                            key
                        });
                        assert_eq!(value, key);
                    }
                    if t == 0 && round % 7 == 0 {
                        cache.remove(&key);
                    }
                }
            });
        }
    });
    let stats = cache.stats();
    assert_eq!(
        stats.hits + stats.misses,
        THREADS as u64 * u64::from(ROUNDS)
    );
    assert_eq!(stats.misses, stats.inits + stats.waits, "{stats}");
    assert!(stats.waits > 0, "no caller waited: {stats}");
}

#[test]
fn every_typed_miss_is_an_init_or_a_wait_under_contention() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let cache: TypedCache<u32, u32> = TypedCache::builder().capacity(64).build().unwrap();
    let barrier = Barrier::new(THREADS);
    let gets = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (cache, barrier, gets) = (&cache, &barrier, &gets);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    barrier.wait();
                    let key = round % 96;
                    if round % 5 == 0 {
                        let _ = cache.get_or_try_init(&key, || {
                            std::thread::yield_now();
                            Err::<u32, _>("down")
                        });
                    } else {
                        let value = cache.get_or_init(&key, || {
                            std::thread::yield_now();
                            key
                        });
                        assert_eq!(value, key);
                    }
                    if t == 0 && round % 7 == 0 {
                        cache.remove(&key);
                        // A plain read: a hit or a miss, never a wait.
                        if cache.get(&key).is_none() {
                            gets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let stats = cache.stats();
    let get_misses = gets.into_inner();
    assert_eq!(
        stats.misses,
        stats.inits + stats.waits + get_misses,
        "{stats}"
    );
    assert!(stats.init_failures <= stats.inits);
    assert!(stats.waits > 0, "no caller waited: {stats}");
}

#[test]
fn both_statistics_print_as_one_line_of_pairs() {
    let lru = LruCache::new(2);
    lru.insert(1, 1);
    lru.get(&1);
    assert_eq!(
        lru.stats().to_string(),
        "hits=1 misses=0 inserts=1 evictions=0 inits=0 init_failures=0 waits=0 len=1 capacity=2"
    );
    let typed: TypedCache<u32, u32> = TypedCache::new();
    typed.get_or_init(&1, || 1);
    typed.get(&2);
    assert_eq!(
        typed.stats().to_string(),
        "hits=0 misses=2 inserts=1 evictions=0 inits=1 init_failures=0 waits=0 len=1 capacity=none"
    );
}

#[test]
fn async_callers_that_wait_count_a_wait_too() {
    let _watchdog = watchdog::arm(Duration::from_secs(60));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let lru: LruCache<u32, u32> = LruCache::new(16);
    let typed: TypedCache<u32, u32> = TypedCache::new();
    runtime.block_on(async {
        // The leader's load yields until the second caller has missed; on
        // one thread the second caller then waits on the load as a future.
        let leader = async {
            lru.get_or_init_async(&1, || async {
                while lru.stats().misses < 2 {
                    tokio::task::yield_now().await;
                }
                10
            })
            .await
        };
        let waiter = async {
            tokio::task::yield_now().await;
            lru.get_or_init_async(&1, || async { unreachable!("the leader loads") })
                .await
        };
        let (a, b) = tokio::join!(leader, waiter);
        assert_eq!((a, b), (10, 10));
        let leader = async {
            typed
                .get_or_init_async(&1, || async {
                    while typed.stats().misses < 2 {
                        tokio::task::yield_now().await;
                    }
                    10
                })
                .await
        };
        let waiter = async {
            tokio::task::yield_now().await;
            typed
                .get_or_init_async(&1, || async { unreachable!("the leader inits") })
                .await
        };
        let (a, b) = tokio::join!(leader, waiter);
        assert_eq!((a, b), (10, 10));
    });
    let stats = lru.stats();
    assert_eq!((stats.misses, stats.inits, stats.waits), (2, 1, 1));
    let stats = typed.stats();
    assert_eq!((stats.misses, stats.inits, stats.waits), (2, 1, 1));
}
