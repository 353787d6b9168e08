//! loom models of the partitioned engine's reshaping. A write that leaves
//! its leaf over capacity or small asks for a split or a merge, which runs
//! after the write has released its locks, under the router's write lock:
//! by then other threads may have split or merged leaves, moved the entry
//! the split was prepared at, or taken a snapshot that still holds a leaf.
//! Each model checks the layout (`check_invariants`) and the contents at the
//! end, and has a negative control that runs a deliberately broken reshaping
//! and must fail.
#![cfg(loom)]

use larder::fault::{OrderedFault, inject};
use larder::{OrderedIndex, OrderedLock};
use loom::sync::Arc;
use loom::thread;

fn index(leaf_size: usize) -> OrderedIndex<u32, ()> {
    OrderedIndex::builder()
        .lock(OrderedLock::Partitioned)
        .leaf_size(leaf_size)
        .build()
        .expect("valid settings")
}

fn keys(index: &OrderedIndex<u32, ()>) -> Vec<u32> {
    index.range_to_vec(..).into_iter().map(|(k, _)| k).collect()
}

/// Two inserts each take a different leaf over capacity. The split that
/// runs second finds the leaves shifted by the first, and must find its
/// leaf by its address, not by the index it had.
fn splits_find_their_leaves(fault: OrderedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(index(2));
        // Leaves [10, 12] [20] [30, 40].
        for key in [10_u32, 20, 30, 40, 12] {
            index.insert(key, ());
        }
        let other = {
            let index = Arc::clone(&index);
            // Leaf 2 goes over capacity and asks for a split of leaf 2.
            thread::spawn(move || {
                index.insert(35, ());
            })
        };
        // Leaf 0 goes over capacity: its split shifts leaf 2 to index 3.
        index.insert(11, ());
        other.join().unwrap();
        index.check_invariants();
        assert_eq!(keys(&index), [10, 11, 12, 20, 30, 35, 40]);
    });
}

#[test]
fn partitioned_splits_find_their_leaves_by_address() {
    splits_find_their_leaves(OrderedFault::None);
}

#[test]
#[should_panic(expected = "over capacity")]
fn partitioned_splits_negative_control_stale_leaf_index() {
    splits_find_their_leaves(OrderedFault::StaleLeafIndex);
}

/// An insert takes a leaf over capacity and prepares its split at an entry
/// in the middle; before the split runs, another thread removes the entries
/// before that one and inserts after it, so the prepared entry is first in a
/// leaf that is still over capacity. The split must cut in the middle
/// instead, not leave an empty leaf beside an overfull one.
fn split_falls_back_when_its_entry_moved_to_the_front(fault: OrderedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        // Capacity 3: the leaf is over capacity with four entries, an even
        // count, so a cut at the wrong place shows.
        let index = Arc::new(index(3));
        // One leaf [10, 30, 50].
        for key in [10_u32, 30, 50] {
            index.insert(key, ());
        }
        let other = {
            let index = Arc::clone(&index);
            // [10, 20, 30, 50]: a split prepared at 30, in the middle.
            thread::spawn(move || {
                index.insert(20, ());
            })
        };
        // [30, 50, 60, 70] if the insert above came first: 30 is now in
        // front, and this thread's own split is pending too.
        index.remove(&10);
        let removed_20 = index.remove(&20).is_some();
        index.insert(60, ());
        index.insert(70, ());
        other.join().unwrap();
        index.check_invariants();
        let expected: &[u32] = if removed_20 {
            &[30, 50, 60, 70]
        } else {
            &[20, 30, 50, 60, 70]
        };
        assert_eq!(keys(&index), expected);
    });
}

#[test]
fn partitioned_split_falls_back_when_its_entry_moved_to_the_front() {
    split_falls_back_when_its_entry_moved_to_the_front(OrderedFault::None);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn partitioned_split_negative_control_split_at_moved_marker() {
    split_falls_back_when_its_entry_moved_to_the_front(OrderedFault::SplitAtMovedMarker);
}

/// A removal leaves a leaf small enough to merge with its right neighbour
/// while a snapshot still holds that neighbour's entries: the merge, which
/// would have to copy them (`K: Clone`, user code), is skipped, and nothing
/// is lost on either side.
fn merge_beside_a_snapshot_loses_nothing(fault: OrderedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        // Capacity 4: a leaf left with 1 entry merges with a neighbour of 1.
        let index = Arc::new(index(4));
        for key in 1_u32..=5 {
            index.insert(key, ());
        }
        // Leaves [1, 2] [3, 4, 5], then [1, 2] [5].
        index.remove(&3);
        index.remove(&4);
        let reader = {
            let index = Arc::clone(&index);
            thread::spawn(move || index.snapshot().iter().map(|(k, _)| *k).collect::<Vec<_>>())
        };
        // Leaf 0 down to [2]: it asks to merge with [5].
        index.remove(&1);
        let seen = reader.join().unwrap();
        assert!(
            seen == [1, 2, 5] || seen == [2, 5],
            "a torn snapshot: {seen:?}"
        );
        index.check_invariants();
        assert_eq!(keys(&index), [2, 5]);
    });
}

#[test]
fn partitioned_merge_beside_a_snapshot_loses_nothing() {
    merge_beside_a_snapshot_loses_nothing(OrderedFault::None);
}

#[test]
#[should_panic]
fn partitioned_merge_negative_control_merge_shared_leaf() {
    merge_beside_a_snapshot_loses_nothing(OrderedFault::MergeSharedLeaf);
}

/// A removal empties the last leaf; until its merge drops the leaf, `last`
/// finds the end leaf empty with another leaf beside it. It must drop the
/// empty leaf and look again, never answer that the map is empty.
fn end_reads_look_past_an_emptied_end_leaf(fault: OrderedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(index(2));
        // Leaves [1] [2, 3].
        for key in [1_u32, 2, 3] {
            index.insert(key, ());
        }
        let remover = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                index.remove(&3);
                index.remove(&2);
            })
        };
        let last = index.last().map(|(k, _)| k);
        assert!(matches!(last, Some(1..=3)), "last: {last:?}");
        remover.join().unwrap();
        index.check_invariants();
        assert_eq!(index.last().map(|(k, _)| k), Some(1));
    });
}

#[test]
fn partitioned_end_reads_look_past_an_emptied_end_leaf() {
    end_reads_look_past_an_emptied_end_leaf(OrderedFault::None);
}

#[test]
#[should_panic(expected = "last: None")]
fn partitioned_end_reads_negative_control_empty_end_leaf() {
    end_reads_look_past_an_emptied_end_leaf(OrderedFault::EmptyEndLeaf);
}
