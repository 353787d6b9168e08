//! [`Core::check`]: the structural invariants of the core, checked by
//! tests after every operation.

use super::{Core, bucket_id};
use crate::indexed::index_fn::Values;
use crate::sync::Arc;

impl<K, V> Core<K, V> {
    /// Checks every structural invariant; panics with a message starting
    /// "invariant violated" on the first one broken. Returns each object
    /// with its stored values so the caller can recompute them (outside the
    /// lock) and compare.
    pub(crate) fn check(&self) -> Vec<(Arc<V>, Vec<Values>)>
    where
        K: Eq,
    {
        let live = self.live().count();
        assert_eq!(
            self.map.len(),
            live,
            "invariant violated: {} keys but {live} live slots",
            self.map.len()
        );
        assert_eq!(
            self.free.len() + live,
            self.slots.len(),
            "invariant violated: free list does not cover the empty slots"
        );
        assert!(
            self.objects.len() == self.slots.len()
                && self
                    .objects
                    .iter()
                    .zip(&self.slots)
                    .all(|(object, slot)| object.is_some() == slot.is_some()),
            "invariant violated: objects and slots disagree on the live ids"
        );
        for &id in &self.free {
            assert!(
                self.slots[id].is_none(),
                "invariant violated: free slot {id} is live"
            );
        }
        for entry in &self.map {
            assert!(
                self.map
                    .find(entry.hash, |other| other.id == entry.id)
                    .is_some_and(|other| std::ptr::eq(other, entry)),
                "invariant violated: table entry of slot {} not found by its stored hash",
                entry.id
            );
            let slot = self.slots[entry.id]
                .as_ref()
                .unwrap_or_else(|| panic!("invariant violated: key maps to dead slot"));
            assert!(
                slot.key == entry.key,
                "invariant violated: slot {} holds another key",
                entry.id
            );
            assert!(
                self.objects[entry.id]
                    .as_ref()
                    .is_some_and(|object| Arc::ptr_eq(object, &entry.value)),
                "invariant violated: map and slot {} hold different objects",
                entry.id
            );
        }
        let positions = self.schema.defs.len();
        assert_eq!(
            self.indexes.len(),
            positions,
            "invariant violated: index count"
        );
        for (position, buckets) in self.indexes.iter().enumerate() {
            let name = &self.schema.defs[position].name;
            let mut entries = 0;
            for (value, bucket) in buckets {
                assert!(
                    !bucket.is_empty(),
                    "invariant violated: empty bucket {name}={value} kept"
                );
                for &id in bucket {
                    let slot = self.slots.get(id as usize).and_then(Option::as_ref);
                    let held = slot
                        .and_then(|slot| slot.values.get(position))
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
                entries += bucket.len();
            }
            let mut expected = 0;
            for (id, slot) in self.live() {
                assert_eq!(
                    slot.values.len(),
                    positions,
                    "invariant violated: index disagrees with objects: \
                     object {id} has values for {} of {positions} indexes",
                    slot.values.len()
                );
                let values = &slot.values[position];
                assert!(
                    values.windows(2).all(|w| w[0] < w[1]),
                    "invariant violated: values not sorted and unique"
                );
                for value in values.iter() {
                    let listed = buckets
                        .get(value)
                        .is_some_and(|b| b.contains(&bucket_id(id)));
                    assert!(
                        listed,
                        "invariant violated: index disagrees with objects: \
                         an object with {name}={value} is missing from its bucket"
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
            .map(|(id, slot)| (Arc::clone(self.object(bucket_id(id))), slot.values.clone()))
            .collect()
    }
}
