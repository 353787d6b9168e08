//! [`SecondChance`]: CLOCK (second chance), the classic one-bit approximation of
//! LRU.
//!
//! Entries sit in a ring (the shard's dense slots) swept by a hand. A hit
//! only sets the entry's reference bit, an atomic, so it needs only shared
//! access. To make room the hand moves from entry to entry: a referenced
//! entry loses its bit and is passed over (its second chance); the first
//! unreferenced entry is the victim, and the new entry takes its slot,
//! unreferenced. An entry hit since the hand last passed it is never
//! evicted before one that was not.

use super::policy::Policy;
use super::shard::{Node, Weights};
use crate::sync::{AtomicBool, Ordering};

/// CLOCK (see the module docs).
pub(crate) struct SecondChance {
    /// The next slot the hand looks at (may equal the entry count: wraps).
    hand: usize,
}

impl Policy for SecondChance {
    /// Set by a hit (under the shard's shared lock), cleared by the hand
    /// (under its exclusive lock).
    type Meta = AtomicBool;
    /// Whether the entry starts referenced (a replacement does).
    type Admit = bool;
    const SHARED_HITS: bool = true;

    fn new(_capacity: usize) -> Self {
        Self { hand: 0 }
    }

    #[inline]
    fn admit(&mut self, _hash: u64) -> bool {
        false
    }

    #[inline]
    fn readmit(&self, _meta: &AtomicBool) -> bool {
        true
    }

    #[inline]
    fn fresh(referenced: bool) -> AtomicBool {
        AtomicBool::new(referenced)
    }

    #[inline]
    fn hit<K, V>(&mut self, entries: &mut [Node<K, V, AtomicBool>], i: u32) {
        Self::hit_shared(&entries[i as usize].meta);
    }

    #[inline]
    fn hit_shared(referenced: &AtomicBool) {
        // Relaxed: the bit is a hint read by the hand under the exclusive
        // lock, whose acquisition synchronizes with this reader's unlock.
        // Stored only when clear, so a hot entry's cache line stays shared
        // between the cores that read it instead of bouncing.
        if !referenced.load(Ordering::Relaxed) {
            referenced.store(true, Ordering::Relaxed);
        }
    }

    #[inline]
    fn replaced<K, V>(&mut self, entries: &mut [Node<K, V, AtomicBool>], i: u32, _: u32, _: u32) {
        // Relaxed: under the exclusive lock.
        entries[i as usize].meta.store(true, Ordering::Relaxed);
    }

    #[inline]
    fn link<K, V>(&mut self, _: &mut [Node<K, V, AtomicBool>], _: u32, _: u32, _: bool) {}

    /// The new entry takes the victim's slot, and the hand moves past it.
    #[inline]
    fn recycle<K, V>(
        &mut self,
        entries: &mut [Node<K, V, AtomicBool>],
        v: u32,
        _old_weight: u32,
        _weight: u32,
        referenced: bool,
    ) {
        // Relaxed: under the exclusive lock.
        entries[v as usize]
            .meta
            .store(referenced, Ordering::Relaxed);
        self.hand = v as usize + 1;
    }

    #[inline]
    fn unlink<K, V>(&mut self, entries: &mut [Node<K, V, AtomicBool>], _i: u32, _weight: u32) {
        // The ring loses its last slot: a hand past it wraps.
        if self.hand + 1 >= entries.len() {
            self.hand = 0;
        }
    }

    /// The hand moves past `i`: it reaches the entry last.
    fn spare(&mut self, i: u32) {
        if self.hand == i as usize {
            self.hand += 1;
        }
    }

    #[inline]
    fn moved<K, V>(&mut self, _: &mut [Node<K, V, AtomicBool>], _from: u32, _to: u32) {}

    /// Clears the bits of referenced entries on the hand's way and stops at
    /// the first unreferenced one (within one lap, since a lap clears every
    /// bit).
    #[inline]
    fn victim<K, V>(&mut self, entries: &mut [Node<K, V, AtomicBool>], _: &Weights) -> u32 {
        debug_assert!(!entries.is_empty());
        loop {
            if self.hand >= entries.len() {
                self.hand = 0;
            }
            let referenced = &entries[self.hand].meta;
            // Relaxed: under the exclusive lock.
            if !referenced.load(Ordering::Relaxed) {
                return self.hand as u32;
            }
            referenced.store(false, Ordering::Relaxed);
            self.hand += 1;
        }
    }

    fn clear(&mut self) {
        self.hand = 0;
    }

    /// The reverse of the order the hand would evict them if nothing else
    /// happened: referenced entries first, each group from the last the
    /// hand reaches to the first.
    fn for_each<K, V>(&self, entries: &[Node<K, V, AtomicBool>], mut f: impl FnMut(&K, &V)) {
        let n = entries.len();
        let order = |k: usize| (self.hand + n - 1 - k) % n.max(1);
        for referenced in [true, false] {
            for k in 0..n {
                let entry = &entries[order(k)];
                // Relaxed: read under the shard lock; the bit is a hint.
                if entry.meta.load(Ordering::Relaxed) == referenced {
                    f(&entry.key, &entry.value);
                }
            }
        }
    }

    #[cfg(any(test, feature = "testing"))]
    fn check<K, V>(&self, entries: &[Node<K, V, AtomicBool>], _: &Weights) {
        let n = entries.len();
        assert!(self.hand <= n, "hand {} beyond {n} entries", self.hand);
    }
}
