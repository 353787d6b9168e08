use super::*;

#[test]
fn versions_count_every_write() {
    let snap = Snapshot::new(0);
    assert_eq!(snap.version(), 0);
    assert_eq!(snap.store(1), 1);
    let old = snap.swap(2);
    assert_eq!((**old, old.version()), (1, 1));
    let current = snap.load_full();
    let replaced = snap.compare_and_swap(&current, 3).unwrap();
    assert_eq!((**replaced, replaced.version()), (2, 2));
    let updated = snap.update(|n| n * 10);
    assert_eq!((**updated, updated.version()), (30, 4));
    assert_eq!(snap.version(), 4);
}

#[test]
fn failed_compare_and_swap_stores_nothing_and_returns_the_value() {
    let snap = Snapshot::new(String::from("a"));
    let stale = snap.load_full();
    snap.store(String::from("b"));
    let err = snap
        .compare_and_swap(&stale, String::from("c"))
        .unwrap_err();
    assert_eq!(err.new, "c");
    assert_eq!(err.current.value(), "b");
    assert_eq!(snap.load().value(), "b");
    assert_eq!(snap.version(), 1);
    assert!(err.to_string().contains("version 1"));
}

#[test]
fn update_reruns_closure_on_conflict_and_loses_nothing() {
    let snap = Snapshot::new(0_u64);
    let calls = std::sync::atomic::AtomicU64::new(0);
    let result = snap.update(|n| {
        if calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
            // A concurrent writer lands while we compute.
            snap.store(100);
        }
        n + 1
    });
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert_eq!(**result, 101);
    assert_eq!(result.version(), 2);
}

#[test]
fn panicking_update_stores_nothing() {
    let snap = Snapshot::new(7);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        snap.update(|_| panic!("user closure failed"));
    }));
    assert!(outcome.is_err());
    assert_eq!((**snap.load(), snap.version()), (7, 0));
    snap.update(|n| n + 1);
    assert_eq!((**snap.load(), snap.version()), (8, 1));
}

#[test]
fn cached_reader_follows_writes() {
    let snap = Snapshot::new(1);
    let mut reader = snap.cached_reader();
    assert_eq!(**reader.load(), 1);
    snap.store(2);
    assert_eq!((**reader.load(), reader.load().version()), (2, 1));
}

#[test]
fn guard_into_arc_outlives_later_writes() {
    let snap = Snapshot::new(vec![1]);
    let kept = Guard::into_arc(snap.load());
    snap.store(vec![2]);
    assert_eq!(kept.value(), &vec![1]);
    assert_eq!(format!("{:?}", snap), "Snapshot { version: 1, value: [2] }");
}

#[test]
fn concurrent_updates_and_readers() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let snap = Snapshot::new(0_u64);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..1000 {
                    snap.update(|n| n + 1);
                }
            });
        }
        for _ in 0..2 {
            s.spawn(|| {
                let mut reader = snap.cached_reader();
                let mut last = 0;
                for _ in 0..2000 {
                    let v = reader.load();
                    assert!(v.version() >= last);
                    assert_eq!(**v, v.version(), "value and version travel together");
                    last = v.version();
                }
            });
        }
    });
    assert_eq!((**snap.load(), snap.version()), (4000, 4000));
}
