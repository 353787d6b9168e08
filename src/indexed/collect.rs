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
/// assert_eq!(store.get("a"), Some(3));
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
    /// Inserts every pair, in order, as one atomic write: all of them or,
    /// if an index function fails on any, none (it is a
    /// [`transaction`](Self::transaction) of inserts). A repeated key keeps
    /// its last object. Readers see the store before or after, never part
    /// of it.
    ///
    /// # Errors
    ///
    /// The first [`IndexError`]; the store is left as it was.
    ///
    /// # Panics
    ///
    /// As [`transaction`](Self::transaction); nothing is applied.
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
    /// assert_eq!(store.len(), 2); // 1 and 2: the failing pair stopped all three
    /// ```
    pub fn try_extend<I>(&self, items: I) -> Result<(), IndexError>
    where
        I: IntoIterator<Item = (K, V)>,
    {
        self.transaction(|tx| {
            for (key, value) in items {
                tx.insert(key, value)?;
            }
            Ok(())
        })
    }
}
