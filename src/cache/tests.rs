//! Unit and property tests of the S3-FIFO core against a sequential model
//! written from the paper's description, plus its scan resistance.

use std::collections::{HashMap, HashSet, VecDeque};

use proptest::prelude::*;

use super::ghost::{bucket_of, fingerprint, ghost_target, shape};
use super::{Exact, S3Fifo, Shard};

type S3FifoShard<K, V> = Shard<K, V, S3Fifo>;
type ExactShard<K, V> = Shard<K, V, Exact>;

fn hash(key: u32) -> u64 {
    // Distinct keys, distinct hashes: the model compares by key.
    u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// Whether the core's ghost remembers `hash` (looked at without taking it).
fn remembered(core: &S3FifoShard<u32, u32>, hash: u64) -> bool {
    core.policy.ghost.remembers(hash)
}

fn keys(core: &S3FifoShard<u32, u32>) -> Vec<u32> {
    let mut out = Vec::new();
    core.for_each(0, |k, _| out.push(*k));
    out
}

#[test]
fn the_small_queue_share_is_a_share_of_the_weight() {
    // Capacity 64: small's share is a weight of 2.
    let mut core = S3FifoShard::<u32, u32>::new(64);
    for k in 0..32 {
        core.insert(hash(k), k, k, 2, 0, 0);
        core.get(hash(k), &k, 0).live();
    }
    // All used: they move to main, and main's oldest (0) makes room.
    let evicted = core.insert(hash(100), 100, 100, 2, 0, 0).evicted.single();
    assert_eq!(evicted, Some((0, 0)));
    // Small holds one entry of weight 2, its whole share (by count it
    // would be under its share of 2 entries): small is served first.
    let evicted = core.insert(hash(101), 101, 101, 1, 0, 0).evicted.single();
    assert_eq!(evicted, Some((100, 100)));
    assert_eq!(core.weight(), 63);
    core.check_invariants();
}

#[test]
fn new_keys_enter_small_and_used_ones_survive_a_flood() {
    let mut core = S3FifoShard::<u32, u32>::new(10);
    // Hot keys 0..5, each used twice.
    for k in 0..5 {
        core.insert(hash(k), k, k, 1, 0, 0);
        core.get(hash(k), &k, 0).live();
        core.get(hash(k), &k, 0).live();
    }
    // A flood of 100 one-hit wonders.
    for k in 100..200 {
        core.insert(hash(k), k, k, 1, 0, 0);
        core.check_invariants();
    }
    for k in 0..5 {
        assert!(
            core.contains(hash(k), &k, 0),
            "hot key {k} flushed by a scan"
        );
    }
    assert_eq!(core.len(), 10);
}

#[test]
fn exact_lru_loses_the_hot_set_to_the_same_flood() {
    // The negative of the test above: the flood that S3-FIFO survives
    // empties an exact LRU of the same capacity.
    let mut core = ExactShard::<u32, u32>::new(10);
    for k in 0..5 {
        core.insert(hash(k), k, k, 1, 0, 0);
        core.get(hash(k), &k, 0).live();
    }
    for k in 100..200 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    assert!((0..5).all(|k| !core.contains(hash(k), &k, 0)));
}

#[test]
fn a_key_the_ghost_remembers_goes_to_main() {
    let mut core = S3FifoShard::<u32, u32>::new(10);
    core.insert(hash(1), 1, 1, 1, 0, 0);
    // Push 1 out of small, unused: its hash goes to the ghost.
    for k in 10..20 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    assert!(!core.contains(hash(1), &1, 0));
    core.insert(hash(1), 1, 1, 1, 0, 0);
    // In main now: a further flood of one-hit wonders passes it by.
    for k in 20..40 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    assert!(core.contains(hash(1), &1, 0));
    core.check_invariants();
}

/// A core of capacity 10 (small's share 1, a ghost of one bucket of 6
/// places, an exact FIFO) filled with 0..10, then one-hit wonders from 100
/// on until `evictions` keys have left small; returns them, oldest first.
fn evicting(evictions: usize) -> (S3FifoShard<u32, u32>, Vec<u32>) {
    let mut core = S3FifoShard::<u32, u32>::new(10);
    let mut evicted = Vec::new();
    for k in (0..10).chain(100..) {
        if evicted.len() == evictions {
            break;
        }
        if let Some((key, _)) = core.insert(hash(k), k, k, 1, 0, 0).evicted.single() {
            evicted.push(key);
        }
    }
    (core, evicted)
}

/// The ghost remembers the last 6 keys evicted from small (two thirds of
/// the capacity): the oldest is forgotten at the seventh.
#[test]
fn the_ghost_remembers_as_many_evictions_as_it_has_places() {
    let (core, evicted) = evicting(6);
    assert_eq!((core.policy.ghost.room(), core.policy.ghost.len()), (6, 6));
    assert!(evicted.iter().all(|&k| remembered(&core, hash(k))));
    let (core, evicted) = evicting(7);
    assert!(
        !remembered(&core, hash(evicted[0])),
        "the oldest outlived its place"
    );
    assert!(evicted[1..].iter().all(|&k| remembered(&core, hash(k))));
    core.check_invariants();
}

/// A key readmitted from the ghost is forgotten at once; its place stays
/// free until the cursor comes round to it, so the next eviction still
/// goes over the oldest key.
#[test]
fn a_readmitted_key_is_forgotten_and_the_ring_goes_on() {
    let (mut core, evicted) = evicting(6);
    // Readmitted: to main, forgotten; its insert evicts one more key from
    // small, which goes over the oldest.
    let third = evicted[2];
    let newest = core
        .insert(hash(third), third, third, 1, 0, 0)
        .evicted
        .single();
    assert!(!remembered(&core, hash(third)));
    let (newest, _) = newest.expect("a full core evicts");
    assert!(remembered(&core, hash(newest)));
    assert!(
        !remembered(&core, hash(evicted[0])),
        "the oldest outlived its place"
    );
    assert!(
        [1, 3, 4, 5]
            .iter()
            .all(|&i| remembered(&core, hash(evicted[i])))
    );
    assert_eq!(core.policy.ghost.len(), 5);
    core.check_invariants();
}

/// The ghost holds no memory until the first eviction.
#[test]
fn the_ghost_is_allocated_at_the_first_eviction() {
    let mut core = S3FifoShard::<u32, u32>::new(3000);
    for k in 0..3000 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    assert_eq!(core.policy.ghost.allocated(), 0);
    core.insert(hash(5000), 5000, 5000, 1, 0, 0);
    assert_eq!(core.policy.ghost.room(), 2000);
    // 125 lines and their cursors.
    assert_eq!(core.policy.ghost.allocated(), 2000 * 4 + 125);
}

/// With a weigher the ghost counts keys, not weight: two thirds of the
/// entries the core held when it evicted.
#[test]
fn a_weighted_ghost_counts_keys_not_weight() {
    // 250 entries of weight 4 fill a capacity of 1000: a ghost of 166
    // keys, 10 buckets of 16 (the unweighted ghost: 666).
    let mut core = S3FifoShard::<u32, u32>::new(1000);
    for k in 0..1000 {
        core.insert(hash(k), k, k, 4, 0, 0);
    }
    assert_eq!(core.len(), 250);
    assert_eq!(core.policy.ghost.room(), 160);
    core.check_invariants();
}

/// Emptying the core empties the ghost: a key evicted before is new again.
#[test]
fn take_all_forgets_the_ghost() {
    let mut core = S3FifoShard::<u32, u32>::new(10);
    core.insert(hash(1), 1, 1, 1, 0, 0);
    for k in 10..20 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    assert!(remembered(&core, hash(1)));
    assert_eq!(core.take_all(0, &mut Vec::new()).len(), 10);
    assert!(!remembered(&core, hash(1)));
    assert_eq!(
        (core.policy.ghost.len(), core.policy.ghost.allocated()),
        (0, 0)
    );
    core.check_invariants();
}

/// Small is served first only while it holds its share (a weight of 2 at
/// capacity 96) or main is empty: below its share, main gives the victim
/// and small keeps its last entry.
#[test]
fn small_is_served_only_while_it_holds_its_share() {
    let mut core = S3FifoShard::<u32, u32>::new(96);
    for k in 0..96 {
        core.insert(hash(k), k, k, 1, 0, 0);
        core.get(hash(k), &k, 0).live();
    }
    // Every entry was used: small's tail moves to main until small is
    // below its share of 2, then main's oldest unused entry (0) goes.
    let evicted = core.insert(hash(100), 100, 100, 1, 0, 0).evicted.single();
    assert_eq!(evicted, Some((0, 0)));
    assert_eq!(
        core.policy.small_len(core.entries()),
        2,
        "small served below its share"
    );
    assert_eq!(keys(&core)[94..], [100, 95]);
    core.check_invariants();
}

/// Two keys whose hashes share the low 32 bits (the ghost's fingerprint)
/// are one ghost member: the second key's eviction remembers the member
/// the first key left forgotten, and the second key comes back to main.
#[test]
fn keys_sharing_a_fingerprint_are_one_ghost_member() {
    let (a, b) = ((1u64 << 40) | 0x5555, (2u64 << 40) | 0x5555);
    assert!((10..60).all(|k| hash(k) as u32 != 0x5555));
    let mut core = S3FifoShard::<u32, u32>::new(10);
    core.insert(a, 1, 1, 1, 0, 0);
    for k in 10..20 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    // 1 left small unused; back in, it goes to main and the fingerprint is
    // forgotten.
    core.insert(a, 1, 1, 1, 0, 0);
    // 2 shares the fingerprint, forgotten: it enters small.
    core.insert(b, 2, 2, 1, 0, 0);
    for k in 12..20 {
        core.get(hash(k), &k, 0).live();
    }
    // 12..19 move to main, 2 leaves small unused: the member is remembered.
    let evicted = core.insert(hash(20), 20, 20, 1, 0, 0).evicted.single();
    assert_eq!(evicted, Some((2, 2)));
    core.insert(b, 2, 2, 1, 0, 0);
    // In main: a flood of one-hit wonders passes it by.
    for k in 30..60 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    assert!(
        core.contains(b, &2, 0),
        "2 came back to small: the member was split"
    );
    core.check_invariants();
}

/// Shrinking the capacity shrinks the ghost's memory with it: it keeps
/// room for the new share only, not for the old one.
#[test]
fn shrinking_the_capacity_frees_the_ghosts_memory() {
    // Capacity 3000: the ghost is full once 10,000 one-hit wonders have
    // gone through (2000 places, 125 buckets).
    let mut core = S3FifoShard::<u32, u32>::new(3000);
    for k in 0..10_000 {
        core.insert(hash(k), k, k, 1, 0, 0);
    }
    assert_eq!(
        (core.policy.ghost.room(), core.policy.ghost.len()),
        (2000, 2000)
    );
    let mut evicted = Vec::new();
    core.set_capacity(30, &mut evicted);
    // Two thirds of 30 is 20: one bucket of 16 places, full.
    assert_eq!(
        (core.policy.ghost.room(), core.policy.ghost.len()),
        (16, 16)
    );
    assert_eq!(core.policy.ghost.allocated(), 64 + 1);
    core.check_invariants();
}

#[test]
fn capacity_one_and_shrinking_keep_the_bound() {
    let mut core = S3FifoShard::<u32, u32>::new(1);
    for k in 0..5 {
        let inserted = core.insert(hash(k), k, k, 1, 0, 0);
        assert_eq!(inserted.evicted.single().map(|(k, _)| k), k.checked_sub(1));
        core.check_invariants();
    }
    let mut core = S3FifoShard::<u32, u32>::new(50);
    for k in 0..50 {
        core.insert(hash(k), k, k, 1, 0, 0);
        if k % 3 == 0 {
            core.get(hash(k), &k, 0).live();
        }
    }
    let mut evicted = Vec::new();
    core.set_capacity(7, &mut evicted);
    assert_eq!(core.len(), 7);
    assert_eq!(evicted.len(), 43);
    core.check_invariants();
    let all: HashSet<u32> = keys(&core)
        .into_iter()
        .chain(evicted.iter().map(|(k, _)| *k))
        .collect();
    assert_eq!(all.len(), 50, "an entry was lost while shrinking");
}

/// S3-FIFO as the paper describes it, with plain collections and keys
/// instead of nodes and hashes; the ghost is a ring of keys per bucket
/// (places and a cursor each), sized and filed as the core's is
/// (`ghost.rs`).
struct ShardModel {
    capacity: usize,
    small: VecDeque<u32>,
    main: VecDeque<u32>,
    values: HashMap<u32, u32>,
    freq: HashMap<u32, u8>,
    ghost: Vec<(Vec<Option<u32>>, usize)>,
    ghost_target: usize,
}

impl ShardModel {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            small: VecDeque::new(),
            main: VecDeque::new(),
            values: HashMap::new(),
            freq: HashMap::new(),
            ghost: Vec::new(),
            ghost_target: 0,
        }
    }

    fn small_share(&self) -> usize {
        (self.capacity / 48).max(1)
    }

    fn get(&mut self, key: u32) -> Option<u32> {
        let value = *self.values.get(&key)?;
        let f = self.freq.get_mut(&key).unwrap();
        *f = (*f + 1).min(3);
        Some(value)
    }

    /// The ghost bucket of `key`, if the ghost has any.
    fn ghost_bucket(&mut self, key: u32) -> Option<&mut (Vec<Option<u32>>, usize)> {
        let n = self.ghost.len();
        (n > 0).then(|| &mut self.ghost[bucket_of(fingerprint(hash(key)), n)])
    }

    /// Files `key` at its bucket's cursor, over the oldest, and moves the
    /// cursor on.
    fn file(&mut self, key: u32) {
        let Some((places, cursor)) = self.ghost_bucket(key) else {
            return;
        };
        places[*cursor] = Some(key);
        *cursor = (*cursor + 1) % places.len();
    }

    /// Rebuilds the ghost for `target` keys, refiling by rank: every old
    /// bucket's oldest first, its newest last.
    fn resize_ghost(&mut self, target: usize) {
        let (buckets, ways) = shape(target);
        let old = std::mem::replace(&mut self.ghost, vec![(vec![None; ways], 0); buckets]);
        self.ghost_target = target;
        let ranked: Vec<Vec<u32>> = old
            .iter()
            .map(|(places, cursor)| {
                let n = places.len();
                (1..=n)
                    .filter_map(|back| places[(cursor + n - back) % n])
                    .collect()
            })
            .collect();
        let deepest = ranked.iter().map(Vec::len).max().unwrap_or(0);
        for rank in (0..deepest).rev() {
            for key in ranked.iter().filter_map(|bucket| bucket.get(rank)) {
                self.file(*key);
            }
        }
    }

    fn remember(&mut self, key: u32) {
        let want = ghost_target(self.values.len().min(self.capacity));
        if want.abs_diff(self.ghost_target) > self.ghost_target / 8 {
            self.resize_ghost(want);
        }
        self.file(key);
    }

    /// Whether the ghost remembers `key`; if so, forgets it (every place
    /// holding it).
    fn take_ghost(&mut self, key: u32) -> bool {
        let Some((places, _)) = self.ghost_bucket(key) else {
            return false;
        };
        let mut found = false;
        for place in places.iter_mut().filter(|p| **p == Some(key)) {
            *place = None;
            found = true;
        }
        found
    }

    /// Evicts one entry, making S3-FIFO's moves on the way.
    fn evict(&mut self) -> (u32, u32) {
        loop {
            if !self.small.is_empty()
                && (self.small.len() >= self.small_share() || self.main.is_empty())
            {
                let t = self.small.pop_back().unwrap();
                if self.freq[&t] > 0 {
                    self.freq.insert(t, 0);
                    self.main.push_front(t);
                    continue;
                }
                self.remember(t);
                self.freq.remove(&t);
                return (t, self.values.remove(&t).unwrap());
            }
            let t = self.main.pop_back().unwrap();
            if self.freq[&t] > 0 {
                *self.freq.get_mut(&t).unwrap() -= 1;
                self.main.push_front(t);
                continue;
            }
            self.freq.remove(&t);
            return (t, self.values.remove(&t).unwrap());
        }
    }

    fn insert(&mut self, key: u32, value: u32) -> (Option<u32>, Option<(u32, u32)>) {
        if let Some(old) = self.values.insert(key, value) {
            let f = self.freq.get_mut(&key).unwrap();
            *f = (*f + 1).min(3);
            return (Some(old), None);
        }
        self.values.remove(&key);
        let to_main = self.take_ghost(key);
        let evicted = (self.values.len() >= self.capacity).then(|| self.evict());
        self.values.insert(key, value);
        self.freq.insert(key, 0);
        if to_main {
            self.main.push_front(key);
        } else {
            self.small.push_front(key);
        }
        (None, evicted)
    }

    fn remove(&mut self, key: u32) -> Option<u32> {
        let value = self.values.remove(&key)?;
        self.freq.remove(&key);
        self.small.retain(|k| *k != key);
        self.main.retain(|k| *k != key);
        Some(value)
    }

    fn set_capacity(&mut self, capacity: usize) -> Vec<(u32, u32)> {
        self.capacity = capacity;
        let target = ghost_target(capacity);
        if target < self.ghost_target && self.ghost_target - target > self.ghost_target / 8 {
            self.resize_ghost(target);
        }
        let mut evicted = Vec::new();
        while self.values.len() > self.capacity {
            evicted.push(self.evict());
        }
        evicted
    }

    fn order(&self) -> Vec<u32> {
        self.main.iter().chain(self.small.iter()).copied().collect()
    }
}

#[derive(Clone, Debug)]
enum ShardOp {
    Get(u32),
    Peek(u32),
    Insert(u32, u32),
    Remove(u32),
    SetCapacity(usize),
}

fn op() -> impl Strategy<Value = ShardOp> {
    prop_oneof![
        6 => (0..60u32).prop_map(ShardOp::Get),
        1 => (0..60u32).prop_map(ShardOp::Peek),
        6 => (0..60u32, any::<u32>()).prop_map(|(k, v)| ShardOp::Insert(k, v)),
        1 => (0..60u32).prop_map(ShardOp::Remove),
        1 => (1..40usize).prop_map(ShardOp::SetCapacity),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every operation makes the same decisions as the model: the same
    /// values, the same evictions, the same queue order.
    #[test]
    fn agrees_with_the_model(capacity in 1..40usize, ops in prop::collection::vec(op(), 1..300)) {
        let mut core = S3FifoShard::<u32, u32>::new(capacity);
        let mut model = ShardModel::new(capacity);
        for op in ops {
            match op {
                ShardOp::Get(k) => prop_assert_eq!(core.get(hash(k), &k, 0).live().copied(), model.get(k)),
                ShardOp::Peek(k) => prop_assert_eq!(core.peek(hash(k), &k, 0).copied(), model.values.get(&k).copied()),
                ShardOp::Insert(k, v) => {
                    let got = core.insert(hash(k), k, v, 1, 0, 0);
                    let (replaced, evicted) = model.insert(k, v);
                    prop_assert_eq!(got.replaced, replaced);
                    prop_assert_eq!(got.evicted.single(), evicted);
                }
                ShardOp::Remove(k) => prop_assert_eq!(core.remove(hash(k), &k, 0).map(|(k, v, _)| (k, v)).map(|(_, v)| v), model.remove(k)),
                ShardOp::SetCapacity(c) => {
                    let mut evicted = Vec::new();
                    core.set_capacity(c, &mut evicted);
                    prop_assert_eq!(evicted, model.set_capacity(c));
                }
            }
            core.check_invariants();
            prop_assert_eq!(core.len(), model.values.len());
            prop_assert_eq!(keys(&core), model.order());
        }
    }
}

/// Hit ratio of a policy over a trace.
fn hit_ratio(trace: &[u32], mut access: impl FnMut(u32) -> bool) -> f64 {
    let hits = trace.iter().filter(|&&k| access(k)).count();
    hits as f64 / trace.len() as f64
}

/// Hit ratio of an S3-FIFO core of `capacity` over `trace`, inserting on a
/// miss.
fn s3fifo_hit_ratio(trace: &[u32], capacity: usize) -> f64 {
    let mut core = S3FifoShard::<u32, u32>::new(capacity);
    hit_ratio(trace, |k| {
        let hit = core.get(hash(k), &k, 0).live().is_some();
        if !hit {
            core.insert(hash(k), k, k, 1, 0, 0);
        }
        hit
    })
}

/// [`s3fifo_hit_ratio`] for an exact LRU core.
fn lru_hit_ratio(trace: &[u32], capacity: usize) -> f64 {
    let mut core = ExactShard::<u32, u32>::new(capacity);
    hit_ratio(trace, |k| {
        let hit = core.get(hash(k), &k, 0).live().is_some();
        if !hit {
            core.insert(hash(k), k, k, 1, 0, 0);
        }
        hit
    })
}

/// Zipf 0.9 over 10,000 keys, with a fifth of the accesses in sequential
/// scans of never-repeated keys: S3-FIFO keeps the hot set through the
/// scans, exact LRU does not.
#[test]
fn scan_polluted_zipf_hits_more_than_exact_lru() {
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, Zipf};

    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let zipf = Zipf::new(10_000.0, 0.9).unwrap();
    let mut trace = Vec::with_capacity(200_000);
    let mut next_scan_key = 1_000_000u32;
    while trace.len() < 200_000 {
        if rng.random_bool(0.02) {
            for _ in 0..10 {
                trace.push(next_scan_key);
                next_scan_key += 1;
            }
        } else {
            trace.push(zipf.sample(&mut rng) as u32);
        }
    }
    let capacity = 100;
    let s3_ratio = s3fifo_hit_ratio(&trace, capacity);
    let lru_ratio = lru_hit_ratio(&trace, capacity);
    assert!(
        s3_ratio > lru_ratio + 0.02,
        "S3-FIFO {s3_ratio:.3} against exact LRU {lru_ratio:.3}"
    );
}

/// The hit ratios of S3-FIFO, exact LRU and quick_cache (an S3-FIFO-like
/// policy) on 4M accesses over 1M keys: Zipf 0.9 and 1.1, capacity 1% and
/// 10%, and Zipf 0.9 with about a sixth of the accesses in scans of 1,000
/// never-repeated keys. Asserts S3-FIFO at least matches quick_cache on
/// every cell. Heavy: run it in release,
/// `cargo test --release --lib hit_ratio_cells -- --ignored --nocapture`.
#[test]
#[ignore = "heavy: run in release with --ignored"]
fn hit_ratio_cells() {
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, Zipf};
    let cells = [
        (0.9, 1usize, false),
        (0.9, 10, false),
        (1.1, 1, false),
        (1.1, 10, false),
        (0.9, 1, true),
        (0.9, 10, true),
    ];
    for (s, percent, scans) in cells {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let zipf = Zipf::new(1_000_000.0, s).unwrap();
        let mut trace: Vec<u32> = Vec::with_capacity(4_001_000);
        let mut next_scan_key = 2_000_000u32;
        while trace.len() < 4_000_000 {
            if scans && rng.random_bool(0.2 / 1000.0) {
                trace.extend(next_scan_key..next_scan_key + 1000);
                next_scan_key += 1000;
            } else {
                trace.push(zipf.sample(&mut rng) as u32);
            }
        }
        let capacity = 1_000_000 * percent / 100;
        let s3_ratio = s3fifo_hit_ratio(&trace, capacity);
        let lru_ratio = lru_hit_ratio(&trace, capacity);
        let mut qc = quick_cache::unsync::Cache::<u32, u32>::new(capacity);
        let qc_ratio = hit_ratio(&trace, |k| {
            if qc.get(&k).is_some() {
                return true;
            }
            qc.insert(k, k);
            false
        });
        println!(
            "Zipf {s}, capacity {percent}%, scans {scans}: S3-FIFO {s3_ratio:.4}, exact LRU {lru_ratio:.4}, quick_cache {qc_ratio:.4}"
        );
        assert!(s3_ratio >= qc_ratio, "S3-FIFO below quick_cache");
    }
}

/// An unweighted `u64 -> u64` entry is as small as the policies allow: the
/// weights live beside the entries, not in them.
#[test]
fn entries_of_8_byte_keys_and_values_keep_their_size() {
    use super::list::Links;
    use super::s3fifo::Meta;
    use super::shard::Node;
    use crate::sync::AtomicBool;
    assert_eq!(std::mem::size_of::<Node<u64, u64, Links>>(), 32);
    assert_eq!(std::mem::size_of::<Node<u64, u64, AtomicBool>>(), 32);
    assert_eq!(std::mem::size_of::<Node<u64, u64, Meta>>(), 40);
}

/// The slot of `key`, spared by `evict_one` (`None` if absent).
fn kept<P: super::policy::Policy>(
    core: &super::shard::Shard<u32, u32, P>,
    key: u32,
) -> Option<u32> {
    core.slot_of(hash(key), &key)
}

/// `evict_one` passes over the entry just stored without a use: a new key
/// stays in small (it is not sent to main, nor its hash to the ghost), and
/// a kept entry at a queue's tail goes to the head while another is taken.
#[test]
fn evict_one_passes_over_the_kept_entry_without_a_use() {
    let mut core = S3FifoShard::<u32, u32>::new(100);
    for k in 0..3 {
        core.insert(hash(k), k, k, 1, 0, 0);
        core.get(hash(k), &k, 0).live();
    }
    core.insert(hash(50), 50, 50, 1, 0, 0);
    // The used keys go to main on the way; main's oldest is the victim.
    assert_eq!(core.evict_one(0, &mut kept(&core, 50)), Some((0, 0, false)));
    assert_eq!(
        core.policy.small_len(core.entries()),
        1,
        "50 stays in small"
    );
    assert!(!remembered(&core, hash(50)));
    assert_eq!(core.evict_one(0, &mut kept(&core, 50)), Some((1, 1, false)));
    assert_eq!(core.evict_one(0, &mut kept(&core, 50)), Some((2, 2, false)));
    assert_eq!(
        core.evict_one(0, &mut kept(&core, 50)),
        None,
        "only the kept entry left"
    );
    assert!(core.contains(hash(50), &50, 0));
    core.check_invariants();

    // The kept entry at small's tail, another unused one ahead of it.
    let mut core = S3FifoShard::<u32, u32>::new(100);
    core.insert(hash(1), 1, 1, 1, 0, 0);
    core.insert(hash(2), 2, 2, 1, 0, 0);
    assert_eq!(core.evict_one(0, &mut kept(&core, 1)), Some((2, 2, false)));
    core.check_invariants();

    // The kept entry at main's tail, unused, another one ahead of it.
    let mut core = S3FifoShard::<u32, u32>::new(100);
    for k in [1, 2] {
        core.insert(hash(k), k, k, 1, 0, 0);
        core.get(hash(k), &k, 0).live();
    }
    core.insert(hash(4), 4, 4, 1, 0, 0);
    // 1 and 2 move to main, their uses spent; 1 leaves.
    assert_eq!(core.evict_one(0, &mut kept(&core, 99)), Some((1, 1, false)));
    core.insert(hash(3), 3, 3, 1, 0, 0);
    core.get(hash(4), &4, 0).live();
    // 4 moves to main ahead of 2 (unused, kept): 2 is passed over.
    assert_eq!(core.evict_one(0, &mut kept(&core, 2)), Some((4, 4, false)));
    assert!(core.contains(hash(2), &2, 0));
    core.check_invariants();
}

/// Entries whose keys' hashes are all equal are distinct entries: eviction
/// spares the kept one by its slot and takes every other, under each
/// policy, and stops when only the kept one is left.
#[test]
fn evict_one_spares_only_the_kept_entry_among_equal_hashes() {
    fn drain<P: super::policy::Policy>(name: &str) {
        let mut core = Shard::<u32, u32, P>::new(100);
        for k in 0..20 {
            core.insert(7, k, k, 1, 0, 0);
            if k % 3 == 0 {
                core.get(7, &k, 0).live();
            }
        }
        let mut kept = core.slot_of(7, &19);
        let mut evicted = Vec::new();
        while let Some((key, _, _)) = core.evict_one(0, &mut kept) {
            evicted.push(key);
            core.check_invariants();
            assert_eq!(kept, core.slot_of(7, &19), "{name}: the kept slot lost");
            assert!(evicted.len() < 20, "{name}: evicted {evicted:?}");
        }
        evicted.sort_unstable();
        assert_eq!(evicted, (0..19).collect::<Vec<_>>(), "{name}");
        assert_eq!(core.len(), 1, "{name}");
        assert!(core.contains(7, &19, 0), "{name}: the kept entry evicted");
    }
    drain::<Exact>("exact");
    drain::<super::SecondChance>("clock");
    drain::<S3Fifo>("s3fifo");
}
