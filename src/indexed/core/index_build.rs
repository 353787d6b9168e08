//! What `add_index` needs of a core while it computes a new index's
//! values with no lock held: the slots written meanwhile (`watch`), clones
//! of the objects to compute from, which computed values went stale, and
//! the install of the finished index.

use std::collections::HashMap;

use super::index_lists::{Buckets, Id, bucket};
use super::positions::Run;
use super::{Core, bucket_id};
use crate::indexed::index_fn::{AllValues, Schema, Values};
use crate::sync::Arc;

#[cfg(loom)]
use crate::indexed::broken::drop_written;
#[cfg(not(loom))]
use drop_stale as drop_written;

impl<K, V> Core<K, V> {
    /// Starts (or restarts) recording the slots written from now on, for
    /// an `add_index` computing values with no lock held
    /// ([`written`](Self::written) tells them).
    pub(crate) fn watch(&mut self) {
        // Slot ids from here on: the inline layout has none.
        self.slot();
        self.watch = Some(Vec::new());
    }

    /// Stops recording written slots.
    pub(crate) fn unwatch(&mut self) {
        self.watch = None;
    }

    /// The slots written since [`watch`](Self::watch), or `None` if this
    /// core was not watched (a `replace` or `clear` swapped it in since):
    /// then every slot counts as written.
    pub(crate) fn written(&self) -> Option<&[Id]> {
        self.watch.as_deref()
    }

    /// Records a write to slot `id` while an `add_index` watches.
    #[inline(always)]
    pub(super) fn wrote(&mut self, id: usize) {
        if let Some(watch) = &mut self.watch {
            watch.push(bucket_id(id));
        }
    }

    /// Clones of the live objects in slots `ids` (all of them for `None`),
    /// for `add_index` to compute the new index's values outside the lock.
    /// Runs `V::clone`. An inline core (one a `replace` or `clear` swapped
    /// in since the watch) has no slots to list: [`stale`](Self::stale)
    /// then moves it to slots and finds every object missing.
    pub(crate) fn objects(&self, ids: Option<&[usize]>) -> Vec<(usize, V)>
    where
        V: Clone,
    {
        match ids {
            None => self
                .live()
                .map(|(id, entry)| (id, entry.value.clone()))
                .collect(),
            Some(ids) => ids
                .iter()
                .filter_map(|&id| {
                    let entry = self.entries.get(id)?.as_ref()?;
                    Some((id, entry.value.clone()))
                })
                .collect(),
        }
    }

    /// Drops from `computed` (slot id -> the new index's values) what the
    /// writes since [`watch`](Self::watch) made stale, and returns the live
    /// slots it then lacks: empty when `computed` is complete and current.
    pub(crate) fn stale(&mut self, computed: &mut HashMap<usize, Values>) -> Vec<usize> {
        // A core swapped in since the watch (`replace`, `clear`) may be
        // inline: its objects need slot ids to be listed.
        self.slot();
        drop_written(self, computed);
        self.live()
            .map(|(id, _)| id)
            .filter(|id| !computed.contains_key(id))
            .collect()
    }

    /// Installs `schema` (the current schema plus one index) and the new
    /// index, with each object's values taken from `computed`, which
    /// [`stale`](Self::stale) found complete and current, and stops
    /// watching.
    pub(crate) fn install_index(
        &mut self,
        schema: Arc<Schema<V>>,
        computed: &mut HashMap<usize, Values>,
    ) {
        self.unwatch();
        let mut buckets = Buckets::with_hasher(schema.value_hasher.clone());
        if self.values.is_empty() {
            self.values
                .resize_with(self.entries.len(), AllValues::default);
            self.positions.resize(self.entries.len());
        }
        for (id, slot) in self.values.iter_mut().enumerate() {
            let mut all = std::mem::take(slot).into_vec();
            if self.entries[id].is_some() {
                let mut values = computed.remove(&id).expect("checked by stale");
                let mut at = Run::from_slice(self.positions.get(id));
                for value in values.iter_mut() {
                    at.push(bucket(&mut buckets, value, bucket_id(id)));
                }
                self.positions.set(id, &at);
                all.push(values);
            }
            *slot = all.into_boxed_slice();
        }
        self.indexes.push(buckets);
        self.schema = schema;
    }
}

/// [`Core::stale`]'s step: drops from `computed` the values of the slots
/// written since the watch (all of them if the core was not watched).
#[inline(always)]
pub(crate) fn drop_stale<K, V>(core: &Core<K, V>, computed: &mut HashMap<usize, Values>) {
    match core.written() {
        None => computed.clear(),
        Some(written) => {
            for &id in written {
                computed.remove(&(id as usize));
            }
        }
    }
}
