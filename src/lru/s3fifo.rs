//! The sequential core of one shard under [`LruPolicy::S3Fifo`]: S3-FIFO
//! (Yang et al., "FIFO queues are all you need for cache eviction",
//! SOSP 2023), a scan-resistant policy whose hits write no list.
//!
//! # Policy
//!
//! Three FIFO queues:
//!
//! - **small** (1/48 of the capacity, a share of the total weight when a
//!   weigher is set) takes every new key. Most keys are
//!   used once and leave from here without ever touching the rest of the
//!   cache: a scan or a burst of one-hit wonders cannot flush the hot set.
//! - **main** (the rest) holds keys that proved themselves: a key used
//!   again while in small moves to main when it reaches small's tail.
//!   Main's tail is evicted unless it was used since it last got there;
//!   then it is reinserted at the head with one use less (CLOCK with a
//!   2-bit counter).
//! - **ghost** remembers 32-bit fingerprints of the hashes (not keys or
//!   values) of recently evicted small-queue keys, about two thirds as
//!   many as the shard holds entries, in a set-associative table of FIFO
//!   buckets (`ghost.rs`: one cache line read to test a key, one to
//!   remember one). A key that comes back while its hash is remembered
//!   goes straight to main.
//!
//! A hit only bumps the entry's use counter (0 to 3), an atomic stored only
//! while below 3, so a lookup runs under the shard's *shared* lock and a
//! hot entry's cache line stops being written once its counter saturates.
//!
//! Layout, stored hashes and panic safety are those of the other cores
//! (`core.rs`): one dense `Vec` of nodes, the shared [`NodeIndex`], the
//! user's `Eq` called only before the first mutation, and every removed key
//! and value handed back to the caller to drop unlocked. The ghost holds
//! bare fingerprints of hashes, so it never runs user code either.
//!
//! [`LruPolicy::S3Fifo`]: super::LruPolicy::S3Fifo

use std::borrow::Borrow;

use super::core::{Inserted, MAX_SHARD_CAPACITY};
use super::ghost::Ghost;
use super::weight::Evicted;
use crate::node_index::{NodeIndex, keyed_node};
use crate::sync::{AtomicU8, Ordering};

/// The "no node" index.
const NIL: u32 = u32::MAX;

/// A use counter saturates here (two bits' worth, as in the paper).
const MAX_FREQ: u8 = 3;

/// Which queue a node is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Queue {
    Small,
    Main,
}

struct Node<K, V> {
    key: K,
    value: V,
    hash: u64,
    prev: u32,
    next: u32,
    queue: Queue,
    /// Uses since the entry entered its queue or was last passed over:
    /// bumped by a hit (under the shard's shared lock), read and lowered by
    /// eviction (under its exclusive lock).
    freq: AtomicU8,
    /// The entry's weight (at least 1; 1 in an unweighted cache).
    weight: u32,
}

keyed_node!(Node);

/// A doubly linked FIFO over node indices: new nodes at the head, the
/// oldest at the tail.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
    len: usize,
    /// The sum of its nodes' weights (`len` when unweighted).
    weight: u64,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
        len: 0,
        weight: 0,
    };
}

/// An S3-FIFO map whose entries weigh at most `capacity` in all; the
/// queues' shares are shares of that weight.
pub(crate) struct S3FifoCore<K, V> {
    table: NodeIndex,
    nodes: Vec<Node<K, V>>,
    small: List,
    main: List,
    ghost: Ghost,
    capacity: usize,
}

/// The small queue's share of a capacity: 1/48, at least one entry (so a
/// capacity of 1 is all small queue, and main's share is empty). The
/// paper's tenth measured up to 0.5 point lower on Zipf traces here; a
/// small probation queue keeps more room for the keys that proved
/// themselves, and the ghost still catches the keys that return after
/// leaving it.
///
/// Chosen with [`ghost_target`](super::ghost::ghost_target) on a grid
/// (small 1/16 to 1/64, ghost 0.35 to 1.5 capacities) over Zipf 0.9, Zipf
/// 1.1 and a scan-polluted Zipf 0.9 trace at 1% and 10% of 1M keys, three
/// seeds, sharded and not: 1/48 with a ghost of two thirds of the capacity
/// was ahead of quick_cache 0.7 on all 18 cells, where the earlier 1/32
/// with a ghost as large as main was behind on the 6 cells at 1% of the
/// Zipf traces (by 0.1 point).
fn small_target(capacity: usize) -> usize {
    (capacity / 48).max(1)
}

impl<K, V> S3FifoCore<K, V> {
    /// An empty core holding at most `capacity` (>= 1) entries.
    pub(crate) fn new(capacity: usize) -> Self {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        Self {
            table: NodeIndex::new(),
            nodes: Vec::new(),
            small: List::EMPTY,
            main: List::EMPTY,
            ghost: Ghost::new(),
            capacity,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The sum of the entries' weights.
    #[inline]
    pub(crate) fn weight(&self) -> u64 {
        self.small.weight + self.main.weight
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

    /// The value of the key, counted as a use. Needs only `&self`: safe to
    /// call from several threads holding the shard's shared lock.
    #[inline]
    pub(crate) fn get<Q>(&self, hash: u64, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let node = &self.nodes[self.find(hash, key)? as usize];
        // Relaxed: the counter is a hint read by eviction under the
        // exclusive lock, whose acquisition synchronizes with this reader's
        // unlock. Two racing hits may count once; a lost use only makes
        // eviction slightly less informed. Stored only below the maximum,
        // so a hot entry's line stays shared between the reading cores.
        let freq = node.freq.load(Ordering::Relaxed);
        if freq < MAX_FREQ {
            node.freq.store(freq + 1, Ordering::Relaxed);
        }
        Some(&node.value)
    }

    /// The value of the key, not counted as a use.
    pub(crate) fn peek<Q>(&self, hash: u64, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.find(hash, key).map(|i| &self.nodes[i as usize].value)
    }

    /// Inserts or replaces the key's value (of `weight`, at least 1; a
    /// replacement counts as a use); a new key goes to main if the ghost
    /// remembers it, else to small, after entries are evicted until it
    /// fits. A value heavier than the capacity is not stored: it comes back
    /// in `evicted`, and the key's old entry, if any, is removed.
    pub(crate) fn insert(&mut self, hash: u64, key: K, value: V, weight: u32) -> Inserted<K, V>
    where
        K: Eq,
    {
        debug_assert!(weight >= 1);
        // The only user code (`K: Eq`) runs here, before any mutation.
        if let Some(i) = self.find(hash, &key) {
            let (old_weight, queue) = {
                let node = &self.nodes[i as usize];
                (node.weight, node.queue)
            };
            // Relaxed: under the exclusive lock.
            let freq = (self.nodes[i as usize].freq.load(Ordering::Relaxed) + 1).min(MAX_FREQ);
            if self.weight() - u64::from(old_weight) + u64::from(weight) <= self.capacity as u64 {
                let node = &mut self.nodes[i as usize];
                node.freq.store(freq, Ordering::Relaxed);
                let old = std::mem::replace(&mut node.value, value);
                node.weight = weight;
                let list = self.list_mut(queue);
                list.weight = list.weight - u64::from(old_weight) + u64::from(weight);
                return Inserted {
                    replaced: Some(old),
                    evicted: Evicted::none(),
                    unused_key: Some(key),
                };
            }
            // Heavier, and others must make room: take the old entry out
            // (so eviction cannot pick it; the ghost does not learn it),
            // then insert anew in its queue, its use counted.
            let (stored_key, old) = self.remove_index(i);
            let mut inserted = self.insert_new(hash, stored_key, value, weight, queue, freq);
            inserted.replaced = Some(old);
            inserted.unused_key = Some(key);
            return inserted;
        }
        let queue = if self.ghost.take(hash) {
            Queue::Main
        } else {
            Queue::Small
        };
        self.insert_new(hash, key, value, weight, queue, 0)
    }

    /// Inserts an absent key into `queue` with `freq` uses, evicting until
    /// it fits.
    fn insert_new(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        queue: Queue,
        freq: u8,
    ) -> Inserted<K, V> {
        let mut inserted = Inserted::nothing();
        let (capacity, weight_64) = (self.capacity as u64, u64::from(weight));
        if weight_64 > capacity {
            inserted.evicted.push((key, value));
            return inserted;
        }
        while self.weight() + weight_64 > capacity {
            let v = self.victim();
            let victim_weight = u64::from(self.nodes[v as usize].weight);
            if self.weight() - victim_weight + weight_64 > capacity {
                // One victim is not enough: remove it, look for the next.
                let entry = self.remove_index(v);
                inserted.evicted.push(entry);
                continue;
            }
            // The last victim: its node takes the new entry.
            self.table.remove(&self.nodes, v);
            self.unlink(v);
            let node = &mut self.nodes[v as usize];
            let old_key = std::mem::replace(&mut node.key, key);
            let old_value = std::mem::replace(&mut node.value, value);
            node.hash = hash;
            node.weight = weight;
            // Relaxed: under the exclusive lock.
            node.freq.store(freq, Ordering::Relaxed);
            self.push_front(v, queue);
            self.table.insert(&self.nodes, v);
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
            queue,
            freq: AtomicU8::new(freq),
            weight,
        });
        self.push_front(i, queue);
        self.table.insert(&self.nodes, i);
        inserted
    }

    /// Removes the key, returning its entry (the ghost does not remember a
    /// removed key: only evictions teach it).
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let i = self.find(hash, key)?;
        Some(self.remove_index(i))
    }

    /// Sets the capacity, moving the entries over it (in eviction order)
    /// into `evicted`.
    pub(crate) fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<(K, V)>) {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        self.capacity = capacity;
        self.ghost.cap(capacity);
        self.evict_overflow(evicted);
    }

    /// Moves the entries over the capacity (by weight) into `evicted`.
    pub(crate) fn evict_overflow(&mut self, evicted: &mut Vec<(K, V)>) {
        while self.weight() > self.capacity as u64 {
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

    /// Empties the core, returning every entry (in no particular order);
    /// the ghost forgets everything too.
    pub(crate) fn take_all(&mut self) -> Vec<(K, V)> {
        self.table.clear();
        self.small = List::EMPTY;
        self.main = List::EMPTY;
        self.ghost.clear();
        std::mem::take(&mut self.nodes)
            .into_iter()
            .map(|node| (node.key, node.value))
            .collect()
    }

    /// The entries, main queue first, each queue from its newest entry to
    /// its oldest. Not a use.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        for list in [self.main, self.small] {
            let mut at = list.head;
            while at != NIL {
                let node = &self.nodes[at as usize];
                f(&node.key, &node.value);
                at = node.next;
            }
        }
    }

    /// The node to evict next, with every move S3-FIFO makes on the way:
    /// small's tail moves to main if it was used while in small (and is not
    /// the victim), else it is the victim and its hash goes to the ghost;
    /// main's tail is reinserted with one use less while it has uses, else
    /// it is the victim. Small is served first while it holds at least its
    /// share (or main is empty). Still linked when returned. The core must
    /// not be empty.
    fn victim(&mut self) -> u32 {
        debug_assert!(!self.nodes.is_empty());
        let small_share = small_target(self.capacity);
        loop {
            if self.small.len > 0 && (self.small.weight >= small_share as u64 || self.main.len == 0)
            {
                let t = self.small.tail;
                let node = &self.nodes[t as usize];
                // Relaxed, here and below: under the exclusive lock.
                if node.freq.load(Ordering::Relaxed) > 0 {
                    // Proved itself: to main, its uses spent on the move.
                    node.freq.store(0, Ordering::Relaxed);
                    self.unlink(t);
                    self.push_front(t, Queue::Main);
                    continue;
                }
                // The entries held, not counting the weight: the ghost
                // remembers keys (see `ghost.rs`).
                let entries = self.nodes.len().min(self.capacity);
                self.ghost.remember(node.hash, entries);
                return t;
            }
            let t = self.main.tail;
            debug_assert!(t != NIL, "larder: S3-FIFO found both queues empty");
            let freq = &self.nodes[t as usize].freq;
            let uses = freq.load(Ordering::Relaxed);
            if uses > 0 {
                freq.store(uses - 1, Ordering::Relaxed);
                self.unlink(t);
                self.push_front(t, Queue::Main);
                continue;
            }
            return t;
        }
    }

    fn list_mut(&mut self, queue: Queue) -> &mut List {
        match queue {
            Queue::Small => &mut self.small,
            Queue::Main => &mut self.main,
        }
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next, queue, weight) = {
            let node = &self.nodes[i as usize];
            (node.prev, node.next, node.queue, node.weight)
        };
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        let list = self.list_mut(queue);
        if prev == NIL {
            list.head = next;
        }
        if next == NIL {
            list.tail = prev;
        }
        list.len -= 1;
        list.weight -= u64::from(weight);
    }

    fn push_front(&mut self, i: u32, queue: Queue) {
        let old_head = self.list_mut(queue).head;
        let weight = {
            let node = &mut self.nodes[i as usize];
            node.prev = NIL;
            node.next = old_head;
            node.queue = queue;
            node.weight
        };
        if old_head != NIL {
            self.nodes[old_head as usize].prev = i;
        }
        let list = self.list_mut(queue);
        if old_head == NIL {
            list.tail = i;
        }
        list.head = i;
        list.len += 1;
        list.weight += u64::from(weight);
    }

    /// Unlinks and removes node `i`, moving the last node into its slot.
    fn remove_index(&mut self, i: u32) -> (K, V) {
        self.table.remove(&self.nodes, i);
        self.unlink(i);
        let last = (self.nodes.len() - 1) as u32;
        let node = self.nodes.swap_remove(i as usize);
        if i != last {
            // The node that was last now lives at `i`: repoint its
            // neighbours, its queue's ends and its table slot.
            let (prev, next, hash, queue) = {
                let moved = &self.nodes[i as usize];
                (moved.prev, moved.next, moved.hash, moved.queue)
            };
            if prev != NIL {
                self.nodes[prev as usize].next = i;
            }
            if next != NIL {
                self.nodes[next as usize].prev = i;
            }
            let list = self.list_mut(queue);
            if prev == NIL {
                list.head = i;
            }
            if next == NIL {
                list.tail = i;
            }
            self.table.moved(hash, last, i);
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
        self.ghost.check_invariants();
        assert!(
            self.weight() <= self.capacity as u64,
            "weight {} over capacity {}",
            self.weight(),
            self.capacity
        );
        let mut seen = vec![false; n];
        let mut total = 0;
        for (list, queue) in [(self.small, Queue::Small), (self.main, Queue::Main)] {
            let mut at = list.head;
            let mut prev = NIL;
            let mut count = 0;
            let mut weight = 0;
            while at != NIL {
                let node = &self.nodes[at as usize];
                assert!(node.weight >= 1, "node {at} weighs 0");
                weight += u64::from(node.weight);
                assert!(!seen[at as usize], "node {at} linked twice");
                seen[at as usize] = true;
                assert_eq!(node.queue, queue, "node {at} in the wrong queue");
                assert_eq!(node.prev, prev, "broken prev link at node {at}");
                assert!(
                    node.freq.load(Ordering::Relaxed) <= MAX_FREQ,
                    "counter over its maximum"
                );
                assert!(
                    self.table.locates(node.hash, at),
                    "node {at} not reachable from the table"
                );
                prev = at;
                at = node.next;
                count += 1;
            }
            assert_eq!(list.tail, prev, "{queue:?}: tail is not the last node");
            assert_eq!(list.len, count, "{queue:?}: length differs from its list");
            assert_eq!(
                list.weight, weight,
                "{queue:?}: weight differs from its list"
            );
            total += count;
        }
        assert_eq!(total, n, "queues hold {total} of {n} nodes");
    }
}

#[cfg(all(test, not(loom)))]
#[path = "s3fifo_tests.rs"]
mod tests;
