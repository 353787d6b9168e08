//! The broken variants of the partitioned engine, for the loom negative
//! controls of [`OrderedFault`] (`crate::fault`) that live here; compiled
//! only under `cfg(loom)`. Each step below is a dispatcher: the broken
//! variant the model selected, else the correct step, which outside loom
//! is the step itself.

use std::borrow::Borrow;
use std::ops::Bound;

use super::reads::{keep_locked, share_at_once};
use super::{
    Entries, Garbage, LeafData, Pair, Partitioned, Router, drain_at_once, last_leaf,
    leaf_by_address, marker_inside, neither_shared, only_leaf, unshare, upper,
};
use crate::fault::{OrderedFault, is_selected};
use crate::sync::Arc;

/// The index of the leaf whose address is `id`. `StaleLeafIndex`: the
/// index the leaf had is trusted (a concurrent split or merge that shifted
/// the leaves sends the caller to the wrong leaf).
pub(super) fn leaf_at<K, V>(router: &Router<K, V>, hint: usize, id: usize) -> Option<usize> {
    if !is_selected(OrderedFault::StaleLeafIndex) {
        return leaf_by_address(router, hint, id);
    }
    (hint < router.leaves.len()).then_some(hint)
}

/// Where a split cuts. `SplitAtMovedMarker`: at the prepared entry
/// wherever it now is, an end of the leaf included (an empty leaf is
/// left).
pub(super) fn split_point<K, V>(leaf: &LeafData<K, V>, marker: Option<&Arc<V>>) -> Option<usize> {
    if !is_selected(OrderedFault::SplitAtMovedMarker) {
        return marker_inside(leaf, marker);
    }
    marker.and_then(|value| leaf.position_of(value))
}

/// Whether two leaves may merge. `MergeSharedLeaf`: only the left leaf is
/// checked for a snapshot sharing it.
pub(super) fn mergeable<K, V>(router: &mut Router<K, V>, left: usize, right: usize) -> bool {
    if !is_selected(OrderedFault::MergeSharedLeaf) {
        return neither_shared(router, left, right);
    }
    Arc::get_mut(router.leaves[left].get_mut()).is_some()
}

/// Whether an empty end leaf, one of `n`, means an empty map.
/// `EmptyEndLeaf`: always (an end leaf emptied by a removal whose merge
/// has not run yet hides the entries of the other leaves).
pub(super) fn empty_means_none(n: usize) -> bool {
    is_selected(OrderedFault::EmptyEndLeaf) || only_leaf(n)
}

/// A range walk's hold of a leaf's read lock. `LeafByLeaf`: the lock is
/// released at once, before the next leaf's is taken (a torn cut).
pub(super) fn hold<G>(held: &mut Vec<G>, guard: G) {
    if !is_selected(OrderedFault::LeafByLeaf) {
        keep_locked(held, guard);
    }
}

/// The snapshot's sharing of the leaves. `LeafByLeaf`: one leaf at a time,
/// each lock released before the next is taken.
pub(super) fn share_leaves<K, V>(router: &Router<K, V>) -> Vec<Entries<K, V>> {
    if !is_selected(OrderedFault::LeafByLeaf) {
        return share_at_once(router);
    }
    router
        .leaves
        .iter()
        .map(|leaf| Arc::clone(&*leaf.read()))
        .collect()
}

/// `drain_to`. `LeafByLeaf`: hand-over-hand, each leaf emptied under its
/// own lock, released before the next is taken (not one atomic cut).
/// `LateSlots`: the same, and each leaf's point-lookup slots removed only
/// after its lock is released.
pub(super) fn drain<K, V, Q>(
    parts: &Partitioned<K, V>,
    end: Bound<&Q>,
    hash: impl Fn(&K) -> u64,
) -> Vec<Pair<K, V>>
where
    K: Borrow<Q> + Clone,
    Q: Ord + ?Sized,
{
    let late_slots = is_selected(OrderedFault::LateSlots);
    if !late_slots && !is_selected(OrderedFault::LeafByLeaf) {
        return drain_at_once(parts, end, hash);
    }
    let mut garbage = Garbage::default();
    let mut out = Vec::new();
    {
        let router = parts.router.read();
        let last = last_leaf(&router.bounds, end).min(router.leaves.len() - 1);
        for leaf in router.leaves.range(..=last) {
            let mut leaf = leaf.write();
            let cut = upper(leaf.keys(), end);
            if cut == 0 {
                continue;
            }
            let hashes: Vec<u64> = leaf.keys()[..cut].iter().map(&hash).collect();
            unshare(&mut *leaf, &mut garbage.entries);
            let from = out.len();
            Arc::get_mut(&mut *leaf)
                .expect("larder: unshared leaf")
                .take_front(cut, &mut out);
            if late_slots {
                drop(leaf);
            }
            if let Some(points) = &router.points {
                let victims: Vec<(u64, &Arc<V>)> = hashes
                    .iter()
                    .copied()
                    .zip(out[from..].iter().map(|(_, value)| value))
                    .collect();
                points.remove(&victims, &mut garbage.slots);
            }
        }
    }
    parts.trim(false);
    drop(garbage);
    out
}
