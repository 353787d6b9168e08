//! loom models of `TypedCache`: every interleaving of a few threads, with
//! the real cache and single-flight code over loom's locks and atomics
//! (`Arc` is std's, as in the crate: reference counting is not modelled).
//! Each model has a negative control that runs a deliberately broken
//! protocol (`FlightFault`) and must fail.
#![cfg(loom)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use larder::TypedCache;
use larder::fault::{FlightFault, TypedFault, inject};
use loom::thread;
use loom_tests::{INIT_PANIC, quiet_expected_panics};
use std::sync::Arc;

/// `threads` threads call `get_or_init` on one cold key at once: the init
/// runs once and everyone gets the same `Arc`.
fn exactly_one_init(threads: usize, fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, Arc<u32>>::new());
        // A std atomic: a counter the model reads, not a protocol it checks.
        let inits = Arc::new(AtomicUsize::new(0));
        let call = {
            let cache = Arc::clone(&cache);
            let inits = Arc::clone(&inits);
            move || {
                cache.get_or_init(&1, || {
                    inits.fetch_add(1, Ordering::SeqCst);
                    Arc::new(42)
                })
            }
        };
        let others: Vec<_> = (1..threads).map(|_| thread::spawn(call.clone())).collect();
        let mine = call();
        let theirs: Vec<_> = others.into_iter().map(|o| o.join().unwrap()).collect();
        assert_eq!(inits.load(Ordering::SeqCst), 1, "init ran more than once");
        for theirs in theirs {
            assert!(Arc::ptr_eq(&mine, &theirs), "callers got different values");
        }
        assert_eq!(*mine, 42);
        cache.check_invariants();
    });
}

#[test]
fn typed_exactly_one_init_two_threads() {
    exactly_one_init(2, FlightFault::None);
}

#[test]
#[should_panic(expected = "init ran more than once")]
fn typed_exactly_one_init_two_threads_negative_control_check_then_act() {
    exactly_one_init(2, FlightFault::SkipFlight);
}

#[test]
fn typed_exactly_one_init_three_threads() {
    exactly_one_init(3, FlightFault::None);
}

#[test]
#[should_panic(expected = "init ran more than once")]
fn typed_exactly_one_init_three_threads_negative_control_check_then_act() {
    exactly_one_init(3, FlightFault::SkipFlight);
}

/// One thread's init fails while another's would succeed: the failure is
/// returned (to its caller and to a caller that joined it) but never cached,
/// so a call after both ends succeeds.
fn failure_is_not_cached(fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, u32>::new());
        let failing = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                cache
                    .get_or_try_init(&1, || Err::<u32, &str>("backend down"))
                    .map_err(|e| *e)
            })
        };
        let succeeding = cache
            .get_or_try_init(&1, || Ok::<u32, &str>(7))
            .map_err(|e| *e);
        let failed = failing.join().unwrap();
        assert!(
            matches!(failed, Err("backend down") | Ok(7)),
            "failing caller got {failed:?}"
        );
        assert!(
            matches!(succeeding, Err("backend down") | Ok(7)),
            "succeeding caller got {succeeding:?}"
        );
        let after = cache
            .get_or_try_init(&1, || Ok::<u32, &str>(9))
            .map_err(|e| *e);
        let expected = if succeeding.is_ok() { 7 } else { 9 };
        assert_eq!(after, Ok(expected), "a failed init stuck");
        cache.check_invariants();
    });
}

#[test]
fn typed_failure_is_not_cached() {
    failure_is_not_cached(FlightFault::None);
}

#[test]
#[should_panic(expected = "a failed init stuck")]
fn typed_failure_negative_control_sticky_error() {
    failure_is_not_cached(FlightFault::StickyError);
}

/// One thread's init panics while another asks for the same key: the panic
/// stays with its caller, and the other caller completes with its own init
/// (taking over) or the cached value.
fn panic_hands_over(fault: FlightFault) {
    quiet_expected_panics();
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, u32>::new());
        let panicking = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                catch_unwind(AssertUnwindSafe(|| {
                    cache.get_or_init(&1, || std::panic::panic_any(INIT_PANIC))
                }))
                .ok()
            })
        };
        let mine = cache.get_or_init(&1, || 5);
        assert_eq!(mine, 5, "the waiter did not complete");
        let theirs = panicking.join().unwrap();
        // Either it panicked, or it came after our value was cached.
        assert!(matches!(theirs, None | Some(5)), "got {theirs:?}");
        assert_eq!(cache.get(&1), Some(5));
        cache.check_invariants();
    });
}

#[test]
fn typed_panicking_init_hands_over_to_waiter() {
    panic_hands_over(FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn typed_panic_negative_control_abandon_on_panic() {
    panic_hands_over(FlightFault::AbandonOnPanic);
}

/// An init reads the backend while another thread changes the backend and
/// then invalidates the key: whatever the interleaving, the cache never
/// keeps the value read before the change (the invalidation wins).
fn invalidation_wins_over_init(fault: TypedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, u32>::new());
        // A loom atomic standing for the backend, so that its reads and
        // writes are scheduling points too.
        let backend = Arc::new(loom::sync::atomic::AtomicU32::new(0));
        let init = {
            let cache = Arc::clone(&cache);
            let backend = Arc::clone(&backend);
            thread::spawn(move || cache.get_or_init(&1, || backend.load(Ordering::SeqCst)))
        };
        backend.store(1, Ordering::SeqCst);
        cache.remove(&1);
        let got = init.join().unwrap();
        assert!(got <= 1);
        assert_ne!(
            cache.get(&1),
            Some(0),
            "a stale init outlived an invalidation"
        );
        cache.check_invariants();
    });
}

#[test]
fn typed_invalidation_wins_over_init() {
    invalidation_wins_over_init(TypedFault::None);
}

#[test]
#[should_panic(expected = "a stale init outlived an invalidation")]
fn typed_invalidation_negative_control_init_ignores_writes() {
    invalidation_wins_over_init(TypedFault::InitIgnoresWrites);
}
