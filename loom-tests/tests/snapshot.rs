//! loom models of `Snapshot`: every interleaving of a few threads, with the
//! real `Snapshot` code over loom's stand-in for `ArcSwap`.
//! Each model has a negative control that runs a deliberately broken
//! protocol and must fail.
#![cfg(loom)]

use larder::Snapshot;
use larder::fault::{SnapshotFault, inject};
use loom::sync::Arc;
use loom::thread;

/// Two threads each `update(+1)`: nothing is lost and versions count both.
fn update_loses_nothing(fault: SnapshotFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let snap = Arc::new(Snapshot::new(0_u32));
        let other = {
            let snap = Arc::clone(&snap);
            thread::spawn(move || {
                snap.update(|n| n + 1);
            })
        };
        snap.update(|n| n + 1);
        other.join().unwrap();
        let end = snap.load();
        assert_eq!(**end, 2, "an update was lost");
        assert_eq!(end.version(), 2, "a version was reused");
    });
}

#[test]
fn snapshot_update_loses_nothing() {
    update_loses_nothing(SnapshotFault::None);
}

#[test]
#[should_panic(expected = "an update was lost")]
fn snapshot_update_negative_control_load_then_store() {
    update_loses_nothing(SnapshotFault::LoadThenStore);
}

/// Two writers store while a reader loads twice: the reader never sees the
/// version go backwards, and the versions end at exactly 2.
fn versions_never_decrease(fault: SnapshotFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let snap = Arc::new(Snapshot::new(0_u64));
        let writers: Vec<_> = (1..=2)
            .map(|w| {
                let snap = Arc::clone(&snap);
                thread::spawn(move || {
                    snap.store(w);
                })
            })
            .collect();
        let first = snap.load().version();
        let second = snap.load().version();
        assert!(
            second >= first,
            "version went backwards: {first} then {second}"
        );
        for writer in writers {
            writer.join().unwrap();
        }
        let end = snap.load().version();
        assert!(end >= second, "version went backwards: {second} then {end}");
        // Both stores are joined: a load now must see the later of the two,
        // version 2. Seeing 1 means the version went back from 2 to 1.
        assert_eq!(
            end, 2,
            "version went backwards: a load after both stores saw {end}"
        );
    });
}

#[test]
fn snapshot_versions_never_decrease() {
    versions_never_decrease(SnapshotFault::None);
}

#[test]
#[should_panic(expected = "version went backwards")]
fn snapshot_versions_negative_control_version_before_swap() {
    versions_never_decrease(SnapshotFault::VersionBeforeSwap);
}

/// Two writers race `compare_and_swap` from the same observed value: exactly
/// one wins.
fn compare_and_swap_has_one_winner(fault: SnapshotFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let snap = Arc::new(Snapshot::new(0_u32));
        let seen = snap.load_full();
        let racer = |value: u32| {
            let snap = Arc::clone(&snap);
            let seen = seen.clone();
            thread::spawn(move || snap.compare_and_swap(&seen, value).is_ok())
        };
        let a = racer(1);
        let b = racer(2);
        let wins = [a.join().unwrap(), b.join().unwrap()];
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "not exactly one winner: {wins:?}"
        );
        let end = snap.load();
        assert_eq!(end.version(), 1);
        assert_eq!(**end, if wins[0] { 1 } else { 2 });
    });
}

#[test]
fn snapshot_compare_and_swap_has_one_winner() {
    compare_and_swap_has_one_winner(SnapshotFault::None);
}

#[test]
#[should_panic(expected = "not exactly one winner")]
fn snapshot_compare_and_swap_negative_control_check_then_swap() {
    compare_and_swap_has_one_winner(SnapshotFault::CheckThenSwap);
}

/// A `store` races an `update(+1)`: every write takes the writers' lock,
/// so the two publish versions 1 and 2 between them, and the update lands
/// on top of exactly the value it was computed from.
fn store_and_update_share_the_writers_lock(fault: SnapshotFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let snap = Arc::new(Snapshot::new(0_u32));
        let storer = {
            let snap = Arc::clone(&snap);
            thread::spawn(move || snap.store(10))
        };
        let updated = snap.update(|n| n + 1);
        let stored = storer.join().unwrap();
        let end = snap.load();
        let mut versions = [stored, updated.version()];
        versions.sort_unstable();
        assert_eq!(versions, [1, 2], "a version was reused");
        assert_eq!(end.version(), 2, "a version was reused");
        // The update came last and saw the store (11), or came first and
        // the store replaced it (10); 1 at the end is the store lost.
        let expected = if updated.version() == 2 { 11 } else { 10 };
        assert_eq!(**end, expected, "a write was lost");
    });
}

#[test]
fn snapshot_store_and_update_share_the_writers_lock() {
    store_and_update_share_the_writers_lock(SnapshotFault::None);
}

#[test]
#[should_panic(expected = "a version was reused")]
fn snapshot_writers_lock_negative_control_exchange_outside_lock() {
    store_and_update_share_the_writers_lock(SnapshotFault::ExchangeOutsideLock);
}

/// A cached reader in one thread sees a store made by another once that
/// store is joined (happens-before), and never an older value after a newer.
#[test]
fn snapshot_cached_reader_sees_joined_store() {
    loom::model(|| {
        let snap = Arc::new(Snapshot::new(0_u32));
        let writer = {
            let snap = Arc::clone(&snap);
            thread::spawn(move || {
                snap.store(1);
            })
        };
        let mut reader = snap.cached_reader();
        let before = reader.load().version();
        writer.join().unwrap();
        let after = reader.load();
        assert!(after.version() >= before);
        assert_eq!((**after, after.version()), (1, 1));
    });
}
