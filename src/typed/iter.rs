//! [`TypedIter`]: the snapshot returned by
//! [`TypedCache::iter`](super::TypedCache::iter).

use std::fmt;

use crate::sync::Arc;

/// An owned snapshot of a [`TypedCache`](super::TypedCache)'s live entries,
/// in no particular order. Holds no lock; the cache may change while it is
/// consumed without affecting it.
///
/// # Examples
///
/// ```
/// let cache: larder::TypedCache<u32, &str> = larder::TypedCache::new();
/// cache.insert(1, "one");
/// cache.insert(2, "two");
/// let snapshot = cache.iter();
/// cache.invalidate_all();
/// assert_eq!(snapshot.len(), 2);
/// let mut keys: Vec<u32> = snapshot.map(|(key, _value)| key).collect();
/// keys.sort_unstable();
/// assert_eq!(keys, [1, 2]);
/// ```
pub struct TypedIter<K, V> {
    entries: std::vec::IntoIter<(K, Arc<V>)>,
}

impl<K, V> TypedIter<K, V> {
    pub(crate) fn new(entries: Vec<(K, Arc<V>)>) -> Self {
        Self {
            entries: entries.into_iter(),
        }
    }
}

impl<K, V> Iterator for TypedIter<K, V> {
    type Item = (K, Arc<V>);

    fn next(&mut self) -> Option<(K, Arc<V>)> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<K, V> ExactSizeIterator for TypedIter<K, V> {}

impl<K, V> fmt::Debug for TypedIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedIter")
            .field("remaining", &self.entries.len())
            .finish()
    }
}
