//! The point insert of a core whose schema has no index: a store used as a
//! plain concurrent map. The same change as `Core::upsert` with no values
//! to keep, diff or move, and no result to assemble for them.

use hashbrown::hash_table;

use super::{Core, Entry};
use crate::indexed::index_fn::AllValues;

impl<K, V> Core<K, V> {
    /// Stores `value` under `key` in a core whose schema has no index (the
    /// caller checked it under the same lock; only the loom negative
    /// control calls it on one that has) and returns the object it
    /// replaced. `key` and `value` stay the caller's until the probe (`K`'s
    /// `Eq`) is over: if it panics, they drop in the caller's frame, after
    /// its lock guard. A stored key keeps its key, so `key` stays the
    /// caller's then too, to drop after the unlock. Past the probe this
    /// runs no user code.
    #[inline]
    pub(crate) fn upsert_plain(
        &mut self,
        hash: u64,
        key: &mut Option<K>,
        value: &mut Option<V>,
    ) -> Option<V>
    where
        K: Eq,
    {
        let probe = key.as_ref().expect("larder: an upsert is given its key");
        let (entry, mut slots) = self.probe_entry(hash, probe);
        let vacant = match entry {
            hash_table::Entry::Occupied(found) => {
                let id = *found.get() as usize;
                let entry = slots.entries[id]
                    .as_mut()
                    .expect("larder: a probed slot id is live");
                let value = value.take().expect("larder: an upsert is given its object");
                let previous = std::mem::replace(&mut entry.value, value);
                self.wrote(id);
                return Some(previous);
            }
            hash_table::Entry::Vacant(vacant) => vacant,
        };
        // Room first (the table has its bucket already), so that nothing
        // below can fail half way.
        let id = slots.room();
        vacant.insert(id);
        let key = key.take().expect("larder: an upsert is given its key");
        let value = value.take().expect("larder: an upsert is given its object");
        slots.fill(id, Entry { hash, key, value }, AllValues::default());
        self.wrote(id as usize);
        None
    }
}
