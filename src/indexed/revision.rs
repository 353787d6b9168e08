//! The store's resource version: the revision of the last applied change,
//! with client-go's semantics, kept in the same critical section as the
//! change it describes.
//!
//! A reflector (or any code mirroring a versioned source) writes through the
//! `*_at_revision` forms; [`IndexedStore::revision`] then says how far the
//! store has caught up. The plain writes (`insert`, `remove`, `replace`,
//! `clear`, `transaction`) leave the revision as it is.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

#[cfg(any(feature = "reflector", test))]
use super::core::Core;
use super::error::IndexError;
#[cfg(any(feature = "reflector", test))]
use super::shards::shard_of;
use super::store::IndexedStore;
#[cfg(any(feature = "reflector", test))]
use crate::sync::Arc;
use crate::sync::Ordering;

/// What a relist's replace swapped out: the exact old content, and the new
/// items an index function rejected (they are not in the store).
#[cfg(any(feature = "reflector", test))]
pub(crate) struct Relisted<K, V> {
    pub(crate) old: Vec<(K, V)>,
    pub(crate) rejected: Vec<(K, IndexError)>,
}

impl<K, V, S> IndexedStore<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// The revision of the last change applied with a `*_at_revision`
    /// method (client-go's store resource version), or 0 before any.
    ///
    /// It is the **last** such change's revision, not the largest: a write
    /// at a lower revision than the current one sets it lower (client-go's
    /// `TestThreadSafeStoreRV`). A remove carries its revision even when the
    /// key was absent; a replace takes the list's revision. Plain writes
    /// (`insert`, `remove`, `replace`, `clear`, `transaction`) leave it
    /// unchanged.
    ///
    /// The revision changes in the same critical section as the object, so
    /// [`get_with_revision`](Self::get_with_revision) never pairs an object
    /// with a revision it does not belong with.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<&str, u32>::new();
    /// assert_eq!(store.revision(), 0);
    /// store.insert_at_revision("a", 1, 5).unwrap();
    /// store.remove_at_revision("a", 7);
    /// assert_eq!(store.revision(), 7);
    /// store.insert_at_revision("b", 2, 6).unwrap(); // last op wins, not max
    /// assert_eq!(store.revision(), 6);
    /// ```
    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::SeqCst)
    }

    /// The object under `key` and the store's revision, read at one
    /// instant: the object is exactly what the store held at that revision.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, u32>::new();
    /// store.insert_at_revision("a".to_string(), 1, 10).unwrap();
    /// let (object, revision) = store.get_with_revision("a");
    /// assert_eq!((object, revision), (Some(1), 10));
    /// ```
    pub fn get_with_revision<Q>(&self, key: &Q) -> (Option<V>, u64)
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
        V: Clone,
    {
        let hash = self.hasher.hash_one(key);
        // Under the key's shard lock: no revisioned write to this key can
        // be between its change and its revision.
        let core = self.shards.read(self.shards.of(hash));
        (
            core.get(hash, key).cloned(),
            self.revision.load(Ordering::SeqCst),
        )
    }

    /// Every object and the store's revision, read at one consistent cut
    /// (every shard read-locked at once): the content is exactly what the
    /// store held at that revision. The whole-store form of
    /// [`get_with_revision`](Self::get_with_revision), for comparing a
    /// mirror with its source at one revision. O(n), like
    /// [`to_vec`](Self::to_vec).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, u32>::new();
    /// store.insert_at_revision("a".to_string(), 1, 10).unwrap();
    /// store.insert_at_revision("b".to_string(), 2, 11).unwrap();
    /// let (mut objects, revision) = store.to_vec_with_revision();
    /// objects.sort();
    /// assert_eq!(revision, 11);
    /// assert_eq!(objects.len(), 2);
    /// ```
    pub fn to_vec_with_revision(&self) -> (Vec<(K, V)>, u64)
    where
        V: Clone,
    {
        let mut entries = Vec::new();
        // Under every shard's read lock: no revisioned write is between its
        // change and its revision.
        let cores = self.shards.read_all();
        for core in cores.iter() {
            core.entries_into(&mut entries);
        }
        let revision = self.revision.load(Ordering::SeqCst);
        drop(cores);
        (entries, revision)
    }

    /// [`insert`](Self::insert) as the change at `revision`: the object,
    /// every index and the store's [`revision`](Self::revision) change in
    /// one critical section.
    ///
    /// # Errors
    ///
    /// [`IndexError::IndexFunction`] if an index function fails on `value`;
    /// the store, its revision included, is then unchanged.
    ///
    /// # Panics
    ///
    /// As [`insert`](Self::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<&str, u32>::new();
    /// assert_eq!(store.insert_at_revision("a", 1, 3).unwrap(), None);
    /// assert_eq!(store.revision(), 3);
    /// ```
    pub fn insert_at_revision(
        &self,
        key: K,
        value: V,
        revision: u64,
    ) -> Result<Option<V>, IndexError> {
        self.write_insert(key, value, Some(revision))
    }

    /// [`remove`](Self::remove) as the change at `revision`. The revision is
    /// recorded even if `key` was absent (the store has seen that change).
    ///
    /// # Panics
    ///
    /// As [`remove`](Self::remove).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, u32>::new();
    /// store.insert_at_revision("a".to_string(), 1, 3).unwrap();
    /// assert_eq!(store.remove_at_revision("a", 4), Some(1));
    /// assert_eq!(store.remove_at_revision("a", 5), None);
    /// assert_eq!(store.revision(), 5);
    /// ```
    pub fn remove_at_revision<Q>(&self, key: &Q, revision: u64) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.write_remove(key, Some(revision))
    }

    /// [`replace`](Self::replace) with the content of a list read at
    /// `revision`: the whole content, every index and the revision change
    /// in one critical section (client-go `Replace(list, resourceVersion)`).
    ///
    /// # Errors
    ///
    /// [`IndexError::IndexFunction`] if an index function fails on any
    /// item; the store, its revision included, is then unchanged.
    ///
    /// # Panics
    ///
    /// As [`replace`](Self::replace).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, &str>::new();
    /// store.insert_at_revision(1, "old", 9).unwrap();
    /// store.replace_at_revision([(2, "new")], 5).unwrap();
    /// assert_eq!(store.keys_to_vec(), [2]);
    /// assert_eq!(store.revision(), 5); // the list's revision
    /// ```
    pub fn replace_at_revision<I>(&self, items: I, revision: u64) -> Result<(), IndexError>
    where
        I: IntoIterator<Item = (K, V)>,
    {
        self.write_replace(items, Some(revision))
    }

    /// A relist's replace: installs `items` and `revision` atomically and
    /// hands back exactly the content it replaced, so that the caller can
    /// tell every add, update and delete. Items an index function rejects
    /// are left out (and returned) instead of failing the whole list: the
    /// store must still drop everything the source no longer holds.
    #[cfg(any(feature = "reflector", test))]
    pub(crate) fn replace_for_relist(&self, items: Vec<(K, V)>, revision: u64) -> Relisted<K, V> {
        let mut schema = self.schema();
        let mut rejected = Vec::new();
        let count = self.shards.count();
        let mut fresh = self.build_lenient(&schema, count, items, &mut rejected);
        loop {
            match self.swap_in(fresh, &schema, Some(revision)) {
                Ok(old) => {
                    return Relisted {
                        old: old.into_iter().flat_map(Core::into_entries).collect(),
                        rejected,
                    };
                }
                Err((built, current)) => {
                    // An index was added meanwhile: rebuild for the new schema.
                    schema = current;
                    let items = built.into_iter().flat_map(Core::into_entries).collect();
                    fresh = self.build_lenient(&schema, count, items, &mut rejected);
                }
            }
        }
    }

    /// Builds the `count` shards of `items` with no lock held, leaving out
    /// (into `rejected`) the items an index function fails on.
    #[cfg(any(feature = "reflector", test))]
    fn build_lenient(
        &self,
        schema: &Arc<super::index_fn::Schema<V>>,
        count: usize,
        items: Vec<(K, V)>,
        rejected: &mut Vec<(K, IndexError)>,
    ) -> Vec<Core<K, V>> {
        let per_shard = items.len() / count + items.len() / count / 8 + 8;
        let mut cores: Vec<Core<K, V>> = (0..count)
            .map(|_| {
                Core::with_capacity(Arc::clone(schema), per_shard)
                    .unwrap_or_else(|| Core::new(Arc::clone(schema)))
            })
            .collect();
        for (key, value) in items {
            match schema.compute(&value) {
                Ok(values) => {
                    let hash = self.hasher.hash_one(&key);
                    cores[shard_of(hash, count - 1)].build_insert(hash, key, value, values);
                }
                Err(error) => rejected.push((key, error)),
            }
        }
        cores
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// client-go's `TestThreadSafeStoreRV`, case by case.
    #[test]
    fn revision_follows_the_last_operation() {
        let store = IndexedStore::<String, u32>::new();
        assert_eq!(store.revision(), 0);
        store.insert_at_revision("a".into(), 1, 1).unwrap();
        assert_eq!(store.revision(), 1);
        store.insert_at_revision("a".into(), 2, 2).unwrap(); // update
        assert_eq!(store.revision(), 2);
        store.remove_at_revision("a", 3); // a delete carries its revision
        assert_eq!(store.revision(), 3);
        store.remove_at_revision("missing", 4); // even of an absent key
        assert_eq!(store.revision(), 4);
        store
            .replace_at_revision([("b".into(), 1), ("c".into(), 2)], 10)
            .unwrap(); // replace takes the list's revision
        assert_eq!(store.revision(), 10);
        store.insert_at_revision("d".into(), 4, 7).unwrap(); // last, not max
        assert_eq!(store.revision(), 7);
        // Plain writes leave it alone.
        store.insert("e".into(), 5).unwrap();
        store.remove("b");
        store.replace([("f".into(), 6)]).unwrap();
        store.clear();
        assert_eq!(store.revision(), 7);
    }

    #[test]
    fn a_rejected_write_leaves_the_revision() {
        let store = IndexedStore::<u32, i32>::builder()
            .try_index("positive", |n: &i32| {
                if *n >= 0 {
                    Ok(vec!["yes"])
                } else {
                    Err("negative")
                }
            })
            .build()
            .unwrap();
        store.insert_at_revision(1, 1, 5).unwrap();
        assert!(store.insert_at_revision(2, -1, 6).is_err());
        assert!(store.replace_at_revision([(3, -3)], 7).is_err());
        assert_eq!(store.revision(), 5);
        assert_eq!(store.keys_to_vec(), [1]);
    }

    #[test]
    fn relist_replace_returns_the_old_content_and_the_rejected() {
        let store = IndexedStore::<u32, i32>::builder()
            .try_index("positive", |n: &i32| {
                if *n >= 0 {
                    Ok(vec!["yes"])
                } else {
                    Err("negative")
                }
            })
            .build()
            .unwrap();
        store.insert_at_revision(1, 1, 1).unwrap();
        store.insert_at_revision(2, 2, 2).unwrap();
        let relisted = store.replace_for_relist(vec![(2, 20), (3, -3), (4, 4)], 9);
        let mut old: Vec<(u32, i32)> = relisted.old.iter().map(|(k, v)| (*k, *v)).collect();
        old.sort();
        assert_eq!(old, [(1, 1), (2, 2)]);
        assert_eq!(relisted.rejected.len(), 1);
        assert_eq!(relisted.rejected[0].0, 3);
        let mut keys = store.keys_to_vec();
        keys.sort();
        assert_eq!(keys, [2, 4]);
        assert_eq!(store.revision(), 9);
        store.check_invariants();
    }
}
