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

use crate::table_room::Room;

/// A node that knows its key and its key's full hash.
pub(crate) trait Keyed {
    type Key;
    fn hash(&self) -> u64;
    fn key(&self) -> &Self::Key;
}

/// Node indices (`u32`) by hash. The table grows by its [`Room`]'s
/// rule, not hashbrown's (`table_room.rs`): a full shard that keeps
/// evicting and inserting keeps its table's size.
pub(crate) struct NodeIndex {
    table: HashTable<u32>,
    room: Room,
}

impl NodeIndex {
    pub(crate) fn new() -> Self {
        Self {
            table: HashTable::new(),
            room: Room::default(),
        }
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
        self.table
            .find(hash, |&i| {
                let node = &nodes[i as usize];
                node.hash() == hash && node.key().borrow() == key
            })
            .copied()
    }

    /// Adds node `i` (its hash already stored in it). Inlined always: out
    /// of line, the call lengthened every core's miss (`design/lru.md` has
    /// the counts), and the callers are few.
    #[inline(always)]
    pub(crate) fn insert<N: Keyed>(&mut self, nodes: &[N], i: u32) {
        self.room
            .make(&mut self.table, |&j| nodes[j as usize].hash());
        self.table
            .insert_unique(nodes[i as usize].hash(), i, |&j| nodes[j as usize].hash());
    }

    /// Removes node `i`, which must be in the table.
    pub(crate) fn remove<N: Keyed>(&mut self, nodes: &[N], i: u32) {
        match self.table.find_entry(nodes[i as usize].hash(), |&j| j == i) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => unreachable!("larder: node {i} missing from its table"),
        }
    }

    /// Records that the node of hash `hash` moved from index `from` to `to`.
    pub(crate) fn moved(&mut self, hash: u64, from: u32, to: u32) {
        match self.table.find_mut(hash, |&j| j == from) {
            Some(slot) => *slot = to,
            None => unreachable!("larder: node {from} missing from its table"),
        }
    }

    /// Frees the memory of `nodes` and of the table once the capacity has
    /// fallen well below what they hold room for.
    pub(crate) fn shrink<N: Keyed>(&mut self, nodes: &mut Vec<N>, capacity: usize) {
        if nodes.capacity() > capacity.max(4).saturating_mul(2) {
            nodes.shrink_to(capacity);
            let hash = |&j: &u32| nodes[j as usize].hash();
            self.room.rebuild(&mut self.table, capacity, hash);
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = Self::new();
    }

    /// Bytes the table has allocated (tests of memory).
    #[cfg(test)]
    pub(crate) fn allocated(&self) -> usize {
        self.table.allocation_size()
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the table leads from `hash` to node `i`.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn locates(&self, hash: u64, i: u32) -> bool {
        self.table.find(hash, |&j| j == i).is_some()
    }
}
