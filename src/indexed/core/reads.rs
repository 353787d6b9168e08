//! The core's whole-shard and by-index reads: what `by_index`, `matching`,
//! `index_keys`, `keys`, `values` and `to_vec` gather from one shard, under
//! its read lock. The user code they run is `K::clone` where keys are
//! copied out and `V::clone` where objects are.

use super::Core;
use super::id_hasher::IdBuild;
use super::index_lists::{Bucket, Id};
use crate::sync::Arc;

impl<K, V> Core<K, V> {
    /// Pushes onto `out` the objects whose values for index `position`
    /// include `value`.
    pub(crate) fn by_index_into(&self, position: usize, value: &str, out: &mut Vec<V>)
    where
        V: Clone,
    {
        if let Some(bucket) = self.indexes[position].get(value) {
            self.clone_objects(bucket.iter().copied(), out);
        }
    }

    /// Pushes onto `out` clones of the objects of the slots in `bucket`.
    pub(crate) fn bucket_objects(&self, bucket: &Bucket, out: &mut Vec<V>)
    where
        V: Clone,
    {
        self.clone_objects(bucket.iter().copied(), out);
    }

    /// The bucket of `value` in index `position`, if any object has it;
    /// `hash` is the value's [`Schema::hash_value`], computed once for
    /// every shard.
    #[inline]
    pub(crate) fn bucket(&self, position: usize, hash: u64, value: &str) -> Option<&Bucket> {
        self.indexes[position].get_hashed(hash, value)
    }

    /// The `(key, object)` pairs of [`by_index`](Self::by_index_into),
    /// borrowed from the core, in bucket order: the visits walk them under
    /// the read lock without cloning anything.
    pub(crate) fn bucket_entries(
        &self,
        position: usize,
        hash: u64,
        value: &str,
    ) -> impl Iterator<Item = (&K, &V)> {
        self.bucket(position, hash, value)
            .into_iter()
            .flat_map(move |bucket| {
                bucket.iter().map(move |&id| {
                    let entry = self.entry(id as usize);
                    (&entry.key, &entry.value)
                })
            })
    }

    /// Pushes onto `out` the keys of [`by_index`](Self::by_index_into),
    /// unsorted.
    pub(crate) fn index_keys_into(&self, position: usize, hash: u64, value: &str, out: &mut Vec<K>)
    where
        K: Clone,
    {
        if let Some(bucket) = self.bucket(position, hash, value) {
            out.extend(bucket.iter().map(|&id| self.entry(id as usize).key.clone()));
        }
    }

    /// Every value of index `position` that at least one object has.
    pub(crate) fn index_values(&self, position: usize) -> impl Iterator<Item = &Arc<str>> {
        self.indexes[position].keys()
    }

    /// Pushes onto `out` the objects having any of `values` for index
    /// `position`, each once.
    pub(crate) fn matching_into(&self, position: usize, values: &[Arc<str>], out: &mut Vec<V>)
    where
        V: Clone,
    {
        let buckets = &self.indexes[position];
        match values {
            [] => {}
            [one] => self.by_index_into(position, one, out),
            many => {
                let mut found = hashbrown::HashSet::<Id, IdBuild>::default();
                for value in many {
                    if let Some(bucket) = buckets.get(value) {
                        found.extend(bucket.iter().copied());
                    }
                }
                self.clone_objects(found.into_iter(), out);
            }
        }
    }

    /// The number of objects that have `value` for index `position`.
    pub(crate) fn index_len(&self, position: usize, hash: u64, value: &str) -> usize {
        self.bucket(position, hash, value).map_or(0, Bucket::len)
    }

    /// The table capacity of one bucket (for tests of memory release).
    #[cfg(test)]
    pub(crate) fn bucket_capacity(&self, position: usize, value: &str) -> usize {
        self.indexes[position]
            .get(value)
            .map_or(0, Bucket::capacity)
    }

    /// The positions arena's length and its live positions (for tests of
    /// memory release).
    #[cfg(test)]
    pub(crate) fn positions_len(&self) -> (usize, usize) {
        self.positions.lengths()
    }

    pub(crate) fn keys_into(&self, out: &mut Vec<K>)
    where
        K: Clone,
    {
        out.extend(self.every_entry().map(|entry| entry.key.clone()));
    }

    pub(crate) fn values_into(&self, out: &mut Vec<V>)
    where
        V: Clone,
    {
        out.extend(self.every_entry().map(|entry| entry.value.clone()));
    }

    pub(crate) fn entries_into(&self, out: &mut Vec<(K, V)>)
    where
        K: Clone,
        V: Clone,
    {
        out.extend(
            self.every_entry()
                .map(|entry| (entry.key.clone(), entry.value.clone())),
        );
    }

    /// Every `(key, object)` pair, moved out of a core nobody else holds
    /// (one a `replace` swapped out, or is rebuilding).
    pub(crate) fn into_entries(self) -> impl Iterator<Item = (K, V)> {
        self.into_every_entry()
            .map(|entry| (entry.key, entry.value))
    }

    /// Pushes clones of the objects of slots `ids` onto `out`.
    #[inline]
    fn clone_objects(&self, ids: impl ExactSizeIterator<Item = Id>, out: &mut Vec<V>)
    where
        V: Clone,
    {
        out.extend(ids.map(|id| self.entry(id as usize).value.clone()));
    }
}
