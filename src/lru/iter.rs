//! [`LruIter`]: the snapshot returned by [`LruCache::iter`](super::LruCache::iter).

use std::fmt;

use crate::sync::Arc;

/// An owned snapshot of an [`LruCache`](super::LruCache)'s entries, most
/// recently used first within each shard. Holds no lock; the cache may
/// change while it is consumed without affecting it.
///
/// # Examples
///
/// ```
/// let cache = larder::LruCache::builder(4).shards(1).build().unwrap();
/// cache.insert(1, "one");
/// cache.insert(2, "two");
/// let snapshot = cache.iter();
/// cache.clear();
/// assert_eq!(snapshot.len(), 2);
/// let keys: Vec<u32> = snapshot.map(|(key, _value)| key).collect();
/// assert_eq!(keys, [2, 1]);
/// ```
pub struct LruIter<K, V> {
    entries: std::vec::IntoIter<(K, Arc<V>)>,
}

impl<K, V> LruIter<K, V> {
    pub(crate) fn new(entries: Vec<(K, Arc<V>)>) -> Self {
        Self {
            entries: entries.into_iter(),
        }
    }
}

impl<K, V> Iterator for LruIter<K, V> {
    type Item = (K, Arc<V>);

    fn next(&mut self) -> Option<(K, Arc<V>)> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<K, V> ExactSizeIterator for LruIter<K, V> {}

impl<K, V> fmt::Debug for LruIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LruIter")
            .field("remaining", &self.entries.len())
            .finish()
    }
}
