//! The engine's layout check, for the tests and the loom models: bounds,
//! leaves, and the point-lookup table against the entries.

use super::Partitioned;

impl<K, V> Partitioned<K, V> {
    /// Checks the layout; panics with a message starting "invariant
    /// violated" if it is broken. For the tests, with consistent `Ord`, one
    /// thread.
    pub(crate) fn check_invariants(&self)
    where
        K: Ord,
    {
        let router = self.router.read();
        assert_eq!(
            router.bounds.len() + 1,
            router.leaves.len(),
            "invariant violated: bounds and leaves"
        );
        for (i, leaf) in router.leaves.iter().enumerate() {
            let leaf = leaf.read();
            assert!(
                leaf.len() <= self.leaf_size,
                "invariant violated: leaf {i} over capacity"
            );
            assert!(
                !leaf.is_empty() || router.leaves.len() == 1,
                "invariant violated: empty leaf {i} left among {}",
                router.leaves.len()
            );
            assert!(
                leaf.keys().windows(2).all(|w| w[0] < w[1]),
                "invariant violated: leaf {i} unsorted"
            );
            if let (Some(low), Some((key, _))) =
                (i.checked_sub(1).map(|j| &router.bounds[j]), leaf.first())
            {
                assert!(
                    low <= key,
                    "invariant violated: leaf {i} starts below its bound"
                );
            }
            if let (Some(high), Some((key, _))) = (router.bounds.get(i), leaf.last()) {
                assert!(
                    key < high,
                    "invariant violated: leaf {i} ends above its bound"
                );
            }
            if let Some(points) = &router.points {
                for (j, (_, value)) in leaf.iter().enumerate() {
                    assert!(
                        points.holds(value),
                        "invariant violated: no slot for entry {j} of leaf {i}"
                    );
                }
            }
        }
        if let Some(points) = &router.points {
            let entries: usize = router.leaves.iter().map(|leaf| leaf.read().len()).sum();
            assert_eq!(
                points.len(),
                entries,
                "invariant violated: slots and entries differ"
            );
        }
    }

    /// The entries of each leaf, in key order (for the layout tests).
    #[cfg(test)]
    pub(crate) fn leaf_lens(&self) -> Vec<usize> {
        let router = self.router.read();
        router.leaves.iter().map(|leaf| leaf.read().len()).collect()
    }
}
