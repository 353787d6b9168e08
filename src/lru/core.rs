//! The sequential core of one shard: an exact LRU list (`&mut self`, no
//! locks), kept apart from the concurrent wrapper in `cache.rs`.
//!
//! # Layout
//!
//! Entries live in one dense `Vec` of nodes linked into a doubly-linked
//! recency list by `u32` indices (head = most recently used). A
//! [`NodeIndex`] (`index.rs`, shared with the CLOCK core) maps a key's hash
//! to its node index. Each node stores its key's full hash, so:
//!
//! - the table never calls the user's `Hash` (growth and removal rehash from
//!   the stored hash), and a lookup calls the user's `Eq` only on a full
//!   64-bit hash match;
//! - every user call (`Eq` in [`LruCore::find`]) happens *before* the first
//!   mutation of an operation, so a panicking `Eq` leaves the core exactly as
//!   it was;
//! - nothing the core removes is dropped here: evicted, replaced and removed
//!   keys and values are handed back to the caller, who drops them (or gives
//!   them to the eviction listener) after releasing the shard lock.
//!
//! Removal keeps the `Vec` dense by moving the last node into the hole; a
//! full shard recycles its least recently used node for the new entry, so the
//! steady state of a full cache allocates nothing.
//!
//! # Weights
//!
//! The bound is a total weight: every entry weighs at least 1 (exactly 1
//! without a weigher), and an insert evicts from the tail until the new
//! entry fits, recycling the last victim's node (with one victim, the
//! common case and the only one when unweighted, that is the old path).
//! The weights live in a `Vec<u32>` beside the nodes, started on the first
//! weight other than 1, so an unweighted core's nodes keep their size.

use std::borrow::Borrow;

use super::weight::Evicted;
use crate::node_index::{NodeIndex, keyed_node};

/// The "no node" index.
const NIL: u32 = u32::MAX;

/// The largest capacity of one shard: node indices are `u32` and `NIL` is
/// reserved.
pub(crate) const MAX_SHARD_CAPACITY: usize = (u32::MAX - 1) as usize;

struct Node<K, V> {
    key: K,
    value: V,
    hash: u64,
    prev: u32,
    next: u32,
}

keyed_node!(Node);

/// What an [`LruCore::insert`] displaced; the caller drops it unlocked.
pub(crate) struct Inserted<K, V> {
    /// The previous value of the same key.
    pub(crate) replaced: Option<V>,
    /// The entries evicted to make room, oldest victim first (at most one
    /// in an unweighted cache); or the new entry itself, if it weighs more
    /// than the whole core.
    pub(crate) evicted: Evicted<K, V>,
    /// The key passed in when the key was already present (the stored key
    /// is kept, as `std::collections::HashMap::insert` does).
    pub(crate) unused_key: Option<K>,
}

impl<K, V> Inserted<K, V> {
    /// Nothing displaced.
    #[inline]
    pub(crate) fn nothing() -> Self {
        Self {
            replaced: None,
            evicted: Evicted::none(),
            unused_key: None,
        }
    }
}

/// An exact LRU map whose entries weigh at most `capacity` in all (each
/// entry weighs at least 1; unweighted, each weighs 1).
pub(crate) struct LruCore<K, V> {
    table: NodeIndex,
    nodes: Vec<Node<K, V>>,
    head: u32,
    tail: u32,
    capacity: usize,
    /// The weight of each node, by node index, once some entry weighed
    /// other than 1; empty (every node weighs 1) until then. Kept apart
    /// from the nodes so an unweighted cache's node stays 32 bytes for
    /// 8-byte keys (a `u32` in the node would pad it to 40).
    weights: Vec<u32>,
    /// The sum of the nodes' weights.
    weight: u64,
}

impl<K, V> LruCore<K, V> {
    /// An empty core holding at most `capacity` (>= 1) entries.
    pub(crate) fn new(capacity: usize) -> Self {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        Self {
            table: NodeIndex::new(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity,
            weights: Vec::new(),
            weight: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The sum of the entries' weights.
    #[inline]
    pub(crate) fn weight(&self) -> u64 {
        self.weight
    }

    #[cfg(any(test, loom))]
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The weight of node `i`.
    #[inline]
    fn weight_of(&self, i: u32) -> u32 {
        self.weights.get(i as usize).copied().unwrap_or(1)
    }

    /// Sets the weight of node `i` (which exists), starting the weight
    /// table on the first weight other than 1.
    #[inline]
    fn set_weight(&mut self, i: u32, weight: u32) {
        if self.weights.is_empty() {
            if weight == 1 {
                return;
            }
            self.weights = vec![1; self.nodes.len()];
        }
        self.weights[i as usize] = weight;
    }

    /// The node index of the key, calling `K: Eq` only on a full hash match.
    #[inline]
    fn find<Q>(&self, hash: u64, key: &Q) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.table.find(&self.nodes, hash, key)
    }

    /// Whether the key is present (no recency change).
    pub(crate) fn contains<Q>(&self, hash: u64, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.find(hash, key).is_some()
    }

    /// The value of the key, made most recently used.
    #[inline]
    pub(crate) fn get<Q>(&mut self, hash: u64, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let i = self.find(hash, key)?;
        self.touch(i);
        Some(&self.nodes[i as usize].value)
    }

    /// The value of the key, without changing its recency.
    pub(crate) fn peek<Q>(&self, hash: u64, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.find(hash, key).map(|i| &self.nodes[i as usize].value)
    }

    /// Inserts or replaces the key's value (of `weight`, at least 1) and
    /// makes it most recently used; evicts least recently used entries
    /// until it fits. A value heavier than the capacity is not stored: it
    /// comes back in `evicted`, and the key's old entry, if any, is removed.
    #[inline]
    pub(crate) fn insert(&mut self, hash: u64, key: K, value: V, weight: u32) -> Inserted<K, V>
    where
        K: Eq,
    {
        debug_assert!(weight >= 1);
        // The only user code (`K: Eq`) runs here, before any mutation.
        if let Some(i) = self.find(hash, &key) {
            let old_weight = self.weight_of(i);
            if self.weight - u64::from(old_weight) + u64::from(weight) <= self.capacity as u64 {
                let old = std::mem::replace(&mut self.nodes[i as usize].value, value);
                self.set_weight(i, weight);
                self.weight = self.weight - u64::from(old_weight) + u64::from(weight);
                self.touch(i);
                return Inserted {
                    replaced: Some(old),
                    evicted: Evicted::none(),
                    unused_key: Some(key),
                };
            }
            // Heavier, and the others must make room (or it cannot fit at
            // all): take the old entry out, then insert anew under the
            // stored key. Same order as replacing in place: the entry ends
            // up most recently used, the others evicted from the tail.
            let (stored_key, old) = self.remove_index(i);
            let mut inserted = self.insert_new(hash, stored_key, value, weight);
            inserted.replaced = Some(old);
            inserted.unused_key = Some(key);
            return inserted;
        }
        self.insert_new(hash, key, value, weight)
    }

    /// Inserts an absent key, evicting from the tail until it fits.
    #[inline]
    fn insert_new(&mut self, hash: u64, key: K, value: V, weight: u32) -> Inserted<K, V> {
        let mut inserted = Inserted::nothing();
        let (capacity, weight_64) = (self.capacity as u64, u64::from(weight));
        if weight_64 > capacity {
            inserted.evicted.push((key, value));
            return inserted;
        }
        while self.weight + weight_64 > capacity {
            let t = self.tail;
            let tail_weight = u64::from(self.weight_of(t));
            if self.weight - tail_weight + weight_64 > capacity {
                // One victim is not enough: remove it, look at the next.
                let entry = self.remove_index(t);
                inserted.evicted.push(entry);
                continue;
            }
            // The last victim: recycle its node for the new entry.
            self.table.remove(&self.nodes, t);
            self.unlink(t);
            let node = &mut self.nodes[t as usize];
            let old_key = std::mem::replace(&mut node.key, key);
            let old_value = std::mem::replace(&mut node.value, value);
            node.hash = hash;
            self.set_weight(t, weight);
            self.weight = self.weight - tail_weight + weight_64;
            self.push_front(t);
            self.table.insert(&self.nodes, t);
            inserted.evicted.push((old_key, old_value));
            return inserted;
        }
        let i = self.nodes.len() as u32;
        self.nodes.push(Node {
            key,
            value,
            hash,
            prev: NIL,
            next: NIL,
        });
        if !self.weights.is_empty() {
            self.weights.push(weight);
        } else {
            self.set_weight(i, weight);
        }
        self.weight += weight_64;
        self.push_front(i);
        self.table.insert(&self.nodes, i);
        inserted
    }

    /// Removes the key, returning its entry.
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let i = self.find(hash, key)?;
        Some(self.remove_index(i))
    }

    /// Removes and returns the least recently used entry.
    pub(crate) fn pop_lru(&mut self) -> Option<(K, V)> {
        (self.tail != NIL).then(|| self.remove_index(self.tail))
    }

    /// Sets the capacity (a total weight), moving the entries over it
    /// (least recently used first) into `evicted`.
    pub(crate) fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<(K, V)>) {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        self.capacity = capacity;
        self.evict_overflow(evicted);
    }

    /// Moves the entries over the capacity (by weight) into `evicted`.
    pub(crate) fn evict_overflow(&mut self, evicted: &mut Vec<(K, V)>) {
        while self.weight > self.capacity as u64 {
            let entry = self.pop_lru().expect("non-empty over capacity");
            evicted.push(entry);
        }
        self.table.shrink(&mut self.nodes, self.capacity);
        if !self.weights.is_empty() {
            self.weights.shrink_to(self.nodes.capacity());
        }
    }

    /// Sets the capacity without evicting (a deliberately broken protocol
    /// for loom's negative controls may hold more than its capacity).
    #[cfg(loom)]
    pub(crate) fn set_capacity_lazily(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// Empties the core, returning every entry (in no particular order).
    pub(crate) fn take_all(&mut self) -> Vec<(K, V)> {
        self.table.clear();
        self.head = NIL;
        self.tail = NIL;
        self.weights = Vec::new();
        self.weight = 0;
        std::mem::take(&mut self.nodes)
            .into_iter()
            .map(|node| (node.key, node.value))
            .collect()
    }

    /// The entries from most to least recently used.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        let mut at = self.head;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let node = &self.nodes[at as usize];
                at = node.next;
                (&node.key, &node.value)
            })
        })
    }

    /// Makes node `i` the most recently used.
    #[inline]
    fn touch(&mut self, i: u32) {
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
    }

    #[inline]
    fn unlink(&mut self, i: u32) {
        let (prev, next) = {
            let node = &self.nodes[i as usize];
            (node.prev, node.next)
        };
        if prev == NIL {
            self.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
    }

    #[inline]
    fn push_front(&mut self, i: u32) {
        let old_head = self.head;
        {
            let node = &mut self.nodes[i as usize];
            node.prev = NIL;
            node.next = old_head;
        }
        if old_head == NIL {
            self.tail = i;
        } else {
            self.nodes[old_head as usize].prev = i;
        }
        self.head = i;
    }

    /// Unlinks and removes node `i`, moving the last node into its slot.
    fn remove_index(&mut self, i: u32) -> (K, V) {
        self.table.remove(&self.nodes, i);
        self.unlink(i);
        let last = (self.nodes.len() - 1) as u32;
        self.weight -= u64::from(self.weight_of(i));
        let node = self.nodes.swap_remove(i as usize);
        if !self.weights.is_empty() {
            self.weights.swap_remove(i as usize);
        }
        if i != last {
            // The node that was last now lives at `i`: repoint its
            // neighbours and its table slot.
            let (prev, next, hash) = {
                let moved = &self.nodes[i as usize];
                (moved.prev, moved.next, moved.hash)
            };
            if prev == NIL {
                self.head = i;
            } else {
                self.nodes[prev as usize].next = i;
            }
            if next == NIL {
                self.tail = i;
            } else {
                self.nodes[next as usize].prev = i;
            }
            self.table.moved(hash, last, i);
        }
        (node.key, node.value)
    }

    /// Checks every structural invariant; panics with a description if one
    /// fails. Used after every operation by the unit and property tests.
    pub(crate) fn check_invariants(&self) {
        let n = self.nodes.len();
        assert!(
            n <= self.capacity,
            "len {n} over capacity {}",
            self.capacity
        );
        assert_eq!(self.table.len(), n, "table and node counts differ");
        assert!(
            self.weight <= self.capacity as u64,
            "weight {} over capacity {}",
            self.weight,
            self.capacity
        );
        let mut seen = vec![false; n];
        let mut at = self.head;
        let mut prev = NIL;
        let mut count = 0;
        let mut weight = 0;
        while at != NIL {
            let node = &self.nodes[at as usize];
            assert!(self.weight_of(at) >= 1, "node {at} weighs 0");
            weight += u64::from(self.weight_of(at));
            assert!(!seen[at as usize], "cycle at node {at}");
            seen[at as usize] = true;
            assert_eq!(node.prev, prev, "broken prev link at node {at}");
            assert!(
                self.table.locates(node.hash, at),
                "node {at} not reachable from the table"
            );
            prev = at;
            at = node.next;
            count += 1;
        }
        assert_eq!(self.tail, prev, "tail is not the last node of the list");
        assert_eq!(count, n, "list length differs from node count");
        assert_eq!(weight, self.weight, "node weights differ from their sum");
        assert!(
            self.weights.is_empty() || self.weights.len() == n,
            "{} weights for {n} nodes",
            self.weights.len()
        );
    }
}
