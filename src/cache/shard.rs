//! [`Shard`]: one shard of a cache, sequential (`&mut self` for writes, no
//! locks), under any [`Policy`].
//!
//! # Layout
//!
//! Entries live in one dense `Vec` of [`Node`]s, each with its key's full
//! hash and its policy's [`Meta`](Policy::Meta); a [`NodeIndex`] maps a hash
//! to the entry's slot. So:
//!
//! - the table never calls the user's `Hash` (growth and removal rehash
//!   from the stored hash), and a lookup calls the user's `Eq` only on a
//!   full 64-bit hash match;
//! - every user call (`Eq` in [`Shard::find`]) happens *before* the first
//!   mutation of an operation, so a panicking `Eq` leaves the shard exactly
//!   as it was;
//! - nothing the shard removes is dropped here: evicted, replaced and
//!   removed keys and values are handed back to the caller, who drops them
//!   (or gives them to the listener) after releasing the shard's lock.
//!
//! Removal keeps the `Vec` dense by moving the last entry into the hole
//! (the policy is told, [`Policy::moved`]); a full shard recycles its
//! victim's slot for the new entry, so the steady state of a full cache
//! allocates nothing.
//!
//! # Weights
//!
//! The bound is a total weight: every entry weighs at least 1 (exactly 1
//! without a weigher), and an insert evicts the policy's victims until the
//! new entry fits, recycling the last victim's slot. The weights live in
//! [`Weights`] beside the entries, started on the first weight other than
//! 1, so an unweighted shard's entries keep their size.

use std::borrow::Borrow;

use super::displaced::Displaced;
use super::expiry::{Expiry, Lookup, Times};
use super::policy::Policy;
pub(crate) use super::weights::Weights;
use crate::node_index::{Keyed, NodeIndex};

/// The largest capacity of one shard: slots are `u32` and `u32::MAX` is
/// reserved.
pub(crate) const MAX_SHARD_CAPACITY: usize = (u32::MAX - 1) as usize;

/// One entry: the key, its value, its key's full hash and its policy's meta.
pub(crate) struct Node<K, V, M> {
    pub(crate) key: K,
    pub(crate) value: V,
    pub(crate) hash: u64,
    pub(crate) meta: M,
}

impl<K, V, M> Keyed for Node<K, V, M> {
    type Key = K;
    #[inline]
    fn hash(&self) -> u64 {
        self.hash
    }
    #[inline]
    fn key(&self) -> &K {
        &self.key
    }
}

/// Hands a victim to `inserted`: after the expired ones if it had expired
/// too (and counted with them), else last.
#[inline]
fn push_victim<K, V>(inserted: &mut Displaced<K, V>, entry: (K, V), expired: bool) {
    if expired {
        inserted.evicted.insert(inserted.expired, entry);
        inserted.expired += 1;
    } else {
        inserted.evicted.push(entry);
    }
}

/// A map whose entries weigh at most `capacity` in all, evicting by `P`;
/// its entries can expire only if `E` (a shard without expiry compiles to
/// code that never looks at times or the clock).
pub(crate) struct Shard<K, V, P: Policy, const E: bool = false> {
    table: NodeIndex,
    entries: Vec<Node<K, V, P::Meta>>,
    weights: Weights,
    /// The entries' creation and access times, only if they can expire.
    times: Times,
    /// The sum of the entries' weights.
    weight: u64,
    capacity: usize,
    /// The entries the slab grows to before it doubles past them (see
    /// [`grow`](Self::grow)): the capacity, or the share a wrapper sized
    /// the shard for ([`size_for`](Self::size_for)).
    expected: usize,
    pub(crate) policy: P,
}

/// The room a shard sized for `expected` entries gets past them before
/// its slab doubles: 1/64 of them, or four standard deviations of a
/// shard's count under an even hash (four square roots of it) where that
/// is more, so a cache filling up (its shards uneven until the bound
/// evens them) does not double its shards' slabs either.
fn past_share(expected: usize) -> usize {
    (expected / 64).max(4 * expected.isqrt()).max(4)
}

impl<K, V, P: Policy, const E: bool> Shard<K, V, P, E> {
    /// An empty shard holding at most `capacity` (>= 1) weight, whose
    /// entries never expire.
    #[cfg(test)]
    pub(crate) fn new(capacity: usize) -> Self {
        Self::with_expiry(capacity, None)
    }

    /// An empty shard holding at most `capacity` (>= 1) weight, whose
    /// entries expire as `expiry` says: `Some` exactly when `E`.
    pub(crate) fn with_expiry(capacity: usize, expiry: Option<Expiry>) -> Self {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        debug_assert_eq!(expiry.is_some(), E, "larder: expiry and shard type differ");
        Self {
            table: NodeIndex::new(),
            entries: Vec::new(),
            weights: Weights::default(),
            times: Times::new(expiry),
            weight: 0,
            capacity,
            expected: capacity,
            policy: P::new(capacity),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The sum of the entries' weights.
    #[inline]
    pub(crate) fn weight(&self) -> u64 {
        self.weight
    }

    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots the slab, the weights and the times have room for (tests of
    /// memory).
    #[cfg(test)]
    pub(crate) fn room(&self) -> (usize, usize, usize) {
        let weights = self.weights.capacity();
        (self.entries.capacity(), weights, self.times.room())
    }

    /// Bytes the slot table has allocated (tests of memory).
    #[cfg(test)]
    pub(crate) fn table_bytes(&self) -> usize {
        self.table.allocated()
    }

    /// The entries, in slot order.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[Node<K, V, P::Meta>] {
        &self.entries
    }

    /// The slot of the key, calling `K: Eq` only on a full hash match.
    #[inline]
    fn find<Q>(&self, hash: u64, key: &Q) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.table.find(&self.entries, hash, key)
    }

    /// The slot of the key if its entry is live at `now`.
    #[inline]
    fn find_live<Q>(&self, hash: u64, key: &Q, now: u64) -> Lookup<u32>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        match self.find(hash, key) {
            None => Lookup::Missing,
            Some(i) if E && self.times.expired(i, now) => Lookup::Expired,
            Some(i) => Lookup::Live(i),
        }
    }

    /// Whether the key is present and live at `now` (not a use).
    pub(crate) fn contains<Q>(&self, hash: u64, key: &Q, now: u64) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.peek(hash, key, now).is_some()
    }

    /// The value of the key, counted as a use at `now`, under exclusive
    /// access. An expired entry stays (see [`remove_expired`](Self::remove_expired)).
    #[inline]
    pub(crate) fn get<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Lookup<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let Some(i) = self.find(hash, key) else {
            return Lookup::Missing;
        };
        if E && !self.times.use_if_live(i, now) {
            return Lookup::Expired;
        }
        self.policy.hit(&mut self.entries, i);
        Lookup::Live(&self.entries[i as usize].value)
    }

    /// The value of the key, counted as a use at `now`, under shared
    /// access: only for a policy whose hits write an atomic
    /// ([`Policy::SHARED_HITS`]), or with `hit` false (a use for expiry
    /// only: the policy is not told).
    #[inline]
    pub(crate) fn get_shared<Q>(&self, hash: u64, key: &Q, now: u64, hit: bool) -> Lookup<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        debug_assert!(
            P::SHARED_HITS || !hit,
            "larder: a shared-access hit on an exact LRU shard"
        );
        let Some(i) = self.find(hash, key) else {
            return Lookup::Missing;
        };
        if E && !self.times.use_if_live(i, now) {
            return Lookup::Expired;
        }
        let entry = &self.entries[i as usize];
        if hit {
            P::hit_shared(&entry.meta);
        }
        Lookup::Live(&entry.value)
    }

    /// The value of the key if live at `now`, not counted as a use.
    pub(crate) fn peek<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        self.find_live(hash, key, now)
            .live()
            .map(|i| &self.entries[i as usize].value)
    }

    /// Inserts or replaces the key's value (of `weight`, at least 1; a
    /// replacement counts as a use, and its times start again at `now`);
    /// evicts the policy's victims until it fits. A value heavier than the
    /// capacity is not stored: it comes back in `evicted`, and the key's old
    /// entry, if any, is removed. With expiry, first releases up to
    /// `sweep` expired entries (the first `expired` of `evicted`).
    #[cfg(test)]
    pub(crate) fn insert(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        now: u64,
        sweep: usize,
    ) -> Displaced<K, V>
    where
        K: Eq,
    {
        let mut inserted = Displaced::nothing();
        self.insert_into(hash, key, value, weight, now, sweep, &mut inserted);
        inserted
    }

    /// [`insert`](Self::insert) into `inserted` (which holds nothing yet):
    /// the caller's own, so what the insert displaced is not copied up
    /// through the calls.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_into(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        now: u64,
        sweep: usize,
        inserted: &mut Displaced<K, V>,
    ) where
        K: Eq,
    {
        debug_assert!(weight >= 1);
        // The only user code (`K: Eq`) runs here, before any mutation.
        if let Some(i) = self.find(hash, &key) {
            let old_weight = self.weights.get(i);
            let weight_after = self.weight - u64::from(old_weight) + u64::from(weight);
            let replaced_expired = E && self.times.expired(i, now);
            if weight_after <= self.capacity as u64 {
                let old = std::mem::replace(&mut self.entries[i as usize].value, value);
                self.weights.set(i, weight, self.entries.len());
                if E {
                    self.times.reset(i, now);
                }
                self.weight = weight_after;
                self.policy
                    .replaced(&mut self.entries, i, old_weight, weight);
                inserted.replaced = Some(old);
                inserted.replaced_expired = replaced_expired;
                inserted.unused_key = Some(key);
                self.sweep_into(now, sweep, inserted);
                return;
            }
            // Heavier, and the others must make room (or it cannot fit at
            // all): take the old entry out (so it cannot be the victim),
            // then insert anew under the stored key, admitted as the policy
            // says a used entry is.
            let admit = self.policy.readmit(&self.entries[i as usize].meta);
            let (stored_key, old) = self.remove_index(i);
            self.sweep_into(now, sweep, inserted);
            self.insert_new(hash, stored_key, value, weight, admit, now, inserted);
            inserted.replaced = Some(old);
            inserted.replaced_expired = replaced_expired;
            inserted.unused_key = Some(key);
            return;
        }
        let admit = self.policy.admit(hash);
        self.sweep_into(now, sweep, inserted);
        self.insert_new(hash, key, value, weight, admit, now, inserted);
    }

    /// The sweep of an insert: expired entries into `inserted.evicted`.
    #[inline]
    fn sweep_into(&mut self, now: u64, budget: usize, inserted: &mut Displaced<K, V>) {
        if E && budget > 0 {
            self.sweep_cold(now, budget, inserted);
        }
    }

    #[cold]
    #[inline(never)]
    fn sweep_cold(&mut self, now: u64, budget: usize, inserted: &mut Displaced<K, V>) {
        self.sweep(now, budget, |entry| {
            inserted.evicted.push(entry);
            inserted.expired += 1;
        });
    }

    /// Releases expired entries, looking at no more than `budget` slots
    /// from where the last sweep stopped; hands each to `out`. Runs no user
    /// code. A removal moves the last entry into the cursor's slot, where
    /// it looks next.
    pub(crate) fn sweep(&mut self, now: u64, budget: usize, out: impl FnMut((K, V))) {
        self.sweep_following(now, budget, out, &mut None);
    }

    /// [`sweep`](Self::sweep), following the entry at slot `kept` (which
    /// has not expired) to wherever a removal moves it.
    fn sweep_following(
        &mut self,
        now: u64,
        budget: usize,
        mut out: impl FnMut((K, V)),
        kept: &mut Option<u32>,
    ) {
        if !E {
            return;
        }
        // No more looks than entries: one sweep looks at each at most once.
        for _ in 0..budget.min(self.entries.len()) {
            if self.entries.is_empty() {
                return;
            }
            let i = self.times.sweep_cursor(self.entries.len());
            if self.times.expired(i, now) {
                debug_assert_ne!(Some(i), *kept, "the kept entry had expired");
                out(self.remove_following(i, kept));
            } else {
                self.times.sweep_past();
            }
        }
    }

    /// Removes every entry expired at `now`, handing each to `out`, and
    /// gives back the memory they held. Runs no user code.
    pub(crate) fn purge(&mut self, now: u64, mut out: impl FnMut((K, V))) {
        if !E {
            return;
        }
        let mut i = 0;
        while i < self.entries.len() as u32 {
            if self.times.expired(i, now) {
                // The last entry moves into `i`: look at it next.
                out(self.remove_index(i));
            } else {
                i += 1;
            }
        }
        self.shrink(self.entries.len());
    }

    /// Removes the key only if its entry has expired at `now`.
    pub(crate) fn remove_expired<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        match self.find_live(hash, key, now) {
            Lookup::Expired => self.find(hash, key).map(|i| self.remove_index(i)),
            _ => None,
        }
    }

    /// Inserts an absent key, evicting the policy's victims (into
    /// `inserted`) until it fits.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn insert_new(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        admit: P::Admit,
        now: u64,
        inserted: &mut Displaced<K, V>,
    ) {
        let (capacity, weight_64) = (self.capacity as u64, u64::from(weight));
        if weight_64 > capacity {
            inserted.evicted.push((key, value));
            return;
        }
        while self.weight + weight_64 > capacity {
            let v = self.policy.victim(&mut self.entries, &self.weights);
            let victim_weight = self.weights.get(v);
            // A victim that had expired is released as such.
            let victim_expired = E && self.times.expired(v, now);
            if self.weight - u64::from(victim_weight) + weight_64 > capacity {
                // One victim is not enough: remove it, look for the next.
                let entry = self.remove_index(v);
                push_victim(inserted, entry, victim_expired);
                continue;
            }
            // The last victim: its slot takes the new entry.
            self.table.remove(&self.entries, v);
            let entry = &mut self.entries[v as usize];
            let old_key = std::mem::replace(&mut entry.key, key);
            let old_value = std::mem::replace(&mut entry.value, value);
            entry.hash = hash;
            self.weights.set(v, weight, self.entries.len());
            if E {
                self.times.reset(v, now);
            }
            self.weight = self.weight - u64::from(victim_weight) + weight_64;
            self.policy
                .recycle(&mut self.entries, v, victim_weight, weight, admit);
            self.table.insert(&self.entries, v);
            push_victim(inserted, (old_key, old_value), victim_expired);
            return;
        }
        self.append(hash, key, value, weight, admit, now);
    }

    /// Appends a new entry, which fits.
    #[inline(always)]
    fn append(&mut self, hash: u64, key: K, value: V, weight: u32, admit: P::Admit, now: u64) {
        let i = self.entries.len() as u32;
        if self.entries.len() == self.entries.capacity() {
            self.grow();
        }
        self.entries.push(Node {
            key,
            value,
            hash,
            meta: P::fresh(admit),
        });
        self.weights.push(weight, self.entries.len());
        if E {
            self.times.push(now);
        }
        self.weight += u64::from(weight);
        self.policy.link(&mut self.entries, i, weight, admit);
        self.table.insert(&self.entries, i);
    }

    /// Room for one more entry, made when the slab is full. The slab
    /// doubles, as a `Vec` does, but stops at the entries the shard is
    /// [`expected`](Self::size_for) to hold, then at [`past_share`] more,
    /// before it doubles past them, and never grows past the capacity (each
    /// entry weighs at least 1): a full shard's slab is its size, not up to
    /// twice it. A shard of a global bound (`TypedCache`) can hold more
    /// than its share while the cache fills, and holds one more for a
    /// moment before the bound evicts from it: the step keeps both from
    /// doubling every shard's slab. The side tables (weights, times) get
    /// the same room.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let len = self.entries.len();
        let doubled = len.saturating_mul(2).max(4);
        let past = self.expected.saturating_add(past_share(self.expected));
        let limit = if len < self.expected {
            self.expected
        } else if len < past {
            past.min(self.capacity)
        } else {
            self.capacity
        };
        // Zero only past the limit (a shard over its bound, which only a
        // loom negative control makes): then the push doubles as usual.
        let more = doubled.min(limit).saturating_sub(len);
        self.entries.reserve_exact(more);
        self.weights.reserve_exact(more);
        if E {
            self.times.reserve_exact(more);
        }
    }

    /// Sizes the slab's growth and the policy's own structures (S3-FIFO's
    /// queues and ghost) for `entries`, leaving the bound as it is: a
    /// wrapper that keeps the bound itself (`TypedCache`'s shards) says
    /// what share of it this shard holds.
    pub(crate) fn size_for(&mut self, entries: usize) {
        self.expected = entries.clamp(1, self.capacity);
        self.policy.resized(entries);
    }

    /// Inserts or replaces the key's value (of `weight`, at least 1) in a
    /// shard whose bound its caller keeps (nothing is evicted here).
    /// With expiry, first releases up to `sweep` expired entries into
    /// `swept`. Returns the slot the key's entry holds now (its identity
    /// while the lock is held: what [`evict_one`](Self::evict_one) spares)
    /// and, if the key was present, the key passed in, the old value and
    /// whether it had expired. `K: Eq` runs before any change.
    #[inline(always)]
    pub(crate) fn insert_unevicting(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        now: u64,
        sweep: usize,
        swept: &mut Vec<(K, V)>,
    ) -> (u32, Option<(K, V, bool)>)
    where
        K: Eq,
    {
        debug_assert!(weight >= 1 && self.entries.len() < self.capacity);
        if let Some(i) = self.find(hash, &key) {
            let old_weight = self.weights.get(i);
            let expired = E && self.times.expired(i, now);
            let old = std::mem::replace(&mut self.entries[i as usize].value, value);
            self.weights.set(i, weight, self.entries.len());
            if E {
                self.times.reset(i, now);
            }
            self.weight = self.weight - u64::from(old_weight) + u64::from(weight);
            self.policy
                .replaced(&mut self.entries, i, old_weight, weight);
            let mut kept = Some(i);
            if E && sweep > 0 {
                // The sweep may move the entry (never remove it: it is fresh).
                self.sweep_following(now, sweep, |entry| swept.push(entry), &mut kept);
            }
            return (kept.unwrap_or(i), Some((key, old, expired)));
        }
        let admit = self.policy.admit(hash);
        if E && sweep > 0 {
            self.sweep(now, sweep, |entry| swept.push(entry));
        }
        self.append(hash, key, value, weight, admit, now);
        (self.entries.len() as u32 - 1, None)
    }

    /// Removes the key, returning its entry and whether it had expired at
    /// `now`.
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Option<(K, V, bool)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        let i = self.find(hash, key)?;
        let expired = E && self.times.expired(i, now);
        let (key, value) = self.remove_index(i);
        Some((key, value, expired))
    }

    /// Evicts the entry the policy picks next, whether it had expired at
    /// `now` or not, never the one at slot `kept` (the entry just stored:
    /// the policy passes over it, see `Policy::victim_sparing`), which it
    /// follows to the slot a removal moves it to. `None` if no other entry
    /// is left. Runs no user code.
    pub(crate) fn evict_one(&mut self, now: u64, kept: &mut Option<u32>) -> Option<(K, V, bool)> {
        if self.entries.is_empty() {
            return None;
        }
        let v = (self.policy).victim_sparing(&mut self.entries, &self.weights, *kept)?;
        let expired = E && self.times.expired(v, now);
        let entry = self.remove_following(v, kept);
        if *kept == Some(v) {
            // The kept entry moved into the victim's slot.
            self.policy.spare(v);
        }
        Some((entry.0, entry.1, expired))
    }

    /// Each entry's stored hash (for invariant checks).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries.iter().map(|entry| entry.hash)
    }

    /// The slot the key's entry holds (what `evict_one` spares).
    #[cfg(test)]
    pub(crate) fn slot_of(&self, hash: u64, key: &K) -> Option<u32>
    where
        K: Eq,
    {
        self.find(hash, key)
    }

    /// Removes and returns the entry the policy would evict next.
    #[cfg(test)]
    pub(crate) fn pop_victim(&mut self) -> Option<(K, V)> {
        if self.entries.is_empty() {
            return None;
        }
        let v = self.policy.victim(&mut self.entries, &self.weights);
        Some(self.remove_index(v))
    }

    /// Sets the capacity (a total weight), moving the entries over it (in
    /// the policy's eviction order) into `evicted`.
    pub(crate) fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<(K, V)>) {
        debug_assert!((1..=MAX_SHARD_CAPACITY).contains(&capacity));
        self.capacity = capacity;
        self.expected = capacity;
        self.policy.resized(capacity);
        self.evict_overflow(evicted);
    }

    /// Moves the entries over the capacity (by weight) into `evicted`.
    pub(crate) fn evict_overflow(&mut self, evicted: &mut Vec<(K, V)>) {
        while self.weight > self.capacity as u64 {
            let v = self.policy.victim(&mut self.entries, &self.weights);
            evicted.push(self.remove_index(v));
        }
        self.shrink(self.capacity);
    }

    /// Gives back the memory of the slots beyond `keep`.
    fn shrink(&mut self, keep: usize) {
        self.table.shrink(&mut self.entries, keep);
        self.weights.shrink_to(self.entries.capacity());
        if E {
            self.times.shrink_to(self.entries.capacity());
        }
    }

    /// Sets the capacity without evicting, returning the old one (a
    /// deliberately broken protocol for loom's negative controls may hold
    /// more than its capacity).
    #[cfg(loom)]
    pub(crate) fn set_capacity_lazily(&mut self, capacity: usize) -> usize {
        std::mem::replace(&mut self.capacity, capacity)
    }

    /// Empties the shard, returning every entry (in no particular order);
    /// those expired at `now` go to `expired` instead.
    pub(crate) fn take_all(&mut self, now: u64, expired: &mut Vec<(K, V)>) -> Vec<(K, V)> {
        self.table.clear();
        self.policy.clear();
        self.weights = Weights::default();
        self.weight = 0;
        let entries = std::mem::take(&mut self.entries);
        if !E {
            return entries
                .into_iter()
                .map(|entry| (entry.key, entry.value))
                .collect();
        }
        let mut live = Vec::with_capacity(entries.len());
        for (i, entry) in entries.into_iter().enumerate() {
            if self.times.expired(i as u32, now) {
                expired.push((entry.key, entry.value));
            } else {
                live.push((entry.key, entry.value));
            }
        }
        self.times.clear();
        live
    }

    /// Calls `f` with each entry live at `now`, in the policy's order of
    /// recency. Not a use.
    pub(crate) fn for_each(&self, now: u64, mut f: impl FnMut(&K, &V)) {
        if !E {
            return self.policy.for_each(&self.entries, f);
        }
        // The policy hands out keys, not slots: a key's slot is its offset
        // from the first entry's key (addresses only, never dereferenced).
        let Some(first) = self.entries.first() else {
            return;
        };
        let base = &first.key as *const K as usize;
        let size = std::mem::size_of::<Node<K, V, P::Meta>>();
        self.policy.for_each(&self.entries, |key, value| {
            let i = (key as *const K as usize - base) / size;
            if !self.times.expired(i as u32, now) {
                f(key, value);
            }
        });
    }

    /// Unlinks and removes slot `i`, moving the last entry into it.
    /// [`remove_index`](Self::remove_index) of an entry other than the
    /// one at slot `kept`, which it follows: the last entry moves into `i`.
    #[inline]
    fn remove_following(&mut self, i: u32, kept: &mut Option<u32>) -> (K, V) {
        debug_assert_ne!(Some(i), *kept, "the kept entry removed");
        let last = (self.entries.len() - 1) as u32;
        let entry = self.remove_index(i);
        if *kept == Some(last) {
            *kept = Some(i);
        }
        entry
    }

    fn remove_index(&mut self, i: u32) -> (K, V) {
        self.table.remove(&self.entries, i);
        let weight = self.weights.get(i);
        self.policy.unlink(&mut self.entries, i, weight);
        self.weight -= u64::from(weight);
        let last = (self.entries.len() - 1) as u32;
        let entry = self.entries.swap_remove(i as usize);
        self.weights.swap_remove(i);
        if E {
            self.times.swap_remove(i);
        }
        if i != last {
            // The entry that was last now lives at `i`.
            self.policy.moved(&mut self.entries, last, i);
            self.table.moved(self.entries[i as usize].hash, last, i);
        }
        (entry.key, entry.value)
    }

    /// Checks every structural invariant, the shard's then the policy's;
    /// panics with a description if one fails.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_invariants(&self) {
        let n = self.entries.len();
        assert!(
            n <= self.capacity,
            "len {n} over capacity {}",
            self.capacity
        );
        assert_eq!(self.table.len(), n, "table and entry counts differ");
        assert!(
            self.weight <= self.capacity as u64,
            "weight {} over capacity {}",
            self.weight,
            self.capacity
        );
        assert!(
            self.weights.kept().is_none_or(|kept| kept == n),
            "{:?} weights for {n} entries",
            self.weights.kept()
        );
        let mut weight = 0;
        for (i, entry) in self.entries.iter().enumerate() {
            let w = self.weights.get(i as u32);
            assert!(w >= 1, "entry {i} weighs 0");
            weight += u64::from(w);
            assert!(
                self.table.locates(entry.hash, i as u32),
                "entry {i} not reachable from the table"
            );
        }
        assert_eq!(weight, self.weight, "entry weights differ from their sum");
        self.times.check(n);
        self.policy.check(&self.entries, &self.weights);
    }
}
