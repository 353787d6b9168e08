//! The broken `range` of the loom negative control
//! `OrderedFault::TornCut` (`crate::fault`): one entry per read lock.

use std::borrow::Borrow;
use std::ops::{Bound, RangeBounds};

use super::OrderedIndex;
use crate::sync::Arc;

impl<K: Ord + Clone, V, S> OrderedIndex<K, V, S> {
    /// The broken `range` of `OrderedFault::TornCut`: one entry per read lock.
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
