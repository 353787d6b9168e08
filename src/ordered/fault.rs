//! The deliberately broken protocols of an
//! [`OrderedIndex`](super::OrderedIndex) (loom builds only): the loom
//! suite's negative controls select one to prove its models catch that bug.
//! The broken protocols of the waiting forms are in `wait.rs`
//! ([`WaitFault`](super::WaitFault)).

use std::borrow::Borrow;
use std::ops::{Bound, RangeBounds};

use super::OrderedIndex;
use crate::sync::Arc;

/// A deliberately broken protocol, for the loom suite's negative controls.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The correct protocol.
    None,
    /// `pop_first` and `drain_to` look under the read lock, then remove what
    /// they saw in a second step (the same entry goes to two callers).
    CheckThenRemove,
    /// `range`, `iter` and `snapshot` read one entry per read lock (a torn
    /// cut).
    TornCut,
    /// With [`OrderedLock::Partitioned`](super::OrderedLock::Partitioned):
    /// ranges, snapshots and `drain_to` lock one leaf at a time, releasing
    /// each before taking the next (hand-over-hand instead of two-phase
    /// locking: a torn cut across leaves).
    LeafByLeaf,
    /// With [`OrderedLock::Partitioned`](super::OrderedLock::Partitioned)
    /// and point lookups: `drain_to` removes the point-lookup slots after
    /// releasing the leaf locks (a point read finds an entry a range no
    /// longer shows).
    LateSlots,
    /// With [`OrderedLock::Partitioned`](super::OrderedLock::Partitioned):
    /// the split or merge a write asks for finds its leaf again by the
    /// index the leaf had, not by its address (a concurrent split or merge
    /// that shifted the leaves sends it to the wrong leaf).
    StaleLeafIndex,
    /// With [`OrderedLock::Partitioned`](super::OrderedLock::Partitioned):
    /// a split cuts at its prepared entry even after concurrent writes moved
    /// that entry to the front of the leaf (an empty leaf is left).
    SplitAtMovedMarker,
    /// With [`OrderedLock::Partitioned`](super::OrderedLock::Partitioned):
    /// a merge checks only the left leaf for a snapshot sharing it, and
    /// merges a right leaf a snapshot still holds.
    MergeSharedLeaf,
    /// With [`OrderedLock::Partitioned`](super::OrderedLock::Partitioned):
    /// `first` and `last` take an empty end leaf (emptied by a removal
    /// whose merge has not run yet) for an empty map, instead of dropping
    /// it and looking again.
    EmptyEndLeaf,
}

impl<K: Ord + Clone, V, S> OrderedIndex<K, V, S> {
    /// The broken `range` of [`Fault::TornCut`]: one entry per read lock.
    pub(super) fn torn_range<Q, R>(&self, range: R) -> Vec<(K, Arc<V>)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        let end = range.end_bound();
        let mut out: Vec<(K, Arc<V>)> = Vec::new();
        loop {
            let start = match out.last() {
                Some((key, _)) => Bound::Excluded(key.borrow()),
                None => range.start_bound(),
            };
            let next = self.range_inner::<Q, _>((start, end)).into_iter().next();
            match next {
                Some(entry) => out.push(entry),
                None => return out,
            }
        }
    }
}
