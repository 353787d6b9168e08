//! [`Policy`]: what an eviction policy decides for a [`Shard`](super::Shard),
//! and nothing else.
//!
//! The shard owns the entries, the node-id table and the weights; a policy
//! keeps its order (a list, a hand, queues) in each entry's
//! [`Meta`](Policy::Meta) and in its own fields, and is told of every
//! change: an entry linked, unlinked, hit, replaced in place, or moved to
//! another slot by a swap-remove. When the shard must make room it asks
//! the policy for a victim, which stays linked until the shard unlinks it.
//!
//! A policy never sees keys or values (it runs no user code) and never
//! allocates per operation.

use super::shard::{Node, Weights};

/// An eviction policy (exact LRU, CLOCK, S3-FIFO), driven by the shard.
pub(crate) trait Policy: Sized {
    /// What the policy keeps in each entry.
    type Meta;
    /// How a new entry starts: decided before the shard makes room for it.
    type Admit: Copy;
    /// Whether a hit needs only shared access (it writes an atomic in the
    /// entry's [`Meta`](Policy::Meta) and nothing else).
    const SHARED_HITS: bool;

    /// The policy of an empty shard holding at most `capacity` weight.
    fn new(capacity: usize) -> Self;

    /// The shard's capacity changed (before it evicts what no longer fits).
    fn resized(&mut self, _capacity: usize) {}

    /// How an absent key of hash `hash` is admitted.
    fn admit(&mut self, hash: u64) -> Self::Admit;

    /// How a present entry that must be stored anew (a heavier value that
    /// needs others to make room) is admitted again; read before it leaves.
    fn readmit(&self, meta: &Self::Meta) -> Self::Admit;

    /// The [`Meta`](Policy::Meta) an appended entry is built with.
    fn fresh(admit: Self::Admit) -> Self::Meta;

    /// Node `i` was hit, under exclusive access.
    fn hit<K, V>(&mut self, entries: &mut [Node<K, V, Self::Meta>], i: u32);

    /// An entry was hit under shared access (only when
    /// [`SHARED_HITS`](Policy::SHARED_HITS)).
    fn hit_shared(meta: &Self::Meta);

    /// Node `i`'s value was replaced in place; its weight went from
    /// `old_weight` to `weight`.
    fn replaced<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Self::Meta>],
        i: u32,
        old_weight: u32,
        weight: u32,
    );

    /// Node `i` (just appended, its meta from [`fresh`](Policy::fresh)),
    /// of `weight`, enters the policy's order.
    fn link<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Self::Meta>],
        i: u32,
        weight: u32,
        admit: Self::Admit,
    );

    /// The victim at slot `v` (of `old_weight`) left, and a new entry of
    /// `weight` took its slot: its key, value and hash are in place.
    fn recycle<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Self::Meta>],
        v: u32,
        old_weight: u32,
        weight: u32,
        admit: Self::Admit,
    );

    /// Node `i`, of `weight`, leaves the policy's order (removed, or
    /// evicted); `entries` still holds it.
    fn unlink<K, V>(&mut self, entries: &mut [Node<K, V, Self::Meta>], i: u32, weight: u32);

    /// The last entry, at `from`, now lives at `to` (a swap-remove).
    fn moved<K, V>(&mut self, entries: &mut [Node<K, V, Self::Meta>], from: u32, to: u32);

    /// The entry to evict next, with whatever the policy does on the way
    /// (clearing bits, moving entries between queues); still linked. The
    /// shard is not empty.
    fn victim<K, V>(&mut self, entries: &mut [Node<K, V, Self::Meta>], weights: &Weights) -> u32;

    /// The entry to evict next other than the one at slot `kept` (the
    /// entry a cache just stored, which it never evicts for itself, named
    /// by its slot: entries whose keys' hashes collide are other entries),
    /// or `None` if no other entry is left. The shard is not empty.
    ///
    /// The default passes over the kept entry as over a used one (a hit,
    /// then the policy picks again): a hit moves an entry away from the
    /// next pick (CLOCK: the hand clears its bit and moves on; exact LRU:
    /// it goes to the front), so the second pick is another entry. A
    /// policy where a hit changes where an entry lives overrides it
    /// (S3-FIFO: a new key used once would leave probation).
    fn victim_sparing<K, V>(
        &mut self,
        entries: &mut [Node<K, V, Self::Meta>],
        weights: &Weights,
        kept: Option<u32>,
    ) -> Option<u32> {
        // Two picks suffice (see above); more only guard a policy whose
        // hit leaves the entry where it was against looping forever.
        for _ in 0..8 {
            let v = self.victim(entries, weights);
            if Some(v) != kept {
                return Some(v);
            }
            if entries.len() == 1 {
                return None;
            }
            self.hit(entries, v);
        }
        None
    }

    /// Node `i` must not be the next victim (the entry a cache just
    /// stored, moved into a victim's slot): a policy whose next pick is a
    /// slot moves past it.
    fn spare(&mut self, _i: u32) {}

    /// Every entry is gone.
    fn clear(&mut self);

    /// Calls `f` with each entry, in the policy's order of recency (most
    /// recent, or least likely to be evicted, first).
    fn for_each<K, V>(&self, entries: &[Node<K, V, Self::Meta>], f: impl FnMut(&K, &V));

    /// Checks the policy's own invariants; panics with a description.
    #[cfg(any(test, feature = "testing"))]
    fn check<K, V>(&self, entries: &[Node<K, V, Self::Meta>], weights: &Weights);
}
