//! Stress tests of `LruCache`: more threads than cores, exact counts, the
//! bound, and racing loads that run each loader once.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use larder::{EvictionPolicy, LruCache};

// ---------------------------------------------------------------------------
// stress: 8 threads on 2 cores

#[test]
fn stress_counts_are_exact_and_the_bound_holds() {
    stress_counts_under(EvictionPolicy::Exact);
}

#[test]
fn stress_counts_are_exact_and_the_bound_holds_under_clock() {
    stress_counts_under(EvictionPolicy::Clock);
}

fn stress_counts_under(policy: EvictionPolicy) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const THREADS: usize = 8;
    const OPS: u64 = 20_000;
    let cache = LruCache::<u64, u64>::builder()
        .capacity(256)
        .shards(8)
        .policy(policy)
        .build()
        .unwrap();
    let gets = AtomicU64::new(0);
    let inserts = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let start = Barrier::new(THREADS + 1);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut checks = 0u64;
            while !done.load(Ordering::SeqCst) {
                // `len` and `capacity` in `stats()` are one consistent
                // snapshot, even during resizes.
                let stats = cache.stats();
                assert!(
                    Some(stats.len) <= stats.capacity,
                    "bound exceeded: {stats:?}"
                );
                // `len()` sums shards one at a time while resizes run; every
                // shard stays within its largest share (328 / 8 = 41).
                assert!(cache.len() <= 328);
                checks += 1;
            }
            checks
        });
        for t in 0..THREADS as u64 {
            let (cache, gets, inserts, start) = (&cache, &gets, &inserts, &start);
            s.spawn(move || {
                start.wait();
                let mut x = t + 1;
                for i in 0..OPS {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = x % 1024;
                    // Each thread reads through one of the two hit paths,
                    // so their hits and misses are all in the exact totals.
                    let found = match t % 2 {
                        0 => cache.get(&key),
                        _ => cache.get_with(&key, |v| *v),
                    };
                    if let Some(value) = found {
                        assert_eq!(value, key * 3);
                    } else {
                        cache.insert(key, key * 3);
                        inserts.fetch_add(1, Ordering::Relaxed);
                    }
                    gets.fetch_add(1, Ordering::Relaxed);
                    if i % 4096 == 0 && t == 0 {
                        cache.resize(128 + (i as usize / 4096 % 3) * 100).unwrap();
                    }
                    if let Some(v) = cache.peek(&key) {
                        assert_eq!(v, key * 3);
                    }
                }
            });
        }
        start.wait();
        // Scoped threads other than the watcher are joined at scope end; stop
        // the watcher once they are (poll the insert counter instead of
        // joining handles we did not keep).
        while gets.load(Ordering::SeqCst) < THREADS as u64 * OPS {
            std::thread::yield_now();
        }
        done.store(true, Ordering::SeqCst);
        assert!(watcher.join().unwrap() > 0);
    });
    let stats = cache.stats();
    assert_eq!(stats.hits + stats.misses, THREADS as u64 * OPS);
    assert_eq!(stats.misses, inserts.load(Ordering::SeqCst));
    assert_eq!(stats.inserts, inserts.load(Ordering::SeqCst));
    assert!(Some(stats.len) <= stats.capacity);
    assert_eq!(stats.len, cache.to_vec().into_iter().len());
    // Every insert either is still cached, or was evicted, or was displaced
    // by a later insert of the same key (two threads missing at once).
    assert!(stats.inserts >= stats.len as u64 + stats.evictions);
}

#[test]
fn stress_racing_loads_run_each_loader_once() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        stress_racing_loads_under(policy);
    }
}

fn stress_racing_loads_under(policy: EvictionPolicy) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const THREADS: usize = 8;
    const KEYS: u64 = 64;
    // Room for every key in whichever shard it lands: nothing is evicted.
    let cache = LruCache::<u64, u64>::builder()
        .capacity(4 * KEYS as usize)
        .shards(4)
        .policy(policy)
        .build()
        .unwrap();
    let runs: Vec<AtomicUsize> = (0..KEYS).map(|_| AtomicUsize::new(0)).collect();
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS as u64 {
            let (cache, runs, start) = (&cache, &runs, &start);
            s.spawn(move || {
                start.wait();
                for round in 0..3 {
                    for i in 0..KEYS {
                        let key = (i + t * 7 + round) % KEYS;
                        let value = cache.get_or_init(&key, || {
                            runs[key as usize].fetch_add(1, Ordering::SeqCst);
                            std::thread::yield_now();
                            key + 100
                        });
                        assert_eq!(value, key + 100);
                    }
                }
            });
        }
    });
    for (key, count) in runs.iter().enumerate() {
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "key {key} loaded more than once"
        );
    }
    let stats = cache.stats();
    assert_eq!(stats.inits, KEYS);
    assert_eq!(stats.hits + stats.misses, THREADS as u64 * KEYS * 3);
    assert_eq!((stats.len, stats.evictions), (KEYS as usize, 0));
}
