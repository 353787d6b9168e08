//! Unit tests of the sequential core and of the wrapper's copy-on-write.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::sequential::OrderedCore;
use super::*;

/// The tests' key hash: the key itself (the table needs no better).
fn h(key: &u32) -> u64 {
    u64::from(*key)
}

fn core_of(keys: impl IntoIterator<Item = u32>) -> OrderedCore<u32, u32> {
    OrderedCore::from_map(keys.into_iter().map(|k| (k, Arc::new(k * 10))).collect(), h)
}

/// Inserts through the core as the wrapper does: hash and key clone first.
fn put(core: &mut OrderedCore<u32, u32>, key: u32, value: u32) -> Option<Arc<u32>> {
    core.insert(Some((h(&key), key)), key, Arc::new(value)).0
}

fn take(core: &mut OrderedCore<u32, u32>, key: u32) -> Option<(u32, Arc<u32>)> {
    core.remove(h(&key), &key)
}

fn keys(entries: &[(u32, Arc<u32>)]) -> Vec<u32> {
    entries.iter().map(|(k, _)| *k).collect()
}

#[test]
fn drain_to_respects_each_bound_kind() {
    let mut core = core_of(1..=10);
    assert!(core.drain_to(Bound::Excluded(&1), h).is_empty());
    assert_eq!(keys(&core.drain_to(Bound::Excluded(&3), h)), [1, 2]);
    assert_eq!(keys(&core.drain_to(Bound::Included(&4), h)), [3, 4]);
    assert_eq!(
        keys(&core.drain_to(Bound::Included(&4), h)),
        Vec::<u32>::new()
    );
    assert_eq!(
        keys(&core.drain_to(Bound::Unbounded, h)),
        [5, 6, 7, 8, 9, 10]
    );
    assert!(core.map().is_empty());
    core.check_invariants();
}

#[test]
fn drain_to_past_the_end_takes_everything() {
    let mut core = core_of([5, 1, 3]);
    let drained = core.drain_to(Bound::Included(&100), h);
    assert_eq!(keys(&drained), [1, 3, 5]);
    assert_eq!(*drained[2].1, 50);
    assert!(core.map().is_empty());
}

#[test]
fn writes_copy_a_shared_map_once_and_never_change_it() {
    let mut core = core_of(0..4);
    let shared = core.share();
    put(&mut core, 9, 90);
    let retired = core.take_retired();
    assert_eq!(
        retired.maps().len(),
        1,
        "the shared version was not displaced"
    );
    assert!(Arc::ptr_eq(&retired.maps()[0], &shared));
    drop(retired);
    assert_eq!(shared.len(), 4, "a snapshot changed");
    // The copy is now unshared: the next write is in place.
    take(&mut core, 0);
    assert!(core.take_retired().is_empty());
    assert_eq!(core.map().len(), 4);
    assert_eq!(shared.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
    core.check_invariants();
}

#[test]
fn writes_that_change_nothing_do_not_copy() {
    let mut core = core_of(5..8);
    let shared = core.share();
    assert!(take(&mut core, 1).is_none());
    assert!(core.drain_to(Bound::Excluded(&5), h).is_empty());
    let stale = vec![(h(&6), (6, Arc::new(60)))]; // same key, different value
    assert!(core.remove_identical(&stale).is_empty());
    assert!(core.take_retired().is_empty());
    assert_eq!(core.share().len(), 3);
    assert!(Arc::ptr_eq(&core.share(), &shared));
    let mut empty: OrderedCore<u32, u32> = OrderedCore::new(true);
    let _view = empty.share();
    assert!(empty.pop_first(h).is_none() && empty.pop_last(h).is_none());
    assert!(empty.take_retired().is_empty());
}

#[test]
fn remove_identical_skips_replaced_entries() {
    let mut core = core_of(0..3);
    let seen: Vec<_> = core
        .range_cloned(..)
        .into_iter()
        .map(|e| (h(&e.0), e))
        .collect();
    put(&mut core, 1, 111); // replaced after the look
    take(&mut core, 2); // removed after the look
    let removed = core.remove_identical(&seen);
    assert_eq!(keys(&removed), [0]);
    assert_eq!(core.map().get(&1).map(|v| **v), Some(111));
    assert_eq!(core.map().len(), 1);
    core.check_invariants();
}

#[test]
fn insert_hands_back_the_new_key_of_a_replacement() {
    let mut core: OrderedCore<String, u8> = OrderedCore::new(true);
    let a = || String::from("a");
    assert_eq!(core.insert(Some((1, a())), a(), Arc::new(1)), (None, None));
    let (old, key) = core.insert(Some((1, a())), a(), Arc::new(2));
    assert_eq!(old.as_deref(), Some(&1));
    assert_eq!(key.as_deref(), Some("a"));
    // The replaced slot's key clone is retired, to be dropped unlocked.
    assert!(!core.take_retired().is_empty());
    assert_eq!(core.lookup(1, "a").map(|v| **v), Some(2));
    let mut plain: OrderedCore<u32, u32> = OrderedCore::new(true);
    put(&mut plain, 1, 1);
    assert_eq!(put(&mut plain, 1, 2).as_deref(), Some(&1));
    plain.check_invariants();
}

#[test]
fn clear_retires_the_old_map() {
    let mut core = core_of(0..3);
    core.clear();
    assert_eq!(
        core.take_retired()
            .maps()
            .iter()
            .map(|m| m.len())
            .collect::<Vec<_>>(),
        [3]
    );
    core.clear();
    assert!(core.take_retired().is_empty());
    core.check_invariants();
}

#[test]
fn core_matches_btreemap_on_a_fixed_sequence() {
    let mut core: OrderedCore<u32, u32> = OrderedCore::new(true);
    let mut model: BTreeMap<u32, u32> = BTreeMap::new();
    let mut seed = 7_u64;
    for step in 0..2_000_u32 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = ((seed >> 33) % 64) as u32;
        match (seed >> 20) % 6 {
            0 | 1 => {
                let got = put(&mut core, key, step).map(|v| *v);
                assert_eq!(got, model.insert(key, step));
            }
            2 => assert_eq!(
                take(&mut core, key).map(|(k, v)| (k, *v)),
                model.remove_entry(&key)
            ),
            3 => assert_eq!(core.pop_first(h).map(|(k, v)| (k, *v)), model.pop_first()),
            4 => {
                let got: Vec<_> = core
                    .drain_to(Bound::Included(&(key / 4)), h)
                    .into_iter()
                    .map(|(k, v)| (k, *v))
                    .collect();
                let rest = model.split_off(&(key / 4 + 1));
                let expected: Vec<_> = std::mem::replace(&mut model, rest).into_iter().collect();
                assert_eq!(got, expected);
            }
            _ => {
                let _view = core.share(); // forces the next write to copy
            }
        }
        drop(core.take_retired());
        core.check_invariants();
        let now: Vec<_> = core.map().iter().map(|(k, v)| (*k, **v)).collect();
        assert_eq!(now, model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
        assert_eq!(
            core.lookup(h(&key), &key).map(|v| **v),
            model.get(&key).copied(),
            "the table disagrees with the tree"
        );
    }
}

#[test]
fn a_key_whose_hash_changed_is_still_removed_from_the_table() {
    let mut core: OrderedCore<u32, u32> = OrderedCore::new(true);
    core.insert(Some((1, 7)), 7, Arc::new(70));
    core.insert(Some((2, 8)), 8, Arc::new(80));
    // Removed with another hash than it was inserted with (an inconsistent
    // `Hash`): the slot is found by the identity of its value.
    assert_eq!(core.remove(u64::MAX - 5, &7).map(|(k, _)| k), Some(7));
    assert_eq!(core.pop_first(|_| 0xABCD << 48).map(|(k, _)| k), Some(8));
    core.check_invariants();
    assert!(core.lookup(1, &7).is_none() && core.lookup(2, &8).is_none());
}

#[test]
fn snapshot_outlives_writes_and_clear() {
    let index: OrderedIndex<u32, String> = (0..5).map(|k| (k, k.to_string())).collect();
    let view = index.snapshot();
    index.clear();
    index.insert(9, "nine".into());
    assert_eq!(view.len(), 5);
    assert_eq!(view.first().map(|(k, v)| (*k, v.as_str())), Some((0, "0")));
    let keys: Vec<u32> = index.to_vec().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, [9]);
    assert_eq!(format!("{:?}", index.snapshot()), r#"{9: "nine"}"#);
    let summary = format!("{index:?}");
    assert!(summary.starts_with("OrderedIndex { len: 1, "), "{summary}");
    assert_eq!(
        format!("{view:?}"),
        r#"{0: "0", 1: "1", 2: "2", 3: "3", 4: "4"}"#
    );
}

/// A key whose `Ord` and `Hash` answer at random (an `Eq` from the same
/// `Ord`): the tree and the point-lookup table must still hold the same
/// entries after every operation.
#[derive(Clone, Debug)]
struct Random(#[allow(dead_code)] u32);

static RANDOM_SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0x2545_F491);

fn next_random() -> u64 {
    use std::sync::atomic::Ordering::Relaxed;
    let mut x = RANDOM_SEED.load(Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    RANDOM_SEED.store(x, Relaxed);
    x
}

impl Ord for Random {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        [
            std::cmp::Ordering::Less,
            std::cmp::Ordering::Equal,
            std::cmp::Ordering::Greater,
        ][(next_random() % 3) as usize]
    }
}
impl PartialOrd for Random {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Random {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Random {}
impl std::hash::Hash for Random {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(next_random() % 8);
    }
}

#[test]
fn random_ord_and_hash_keep_tree_and_table_in_step() {
    let index: OrderedIndex<Random, u32> = OrderedIndex::builder()
        .lock(OrderedLock::Sharded)
        .build()
        .unwrap();
    for i in 0..400_u32 {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match i % 9 {
            0..=3 => drop(index.insert(Random(i), i)),
            4 => drop(index.remove(&Random(i))),
            5 => drop(index.pop_first()),
            6 => drop(index.drain_to(Bound::Included(&Random(i)))),
            7 => index.retain(|_, v| v % 3 != 0),
            _ => drop(index.get(&Random(i))),
        }));
        locked(&index).read().check_table_in_step();
    }
    while index.pop_last().is_some() {}
    locked(&index).read().check_table_in_step();
    assert!(index.is_empty());
}

/// The locked core of an index built with one of the single-lock engines.
fn locked<K, V, S>(index: &OrderedIndex<K, V, S>) -> &CoreLock<OrderedCore<K, V>> {
    match &index.engine {
        Engine::Locked(core) => core,
        Engine::Partitioned(_) => panic!("not a locked index"),
    }
}

/// The leaves of an index built with `OrderedLock::Partitioned`.
fn parts<K, V, S>(index: &OrderedIndex<K, V, S>) -> &Partitioned<K, V> {
    match &index.engine {
        Engine::Partitioned(parts) => parts,
        Engine::Locked(_) => panic!("not a partitioned index"),
    }
}

fn partitioned<K, V>(leaf_size: usize) -> OrderedIndex<K, V> {
    OrderedIndex::builder()
        .lock(OrderedLock::Partitioned)
        .leaf_size(leaf_size)
        .build()
        .unwrap()
}

#[test]
fn partitioned_matches_a_btreemap_and_keeps_its_layout() {
    for point_lookups in [true, false] {
        let index: OrderedIndex<u32, u32> = OrderedIndex::builder()
            .lock(OrderedLock::Partitioned)
            .leaf_size(4)
            .point_lookups(point_lookups)
            .build()
            .unwrap();
        assert_eq!(index.has_point_lookups(), point_lookups);
        matches_a_btreemap(&index);
    }
}

fn matches_a_btreemap(index: &OrderedIndex<u32, u32>) {
    let mut model: BTreeMap<u32, u32> = BTreeMap::new();
    let mut max_leaves = 0;
    for step in 0..6000_u32 {
        let r = next_random();
        let key = (r >> 8) as u32 % 300;
        let other = (r >> 40) as u32 % 300;
        let (lo, hi) = (key.min(other), key.max(other));
        match r % 16 {
            0..=5 => assert_eq!(
                index.insert(key, step).map(|v| *v),
                model.insert(key, step),
                "insert {key}"
            ),
            6..=8 => assert_eq!(
                index.remove(&key).map(|v| *v),
                model.remove(&key),
                "remove {key}"
            ),
            9 => assert_eq!(
                index.pop_first().map(|(k, v)| (k, *v)),
                model.pop_first(),
                "pop_first"
            ),
            10 => assert_eq!(
                index.pop_last().map(|(k, v)| (k, *v)),
                model.pop_last(),
                "pop_last"
            ),
            11 => {
                let drained: Vec<(u32, u32)> = index
                    .drain_to(Bound::Excluded(&key))
                    .into_iter()
                    .map(|(k, v)| (k, *v))
                    .collect();
                let rest = model.split_off(&key);
                let expected: Vec<(u32, u32)> =
                    std::mem::replace(&mut model, rest).into_iter().collect();
                assert_eq!(drained, expected, "drain_to < {key}");
            }
            12 => {
                let got: Vec<u32> = index
                    .range_to_vec(lo..=hi)
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                let want: Vec<u32> = model.range(lo..=hi).map(|(k, _)| *k).collect();
                assert_eq!(got, want, "range {lo}..={hi}");
                assert_eq!(index.range_count(lo..hi), model.range(lo..hi).count());
            }
            13 => {
                assert_eq!(index.first().map(|(k, _)| k), model.keys().next().copied());
                assert_eq!(
                    index.last().map(|(k, _)| k),
                    model.keys().next_back().copied()
                );
            }
            14 => assert_eq!(index.get(&key).map(|v| *v), model.get(&key).copied()),
            _ => {
                let snapshot = index.snapshot();
                let got: Vec<(u32, u32)> = snapshot.iter().map(|(k, v)| (*k, **v)).collect();
                let want: Vec<(u32, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(got, want, "snapshot");
            }
        }
        assert_eq!(index.len(), model.len());
        assert_eq!(index.is_empty(), model.is_empty());
        parts(index).check_invariants();
        max_leaves = max_leaves.max(parts(index).leaf_count());
    }
    assert!(
        max_leaves > 8,
        "the run split leaves ({max_leaves} at most)"
    );
}

#[test]
fn partitioned_snapshot_is_a_copy_on_write_cut() {
    let index: OrderedIndex<u32, u32> = partitioned(4);
    for k in 0..40 {
        index.insert(k, k);
    }
    let before = index.snapshot();
    for k in 0..40 {
        if k % 3 == 0 {
            index.remove(&k);
        } else {
            index.insert(k, k + 100);
        }
    }
    index.insert(1000, 0);
    assert_eq!(before.len(), 40);
    assert!(before.iter().all(|(k, v)| **v == *k));
    assert_eq!(index.len(), 40 - 14 + 1);
    assert_eq!(index.get(&1).as_deref(), Some(&101));
    parts(&index).check_invariants();
}

/// A partitioned index bulk-built (as `FromIterator` builds one) from keys
/// `0..n`.
fn bulk(n: u32, leaf_size: usize) -> OrderedIndex<u32, u32> {
    OrderedIndex::builder()
        .lock(OrderedLock::Partitioned)
        .leaf_size(leaf_size)
        .build_from((0..n).map(|k| (k, Arc::new(k))).collect())
}

fn remove_all(index: &OrderedIndex<u32, u32>, keys: std::ops::Range<u32>) {
    for key in keys {
        assert!(index.remove(&key).is_some(), "remove {key}");
    }
}

#[test]
fn a_bulk_build_fills_leaves_to_three_quarters() {
    let index = bulk(100, 16);
    parts(&index).check_invariants();
    assert_eq!(
        parts(&index).leaf_lens(),
        [12, 12, 12, 12, 12, 12, 12, 12, 4]
    );
    let index = bulk(5, 2);
    parts(&index).check_invariants();
    assert_eq!(parts(&index).leaf_lens(), [1, 1, 1, 1, 1]);
    let index = bulk(0, 16);
    parts(&index).check_invariants();
    assert_eq!(parts(&index).leaf_lens(), [0]);
}

/// A leaf a removal leaves at a quarter of the capacity merges into its
/// right neighbour if the two fill at most half a leaf, else into its left
/// one, else stays.
#[test]
fn a_quarter_full_leaf_merges_with_a_neighbour_that_fits() {
    // Leaves of 12 (capacity 16): a quarter is 4, half a leaf 8.
    let index = bulk(36, 16);
    remove_all(&index, 0..9); // leaf 0: 4 (too big for leaf 1), then 3
    remove_all(&index, 24..33); // leaf 2: 4 (too big for leaf 1), then 3
    assert_eq!(parts(&index).leaf_lens(), [3, 12, 3]);
    // Leaf 1 at 5 would fit beside 3, but only reaching a quarter (or 0)
    // asks for a merge.
    remove_all(&index, 12..19);
    assert_eq!(parts(&index).leaf_lens(), [3, 5, 3]);
    remove_all(&index, 19..20); // leaf 1 at 4: 4 + 3 fits its right neighbour
    assert_eq!(parts(&index).leaf_lens(), [3, 7]);
    parts(&index).check_invariants();

    // The last leaf has no right neighbour: it merges left.
    let index = bulk(24, 16);
    remove_all(&index, 0..9);
    remove_all(&index, 12..20);
    assert_eq!(parts(&index).leaf_lens(), [7]);
    parts(&index).check_invariants();
    assert_eq!(index.len(), 7);
}

#[test]
fn partitioned_random_ord_accounts_for_every_entry() {
    let index: OrderedIndex<Random, u32> = partitioned(4);
    let mut stored = 0_usize;
    for i in 0..600_u32 {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match i % 9 {
            0..=3 => drop(index.insert(Random(i), i)),
            4 => drop(index.remove(&Random(i))),
            5 => drop(index.pop_first()),
            6 => drop(index.drain_to(Bound::Included(&Random(i)))),
            7 => drop(index.range_to_vec(Random(i)..)),
            _ => drop(index.get(&Random(i))),
        }));
        stored = index.len();
    }
    // Whatever the order did, every stored entry is popped exactly once.
    let mut popped = 0;
    while index.pop_last().is_some() {
        popped += 1;
    }
    assert_eq!(popped, stored);
    assert!(index.is_empty());
    assert_eq!(parts(&index).leaf_count(), 1);
}

/// A key whose `clone` panics while `CLONE_PANICS` is set.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Brittle(u32);

static CLONE_PANICS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Clone for Brittle {
    fn clone(&self) -> Self {
        if CLONE_PANICS.load(std::sync::atomic::Ordering::Relaxed) {
            panic!("clone of key {}", self.0);
        }
        Brittle(self.0)
    }
}

#[test]
fn partitioned_panicking_clone_loses_nothing() {
    use std::sync::atomic::Ordering::Relaxed;
    // Without the point-lookup table, which would clone the key before
    // locking (and so fail before anything changes).
    let index: OrderedIndex<Brittle, u32> = OrderedIndex::builder()
        .lock(OrderedLock::Partitioned)
        .leaf_size(4)
        .point_lookups(false)
        .build()
        .unwrap();
    for k in 0..4 {
        index.insert(Brittle(k), k);
    }
    // The fifth insert overfills the leaf: it clones the key its split
    // will need before its first change, so the panic leaves the index as
    // it was.
    CLONE_PANICS.store(true, Relaxed);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        index.insert(Brittle(4), 4);
    }));
    CLONE_PANICS.store(false, Relaxed);
    assert!(result.is_err());
    let keys: Vec<u32> = index.to_vec().into_iter().map(|(k, _)| k.0).collect();
    assert_eq!(keys, [0, 1, 2, 3], "the panicking insert changed nothing");
    parts(&index).check_invariants();
    // Inserts work again, and split the leaf as they should.
    index.insert(Brittle(4), 4);
    index.insert(Brittle(5), 5);
    parts(&index).check_invariants();
    assert!(parts(&index).leaf_count() >= 2);
    assert_eq!(index.len(), 6);
}
