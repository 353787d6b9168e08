//! Loading on a miss: one init per key among concurrent callers, errors
//! shared and never cached, a panicking init loses nothing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use crate::face::{Axes, Face};
use crate::watchdog;

const THREADS: usize = 8;

/// Threads released together by a barrier ask for the same keys in
/// different orders: each key's init runs once per round, and every caller
/// gets that init's value.
pub fn single_flight_inits_once<F: Face>(axes: &Axes) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const KEYS: u32 = 16;
    const ROUNDS: u32 = 8;
    let cache = F::build(&axes.config(KEYS as usize));
    let inits = AtomicUsize::new(0);
    let barrier = Barrier::new(THREADS);
    for round in 0..ROUNDS {
        thread::scope(|s| {
            for t in 0..THREADS as u32 {
                let (cache, inits, barrier) = (&cache, &inits, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..KEYS {
                        let k = if t % 2 == 0 {
                            (i + t) % KEYS
                        } else {
                            KEYS - 1 - i
                        };
                        let value = cache.get_or_init(&format!("k{k}"), || {
                            inits.fetch_add(1, Ordering::SeqCst);
                            thread::yield_now(); // widen the window
                            round * 100 + k
                        });
                        assert_eq!(value, round * 100 + k, "another init's value");
                    }
                });
            }
        });
        assert_eq!(
            inits.swap(0, Ordering::SeqCst),
            KEYS as usize,
            "round {round}: not one init per key"
        );
        assert_eq!(cache.len(), KEYS as usize);
        cache.check_invariants();
        cache.clear();
    }
    let stats = cache.stats();
    let calls = u64::from(KEYS * ROUNDS) * THREADS as u64;
    assert_eq!(stats.inits, u64::from(KEYS * ROUNDS));
    assert_eq!(stats.init_failures, 0);
    assert_eq!(stats.hits + stats.misses, calls);
    assert_eq!(stats.inits + stats.waits, stats.misses, "{stats:?}");
}

/// A failed init caches nothing (the next call runs a fresh one), and the
/// callers of one failing burst all get an error, one init each or shared.
pub fn errors_are_not_cached<F: Face>(axes: &Axes) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let cache = F::build(&axes.config(4));
    let failed = cache.get_or_try_init("k", || Err::<u32, _>("down"));
    assert_eq!(*failed.unwrap_err(), "down");
    assert!(!cache.contains_key("k"));
    assert_eq!((cache.len(), cache.get("k")), (0, None));
    let again = cache.get_or_try_init("k", || Ok::<_, &str>(5));
    assert_eq!(again.unwrap(), 5, "the error was cached");
    assert_eq!(cache.get_or_try_init("k", || Err::<u32, _>("down")), Ok(5));
    let stats = cache.stats();
    assert_eq!((stats.inits, stats.init_failures), (2, 1));

    let calls = AtomicUsize::new(0);
    let errors = AtomicUsize::new(0);
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                let outcome = cache.get_or_try_init("burst", || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(20));
                    Err::<u32, _>("burst down")
                });
                assert_eq!(*outcome.unwrap_err(), "burst down");
                errors.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    assert_eq!(errors.load(Ordering::SeqCst), THREADS);
    assert!(!cache.contains_key("burst"));
    let burst = cache.stats();
    let inits = burst.inits - stats.inits;
    assert_eq!(inits, calls.load(Ordering::SeqCst) as u64);
    assert_eq!(burst.init_failures - stats.init_failures, inits);
    // Each caller either ran an init or shared one.
    assert_eq!(inits + burst.waits - stats.waits, THREADS as u64);
    assert_eq!(cache.len(), 1);
    cache.check_invariants();
}

/// A panicking init unwinds through its caller only: the key stays absent,
/// every other entry stays, a caller waiting for it runs its own init, and
/// the key loads normally afterwards.
pub fn a_panicking_init_leaves_the_key_absent<F: Face>(axes: &Axes) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let cache = F::build(&axes.config(8));
    for k in 0..4 {
        cache.insert(format!("k{k}"), k);
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        cache.get_or_init("boom", || panic!("init panics"))
    }));
    assert!(outcome.is_err());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        cache.get_or_try_init("boom", || -> Result<u32, ()> { panic!("try init panics") })
    }));
    assert!(outcome.is_err());
    assert!(!cache.contains_key("boom"));
    assert_eq!(cache.len(), 4);
    for k in 0..4 {
        assert_eq!(cache.get(&format!("k{k}")), Some(k), "lost another entry");
    }
    cache.check_invariants();
    let stats = cache.stats();
    let got = (stats.misses, stats.inits, stats.init_failures, stats.len);
    assert_eq!(got, (2, 2, 2, 4), "{stats:?}");

    // A waiter of the panicking init runs its own.
    let started = Barrier::new(2);
    thread::scope(|s| {
        s.spawn(|| {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                cache.get_or_init("shared", || {
                    started.wait();
                    thread::sleep(Duration::from_millis(20));
                    panic!("leader panics")
                })
            }));
            assert!(outcome.is_err());
        });
        started.wait();
        assert_eq!(cache.get_or_init("shared", || 9), 9);
    });
    assert_eq!(cache.get("shared"), Some(9));
    let stats = cache.stats();
    assert_eq!((stats.inits, stats.init_failures), (4, 3));
    assert_eq!(cache.len(), 5);
    cache.check_invariants();
}
