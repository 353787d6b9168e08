//! The sequential core of one shard under [`LruPolicy::Clock`]: CLOCK, the
//! classic one-bit approximation of LRU (also called second chance).
//!
//! # Policy
//!
//! Entries sit in a ring (the dense node `Vec`) swept by a hand. A hit only
//! sets the entry's reference bit, so a lookup can run under a *shared*
//! lock: the bit is an atomic, and nothing else is written. To make room,
//! the hand moves from entry to entry: a referenced entry loses its bit and
//! is passed over (its second chance); the first unreferenced entry is
//! evicted, and the new entry takes its node, unreferenced. An entry hit
//! since the hand last passed it is never evicted before one that was not.
//!
//! Layout, stored hashes and panic safety are those of the exact core
//! (`core.rs`): the same [`NodeIndex`] of node indices (`index.rs`), the user's
//! `Eq` called only before the first mutation, and every removed key and
//! value handed back to the caller to drop unlocked.
//!
//! [`LruPolicy::Clock`]: super::LruPolicy::Clock

use std::borrow::Borrow;

use super::core::{Inserted, MAX_SHARD_CAPACITY};
use super::weight::Evicted;
use crate::node_index::{NodeIndex, keyed_node};
use crate::sync::{AtomicBool, Ordering};

struct Node<K, V> {
    key: K,
    value: V,
    hash: u64,
    /// Set by a hit (under the shard's shared lock), cleared by the hand
    /// (under its exclusive lock).
    referenced: AtomicBool,
    /// The entry's weight (at least 1; 1 in an unweighted cache).
    weight: u32,
}

keyed_node!(Node);

/// A CLOCK map whose entries weigh at most `capacity` in all.
pub(crate) struct ClockCore<K, V> {
    table: NodeIndex,
    nodes: Vec<Node<K, V>>,
    /// The next node the hand looks at (may equal `nodes.len()`: wraps).
    hand: usize,
    capacity: usize,
    /// The sum of the nodes' weights.
    weight: u64,
}

impl<K, V> ClockCore<K, V> {
    /// An empty core holding at most `capacity` (>= 1) entries.
    pub(crate) fn new(capacity: usize) -> Self {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        Self {
            table: NodeIndex::new(),
            nodes: Vec::new(),
            hand: 0,
            capacity,
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

    /// The node index of the key, calling `K: Eq` only on a full hash match.
    #[inline]
    fn find<Q>(&self, hash: u64, key: &Q) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.table.find(&self.nodes, hash, key)
    }

    /// Whether the key is present (not a use).
    pub(crate) fn contains<Q>(&self, hash: u64, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.find(hash, key).is_some()
    }

    /// The value of the key, marked as used. Needs only `&self`: safe to
    /// call from several threads holding the shard's shared lock.
    #[inline]
    pub(crate) fn get<Q>(&self, hash: u64, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let node = &self.nodes[self.find(hash, key)? as usize];
        // Relaxed: the bit is a hint read by the hand under the exclusive
        // lock, whose acquisition synchronizes with this reader's unlock.
        // Stored only when clear, so a hot entry's cache line stays shared
        // between the cores that read it instead of bouncing.
        if !node.referenced.load(Ordering::Relaxed) {
            node.referenced.store(true, Ordering::Relaxed);
        }
        Some(&node.value)
    }

    /// The value of the key, not marked as used.
    pub(crate) fn peek<Q>(&self, hash: u64, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.find(hash, key).map(|i| &self.nodes[i as usize].value)
    }

    /// Inserts or replaces the key's value (of `weight`, at least 1; a
    /// replacement marks it used); evicts the entries the hand picks until
    /// it fits. A value heavier than the capacity is not stored: it comes
    /// back in `evicted`, and the key's old entry, if any, is removed.
    #[inline]
    pub(crate) fn insert(&mut self, hash: u64, key: K, value: V, weight: u32) -> Inserted<K, V>
    where
        K: Eq,
    {
        debug_assert!(weight >= 1);
        // The only user code (`K: Eq`) runs here, before any mutation.
        if let Some(i) = self.find(hash, &key) {
            let old_weight = self.nodes[i as usize].weight;
            if self.weight - u64::from(old_weight) + u64::from(weight) <= self.capacity as u64 {
                let node = &mut self.nodes[i as usize];
                // Relaxed: under the exclusive lock.
                node.referenced.store(true, Ordering::Relaxed);
                let old = std::mem::replace(&mut node.value, value);
                node.weight = weight;
                self.weight = self.weight - u64::from(old_weight) + u64::from(weight);
                return Inserted {
                    replaced: Some(old),
                    evicted: Evicted::none(),
                    unused_key: Some(key),
                };
            }
            // Heavier, and others must make room: take the old entry out
            // (so the hand cannot pick it), then insert anew, marked used.
            let (stored_key, old) = self.remove_index(i as usize);
            let mut inserted = self.insert_new(hash, stored_key, value, weight, true);
            inserted.replaced = Some(old);
            inserted.unused_key = Some(key);
            return inserted;
        }
        self.insert_new(hash, key, value, weight, false)
    }

    /// Inserts an absent key, evicting the hand's picks until it fits.
    #[inline]
    fn insert_new(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        referenced: bool,
    ) -> Inserted<K, V> {
        let mut inserted = Inserted::nothing();
        let (capacity, weight_64) = (self.capacity as u64, u64::from(weight));
        if weight_64 > capacity {
            inserted.evicted.push((key, value));
            return inserted;
        }
        while self.weight + weight_64 > capacity {
            let v = self.victim();
            let victim_weight = u64::from(self.nodes[v].weight);
            if self.weight - victim_weight + weight_64 > capacity {
                // One victim is not enough: remove it, look for the next.
                let entry = self.remove_index(v);
                inserted.evicted.push(entry);
                continue;
            }
            // The last victim: its node takes the new entry.
            self.table.remove(&self.nodes, v as u32);
            let node = &mut self.nodes[v];
            let old_key = std::mem::replace(&mut node.key, key);
            let old_value = std::mem::replace(&mut node.value, value);
            node.hash = hash;
            node.weight = weight;
            // Relaxed: under the exclusive lock.
            node.referenced.store(referenced, Ordering::Relaxed);
            self.weight = self.weight - victim_weight + weight_64;
            self.table.insert(&self.nodes, v as u32);
            self.hand = v + 1;
            inserted.evicted.push((old_key, old_value));
            return inserted;
        }
        let i = self.nodes.len() as u32;
        self.nodes.push(Node {
            key,
            value,
            hash,
            referenced: AtomicBool::new(referenced),
            weight,
        });
        self.weight += weight_64;
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
        Some(self.remove_index(i as usize))
    }

    /// Sets the capacity, moving the entries over it (in the hand's order)
    /// into `evicted`.
    pub(crate) fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<(K, V)>) {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        self.capacity = capacity;
        self.evict_overflow(evicted);
    }

    /// Moves the entries over the capacity (by weight) into `evicted`.
    pub(crate) fn evict_overflow(&mut self, evicted: &mut Vec<(K, V)>) {
        while self.weight > self.capacity as u64 {
            let v = self.victim();
            evicted.push(self.remove_index(v));
        }
        self.table.shrink(&mut self.nodes, self.capacity);
    }

    /// Sets the capacity without evicting (loom's negative controls).
    #[cfg(loom)]
    pub(crate) fn set_capacity_lazily(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// Empties the core, returning every entry (in no particular order).
    pub(crate) fn take_all(&mut self) -> Vec<(K, V)> {
        self.table.clear();
        self.hand = 0;
        self.weight = 0;
        std::mem::take(&mut self.nodes)
            .into_iter()
            .map(|node| (node.key, node.value))
            .collect()
    }

    /// The entries in the reverse of the order the hand would evict them
    /// if nothing else happened: referenced entries first, each group from
    /// the last the hand reaches to the first. Not a use.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        let n = self.nodes.len();
        let order = |k: usize| (self.hand + n - 1 - k) % n.max(1);
        for referenced in [true, false] {
            for k in 0..n {
                let node = &self.nodes[order(k)];
                // Relaxed: read under the shard lock; the bit is a hint.
                if node.referenced.load(Ordering::Relaxed) == referenced {
                    f(&node.key, &node.value);
                }
            }
        }
    }

    /// The node the hand evicts next: clears the bits of referenced nodes
    /// on its way and stops at the first unreferenced one (within one lap,
    /// since a lap clears every bit). The core must not be empty.
    fn victim(&mut self) -> usize {
        debug_assert!(!self.nodes.is_empty());
        loop {
            if self.hand >= self.nodes.len() {
                self.hand = 0;
            }
            let node = &self.nodes[self.hand];
            // Relaxed: under the exclusive lock.
            if !node.referenced.load(Ordering::Relaxed) {
                return self.hand;
            }
            node.referenced.store(false, Ordering::Relaxed);
            self.hand += 1;
        }
    }

    /// Removes node `i`, moving the last node into its place (the hand
    /// keeps its index, or wraps to 0 if that is now past the end).
    fn remove_index(&mut self, i: usize) -> (K, V) {
        self.table.remove(&self.nodes, i as u32);
        let last = self.nodes.len() - 1;
        let node = self.nodes.swap_remove(i);
        self.weight -= u64::from(node.weight);
        if self.hand >= self.nodes.len() {
            self.hand = 0;
        }
        if i != last {
            self.table.moved(self.nodes[i].hash, last as u32, i as u32);
        }
        (node.key, node.value)
    }

    /// Checks every structural invariant; panics with a description if one
    /// fails.
    pub(crate) fn check_invariants(&self) {
        let n = self.nodes.len();
        assert!(
            n <= self.capacity,
            "len {n} over capacity {}",
            self.capacity
        );
        assert_eq!(self.table.len(), n, "table and node counts differ");
        assert!(self.hand <= n, "hand {} beyond {n} nodes", self.hand);
        assert!(
            self.weight <= self.capacity as u64,
            "weight {} over capacity {}",
            self.weight,
            self.capacity
        );
        let weight: u64 = self.nodes.iter().map(|node| u64::from(node.weight)).sum();
        assert_eq!(weight, self.weight, "node weights differ from their sum");
        assert!(
            self.nodes.iter().all(|node| node.weight >= 1),
            "a node weighs 0"
        );
        for (i, node) in self.nodes.iter().enumerate() {
            assert!(
                self.table.locates(node.hash, i as u32),
                "node {i} not reachable from the table"
            );
        }
    }
}
