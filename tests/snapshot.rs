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

#[test]
fn every_public_type_has_an_informative_debug() {
    let snap = Snapshot::new(String::from("alpha"));
    snap.store(String::from("beta"));
    assert_eq!(
        format!("{snap:?}"),
        r#"Snapshot { version: 1, value: "beta" }"#
    );
    let expected = r#"Versioned { version: 1, value: "beta" }"#;
    assert_eq!(format!("{:?}", snap.load()), expected, "Guard");
    assert_eq!(
        format!("{:?}", snap.load_full()),
        expected,
        "Arc<Versioned>"
    );
    let mut reader = snap.cached_reader();
    assert_eq!(
        format!("{:?}", reader.load()),
        expected,
        "CachedReader::load"
    );
    assert_eq!(format!("{reader:?}"), "CachedReader { .. }");
    let stale = snap.load_full();
    snap.store(String::from("gamma"));
    let err = snap
        .compare_and_swap(&stale, String::from("delta"))
        .unwrap_err();
    assert_eq!(
        format!("{err:?}"),
        "CompareAndSwapError { current_version: 2, .. }"
    );
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
fn try_update_validates_against_the_value_it_publishes_on() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    // Four threads race to raise a counter that must never pass 1000: a
    // validation made against a stale value would overshoot.
    const MAX: u64 = 1_000;
    let snap = Snapshot::new(0_u64);
    let refused = std::sync::atomic::AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..400 {
                    let raised = snap.try_update(|n| if *n < MAX { Ok(n + 1) } else { Err(*n) });
                    match raised {
                        Ok(published) => assert!(**published <= MAX),
                        Err(seen) => {
                            assert_eq!(seen, MAX, "refused on a value below the maximum");
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    assert_eq!(**snap.load(), MAX);
    assert_eq!(snap.version(), MAX, "a refused update stored something");
    assert_eq!(refused.load(Ordering::Relaxed), 4 * 400 - MAX);
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

/// A value whose `Drop` writes to the snapshot that held it: it runs only
/// after the writers' lock is released, so the nested write proceeds
/// (under the lock it would deadlock, and the watchdog would name the test).
#[test]
fn an_old_values_drop_may_write_to_the_same_snapshot() {
    struct Reentrant(Option<std::sync::Weak<Snapshot<Reentrant>>>);
    impl Drop for Reentrant {
        fn drop(&mut self) {
            if let Some(snap) = self.0.take().and_then(|weak| weak.upgrade()) {
                snap.store(Reentrant(None));
            }
        }
    }
    let _watchdog = watchdog::arm(Duration::from_secs(30));
    let snap = Arc::new_cyclic(|weak| Snapshot::new(Reentrant(Some(weak.clone()))));
    let armed = || Reentrant(Some(Arc::downgrade(&snap)));
    // Each write below replaces an armed value with an unarmed one; the
    // armed value's Drop then stores once more: two versions per write.
    assert_eq!(snap.store(Reentrant(None)), 1);
    assert_eq!(snap.version(), 2);
    snap.store(armed());
    drop(snap.swap(Reentrant(None)));
    assert_eq!(snap.version(), 5);
    snap.store(armed());
    let current = snap.load_full();
    drop(snap.compare_and_swap(&current, Reentrant(None)));
    drop(current); // the last reference to the armed value
    assert_eq!(snap.version(), 8);
    snap.store(armed());
    drop(snap.update(|_| Reentrant(None)));
    assert_eq!(snap.version(), 11);
    snap.store(armed());
    drop(snap.try_update(|_| Ok::<_, ()>(Reentrant(None))));
    assert_eq!(snap.version(), 14);
}

// ---------------------------------------------------------------------------
// Panic sweep: `Snapshot` runs no user code but the `Drop` of the values it
// lets go (and `update`'s closure, tested above). A panicking `Drop`, at any
// call, must find the new value published with its version, and the
// snapshot usable.

#[path = "common/hostile.rs"]
mod hostile;

#[test]
fn a_panicking_drop_finds_every_write_published() {
    use hostile::{Trait, Value, sweep};
    type Write = fn(&Snapshot<Value>);
    let writes: [(&str, Write); 4] = [
        ("store", |s| {
            s.store(Value::new(2));
        }),
        ("swap", |s| drop(s.swap(Value::new(2)))),
        ("update", |s| drop(s.update(|v| Value::new(v.id + 1)))),
        ("compare_and_swap", |s| {
            let current = s.load_full();
            drop(s.compare_and_swap(&current, Value::new(2)));
        }),
    ];
    for (name, write) in writes {
        for t in [Trait::Clone, Trait::Drop] {
            sweep(
                t,
                100,
                || Snapshot::new(Value::new(1)),
                &write,
                |s, _| {
                    // The write happens before anything is dropped.
                    let now = s.load_full();
                    assert_eq!((now.value().id, now.version()), (2, 1), "{name}");
                    assert_eq!(s.store(Value::new(3)), 2, "{name}: usable");
                },
            );
        }
    }
}

/// A value that counts its drops, to see which versions are still alive.
struct Counted(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_guard_moved_to_another_thread_outliving_its_loader_stays_valid_and_is_freed() {
    let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let snap = Arc::new(Snapshot::new(Counted(Arc::clone(&dropped))));
    // Loaded on a thread that then exits, leaving its debt slot to the
    // guard; the guard moves to another thread.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let snap = Arc::clone(&snap);
        thread::spawn(move || tx.send(snap.load()).unwrap())
            .join()
            .unwrap();
    }
    let guard = rx.recv().unwrap();
    // Writers go on; new threads load (and may claim the exited thread's
    // slots).
    for _ in 0..100 {
        snap.store(Counted(Arc::clone(&dropped)));
    }
    let loaders: Vec<_> = (0..4)
        .map(|_| {
            let snap = Arc::clone(&snap);
            thread::spawn(move || (0..1_000).map(|_| snap.load().version()).max())
        })
        .collect();
    for loader in loaders {
        assert_eq!(loader.join().unwrap(), Some(100));
    }
    let holder = thread::spawn(move || {
        assert_eq!(guard.version(), 0, "a held guard changed its value");
        drop(guard);
    });
    holder.join().unwrap();
    // Every replaced value is freed once, the guarded one included.
    assert_eq!(dropped.load(Ordering::SeqCst), 100);
    drop(snap);
    assert_eq!(dropped.load(Ordering::SeqCst), 101);
}

#[test]
fn a_guard_held_across_await_in_a_spawned_task_is_correct() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let snap = Arc::new(Snapshot::new(Counted(Arc::clone(&dropped))));
    runtime.block_on(async {
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let snap = Arc::clone(&snap);
                tokio::spawn(async move {
                    // Compiles and runs: `Guard` is `Send`. Held across
                    // awaits, on whichever worker polls the task.
                    let guard = snap.load();
                    let version = guard.version();
                    for _ in 0..20 {
                        tokio::time::sleep(Duration::from_micros(100)).await;
                        assert_eq!(guard.version(), version, "a held guard changed");
                    }
                    version
                })
            })
            .collect();
        for _ in 0..50 {
            snap.store(Counted(Arc::clone(&dropped)));
            tokio::task::yield_now().await;
        }
        tokio::time::timeout(Duration::from_secs(60), async {
            for task in tasks {
                assert!(task.await.unwrap() <= 50);
            }
        })
        .await
        .expect("tasks holding guards across .await hung");
    });
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        50,
        "a replaced value leaked"
    );
    assert_eq!(snap.version(), 50);
}
