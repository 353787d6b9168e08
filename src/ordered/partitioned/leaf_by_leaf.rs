//! The loom negative controls `OrderedFault::LeafByLeaf` and
//! `OrderedFault::LateSlots` for `drain_to`, kept out of the engine's file:
//! a hand-over-hand drain, with the point-lookup slots removed under the
//! leaf lock or after it.

use std::borrow::Borrow;
use std::ops::Bound;

use super::{Entry, Garbage, Partitioned, last_leaf, unshare, upper};
use crate::fault::broken;
use crate::sync::Arc;

impl<K, V> Partitioned<K, V> {
    /// The loom negative controls of `drain_to`: hand-over-hand, each leaf
    /// emptied under its own lock, released before the next is taken (not
    /// one atomic cut); with `late_slots`, each leaf's slots are removed
    /// only after its lock is released.
    pub(super) fn drain_leaf_by_leaf<Q>(
        &self,
        end: Bound<&Q>,
        hash: impl Fn(&K) -> u64,
    ) -> Vec<Entry<K, V>>
    where
        K: Borrow<Q> + Clone,
        Q: Ord + ?Sized,
    {
        let mut garbage = Garbage::default();
        let mut out = Vec::new();
        {
            let router = self.router.read();
            let last = last_leaf(&router.bounds, end).min(router.leaves.len() - 1);
            for leaf in router.leaves.range(..=last) {
                // BROKEN on purpose: this leaf's lock is released before the
                // next one is taken.
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
                if broken!(OrderedFault::LateSlots) {
                    // BROKEN on purpose: the slots outlive the leaf lock.
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
        self.trim(false);
        drop(garbage);
        out
    }
}
