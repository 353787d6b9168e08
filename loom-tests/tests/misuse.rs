//! loom models for the misuse catalogue (`docs/misuse.md`): the misuses
//! whose failure needs a rare interleaving or a weak-memory outcome that a
//! run-time demonstration cannot force.
//!
//! Each broken model is `#[should_panic]`: loom must find the interleaving
//! that breaks it (these are the catalogue's expected failures). Each
//! fixed twin is a normal test: loom must find none.
//!
//! | misuse | broken (must fail) | fixed (must pass) |
//! |---|---|---|
//! | 04 check-then-act init | `check_then_act_init_runs_twice_is_caught` | `compare_exchange_init_runs_once` |
//! | 04 load-then-store | `load_then_store_loses_update_is_caught` | `fetch_add_loses_nothing`, `snapshot_update_loses_nothing` |
//! | 09 `Relaxed` publication | `relaxed_flag_publication_is_caught` | `release_acquire_flag_publication`, `snapshot_publication` |
//! | 10 loading twice | `loading_twice_mixes_versions_is_caught` | `loading_once_sees_one_version` |
#![cfg(loom)]

use larder::Snapshot;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

// ---- 09: publishing data behind a flag ----------------------------------

/// A writer stores the data, then raises the flag with `flag_store`; a
/// reader that sees the flag (read with `flag_load`) must see the data.
fn flag_publication(flag_store: Ordering, flag_load: Ordering) {
    loom::model(move || {
        let data = Arc::new(AtomicUsize::new(0));
        let ready = Arc::new(AtomicBool::new(false));
        let writer = {
            let (data, ready) = (Arc::clone(&data), Arc::clone(&ready));
            thread::spawn(move || {
                // Relaxed: the payload; ordered (or not) by the flag.
                data.store(42, Ordering::Relaxed);
                // `flag_store`: Release pairs with the reader's Acquire.
                ready.store(true, flag_store);
            })
        };
        // `flag_load`: Acquire pairs with the writer's Release.
        if ready.load(flag_load) {
            // Relaxed: see above.
            assert_eq!(
                data.load(Ordering::Relaxed),
                42,
                "saw the flag but not the data"
            );
        }
        writer.join().unwrap();
    });
}

#[test]
#[should_panic(expected = "saw the flag but not the data")]
fn relaxed_flag_publication_is_caught() {
    flag_publication(Ordering::Relaxed, Ordering::Relaxed);
}

#[test]
fn release_acquire_flag_publication() {
    flag_publication(Ordering::Release, Ordering::Acquire);
}

/// The larder way: data and readiness are one value behind one pointer.
#[test]
fn snapshot_publication() {
    loom::model(|| {
        let published: Arc<Snapshot<Option<(u32, u32)>>> = Arc::new(Snapshot::new(None));
        let writer = {
            let published = Arc::clone(&published);
            thread::spawn(move || {
                published.store(Some((42, 43)));
            })
        };
        if let Some(pair) = **published.load() {
            assert_eq!(pair, (42, 43), "saw the value but not the data");
        }
        writer.join().unwrap();
    });
}

// ---- 04: check-then-act ---------------------------------------------------

/// Two threads initialize a shared resource at most once each: `init_once`
/// returns whether this thread should run the init. Counts the inits.
fn single_init(init_once: fn(&AtomicBool) -> bool) {
    loom::model(move || {
        let initialized = Arc::new(AtomicBool::new(false));
        let inits = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (initialized, inits) = (Arc::clone(&initialized), Arc::clone(&inits));
                thread::spawn(move || {
                    if init_once(&initialized) {
                        // Relaxed: a counter read after the joins.
                        inits.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        // Relaxed: the joins order every increment before this load.
        assert_eq!(inits.load(Ordering::Relaxed), 1, "init ran twice");
    });
}

#[test]
#[should_panic(expected = "init ran twice")]
fn check_then_act_init_runs_twice_is_caught() {
    single_init(|initialized| {
        // BROKEN: check, then act in a second step.
        // Acquire pairs with the Release store below (of the other thread).
        if initialized.load(Ordering::Acquire) {
            return false;
        }
        // Release pairs with the Acquire load above.
        initialized.store(true, Ordering::Release);
        true
    });
}

#[test]
fn compare_exchange_init_runs_once() {
    single_init(|initialized| {
        // AcqRel/Acquire: the one winning exchange is the only claim; a
        // loser's failed Acquire pairs with the winner's Release half.
        initialized
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    });
}

/// Two threads each add one with `increment`; nothing may be lost.
fn two_increments(increment: fn(&AtomicUsize)) {
    loom::model(move || {
        let counter = Arc::new(AtomicUsize::new(0));
        let other = {
            let counter = Arc::clone(&counter);
            thread::spawn(move || increment(&counter))
        };
        increment(&counter);
        other.join().unwrap();
        // Relaxed: the join orders the other thread's write before this.
        assert_eq!(counter.load(Ordering::Relaxed), 2, "an update was lost");
    });
}

#[test]
#[should_panic(expected = "an update was lost")]
fn load_then_store_loses_update_is_caught() {
    two_increments(|counter| {
        // BROKEN: load, then store what was computed from it.
        // Acquire/Release pair with each other across the two threads.
        let seen = counter.load(Ordering::Acquire);
        counter.store(seen + 1, Ordering::Release);
    });
}

#[test]
fn fetch_add_loses_nothing() {
    two_increments(|counter| {
        // AcqRel: one read-modify-write; no other value to order.
        counter.fetch_add(1, Ordering::AcqRel);
    });
}

#[test]
fn snapshot_update_loses_nothing() {
    loom::model(|| {
        let counter = Arc::new(Snapshot::new(0_u32));
        let other = {
            let counter = Arc::clone(&counter);
            thread::spawn(move || {
                counter.update(|n| n + 1);
            })
        };
        counter.update(|n| n + 1);
        other.join().unwrap();
        assert_eq!(**counter.load(), 2, "an update was lost");
    });
}

// ---- 10: loading a snapshot twice in one unit of work -----------------------

/// A request reads a rate limit (amount and window) while an operator
/// replaces it; the request must apply one configured limit, not a mix.
fn request_during_update(load_once: bool) {
    loom::model(move || {
        let limit = Arc::new(Snapshot::new((100_u32, "second")));
        let operator = {
            let limit = Arc::clone(&limit);
            thread::spawn(move || {
                limit.store((6000, "minute"));
            })
        };
        let applied = if load_once {
            let current = limit.load_full();
            (current.0, current.1)
        } else {
            // BROKEN: one load per field.
            let amount = limit.load().0;
            let window = limit.load().1;
            (amount, window)
        };
        assert!(
            applied == (100, "second") || applied == (6000, "minute"),
            "mixed two versions: {applied:?}"
        );
        operator.join().unwrap();
    });
}

#[test]
#[should_panic(expected = "mixed two versions")]
fn loading_twice_mixes_versions_is_caught() {
    request_during_update(false);
}

#[test]
fn loading_once_sees_one_version() {
    request_during_update(true);
}
