//! Three-task loom models of the single-flight waiters of `LruCache` and
//! `TypedCache`: one leader and two waiters, so that a wake-up reaching only
//! one waiter (`notify_one` where `notify_all` is needed) leaves the other
//! asleep, which loom reports as a deadlock. Each model has a negative
//! control that runs the broken wake-up (`FlightFault::NotifyOne`) and must
//! fail.
#![cfg(loom)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use larder::fault::{FlightFault, inject};
use larder::{EvictionPolicy, TypedCache};
use loom::thread;
use loom_tests::{INIT_PANIC, quiet_expected_panics};
use std::sync::Arc;

/// Three threads call `LruCache::get_or_init` on one cold key: every one
/// returns (none is left waiting), the loader ran once, all got its value.
fn lru_three_callers_all_return_model(policy: EvictionPolicy, fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(loom_tests::lru(2, 1, policy));
        // A std atomic: a counter the model reads, not a protocol it checks.
        let runs = Arc::new(AtomicUsize::new(0));
        let call = {
            let cache = Arc::clone(&cache);
            let runs = Arc::clone(&runs);
            move || {
                cache.get_or_init(&7, || {
                    runs.fetch_add(1, Ordering::SeqCst);
                    70
                })
            }
        };
        let others: Vec<_> = (0..2).map(|_| thread::spawn(call.clone())).collect();
        let mine = call();
        let theirs: Vec<u32> = others.into_iter().map(|o| o.join().unwrap()).collect();
        assert_eq!((mine, theirs.as_slice()), (70, &[70, 70][..]));
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "the loader ran more than once"
        );
        assert_eq!(cache.stats().inits, 1);
    });
}

#[test]
fn lru_three_callers_all_return() {
    lru_three_callers_all_return_model(EvictionPolicy::Exact, FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn lru_three_callers_negative_control_notify_one() {
    lru_three_callers_all_return_model(EvictionPolicy::Exact, FlightFault::NotifyOne);
}

#[test]
fn lru_clock_three_callers_all_return() {
    lru_three_callers_all_return_model(EvictionPolicy::Clock, FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn lru_clock_three_callers_negative_control_notify_one() {
    lru_three_callers_all_return_model(EvictionPolicy::Clock, FlightFault::NotifyOne);
}

/// Three threads call `LruCache::get_or_try_init` on one cold key with a
/// loader that fails: every one returns an error (the leader's, shared by
/// the waiters that joined it, or its own) and nothing is cached.
fn lru_three_callers_share_a_failure_model(fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(loom_tests::lru(2, 1, EvictionPolicy::Exact));
        let call = {
            let cache = Arc::clone(&cache);
            move || {
                cache
                    .get_or_try_init(&7, || Err::<u32, &str>("backend down"))
                    .map_err(|error| *error)
            }
        };
        let others: Vec<_> = (0..2).map(|_| thread::spawn(call.clone())).collect();
        let mine = call();
        for outcome in others.into_iter().map(|o| o.join().unwrap()).chain([mine]) {
            assert_eq!(outcome, Err("backend down"));
        }
        assert!(!cache.contains_key(&7), "a failure was cached");
    });
}

#[test]
fn lru_three_callers_share_a_failure() {
    lru_three_callers_share_a_failure_model(FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn lru_failure_negative_control_notify_one() {
    lru_three_callers_share_a_failure_model(FlightFault::NotifyOne);
}

/// Three threads call `TypedCache::get_or_init` on one cold key: every one
/// returns the one `Arc` the single init made (`Arc` values, so sharing is
/// visible).
fn typed_three_callers_all_return_model(fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, Arc<u32>>::new());
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
        let others: Vec<_> = (0..2).map(|_| thread::spawn(call.clone())).collect();
        let mine = call();
        for theirs in others.into_iter().map(|o| o.join().unwrap()) {
            assert!(Arc::ptr_eq(&mine, &theirs), "callers got different values");
        }
        assert_eq!(inits.load(Ordering::SeqCst), 1, "init ran more than once");
        cache.check_invariants();
    });
}

#[test]
fn typed_three_callers_all_return() {
    typed_three_callers_all_return_model(FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn typed_three_callers_negative_control_notify_one() {
    typed_three_callers_all_return_model(FlightFault::NotifyOne);
}

/// The leader's init panics while two other threads wait for the same key:
/// both waiters are woken by the abandoned flight, one takes over, and
/// both end with its value.
fn typed_panic_wakes_both_waiters_model(fault: FlightFault) {
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
        let waiter = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || cache.get_or_init(&1, || 5))
        };
        let mine = cache.get_or_init(&1, || 5);
        assert_eq!(mine, 5);
        assert_eq!(waiter.join().unwrap(), 5, "a waiter did not complete");
        let theirs = panicking.join().unwrap();
        assert!(matches!(theirs, None | Some(5)), "got {theirs:?}");
        cache.check_invariants();
    });
}

#[test]
fn typed_panic_wakes_both_waiters() {
    typed_panic_wakes_both_waiters_model(FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn typed_panic_negative_control_notify_one() {
    typed_panic_wakes_both_waiters_model(FlightFault::NotifyOne);
}
