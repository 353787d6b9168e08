//! The slot vectors of one shard's core, borrowed apart from its key
//! table: where a new object's slot id comes from and how it is filled.

use super::index_lists::Id;
use super::positions::Positions;
use super::{LiveSlot, bucket_id};
use crate::indexed::index_fn::{AllValues, discard};

/// The slot vectors of a [`Core`], borrowed apart from its table, so that
/// a new object's slot is made ready while the table holds its bucket.
pub(super) struct Slots<'a, K, V> {
    pub(super) entries: &'a mut Vec<Option<LiveSlot<K, V>>>,
    pub(super) values: &'a mut Vec<AllValues>,
    pub(super) positions: &'a mut Positions,
    pub(super) free: &'a mut Vec<Id>,
    pub(super) indexed: bool,
}

impl<K, V> Slots<'_, K, V> {
    /// The slot id a new object takes: a free one, or the next, with room
    /// reserved for it. Panics (a full shard, the allocator) only before
    /// it changes anything.
    #[inline]
    pub(super) fn room(&mut self) -> Id {
        if let Some(id) = self.free.pop() {
            return id;
        }
        assert!(
            self.entries.len() < Id::MAX as usize,
            "larder: an IndexedStore shard holds at most {} objects",
            Id::MAX
        );
        self.entries.reserve(1);
        if self.indexed {
            self.values.reserve(1);
            self.positions.reserve(1);
        }
        bucket_id(self.entries.len())
    }

    /// Stores a new object in slot `id`, fresh from [`room`](Self::room);
    /// runs no user code and cannot fail. Returns whether the slot keeps
    /// index values (then the caller indexes it).
    #[inline]
    pub(super) fn fill(&mut self, id: Id, entry: LiveSlot<K, V>, values: AllValues) -> bool {
        let slot = id as usize;
        match self.entries.get_mut(slot) {
            Some(free) => *free = Some(entry),
            None => self.entries.push(Some(entry)),
        }
        if !self.indexed {
            discard(values);
            return false;
        }
        match self.values.get_mut(slot) {
            // A reused slot id (its values were taken at its removal).
            Some(kept) => *kept = values,
            None => {
                self.values.push(values);
                self.positions.push_slot();
            }
        }
        true
    }
}
