//! The engine's reads that span leaves: visiting a range (whole, or until
//! the caller stops), counting, the length and the snapshot.

use std::borrow::Borrow;
use std::ops::{ControlFlow, RangeBounds};

use super::{Entries, Map, Partitioned, Router, check_range, first_leaf, last_leaf, span};
use crate::sync::Arc;

#[cfg(loom)]
use super::broken::{hold, share_leaves};
#[cfg(not(loom))]
use {keep_locked as hold, share_at_once as share_leaves};

impl<K, V> Partitioned<K, V> {
    /// Calls `f` on every entry in the range, in order, under the read locks
    /// of the leaves it spans (a consistent cut).
    pub(crate) fn visit<Q, R>(&self, range: R, mut f: impl FnMut(&K, &Arc<V>))
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        // `Infallible`: the walk cannot stop early, so its result says nothing.
        let _ = self.visit_while(range, |key, value| {
            f(key, value);
            ControlFlow::<std::convert::Infallible>::Continue(())
        });
    }

    /// [`visit`](Self::visit) that stops at the first `Break`, returning it.
    ///
    /// The leaves are read-locked one after another, in key order, and each
    /// lock is kept until the walk ends: no lock is released before the last
    /// one is taken (two-phase locking), so the entries seen are one
    /// consistent cut, and a walk that stops early has locked only the
    /// leaves it read (O(entries visited), not O(range)). Taking leaf locks
    /// in key order is the order every multi-leaf operation uses, so it
    /// cannot deadlock.
    pub(crate) fn visit_while<Q, R, B>(
        &self,
        range: R,
        mut f: impl FnMut(&K, &Arc<V>) -> ControlFlow<B>,
    ) -> ControlFlow<B>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        let (start, end) = (range.start_bound(), range.end_bound());
        check_range(start, end);
        let router = self.router.read();
        let first = first_leaf(&router.bounds, start);
        let last = last_leaf(&router.bounds, end).min(router.leaves.len() - 1);
        if first > last {
            return ControlFlow::Continue(());
        }
        let mut held = Vec::new();
        for leaf in router.leaves.range(first..=last) {
            let guard = leaf.read();
            let (lo, hi) = span(&**guard, start, end);
            for (key, value) in guard.slice(lo, hi) {
                f(key, value)?;
            }
            hold(&mut held, guard);
        }
        ControlFlow::Continue(())
    }

    /// The number of entries in the range (a consistent cut).
    pub(crate) fn range_count<Q, R>(&self, range: R) -> usize
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        let mut count = 0;
        self.visit(range, |_, _| count += 1);
        count
    }

    /// The number of entries, every leaf read-locked at once.
    pub(crate) fn len(&self) -> usize {
        let router = self.router.read();
        let guards: Vec<_> = router.leaves.iter().map(|leaf| leaf.read()).collect();
        guards.iter().map(|leaf| leaf.len()).sum()
    }

    /// Whether there are no entries (leaves read-locked in order until one
    /// holds an entry).
    pub(crate) fn is_empty(&self) -> bool {
        let router = self.router.read();
        let mut held = Vec::new();
        for leaf in &router.leaves {
            let guard = leaf.read();
            if !guard.is_empty() {
                return false;
            }
            held.push(guard);
        }
        true
    }

    /// Every leaf's entries, shared, at one instant.
    fn share(&self) -> Vec<Entries<K, V>> {
        share_leaves(&self.router.read())
    }

    /// The whole map at one instant, built after the locks are released.
    pub(crate) fn snapshot(&self) -> Map<K, V>
    where
        K: Ord + Clone,
    {
        let leaves = self.share();
        // The leaves are held, unlocked, while the map is built: writers
        // run meanwhile and find them shared. Building with std's `Arc`s is
        // invisible to loom, so the models get a scheduling point here.
        #[cfg(loom)]
        loom::thread::yield_now();
        // One insert at a time, not `collect`: collecting sorts, and std's
        // sort panics on an `Ord` it finds inconsistent. Inserting in key
        // order walks the tree's right edge, so it stays cheap.
        let mut map = Map::new();
        for (key, value) in leaves.iter().flat_map(|leaf| leaf.iter()) {
            map.insert(key.clone(), Arc::clone(value));
        }
        map
    }
}

/// [`Partitioned::visit_while`]'s step: a leaf's read lock, kept until the
/// walk ends (two-phase locking).
#[inline(always)]
pub(super) fn keep_locked<G>(held: &mut Vec<G>, guard: G) {
    held.push(guard);
}

/// [`Partitioned::share`]'s step: every leaf read-locked at once, each
/// leaf's entries shared under those locks.
pub(super) fn share_at_once<K, V>(router: &Router<K, V>) -> Vec<Entries<K, V>> {
    let guards: Vec<_> = router.leaves.iter().map(|leaf| leaf.read()).collect();
    guards.iter().map(|leaf| Arc::clone(&**leaf)).collect()
}
