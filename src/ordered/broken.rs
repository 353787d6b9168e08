//! The broken variants of `OrderedIndex`'s reads and consuming writes, for
//! the loom negative controls of [`OrderedFault`] (`crate::fault`) that
//! live here; compiled only under `cfg(loom)`. Each step below is a
//! dispatcher: the broken variant the model selected, else the correct
//! step, which outside loom is the step itself. (The partitioned engine's
//! broken variants are in `partitioned/broken.rs`.)

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::ops::{Bound, RangeBounds};

use super::consume::{drain_in_one_step, pop_first_in_one_step};
use super::range::range_at_once;
use super::{OrderedIndex, OrderedSnapshot, snapshot_at_once};
use crate::fault::{OrderedFault, is_selected};
use crate::sync::Arc;

/// `range_to_vec` (and `to_vec`, `iter`). `TornCut`: one entry per read
/// lock.
pub(super) fn range_cut<K, V, S, Q, R>(index: &OrderedIndex<K, V, S>, range: R) -> Vec<(K, Arc<V>)>
where
    K: Ord + Clone + Borrow<Q>,
    Q: Ord + ?Sized,
    R: RangeBounds<Q>,
{
    if !is_selected(OrderedFault::TornCut) {
        return range_at_once(index, range);
    }
    torn_range(index, range)
}

/// `snapshot`. `TornCut`: a map assembled from one entry per read lock.
pub(super) fn snapshot_cut<K: Ord + Clone, V, S>(
    index: &OrderedIndex<K, V, S>,
) -> OrderedSnapshot<K, V> {
    if !is_selected(OrderedFault::TornCut) {
        return snapshot_at_once(index);
    }
    let entries = torn_range::<K, V, S, K, _>(index, ..);
    OrderedSnapshot::new(Arc::new(entries.into_iter().collect()))
}

/// `TornCut`'s range: each entry read under a read lock of its own.
fn torn_range<K, V, S, Q, R>(index: &OrderedIndex<K, V, S>, range: R) -> Vec<(K, Arc<V>)>
where
    K: Ord + Clone + Borrow<Q>,
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
        let next = index.range_inner::<Q, _>((start, end)).into_iter().next();
        match next {
            Some(entry) => out.push(entry),
            None => return out,
        }
    }
}

/// `pop_first`. `CheckThenRemove`: looks under the read lock, then removes
/// what it saw in a second step (the same entry can go to two callers).
pub(super) fn pop_first_step<K: Ord + Clone + Hash, V, S: BuildHasher>(
    index: &OrderedIndex<K, V, S>,
) -> Option<(K, Arc<V>)> {
    if !is_selected(OrderedFault::CheckThenRemove) {
        return pop_first_in_one_step(index);
    }
    let (key, value) = index.first()?;
    index.remove(&key);
    Some((key, value))
}

/// `drain_to`. `CheckThenRemove`: reads what to take, unlocks, then
/// removes it.
pub(super) fn drain_step<K, V, S, Q>(
    index: &OrderedIndex<K, V, S>,
    end: Bound<&Q>,
) -> Vec<(K, Arc<V>)>
where
    K: Ord + Clone + Hash + Borrow<Q>,
    S: BuildHasher,
    Q: Ord + ?Sized,
{
    if !is_selected(OrderedFault::CheckThenRemove) {
        return drain_in_one_step(index, end);
    }
    let seen = index.range_inner::<Q, _>((Bound::Unbounded, end));
    for (key, _) in &seen {
        index.remove::<K>(key);
    }
    seen
}
