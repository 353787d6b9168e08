//! [`S3Fifo`]: S3-FIFO (Yang et al., "FIFO queues are all you need for
//! cache eviction", SOSP 2023), a scan-resistant policy whose hits write no
//! list.
//!
//! Three FIFO queues:
//!
//! - **small** (1/48 of the capacity, a share of the total weight when a
//!   weigher is set) takes every new key. Most keys are used once and
//!   leave from here without ever touching the rest of the cache: a scan
//!   or a burst of one-hit wonders cannot flush the hot set.
//! - **main** (the rest) holds keys that proved themselves: a key used
//!   again while in small moves to main when it reaches small's tail.
//!   Main's tail is evicted unless it was used since it last got there;
//!   then it is reinserted at the head with one use less (CLOCK with a
//!   2-bit counter).
//! - **ghost** remembers 32-bit fingerprints of the hashes (not keys or
//!   values) of recently evicted small-queue keys, about two thirds as
//!   many as the shard holds entries, in a set-associative table of ring
//!   buckets (`ghost.rs`: one cache line read to test a key; one place and
//!   the bucket's cursor written to remember one). A key that comes back
//!   while its hash is remembered goes straight to main.
//!
//! A hit only bumps the entry's use counter (0 to 3), an atomic stored only
//! while below 3, so a lookup needs only shared access and a hot entry's
//! cache line stops being written once its counter saturates.

use super::ghost::Ghost;
use super::list::{Linked, Links, List};
use super::policy::Policy;
use super::shard::{Node, Weights};
use crate::sync::{AtomicU8, Ordering};

/// A use counter saturates here (two bits' worth, as in the paper).
const MAX_FREQ: u8 = 3;

/// Which queue an entry is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FifoQueue {
    Small,
    Main,
}

/// An entry's place in its queue and its uses.
pub(crate) struct Meta {
    links: Links,
    queue: FifoQueue,
    /// Uses since the entry entered its queue or was last passed over:
    /// bumped by a hit (under the shard's shared lock), read and lowered by
    /// eviction (under its exclusive lock).
    freq: AtomicU8,
}

impl Linked for Meta {
    #[inline]
    fn links(&self) -> &Links {
        &self.links
    }
    #[inline]
    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

/// The small queue's share of a capacity: 1/48, at least one entry (so a
/// capacity of 1 is all small queue, and main's share is empty). The
/// paper's tenth hit less on the Zipf traces here; a small probation
/// queue keeps more room for the keys that proved themselves, and the
/// ghost still catches the keys that return after leaving it.
///
/// Chosen with [`ghost_target`](super::ghost::ghost_target) on a grid
/// (small 1/16 to 1/64, ghost 0.35 to 1.5 capacities) over Zipf 0.9, Zipf
/// 1.1 and a scan-polluted Zipf 0.9 trace at 1% and 10% of 1M keys, three
/// seeds, sharded and not: 1/48 with a ghost of two thirds of the capacity
/// was ahead of quick_cache 0.7 on every cell, where the earlier 1/32 with
/// a ghost as large as main fell behind on some (`design/lru.md`, "How
/// S3-FIFO works here", has the figures).
fn small_target(capacity: usize) -> u64 {
    (capacity / 48).max(1) as u64
}

/// S3-FIFO (see the module docs).
pub(crate) struct S3Fifo {
    small: List,
    /// The sum of small's entries' weights (its length when unweighted).
    small_weight: u64,
    main: List,
    pub(crate) ghost: Ghost,
    capacity: usize,
    /// `small_target(capacity)`.
    small_share: u64,
}

impl S3Fifo {
    #[inline]
    fn list(&self, queue: FifoQueue) -> List {
        match queue {
            FifoQueue::Small => self.small,
            FifoQueue::Main => self.main,
        }
    }

    #[inline]
    fn push_front<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Meta>],
        i: u32,
        weight: u32,
        queue: FifoQueue,
    ) {
        entries[i as usize].meta.queue = queue;
        match queue {
            FifoQueue::Small => {
                self.small.push_front(entries, i);
                self.small_weight += u64::from(weight);
            }
            FifoQueue::Main => self.main.push_front(entries, i),
        }
    }
}

impl S3Fifo {
    /// Every move S3-FIFO makes on the way to a victim: small's tail moves
    /// to main if it was used while in small (and is not the victim), else
    /// it is the victim and its hash goes to the ghost; main's tail is
    /// reinserted with one use less while it has uses, else it is the
    /// victim. Small is served first while it holds at least its share (or
    /// main has no candidate).
    ///
    /// The entry at slot `kept` is never the victim, and passing over
    /// it changes nothing but its place: from its queue's tail it goes to
    /// the head, uses and queue unchanged, and a queue that holds nothing
    /// else is not served. `None` when no other entry is left.
    #[inline(always)]
    fn pick<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Meta>],
        weights: &Weights,
        keep: Option<u32>,
    ) -> Option<u32> {
        let kept = |i: u32| keep == Some(i);
        // A queue holding an entry other than the kept one.
        let serves = |list: List| !list.is_empty() && (list.head != list.tail || !kept(list.tail));
        loop {
            let small = serves(self.small);
            let main = serves(self.main);
            if small && (self.small_weight >= self.small_share || !main) {
                let t = self.small.tail;
                if kept(t) {
                    self.small.tail_to_head(entries);
                    continue;
                }
                let entry = &entries[t as usize];
                // Relaxed, here and below: under the exclusive lock.
                if entry.meta.freq.load(Ordering::Relaxed) > 0 {
                    // Proved itself: to main, its uses spent on the move.
                    entry.meta.freq.store(0, Ordering::Relaxed);
                    let weight = weights.get(t);
                    self.small.unlink(entries, t);
                    self.small_weight -= u64::from(weight);
                    self.push_front(entries, t, weight, FifoQueue::Main);
                    continue;
                }
                // The entries held, not counting the weight: the ghost
                // remembers keys (see `ghost.rs`).
                let held = entries.len().min(self.capacity);
                self.ghost.remember(entry.hash, held);
                return Some(t);
            }
            if !main {
                return None;
            }
            let t = self.main.tail;
            if kept(t) {
                self.main.tail_to_head(entries);
                continue;
            }
            let freq = &entries[t as usize].meta.freq;
            let uses = freq.load(Ordering::Relaxed);
            if uses > 0 {
                freq.store(uses - 1, Ordering::Relaxed);
                self.main.tail_to_head(entries);
                continue;
            }
            return Some(t);
        }
    }
}

#[cfg(test)]
impl S3Fifo {
    /// Entries in the small queue.
    pub(crate) fn small_len<K, V>(&self, entries: &[Node<K, V, Meta>]) -> usize {
        self.small.iter(entries).count()
    }
}

impl Policy for S3Fifo {
    type Meta = Meta;
    /// The queue a new entry enters and its uses.
    type Admit = (FifoQueue, u8);
    const SHARED_HITS: bool = true;

    fn new(capacity: usize) -> Self {
        Self {
            small: List::EMPTY,
            small_weight: 0,
            main: List::EMPTY,
            ghost: Ghost::new(),
            capacity,
            small_share: small_target(capacity),
        }
    }

    fn resized(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.small_share = small_target(capacity);
        self.ghost.cap(capacity);
    }

    /// A new key goes to main if the ghost remembers it, else to small.
    #[inline(always)]
    fn admit(&mut self, hash: u64) -> (FifoQueue, u8) {
        if self.ghost.take(hash) {
            (FifoQueue::Main, 0)
        } else {
            (FifoQueue::Small, 0)
        }
    }

    /// Back into its queue, its use counted (the ghost does not learn it).
    #[inline]
    fn readmit(&self, meta: &Meta) -> (FifoQueue, u8) {
        // Relaxed: under the exclusive lock.
        let freq = (meta.freq.load(Ordering::Relaxed) + 1).min(MAX_FREQ);
        (meta.queue, freq)
    }

    #[inline]
    fn fresh((queue, freq): (FifoQueue, u8)) -> Meta {
        Meta {
            links: Links::NONE,
            queue,
            freq: AtomicU8::new(freq),
        }
    }

    #[inline]
    fn hit<K, V>(&mut self, entries: &mut [Node<K, V, Meta>], i: u32) {
        Self::hit_shared(&entries[i as usize].meta);
    }

    #[inline]
    fn hit_shared(meta: &Meta) {
        // Relaxed: the counter is a hint read by eviction under the
        // exclusive lock, whose acquisition synchronizes with this reader's
        // unlock. Two racing hits may count once; a lost use only makes
        // eviction slightly less informed. Stored only below the maximum,
        // so a hot entry's line stays shared between the reading cores.
        let freq = meta.freq.load(Ordering::Relaxed);
        if freq < MAX_FREQ {
            meta.freq.store(freq + 1, Ordering::Relaxed);
        }
    }

    #[inline]
    fn replaced<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Meta>],
        i: u32,
        old_weight: u32,
        weight: u32,
    ) {
        let (queue, freq) = self.readmit(&entries[i as usize].meta);
        // Relaxed: under the exclusive lock.
        entries[i as usize].meta.freq.store(freq, Ordering::Relaxed);
        if queue == FifoQueue::Small {
            self.small_weight = self.small_weight - u64::from(old_weight) + u64::from(weight);
        }
    }

    #[inline]
    fn link<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Meta>],
        i: u32,
        weight: u32,
        (queue, _): (FifoQueue, u8),
    ) {
        self.push_front(entries, i, weight, queue);
    }

    #[inline(always)]
    fn recycle<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Meta>],
        v: u32,
        old_weight: u32,
        weight: u32,
        (queue, freq): (FifoQueue, u8),
    ) {
        let meta = &entries[v as usize].meta;
        // Relaxed: under the exclusive lock.
        meta.freq.store(freq, Ordering::Relaxed);
        if meta.queue == queue && self.list(queue).tail == v {
            // The common case: small's tail leaves, a new key enters small.
            if queue == FifoQueue::Small {
                self.small_weight = self.small_weight - u64::from(old_weight) + u64::from(weight);
                self.small.tail_to_head(entries);
            } else {
                self.main.tail_to_head(entries);
            }
            return;
        }
        self.unlink(entries, v, old_weight);
        self.push_front(entries, v, weight, queue);
    }

    #[inline(always)]
    fn unlink<K, V>(&mut self, entries: &mut [Node<K, V, Meta>], i: u32, weight: u32) {
        match entries[i as usize].meta.queue {
            FifoQueue::Small => {
                self.small.unlink(entries, i);
                self.small_weight -= u64::from(weight);
            }
            FifoQueue::Main => self.main.unlink(entries, i),
        }
    }

    #[inline(always)]
    fn moved<K, V>(&mut self, entries: &mut [Node<K, V, Meta>], _from: u32, to: u32) {
        match entries[to as usize].meta.queue {
            FifoQueue::Small => self.small.moved(entries, to),
            FifoQueue::Main => self.main.moved(entries, to),
        }
    }

    /// The next victim, after every move S3-FIFO makes on the way (see
    /// `pick`).
    #[inline(always)]
    fn victim<K, V>(&mut self, entries: &mut [Node<K, V, Meta>], weights: &Weights) -> u32 {
        debug_assert!(!entries.is_empty());
        match self.pick(entries, weights, None) {
            Some(v) => v,
            None => unreachable!("larder: S3-FIFO found both queues empty"),
        }
    }

    /// [`victim`](Policy::victim) passing over the kept entry without a
    /// use: a new key stays on probation in small (the default's hit would
    /// send it to main at its first pass).
    fn victim_sparing<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Meta>],
        weights: &Weights,
        kept: Option<u32>,
    ) -> Option<u32> {
        self.pick(entries, weights, kept)
    }

    /// Forgets the queues and everything the ghost remembers.
    fn clear(&mut self) {
        self.small = List::EMPTY;
        self.small_weight = 0;
        self.main = List::EMPTY;
        self.ghost.clear();
    }

    /// Main queue first, each queue from its newest entry to its oldest.
    fn for_each<K, V>(&self, entries: &[Node<K, V, Meta>], mut f: impl FnMut(&K, &V)) {
        for list in [self.main, self.small] {
            for i in list.iter(entries) {
                let entry = &entries[i as usize];
                f(&entry.key, &entry.value);
            }
        }
    }

    #[cfg(any(test, feature = "testing"))]
    fn check<K, V>(&self, entries: &[Node<K, V, Meta>], weights: &Weights) {
        self.ghost.check_invariants();
        let mut seen = vec![false; entries.len()];
        let mut total = 0;
        for (list, queue) in [(self.small, FifoQueue::Small), (self.main, FifoQueue::Main)] {
            let order = list.check(entries, &mut seen, &format!("{queue:?}"));
            let mut weight = 0;
            for &i in &order {
                let meta = &entries[i as usize].meta;
                assert_eq!(meta.queue, queue, "entry {i} in the wrong queue");
                assert!(
                    meta.freq.load(Ordering::Relaxed) <= MAX_FREQ,
                    "counter over its maximum"
                );
                weight += u64::from(weights.get(i));
            }
            if queue == FifoQueue::Small {
                assert_eq!(
                    self.small_weight, weight,
                    "small: weight differs from its list"
                );
            }
            total += order.len();
        }
        assert_eq!(
            total,
            entries.len(),
            "queues hold {total} of {} entries",
            entries.len()
        );
    }
}
