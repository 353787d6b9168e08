//! Unit tests of the engine shard under exact LRU and CLOCK (`crate::cache`)
//! and of the wrapper's internals, with `check_invariants` after every
//! operation.

use std::collections::VecDeque;

use proptest::prelude::*;

use super::{EvictionPolicy, LruCache};
use crate::cache::{Exact, SecondChance, Shard};

/// A trivially correct LRU: a deque of (key, value), front = most recent.
struct LruModel {
    entries: VecDeque<(u8, u32)>,
    capacity: usize,
}

impl LruModel {
    fn position(&self, key: u8) -> Option<usize> {
        self.entries.iter().position(|(k, _)| *k == key)
    }
    fn get(&mut self, key: u8) -> Option<u32> {
        let at = self.position(key)?;
        let entry = self.entries.remove(at).unwrap();
        self.entries.push_front(entry);
        Some(entry.1)
    }
    fn insert(&mut self, key: u8, value: u32) -> (Option<u32>, Option<(u8, u32)>) {
        if let Some(at) = self.position(key) {
            let (_, old) = self.entries.remove(at).unwrap();
            self.entries.push_front((key, value));
            return (Some(old), None);
        }
        let evicted = if self.entries.len() == self.capacity {
            self.entries.pop_back()
        } else {
            None
        };
        self.entries.push_front((key, value));
        (None, evicted)
    }
}

/// A hash that collides often, so that table probing and the stored-hash
/// comparison are exercised.
fn weak_hash(key: u8) -> u64 {
    u64::from(key % 8) << 24 | u64::from(key % 3)
}

#[derive(Debug, Clone)]
enum CacheOp {
    Get(u8),
    Peek(u8),
    Insert(u8, u32),
    Remove(u8),
    PopLru,
    SetCapacity(usize),
    TakeAll,
}

fn op() -> impl Strategy<Value = CacheOp> {
    prop_oneof![
        4 => (0u8..24).prop_map(CacheOp::Get),
        1 => (0u8..24).prop_map(CacheOp::Peek),
        4 => (0u8..24, any::<u32>()).prop_map(|(k, v)| CacheOp::Insert(k, v)),
        2 => (0u8..24).prop_map(CacheOp::Remove),
        1 => Just(CacheOp::PopLru),
        1 => (1usize..12).prop_map(CacheOp::SetCapacity),
        1 => Just(CacheOp::TakeAll),
    ]
}

proptest! {
    #[test]
    fn core_matches_the_deque_model(capacity in 1usize..10, ops in prop::collection::vec(op(), 1..200)) {
        let mut core = Shard::<u8, u32, Exact>::new(capacity);
        let mut model = LruModel { entries: VecDeque::new(), capacity };
        for op in ops {
            match op {
                CacheOp::Get(k) => prop_assert_eq!(core.get(weak_hash(k), &k, 0).live().copied(), model.get(k)),
                CacheOp::Peek(k) => {
                    let expected = model.position(k).map(|at| model.entries[at].1);
                    prop_assert_eq!(core.peek(weak_hash(k), &k, 0).copied(), expected);
                }
                CacheOp::Insert(k, v) => {
                    let got = core.insert(weak_hash(k), k, v, 1, 0, 0);
                    let (replaced, evicted) = model.insert(k, v);
                    prop_assert_eq!(got.replaced, replaced);
                    prop_assert_eq!(got.evicted.single(), evicted);
                    prop_assert_eq!(got.unused_key.is_some(), replaced.is_some());
                }
                CacheOp::Remove(k) => {
                    let expected = model.position(k).map(|at| model.entries.remove(at).unwrap());
                    prop_assert_eq!(core.remove(weak_hash(k), &k, 0).map(|(k, v, _)| (k, v)), expected);
                }
                CacheOp::PopLru => prop_assert_eq!(core.pop_victim(), model.entries.pop_back()),
                CacheOp::SetCapacity(c) => {
                    let mut evicted = Vec::new();
                    core.set_capacity(c, &mut evicted);
                    model.capacity = c;
                    let mut expected = Vec::new();
                    while model.entries.len() > c {
                        expected.push(model.entries.pop_back().unwrap());
                    }
                    prop_assert_eq!(evicted, expected);
                }
                CacheOp::TakeAll => {
                    let mut all = core.take_all(0, &mut Vec::new());
                    all.sort_unstable();
                    let mut expected: Vec<_> = model.entries.drain(..).collect();
                    expected.sort_unstable();
                    prop_assert_eq!(all, expected);
                }
            }
            core.check_invariants();
            let order: Vec<_> = { let mut order = Vec::new(); core.for_each(0, |k, v| order.push((*k, *v))); order };
            let expected: Vec<_> = model.entries.iter().copied().collect();
            prop_assert_eq!(order, expected);
        }
    }
}

/// A trivially correct CLOCK: a ring of (key, value, referenced) searched
/// linearly, with the rules of `cache/second_chance.rs` written out plainly: a new entry
/// is appended, or takes the victim's slot when full; a removal moves the
/// last slot into the hole; the hand wraps at the end.
struct ClockModel {
    ring: Vec<(u8, u32, bool)>,
    hand: usize,
    capacity: usize,
}

impl ClockModel {
    fn position(&self, key: u8) -> Option<usize> {
        self.ring.iter().position(|e| e.0 == key)
    }
    fn get(&mut self, key: u8) -> Option<u32> {
        let at = self.position(key)?;
        self.ring[at].2 = true;
        Some(self.ring[at].1)
    }
    fn victim(&mut self) -> usize {
        loop {
            if self.hand >= self.ring.len() {
                self.hand = 0;
            }
            if !self.ring[self.hand].2 {
                return self.hand;
            }
            self.ring[self.hand].2 = false;
            self.hand += 1;
        }
    }
    fn remove_at(&mut self, at: usize) -> (u8, u32) {
        let (k, v, _) = self.ring.swap_remove(at);
        if self.hand >= self.ring.len() {
            self.hand = 0;
        }
        (k, v)
    }
    fn insert(&mut self, key: u8, value: u32) -> (Option<u32>, Option<(u8, u32)>) {
        if let Some(at) = self.position(key) {
            let old = std::mem::replace(&mut self.ring[at].1, value);
            self.ring[at].2 = true;
            return (Some(old), None);
        }
        if self.ring.len() == self.capacity {
            let v = self.victim();
            let (k, old, _) = std::mem::replace(&mut self.ring[v], (key, value, false));
            self.hand = v + 1;
            return (None, Some((k, old)));
        }
        self.ring.push((key, value, false));
        (None, None)
    }
    /// Most recent first, as the CLOCK shard's `for_each` promises.
    fn order(&self) -> Vec<(u8, u32)> {
        let n = self.ring.len();
        let mut out = Vec::new();
        for referenced in [true, false] {
            for k in 0..n {
                let e = self.ring[(self.hand + n - 1 - k) % n];
                if e.2 == referenced {
                    out.push((e.0, e.1));
                }
            }
        }
        out
    }
}

proptest! {
    #[test]
    fn clock_core_matches_the_ring_model(capacity in 1usize..10, ops in prop::collection::vec(op(), 1..200)) {
        let mut core = Shard::<u8, u32, SecondChance>::new(capacity);
        let mut model = ClockModel { ring: Vec::new(), hand: 0, capacity };
        for op in ops {
            match op {
                CacheOp::Get(k) => prop_assert_eq!(core.get(weak_hash(k), &k, 0).live().copied(), model.get(k)),
                CacheOp::Peek(k) => {
                    let expected = model.position(k).map(|at| model.ring[at].1);
                    prop_assert_eq!(core.peek(weak_hash(k), &k, 0).copied(), expected);
                }
                CacheOp::Insert(k, v) => {
                    let got = core.insert(weak_hash(k), k, v, 1, 0, 0);
                    let (replaced, evicted) = model.insert(k, v);
                    prop_assert_eq!(got.replaced, replaced);
                    prop_assert_eq!(got.evicted.single(), evicted);
                    prop_assert_eq!(got.unused_key.is_some(), replaced.is_some());
                }
                CacheOp::Remove(k) => {
                    let expected = model.position(k).map(|at| model.remove_at(at));
                    prop_assert_eq!(core.remove(weak_hash(k), &k, 0).map(|(k, v, _)| (k, v)), expected);
                }
                CacheOp::PopLru => {
                    // Shrinking by one evicts the
                    // same way.
                    if model.capacity > 1 {
                        let mut evicted = Vec::new();
                        core.set_capacity(model.capacity - 1, &mut evicted);
                        model.capacity -= 1;
                        let mut expected = Vec::new();
                        while model.ring.len() > model.capacity {
                            let v = model.victim();
                            expected.push(model.remove_at(v));
                        }
                        prop_assert_eq!(evicted, expected);
                    }
                }
                CacheOp::SetCapacity(c) => {
                    let mut evicted = Vec::new();
                    core.set_capacity(c, &mut evicted);
                    model.capacity = c;
                    let mut expected = Vec::new();
                    while model.ring.len() > c {
                        let v = model.victim();
                        expected.push(model.remove_at(v));
                    }
                    prop_assert_eq!(evicted, expected);
                }
                CacheOp::TakeAll => {
                    let mut all = core.take_all(0, &mut Vec::new());
                    all.sort_unstable();
                    let mut expected: Vec<_> =
                        model.ring.drain(..).map(|(k, v, _)| (k, v)).collect();
                    model.hand = 0;
                    expected.sort_unstable();
                    prop_assert_eq!(all, expected);
                }
            }
            core.check_invariants();
            let mut order = Vec::new();
            core.for_each(0, |k, v| order.push((*k, *v)));
            prop_assert_eq!(order, model.order());
        }
    }
}

#[test]
fn clock_gives_a_hit_entry_a_second_chance() {
    let mut core = Shard::<u32, u32, SecondChance>::new(3);
    for k in 0..3 {
        core.insert(u64::from(k), k, k, 1, 0, 0);
    }
    assert_eq!(core.get(1, &1, 0).live(), Some(&1));
    // The hand passes 0 (unreferenced): evicted first.
    assert_eq!(core.insert(9, 9, 9, 1, 0, 0).evicted.single(), Some((0, 0)));
    // Then 1 loses its bit and 2 is evicted; 1 survives two insertions.
    assert_eq!(
        core.insert(10, 10, 10, 1, 0, 0).evicted.single(),
        Some((2, 2))
    );
    assert!(core.contains(1, &1, 0));
    // The hand wraps to 9 (never hit since it entered) before 1...
    assert_eq!(
        core.insert(11, 11, 11, 1, 0, 0).evicted.single(),
        Some((9, 9))
    );
    // ...and then reaches 1, whose bit it cleared a lap ago.
    assert_eq!(
        core.insert(12, 12, 12, 1, 0, 0).evicted.single(),
        Some((1, 1))
    );
    core.check_invariants();
}

#[test]
fn a_full_core_recycles_its_least_recent_node() {
    let mut core = Shard::<u32, u32, Exact>::new(3);
    for k in 0..3 {
        core.insert(u64::from(k), k, k, 1, 0, 0);
    }
    assert_eq!(core.get(0, &0, 0).live(), Some(&0));
    let inserted = core.insert(9, 9, 9, 1, 0, 0);
    assert_eq!(inserted.evicted.single(), Some((1, 1)));
    core.check_invariants();
    let mut order = Vec::new();
    core.for_each(0, |k, _| order.push(*k));
    assert_eq!(order, [9, 0, 2]);
}

#[test]
fn removing_the_middle_moves_the_last_node_into_the_hole() {
    let mut core = Shard::<u32, u32, Exact>::new(8);
    for k in 0..5 {
        core.insert(u64::from(k) * 7, k, k * 10, 1, 0, 0);
    }
    assert_eq!(core.remove(7, &1, 0).map(|(k, v, _)| (k, v)), Some((1, 10)));
    core.check_invariants();
    assert_eq!(core.peek(28, &4, 0), Some(&40));
    assert_eq!(core.remove(0, &0, 0).map(|(k, v, _)| (k, v)), Some((0, 0)));
    assert_eq!(
        core.remove(28, &4, 0).map(|(k, v, _)| (k, v)),
        Some((4, 40))
    );
    core.check_invariants();
    let mut order = Vec::new();
    core.for_each(0, |k, _| order.push(*k));
    assert_eq!(order, [3, 2]);
}

#[test]
fn shards_split_the_capacity_exactly() {
    let cache = LruCache::<u32, u32>::builder()
        .capacity(10)
        .shards(4)
        .build()
        .unwrap();
    let caps: Vec<_> = (cache.layer.shards().iter())
        .map(|s| s.read().entries.capacity())
        .collect();
    assert_eq!(caps, [3, 3, 2, 2]);
    cache.resize(7).unwrap();
    let caps: Vec<_> = (cache.layer.shards().iter())
        .map(|s| s.read().entries.capacity())
        .collect();
    assert_eq!(caps, [2, 2, 2, 1]);
}

#[test]
fn wrapper_keeps_every_shard_consistent() {
    for policy in [EvictionPolicy::Exact, EvictionPolicy::Clock] {
        wrapper_keeps_every_shard_consistent_under(policy);
    }
}

fn wrapper_keeps_every_shard_consistent_under(policy: EvictionPolicy) {
    let cache = LruCache::<u32, u32>::builder()
        .capacity(64)
        .shards(4)
        .policy(policy)
        .build()
        .unwrap();
    for i in 0..1000u32 {
        match i % 5 {
            0 | 1 => {
                cache.insert(i % 97, i);
            }
            2 => {
                cache.get(&(i % 89));
            }
            3 => {
                cache.remove(&(i % 13));
            }
            _ => {
                cache.resize(32 + (i as usize % 64)).unwrap();
            }
        }
        for shard in cache.layer.shards() {
            shard.read().entries.check_invariants();
        }
        assert!(cache.len() <= cache.capacity());
    }
}

#[test]
fn shard_choice_spreads_keys() {
    let cache = LruCache::<u32, u32>::builder()
        .capacity(4096)
        .shards(16)
        .build()
        .unwrap();
    let mut counts = [0usize; 16];
    for k in 0..16_000u32 {
        let hash = cache.hash(&k);
        let index = cache.layer.index(hash);
        counts[index] += 1;
    }
    assert!(
        counts.iter().all(|&c| (800..1200).contains(&c)),
        "{counts:?}"
    );
}

#[test]
fn default_shards_keep_32_entries_per_shard() {
    use super::builder::default_shards;
    assert_eq!(default_shards(1, EvictionPolicy::Exact), 1);
    assert_eq!(default_shards(100, EvictionPolicy::Exact), 2);
    let big = default_shards(1_000_000, EvictionPolicy::Exact);
    assert!(big.is_power_of_two() && (128..=4096).contains(&big));
}

#[test]
fn default_clock_shards_keep_8_entries_per_shard() {
    use super::builder::default_shards;
    assert_eq!(default_shards(1, EvictionPolicy::Clock), 1);
    assert_eq!(default_shards(100, EvictionPolicy::Clock), 8);
    let big = default_shards(1_000_000, EvictionPolicy::Clock);
    assert!(big.is_power_of_two() && (512..=4096).contains(&big));
    assert!(big >= default_shards(1_000_000, EvictionPolicy::Exact));
}
