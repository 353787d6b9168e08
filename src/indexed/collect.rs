//! Building an [`IndexedStore`] from an iterator, and extending one.

use std::hash::{BuildHasher, Hash};

use super::{IndexError, IndexedStore};

/// A store with no index, holding the pairs; a repeated key keeps its last
/// object (as [`replace`](IndexedStore::replace) does). Register indexes
/// afterwards with [`add_index`](IndexedStore::add_index), or build with
/// [`IndexedStore::builder`] and [`replace`](IndexedStore::replace) to index
/// from the start.
///
/// # Examples
///
/// ```
/// let store: larder::IndexedStore<&str, u32> = [("a", 1), ("b", 2), ("a", 3)].into_iter().collect();
/// assert_eq!(store.len(), 2);
/// assert_eq!(store.get("a").as_deref(), Some(&3));
/// ```
impl<K, V> FromIterator<(K, V)> for IndexedStore<K, V>
where
    K: Hash + Eq + Clone,
{
    fn from_iter<I: IntoIterator<Item = (K, V)>>(items: I) -> Self {
        let store = IndexedStore::new();
        match store.replace(items) {
            Ok(()) => store,
            // A store without indexes runs no index function.
            Err(error) => unreachable!("a store without indexes failed to index: {error}"),
        }
    }
}

impl<K, V, S> IndexedStore<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// Inserts every pair, in order, each as one [`insert`](Self::insert)
    /// (atomic per object, not as a whole; use
    /// [`transaction`](Self::transaction) for all-or-nothing).
    ///
    /// # Errors
    ///
    /// The first [`IndexError`]; the pairs before it are inserted, the
    /// failing one and the rest are not.
    ///
    /// # Panics
    ///
    /// As [`insert`](Self::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, String>::builder()
    ///     .try_index("len", |s: &String| if s.is_empty() { Err("empty") } else { Ok([s.len().to_string()]) })
    ///     .build()
    ///     .unwrap();
    /// store.try_extend([(1, "a".to_string()), (2, "bb".into())]).unwrap();
    /// assert!(store.try_extend([(3, "ccc".to_string()), (4, String::new()), (5, "e".into())]).is_err());
    /// assert_eq!(store.len(), 3); // 1, 2 and 3: the failing pair stopped the rest
    /// ```
    pub fn try_extend<I>(&self, items: I) -> Result<(), IndexError>
    where
        I: IntoIterator<Item = (K, V)>,
    {
        for (key, value) in items {
            self.insert(key, value)?;
        }
        Ok(())
    }
}
