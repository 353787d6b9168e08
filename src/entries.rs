//! [`CacheIter`]: the owned snapshot of a cache's entries that
//! [`LruCache::iter`](crate::LruCache::iter) and
//! [`TypedCache::iter`](crate::TypedCache::iter) return (named
//! [`LruIter`](crate::LruIter) and [`TypedIter`](crate::TypedIter) there).

use std::fmt;

/// An owned snapshot of a cache's entries: keys and values cloned (store
/// values as `Arc<T>` to share them instead).
/// Holds no lock; the cache may change while it is consumed without
/// affecting it. Each cache's `iter` says in which order the entries come.
///
/// # Examples
///
/// ```
/// let cache = larder::LruCache::builder().capacity(4).shards(1).build().unwrap();
/// cache.insert(1, "one");
/// cache.insert(2, "two");
/// let snapshot: larder::CacheIter<u32, &str> = cache.iter();
/// cache.clear();
/// assert_eq!(snapshot.len(), 2);
/// let keys: Vec<u32> = snapshot.map(|(key, _value)| key).collect();
/// assert_eq!(keys, [2, 1]);
/// ```
pub struct CacheIter<K, V> {
    entries: std::vec::IntoIter<(K, V)>,
}

/// The snapshot [`LruCache::iter`](crate::LruCache::iter) returns: most
/// recently used first within each shard.
pub type LruIter<K, V> = CacheIter<K, V>;

/// The snapshot [`TypedCache::iter`](crate::TypedCache::iter) returns: the
/// live entries, in no particular order.
///
/// # Examples
///
/// ```
/// let cache: larder::TypedCache<u32, &str> = larder::TypedCache::new();
/// cache.insert(1, "one");
/// cache.insert(2, "two");
/// let snapshot: larder::TypedIter<u32, &str> = cache.iter();
/// cache.clear();
/// assert_eq!(snapshot.len(), 2);
/// let mut keys: Vec<u32> = snapshot.map(|(key, _value)| key).collect();
/// keys.sort_unstable();
/// assert_eq!(keys, [1, 2]);
/// ```
pub type TypedIter<K, V> = CacheIter<K, V>;

impl<K, V> CacheIter<K, V> {
    pub(crate) fn new(entries: Vec<(K, V)>) -> Self {
        Self {
            entries: entries.into_iter(),
        }
    }
}

impl<K, V> Iterator for CacheIter<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<K, V> ExactSizeIterator for CacheIter<K, V> {}

impl<K, V> fmt::Debug for CacheIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheIter")
            .field("remaining", &self.entries.len())
            .finish()
    }
}
