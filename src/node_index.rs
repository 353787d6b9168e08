//! [`NodeIndex`]: the hash table from a key's hash to its slot, used by
//! the cache engine's shards (`cache/shard.rs`, under every policy and
//! every face: `LruCache`, `TypedCache`, `AnyCache`).
//!
//! Each core keeps its entries in one dense `Vec` of nodes (4 bytes of
//! table per bucket, so the table's power-of-two slack costs little); every node
//! stores its key's full hash ([`Keyed`]), so the table never calls the
//! user's `Hash` (growth and shrinking rehash from stored hashes) and a
//! lookup calls the user's `Eq` only on a full 64-bit hash match.

use std::borrow::Borrow;

use hashbrown::HashTable;

/// A node that knows its key and its key's full hash.
pub(crate) trait Keyed {
    type Key;
    fn hash(&self) -> u64;
    fn key(&self) -> &Self::Key;
}

/// Node indices (`u32`) by hash.
pub(crate) struct NodeIndex(HashTable<u32>);

impl NodeIndex {
    pub(crate) fn new() -> Self {
        Self(HashTable::new())
    }

    /// The index of the node holding `key`: calls `K: Eq` only on a full
    /// hash match.
    #[inline]
    pub(crate) fn find<N, Q>(&self, nodes: &[N], hash: u64, key: &Q) -> Option<u32>
    where
        N: Keyed,
        N::Key: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.0
            .find(hash, |&i| {
                let node = &nodes[i as usize];
                node.hash() == hash && node.key().borrow() == key
            })
            .copied()
    }

    /// Adds node `i` (its hash already stored in it). Inlined always: out
    /// of line, the call cost every core's miss 2-6 instructions (the
    /// callers are few).
    #[inline(always)]
    pub(crate) fn insert<N: Keyed>(&mut self, nodes: &[N], i: u32) {
        self.0
            .insert_unique(nodes[i as usize].hash(), i, |&j| nodes[j as usize].hash());
    }

    /// Removes node `i`, which must be in the table.
    pub(crate) fn remove<N: Keyed>(&mut self, nodes: &[N], i: u32) {
        match self.0.find_entry(nodes[i as usize].hash(), |&j| j == i) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => unreachable!("larder: node {i} missing from its table"),
        }
    }

    /// Records that the node of hash `hash` moved from index `from` to `to`.
    pub(crate) fn moved(&mut self, hash: u64, from: u32, to: u32) {
        match self.0.find_mut(hash, |&j| j == from) {
            Some(slot) => *slot = to,
            None => unreachable!("larder: node {from} missing from its table"),
        }
    }

    /// Frees the memory of `nodes` and of the table once the capacity has
    /// fallen well below what they hold room for.
    pub(crate) fn shrink<N: Keyed>(&mut self, nodes: &mut Vec<N>, capacity: usize) {
        if nodes.capacity() > capacity.max(4).saturating_mul(2) {
            nodes.shrink_to(capacity);
            self.0.shrink_to(capacity, |&i| nodes[i as usize].hash());
        }
    }

    pub(crate) fn clear(&mut self) {
        self.0 = HashTable::new();
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the table leads from `hash` to node `i`.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn locates(&self, hash: u64, i: u32) -> bool {
        self.0.find(hash, |&j| j == i).is_some()
    }
}
