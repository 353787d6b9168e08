//! [`Core::check`]: the structural invariants of the core, checked by
//! tests after every operation.

use super::{Core, bucket_id};
use crate::indexed::index_fn::Values;
use crate::sync::Arc;

impl<K, V> Core<K, V> {
    /// The objects whose values for index `position` include `value`.
    #[cfg(test)]
    pub(crate) fn by_index(&self, position: usize, value: &str) -> Vec<V>
    where
        V: Clone,
    {
        let mut out = Vec::new();
        self.by_index_into(position, value, &mut out);
        out
    }

    /// Checks every structural invariant; panics with a message starting
    /// "invariant violated" on the first one broken. `owns(hash)` says
    /// whether a key with that hash belongs in this shard. Returns each
    /// object with its stored values so the caller can recompute them and
    /// compare.
    pub(crate) fn check(&self, owns: impl Fn(u64) -> bool) -> Vec<(&V, Vec<Values>)>
    where
        K: Eq,
    {
        if !self.slotted {
            return self.check_inline(owns);
        }
        assert!(
            self.inline.is_empty(),
            "invariant violated: a slotted core keeps inline entries"
        );
        let live = self.live().count();
        assert_eq!(
            self.table.len(),
            live,
            "invariant violated: {} keys but {live} live slots",
            self.table.len()
        );
        assert_eq!(
            self.free.len() + live,
            self.entries.len(),
            "invariant violated: free list does not cover the empty slots"
        );
        let positions = self.schema.defs.len();
        assert!(
            if positions == 0 {
                self.values.is_empty()
            } else {
                self.values.len() == self.entries.len()
            },
            "invariant violated: slot values kept for {} of {} slots with {positions} indexes",
            self.values.len(),
            self.entries.len()
        );
        assert_eq!(
            self.positions.len(),
            self.values.len(),
            "invariant violated: bucket positions kept for {} of {} slots",
            self.positions.len(),
            self.values.len()
        );
        for &id in &self.free {
            assert!(
                self.entries[id as usize].is_none(),
                "invariant violated: free slot {id} is live"
            );
        }
        for (id, entry) in self.live() {
            assert!(
                self.table
                    .find(entry.hash, |&other| other == bucket_id(id))
                    .is_some(),
                "invariant violated: slot {id} not found by its stored hash"
            );
            assert!(
                owns(entry.hash),
                "invariant violated: slot {id} holds a key of another shard"
            );
        }
        assert_eq!(
            self.indexes.len(),
            positions,
            "invariant violated: index count"
        );
        for (id, _) in self.live() {
            let held: usize = self
                .values
                .get(id)
                .map_or(0, |v| v.iter().map(|v| v.len()).sum());
            let at = if id < self.positions.len() {
                self.positions.get(id).len()
            } else {
                0
            };
            assert_eq!(
                at, held,
                "invariant violated: slot {id} has {at} bucket positions for {held} values"
            );
        }
        for (position, buckets) in self.indexes.iter().enumerate() {
            let name = &self.schema.defs[position].name;
            let mut entries = 0;
            for (value, bucket) in buckets.iter() {
                assert!(
                    !bucket.is_empty(),
                    "invariant violated: empty bucket {name}={value} kept"
                );
                for &id in bucket {
                    let live = self.entries.get(id as usize).is_some_and(Option::is_some);
                    let held = self
                        .values
                        .get(id as usize)
                        .filter(|_| live)
                        .and_then(|values| values.get(position))
                        .and_then(|values| values.binary_search(value).ok().map(|at| &values[at]));
                    let Some(held) = held else {
                        panic!(
                            "invariant violated: index disagrees with objects: \
                             {name}={value} lists an object without that value"
                        )
                    };
                    assert!(
                        Arc::ptr_eq(held, value),
                        "invariant violated: slot {id} holds {name}={value} not interned"
                    );
                }
                let mut seen = bucket.clone();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(
                    seen.len(),
                    bucket.len(),
                    "invariant violated: {name}={value} lists a slot twice"
                );
                entries += bucket.len();
            }
            let mut expected = 0;
            for (id, _) in self.live() {
                let slot = &self.values[id];
                let offset: usize = slot[..position.min(slot.len())]
                    .iter()
                    .map(|v| v.len())
                    .sum();
                assert_eq!(
                    slot.len(),
                    positions,
                    "invariant violated: index disagrees with objects: \
                     object {id} has values for {} of {positions} indexes",
                    slot.len()
                );
                let values = &slot[position];
                assert!(
                    values.windows(2).all(|w| w[0] < w[1]),
                    "invariant violated: values not sorted and unique"
                );
                assert!(
                    !matches!(values, Values::List(list) if list.len() == 1),
                    "invariant violated: slot {id} keeps its one {name} value in a list"
                );
                for (nth, value) in values.iter().enumerate() {
                    let at = self.positions.get(id)[offset + nth] as usize;
                    let listed = buckets
                        .get(value)
                        .is_some_and(|b| b.get(at) == Some(&bucket_id(id)));
                    assert!(
                        listed,
                        "invariant violated: index disagrees with objects: \
                         an object with {name}={value} is missing from its bucket at its position"
                    );
                }
                expected += values.len();
            }
            assert_eq!(
                entries, expected,
                "invariant violated: index disagrees with objects: bucket sizes"
            );
        }
        self.live()
            .map(|(id, entry)| {
                let values = self.values.get(id).map(|v| v.to_vec()).unwrap_or_default();
                (&entry.value, values)
            })
            .collect()
    }

    /// [`check`](Self::check) of the inline layout: every entry found by
    /// its stored hash in the right shard, and nothing kept for slots or
    /// indexes.
    fn check_inline(&self, owns: impl Fn(u64) -> bool) -> Vec<(&V, Vec<Values>)> {
        assert!(
            self.schema.defs.is_empty() && self.indexes.is_empty(),
            "invariant violated: an inline core with an index"
        );
        assert!(
            self.table.is_empty()
                && self.entries.is_empty()
                && self.free.is_empty()
                && self.values.is_empty()
                && self.positions.len() == 0
                && self.watch.is_none(),
            "invariant violated: an inline core keeps slots"
        );
        for entry in self.inline.iter() {
            assert!(
                self.inline
                    .find(entry.hash, |other| std::ptr::eq(other, entry))
                    .is_some(),
                "invariant violated: an entry not found by its stored hash"
            );
            assert!(
                owns(entry.hash),
                "invariant violated: an entry holds a key of another shard"
            );
        }
        self.inline
            .iter()
            .map(|entry| (&entry.value, Vec::new()))
            .collect()
    }
}
