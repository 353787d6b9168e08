//! [`OrderedSnapshot`]: an immutable view of a whole
//! [`OrderedIndex`](super::OrderedIndex) at one instant.

use std::borrow::Borrow;
use std::collections::btree_map;
use std::fmt;
use std::ops::RangeBounds;

use super::sequential::Map;
use crate::sync::Arc;

/// An immutable, shareable view of a whole
/// [`OrderedIndex`](super::OrderedIndex) at one instant, taken by
/// [`OrderedIndex::snapshot`](super::OrderedIndex::snapshot).
///
/// Cloning one is a reference-count increment, and writes to the index
/// never show through. Taking one costs O(n) with the default leaves, O(1)
/// with one lock (it then shares the index's map, and the index's next
/// write copies it: see
/// [`OrderedIndex::snapshot`](super::OrderedIndex::snapshot)). Reading a
/// snapshot takes no lock at all, so it is also the way to walk the index
/// for a long time, or to call back into the index while walking, without
/// blocking writers.
///
/// Drop it when done: a snapshot held forever keeps its version of every
/// entry alive (and with one lock makes each later copy-on-write of the
/// index a full copy).
///
/// # Examples
///
/// ```
/// use larder::OrderedIndex;
///
/// let index = OrderedIndex::new();
/// index.insert(1, "a");
/// index.insert(2, "b");
/// let view = index.snapshot();
/// index.insert(3, "c"); // not visible in `view`
/// assert_eq!(view.len(), 2);
/// let keys: Vec<i32> = view.iter().map(|(k, _)| *k).collect();
/// assert_eq!(keys, [1, 2]);
/// assert_eq!(index.len(), 3);
/// ```
pub struct OrderedSnapshot<K, V> {
    map: Arc<Map<K, V>>,
}

impl<K, V> OrderedSnapshot<K, V> {
    pub(super) fn new(map: Arc<Map<K, V>>) -> Self {
        Self { map }
    }

    /// The snapshot as the `BTreeMap` it is, for every read method `BTreeMap`
    /// has (`range_mut` and the other writes are not reachable).
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, ()> = (0..5).map(|k| (k, ())).collect();
    /// let view = index.snapshot();
    /// assert_eq!(view.as_map().keys().rev().next(), Some(&4));
    /// ```
    pub fn as_map(&self) -> &btree_map::BTreeMap<K, Arc<V>> {
        &self.map
    }

    /// The number of entries.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert("k", 1);
    /// assert_eq!(index.snapshot().len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the snapshot has no entries.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u32, u32> = larder::OrderedIndex::new();
    /// assert!(index.snapshot().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every entry, in key order. Borrows the snapshot; takes no lock.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, u8> = [(2, 20), (1, 10)].into_iter().collect();
    /// let view = index.snapshot();
    /// let pairs: Vec<(u8, u8)> = view.iter().map(|(k, v)| (*k, **v)).collect();
    /// assert_eq!(pairs, [(1, 10), (2, 20)]);
    /// ```
    pub fn iter(&self) -> btree_map::Iter<'_, K, Arc<V>> {
        self.map.iter()
    }
}

impl<K: Ord, V> OrderedSnapshot<K, V> {
    /// The entry with the least key.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, char> = [(7, 'x'), (3, 'y')].into_iter().collect();
    /// assert_eq!(index.snapshot().first().map(|(k, v)| (*k, **v)), Some((3, 'y')));
    /// ```
    pub fn first(&self) -> Option<(&K, &Arc<V>)> {
        self.map.first_key_value()
    }

    /// The entry with the greatest key.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, char> = [(7, 'x'), (3, 'y')].into_iter().collect();
    /// assert_eq!(index.snapshot().last().map(|(k, v)| (*k, **v)), Some((7, 'x')));
    /// ```
    pub fn last(&self) -> Option<(&K, &Arc<V>)> {
        self.map.last_key_value()
    }

    /// The value stored under `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert(String::from("a"), 1);
    /// assert_eq!(index.snapshot().get("a").map(|v| **v), Some(1));
    /// ```
    pub fn get<Q>(&self, key: &Q) -> Option<&Arc<V>>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.map.get(key)
    }

    /// Whether `key` has an entry.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert(1, ());
    /// assert!(index.snapshot().contains_key(&1));
    /// ```
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.map.contains_key(key)
    }

    /// The entries in `range`, in key order, borrowed from the snapshot.
    ///
    /// # Panics
    ///
    /// As `BTreeMap::range`: if the range's start is greater than its end,
    /// or if start equals end and both bounds are excluded.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u32, ()> = (0..10).map(|k| (k, ())).collect();
    /// let view = index.snapshot();
    /// assert_eq!(view.range(3..6).map(|(k, _)| *k).collect::<Vec<_>>(), [3, 4, 5]);
    /// ```
    pub fn range<Q, R>(&self, range: R) -> btree_map::Range<'_, K, Arc<V>>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        self.map.range(range)
    }
}

impl<K, V> Clone for OrderedSnapshot<K, V> {
    /// Another handle to the same snapshot (a reference-count increment).
    fn clone(&self) -> Self {
        Self {
            map: Arc::clone(&self.map),
        }
    }
}

impl<'a, K, V> IntoIterator for &'a OrderedSnapshot<K, V> {
    type Item = (&'a K, &'a Arc<V>);
    type IntoIter = btree_map::Iter<'a, K, Arc<V>>;
    fn into_iter(self) -> Self::IntoIter {
        self.map.iter()
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for OrderedSnapshot<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.map.iter()).finish()
    }
}
