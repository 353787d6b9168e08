//! Public-API tests of `Snapshot`.

#[path = "common/watchdog.rs"]
mod watchdog;

use larder::{CachedReader, CompareAndSwapError, Guard, Snapshot, Versioned};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn public_types_are_send_and_sync() {
    assert_send_sync::<Snapshot<String>>();
    assert_send_sync::<Versioned<String>>();
    assert_send_sync::<Arc<Versioned<String>>>();
    assert_send_sync::<CompareAndSwapError<String>>();
    assert_send::<CachedReader<'static, String>>();
    assert_send_sync::<Guard<String>>();
}

#[test]
fn store_swap_and_versions() {
    let snap = Snapshot::new(vec![1]);
    assert_eq!(snap.store(vec![2]), 1);
    let old = snap.swap(vec![3]);
    assert_eq!((old.value(), old.version()), (&vec![2], 1));
    assert_eq!(snap.version(), 2);
    assert_eq!(*snap.load_full().value(), vec![3]);
}

#[test]
fn compare_and_swap_by_identity_not_equality() {
    let snap = Snapshot::new(5);
    let seen = snap.load_full();
    snap.store(5); // equal value, new identity
    let err = snap.compare_and_swap(&seen, 6).unwrap_err();
    assert_eq!((err.new, err.current.version()), (6, 1));
    let current = snap.load();
    assert!(snap.compare_and_swap(&current, 7).is_ok());
    assert_eq!((**snap.load(), snap.version()), (7, 2));
}

/// Eight threads (more than the cores) update concurrently while readers
/// check that versions never go backwards and always match the value.
#[test]
fn stress_update_is_exact_and_versions_are_monotonic() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const WRITERS: u64 = 6;
    const PER_WRITER: u64 = 2_000;
    let snap = Snapshot::new(0_u64);
    let done = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(20);
    thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..PER_WRITER {
                        snap.update(|n| n + 1);
                        assert!(Instant::now() < deadline, "stress test ran out of time");
                    }
                })
            })
            .collect();
        for _ in 0..2 {
            s.spawn(|| {
                let mut reader = snap.cached_reader();
                let mut last = 0;
                let mut last_load = 0;
                while !done.load(Ordering::Acquire) {
                    let cached = reader.load();
                    assert!(cached.version() >= last, "cached reader went backwards");
                    assert_eq!(**cached, cached.version());
                    last = cached.version();
                    let loaded = snap.load();
                    assert!(loaded.version() >= last_load, "load went backwards");
                    last_load = loaded.version();
                }
            });
        }
        for writer in writers {
            writer.join().unwrap();
        }
        done.store(true, Ordering::Release);
    });
    assert_eq!(**snap.load(), WRITERS * PER_WRITER);
    assert_eq!(snap.version(), WRITERS * PER_WRITER);
}

#[test]
fn value_drop_panicking_does_not_break_the_snapshot() {
    struct Bomb(bool);
    impl Drop for Bomb {
        fn drop(&mut self) {
            if self.0 && !thread::panicking() {
                panic!("drop failed");
            }
        }
    }
    let snap = Snapshot::new(Bomb(true));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        snap.store(Bomb(false)); // the old value's Drop panics here
    }));
    assert!(outcome.is_err());
    assert!(!snap.load().0);
    assert_eq!(snap.version(), 1);
    snap.store(Bomb(false));
    assert_eq!(snap.version(), 2);
}
