//! loom models of `OrderedIndex::drain_to` as one atomic cut, of the
//! consistent-cut reads on the single-lock engine, and of the point-lookup
//! table against the leaves: the real index code over loom's locks. Each
//! model has a negative control (`OrderedFault`) that must fail.
#![cfg(loom)]

use std::ops::Bound;

use larder::fault::{OrderedFault, inject};
use larder::{OrderedIndex, OrderedLock};
use loom::sync::Arc;
use loom::thread;

/// Which engine a model runs on.
#[derive(Clone, Copy, Debug)]
enum Engine {
    /// One tree under one (sharded) lock.
    OneLock,
    /// `OrderedLock::Partitioned` with leaves of at most two entries.
    Leaves,
}

fn index_of(engine: Engine) -> OrderedIndex<u32, u32> {
    match engine {
        Engine::OneLock => OrderedIndex::builder()
            .lock(OrderedLock::Sharded)
            .build()
            .expect("valid settings"),
        Engine::Leaves => OrderedIndex::builder()
            .lock(OrderedLock::Partitioned)
            .leaf_size(2)
            .build()
            .expect("valid settings"),
    }
}

/// The keys of a cut, in order.
fn keys(entries: &[(u32, std::sync::Arc<u32>)]) -> Vec<u32> {
    entries.iter().map(|(key, _)| *key).collect()
}

/// After the threads are done: every key of `universe` that `range(..)`
/// shows is found by `get` with the same stored value, and every other key
/// is not (the point-lookup table agrees with the leaves).
fn points_agree_with_entries(index: &OrderedIndex<u32, u32>, universe: &[u32]) {
    let entries = index.range_to_vec::<u32, _>(..);
    for key in universe {
        let listed = entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let found = index.get(key);
        match (listed, &found) {
            (Some(listed), Some(found)) => assert!(
                std::sync::Arc::ptr_eq(listed, found),
                "get({key}) found another value than the entries hold"
            ),
            (None, None) => {}
            _ => panic!("the point table disagrees with the entries on {key}: {found:?}"),
        }
    }
    assert_eq!(index.len(), entries.len());
}

/// The index holds 3, 5 and 7 (on two-entry leaves: `[3]` and `[5, 7]`).
fn three_five_seven(engine: Engine) -> Arc<OrderedIndex<u32, u32>> {
    let index = Arc::new(index_of(engine));
    for key in [3, 5, 7] {
        index.insert(key, key * 10);
    }
    index
}

/// One thread drains up to 5 while the main thread takes `range(..)` (or
/// a snapshot): the reader sees the index before the drain (`[3, 5, 7]`)
/// or after it (`[7]`), never the first leaf drained and the second not. A
/// snapshot holds the leaves while it builds its map, after releasing their
/// locks: the drain must copy a leaf it shares rather than change it.
fn drain_is_one_cut_for_a_reader(engine: Engine, fault: OrderedFault, reader: Reader) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = three_five_seven(engine);
        let drainer = {
            let index = Arc::clone(&index);
            thread::spawn(move || keys(&index.drain_to(Bound::Included(&5))))
        };
        let cut = match reader {
            Reader::Range => keys(&index.range_to_vec::<u32, _>(..)),
            Reader::Snapshot => index.snapshot().iter().map(|(k, _)| *k).collect(),
        };
        assert!(
            [&[3, 5, 7][..], &[7]].contains(&cut.as_slice()),
            "a reader saw a drain half done: {cut:?}"
        );
        assert_eq!(drainer.join().unwrap(), [3, 5]);
        points_agree_with_entries(&index, &[3, 5, 7]);
    });
}

#[test]
fn partitioned_drain_is_one_cut_for_a_reader() {
    drain_is_one_cut_for_a_reader(Engine::Leaves, OrderedFault::None, Reader::Range);
}

#[test]
fn partitioned_drain_is_one_cut_for_a_snapshot() {
    drain_is_one_cut_for_a_reader(Engine::Leaves, OrderedFault::None, Reader::Snapshot);
}

#[test]
#[should_panic(expected = "a reader saw a drain half done")]
fn partitioned_drain_snapshot_negative_control_hand_over_hand() {
    drain_is_one_cut_for_a_reader(Engine::Leaves, OrderedFault::LeafByLeaf, Reader::Snapshot);
}

#[test]
#[should_panic(expected = "a reader saw a drain half done")]
fn partitioned_drain_reader_negative_control_hand_over_hand() {
    drain_is_one_cut_for_a_reader(Engine::Leaves, OrderedFault::LeafByLeaf, Reader::Range);
}

#[test]
fn ordered_drain_is_one_cut_for_a_reader() {
    drain_is_one_cut_for_a_reader(Engine::OneLock, OrderedFault::None, Reader::Range);
}

#[test]
#[should_panic(expected = "a reader saw a drain half done")]
fn ordered_drain_reader_negative_control_check_then_remove() {
    drain_is_one_cut_for_a_reader(
        Engine::OneLock,
        OrderedFault::CheckThenRemove,
        Reader::Range,
    );
}

/// On two-entry leaves (`[3]`, `[5, 7]`) the main thread drains up to 5
/// while a writer inserts 1 (first leaf), then removes 5 (second leaf):
/// the drain takes the entries up to 5 of one of the three states the
/// index passes through, never the first leaf of one and the second of
/// another; what it did not take is still there.
fn drain_is_one_cut_for_a_writer(fault: OrderedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = three_five_seven(Engine::Leaves);
        let writer = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                index.insert(1, 10);
                index.remove(&5);
            })
        };
        let taken = keys(&index.drain_to(Bound::Included(&5)));
        assert!(
            [&[3, 5][..], &[1, 3, 5], &[1, 3]].contains(&taken.as_slice()),
            "a drain mixed two states: {taken:?}"
        );
        writer.join().unwrap();
        let left = keys(&index.range_to_vec::<u32, _>(..));
        let expected_left: &[u32] = if taken.contains(&1) { &[7] } else { &[1, 7] };
        assert_eq!(left, expected_left, "an entry was lost or kept twice");
        points_agree_with_entries(&index, &[1, 3, 5, 7]);
    });
}

#[test]
fn partitioned_drain_is_one_cut_for_a_writer() {
    drain_is_one_cut_for_a_writer(OrderedFault::None);
}

#[test]
#[should_panic(expected = "a drain mixed two states")]
fn partitioned_drain_writer_negative_control_hand_over_hand() {
    drain_is_one_cut_for_a_writer(OrderedFault::LeafByLeaf);
}

/// On two-entry leaves one thread drains up to 3 (the first leaf) while the
/// main thread takes `range(..)`, then looks 3 up: once a range no longer
/// shows 3, `get` (the point-lookup table) does not find it either, and a
/// `get` that finds it returns the value the entries held.
fn point_table_moves_with_the_leaves(fault: OrderedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = three_five_seven(Engine::Leaves);
        let drainer = {
            let index = Arc::clone(&index);
            thread::spawn(move || keys(&index.drain_to(Bound::Included(&3))))
        };
        let cut = keys(&index.range_to_vec::<u32, _>(..));
        let found = index.get(&3);
        if !cut.contains(&3) {
            assert!(
                found.is_none(),
                "get found an entry a range no longer shows: {found:?}"
            );
        }
        assert_eq!(drainer.join().unwrap(), [3]);
        points_agree_with_entries(&index, &[3, 5, 7]);
    });
}

#[test]
fn partitioned_point_table_moves_with_the_leaves() {
    point_table_moves_with_the_leaves(OrderedFault::None);
}

#[test]
#[should_panic(expected = "get found an entry a range no longer shows")]
fn partitioned_point_table_negative_control_late_slots() {
    point_table_moves_with_the_leaves(OrderedFault::LateSlots);
}

/// How a reader of these models reads.
#[derive(Clone, Copy)]
enum Reader {
    Range,
    Snapshot,
}

/// On the single-lock engine: a writer moves an entry from key 5 to key 1
/// (insert 1, then remove 5) while a reader takes `range(..)` or a
/// `snapshot()`: the reader sees one of the three states the index passes
/// through, never a mix of two.
fn cut_is_consistent_on_one_lock(fault: OrderedFault, reader: Reader) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(index_of(Engine::OneLock));
        index.insert(3, 30);
        index.insert(5, 50);
        let writer = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                index.insert(1, 10);
                index.remove(&5);
            })
        };
        let cut: Vec<u32> = match reader {
            Reader::Range => keys(&index.range_to_vec::<u32, _>(..)),
            Reader::Snapshot => index.snapshot().iter().map(|(k, _)| *k).collect(),
        };
        assert!(
            [&[3, 5][..], &[1, 3, 5], &[1, 3]].contains(&cut.as_slice()),
            "a torn cut: {cut:?}"
        );
        writer.join().unwrap();
        points_agree_with_entries(&index, &[1, 3, 5]);
    });
}

#[test]
fn ordered_one_lock_range_is_a_consistent_cut() {
    cut_is_consistent_on_one_lock(OrderedFault::None, Reader::Range);
}

#[test]
#[should_panic(expected = "a torn cut")]
fn ordered_one_lock_range_negative_control_torn_cut() {
    cut_is_consistent_on_one_lock(OrderedFault::TornCut, Reader::Range);
}

#[test]
fn ordered_one_lock_snapshot_is_a_consistent_cut() {
    cut_is_consistent_on_one_lock(OrderedFault::None, Reader::Snapshot);
}

#[test]
#[should_panic(expected = "a torn cut")]
fn ordered_one_lock_snapshot_negative_control_torn_cut() {
    cut_is_consistent_on_one_lock(OrderedFault::TornCut, Reader::Snapshot);
}
