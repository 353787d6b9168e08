//! loom models of `OrderedIndex`: every interleaving of a few threads, with
//! the real `OrderedIndex` code over loom's stand-in for `ShardedLock` (one
//! loom `RwLock`) and loom's `RwLock` for each leaf and table shard of the
//! partitioned engine. Each model runs on the single-lock engine
//! (`OrderedLock::Sharded`) and on the default `OrderedLock::Partitioned`
//! with two-entry leaves (so the models split, merge and trim leaves, and
//! ranges span leaves), and each has a negative control that runs a
//! deliberately broken protocol and must fail.
#![cfg(loom)]

use larder::fault::{OrderedFault, inject};
use larder::{OrderedIndex, OrderedLock};
use loom::sync::Arc;
use loom::thread;
use std::ops::Bound;

/// Which engine a model runs on.
#[derive(Clone, Copy)]
enum Engine {
    /// One tree under one (sharded) lock.
    OneLock,
    /// `OrderedLock::Partitioned` with leaves of at most two entries.
    Leaves,
}

fn index_of<V>(engine: Engine) -> OrderedIndex<u32, V> {
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

/// A producer inserts while two consumers take from the head, one with
/// `pop_first` (twice), one with `drain_to`: afterwards every key was handed out
/// exactly once or is still in the index. On two-entry leaves the producer's
/// insert splits a leaf, and the consumers empty and trim leaves.
fn consumers_take_each_entry_once(engine: Engine, fault: OrderedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(index_of(engine));
        index.insert(0_u32, 0_u32);
        index.insert(1, 10);
        let producer = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                index.insert(2, 20);
            })
        };
        let popper = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                let mut taken: Vec<_> = index.pop_first().into_iter().collect();
                taken.extend(index.pop_first());
                taken
            })
        };
        let mut taken = index.drain_to(Bound::Included(&1));
        producer.join().unwrap();
        taken.extend(popper.join().unwrap());
        taken.extend(index.drain_to(Bound::Unbounded));
        let mut keys: Vec<u32> = taken.iter().map(|(k, _)| *k).collect();
        for (key, value) in &taken {
            assert_eq!(**value, key * 10, "a value came apart from its key");
        }
        keys.sort_unstable();
        assert!(
            keys.windows(2).all(|w| w[0] != w[1]),
            "an entry was handed out twice: {keys:?}"
        );
        assert_eq!(keys, [0, 1, 2], "an entry was lost");
        assert!(index.is_empty());
    });
}

#[test]
fn ordered_consumers_take_each_entry_once() {
    consumers_take_each_entry_once(Engine::OneLock, OrderedFault::None);
}

#[test]
#[should_panic(expected = "an entry was handed out twice")]
fn ordered_consumers_negative_control_check_then_remove() {
    consumers_take_each_entry_once(Engine::OneLock, OrderedFault::CheckThenRemove);
}

#[test]
fn partitioned_consumers_take_each_entry_once() {
    consumers_take_each_entry_once(Engine::Leaves, OrderedFault::None);
}

#[test]
#[should_panic(expected = "an entry was handed out twice")]
fn partitioned_consumers_negative_control_check_then_remove() {
    consumers_take_each_entry_once(Engine::Leaves, OrderedFault::CheckThenRemove);
}

/// How the reader of [`cut_is_consistent`] reads.
#[derive(Clone, Copy)]
enum Reader {
    Range,
    Snapshot,
    /// `range_take(.., 3)`: leaves locked one by one as the walk reaches them.
    Take,
}

/// A writer moves an entry from key 5 to key 1 (insert 1, then remove 5)
/// while a reader takes `range(..)` or a `snapshot()`: the reader sees one of
/// the three states the index passes through, never a mix of two, and a
/// snapshot still shows that state after the writer is done.
fn cut_is_consistent(fault: OrderedFault, reader: Reader) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(OrderedIndex::new());
        index.insert(3_u32, ());
        index.insert(5, ());
        let writer = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                index.insert(1, ());
                index.remove(&5);
            })
        };
        let (cut, view) = match reader {
            Reader::Range => (
                index.range_to_vec(..).into_iter().map(|(k, _)| k).collect(),
                None,
            ),
            Reader::Take => (
                index
                    .range_take(.., 3)
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect(),
                None,
            ),
            Reader::Snapshot => {
                let view = index.snapshot();
                (
                    view.iter().map(|(k, _)| *k).collect::<Vec<u32>>(),
                    Some(view),
                )
            }
        };
        assert!(
            [&[3, 5][..], &[1, 3, 5], &[1, 3]].contains(&cut.as_slice()),
            "a torn cut: {cut:?}"
        );
        writer.join().unwrap();
        if let Some(view) = view {
            let again: Vec<u32> = view.iter().map(|(k, _)| *k).collect();
            assert_eq!(cut, again, "a snapshot changed after it was taken");
        }
        assert_eq!(
            index
                .range_to_vec(..)
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>(),
            [1, 3]
        );
    });
}

#[test]
fn ordered_range_is_a_consistent_cut() {
    cut_is_consistent(OrderedFault::None, Reader::Range);
}

#[test]
#[should_panic(expected = "a torn cut")]
fn ordered_range_negative_control_torn_cut() {
    cut_is_consistent(OrderedFault::TornCut, Reader::Range);
}

#[test]
fn ordered_range_take_is_a_consistent_cut() {
    cut_is_consistent(OrderedFault::None, Reader::Take);
}

#[test]
fn ordered_snapshot_is_a_consistent_cut() {
    cut_is_consistent(OrderedFault::None, Reader::Snapshot);
}

#[test]
#[should_panic(expected = "a torn cut")]
fn ordered_snapshot_negative_control_torn_cut() {
    cut_is_consistent(OrderedFault::TornCut, Reader::Snapshot);
}

/// On two-entry leaves, the index starts as two leaves, `[3]` and `[5, 7]`.
/// A writer inserts 1 (into the first leaf), then removes 7 (from the
/// second) while a reader takes `range(..)` or a `snapshot()` across both
/// leaves: it sees one of the three states, never the first leaf from
/// before the writer and the second from after it.
fn cut_across_leaves_is_consistent(fault: OrderedFault, reader: Reader) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(index_of(Engine::Leaves));
        for key in [3_u32, 5, 7] {
            index.insert(key, ());
        }
        let writer = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                index.insert(1, ());
                index.remove(&7);
            })
        };
        let cut: Vec<u32> = match reader {
            Reader::Range => index.range_to_vec(..).into_iter().map(|(k, _)| k).collect(),
            Reader::Snapshot => index.snapshot().iter().map(|(k, _)| *k).collect(),
            Reader::Take => index
                .range_take(.., 3)
                .into_iter()
                .map(|(k, _)| k)
                .collect(),
        };
        // `Take` sees the first three entries of one of the states.
        assert!(
            [&[3, 5, 7][..], &[1, 3, 5, 7], &[1, 3, 5]]
                .iter()
                .any(|state| match reader {
                    Reader::Take => cut.as_slice() == &state[..state.len().min(3)],
                    _ => cut.as_slice() == *state,
                }),
            "a torn cut: {cut:?}"
        );
        writer.join().unwrap();
        assert_eq!(index.len(), 3);
    });
}

#[test]
fn partitioned_range_is_a_consistent_cut() {
    cut_across_leaves_is_consistent(OrderedFault::None, Reader::Range);
}

#[test]
#[should_panic(expected = "a torn cut")]
fn partitioned_range_negative_control_leaf_by_leaf() {
    cut_across_leaves_is_consistent(OrderedFault::LeafByLeaf, Reader::Range);
}

#[test]
fn partitioned_range_take_is_a_consistent_cut() {
    cut_across_leaves_is_consistent(OrderedFault::None, Reader::Take);
}

#[test]
#[should_panic(expected = "a torn cut")]
fn partitioned_range_take_negative_control_leaf_by_leaf() {
    cut_across_leaves_is_consistent(OrderedFault::LeafByLeaf, Reader::Take);
}

#[test]
fn partitioned_snapshot_is_a_consistent_cut() {
    cut_across_leaves_is_consistent(OrderedFault::None, Reader::Snapshot);
}

#[test]
#[should_panic(expected = "a torn cut")]
fn partitioned_snapshot_negative_control_leaf_by_leaf() {
    cut_across_leaves_is_consistent(OrderedFault::LeafByLeaf, Reader::Snapshot);
}
