//! Public-API tests of `OrderedIndex` and `OrderedSnapshot` (the stress
//! tests are in `ordered_stress.rs`).

#[path = "common/ordered_configs.rs"]
mod configs;
#[path = "common/hasher.rs"]
mod hasher;
#[path = "common/watchdog.rs"]
mod watchdog;

use configs::{CONFIGS, PARTITIONED, configured, configured_with, filled};

use larder::{OrderedIndex, OrderedIndexBuilder, OrderedLock, OrderedSnapshot};
use proptest::prelude::*;
use std::cmp::Ordering as CmpOrdering;
use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, mpsc};
use std::thread;
use std::time::Duration;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn builder_settings_are_kept() {
    for config in CONFIGS {
        let index: OrderedIndex<u8, u8> = configured(config);
        assert_eq!((index.lock_kind(), index.has_point_lookups()), config);
        let leaves = (config.0 == OrderedLock::Partitioned).then_some(4);
        assert_eq!(index.leaf_size(), leaves);
    }
    let default: OrderedIndex<u8, u8> = OrderedIndex::new();
    assert_eq!(default.lock_kind(), OrderedLock::Partitioned);
    assert!(default.has_point_lookups());
    assert_eq!(default.leaf_size(), Some(128));
    assert!(format!("{:?}", OrderedIndex::<u8, u8>::builder()).contains("Partitioned"));
}

#[test]
fn public_types_are_send_and_sync() {
    assert_send_sync::<OrderedIndex<String, Vec<u8>>>();
    assert_send_sync::<OrderedSnapshot<String, Vec<u8>>>();
    assert_send_sync::<OrderedIndexBuilder<String, Vec<u8>>>();
    assert_send_sync::<OrderedLock>();
    assert_send_sync::<std::vec::IntoIter<(String, Arc<Vec<u8>>)>>();
}

fn keys<V>(entries: &[(u32, Arc<V>)]) -> Vec<u32> {
    entries.iter().map(|(k, _)| *k).collect()
}

#[test]
fn ordered_reads_and_consumption() {
    let index: OrderedIndex<u32, String> = [5, 1, 4, 2, 3]
        .into_iter()
        .map(|k| (k, format!("v{k}")))
        .collect();
    assert_eq!(index.len(), 5);
    assert_eq!(keys(&index.range_to_vec(2..=4)), [2, 3, 4]);
    assert_eq!(index.range_count((Bound::Excluded(1), Bound::Unbounded)), 4);
    assert_eq!(index.first().map(|(k, _)| k), Some(1));
    assert_eq!(
        index.last().map(|(k, v)| (k, v.to_string())),
        Some((5, "v5".into()))
    );
    let mut seen = Vec::new();
    index.for_each_in(..3, |k, v| seen.push((*k, v.clone())));
    assert_eq!(seen, [(1, "v1".to_string()), (2, "v2".to_string())]);
    assert_eq!(index.pop_last().map(|(k, _)| k), Some(5));
    assert_eq!(keys(&index.drain_to(Bound::Included(&3))), [1, 2, 3]);
    assert_eq!(keys(&index.to_vec()), [4]);
    assert!(index.contains_key(&4) && !index.contains_key(&1));
    assert_eq!(format!("{:?}", index.snapshot()), r#"{4: "v4"}"#);
    let summary = format!("{index:?}");
    assert!(summary.starts_with("OrderedIndex { len: 1, "), "{summary}");
}

#[test]
fn borrowed_lookups_work_for_string_keys() {
    let index = OrderedIndex::new();
    index.insert(String::from("b"), 2);
    index.insert(String::from("a"), 1);
    assert_eq!(index.get("a").as_deref(), Some(&1));
    assert_eq!(
        index
            .range_to_vec::<str, _>((Bound::Included("a"), Bound::Excluded("b")))
            .len(),
        1
    );
    assert_eq!(index.remove("b").as_deref(), Some(&2));
    assert_eq!(index.drain_to(Bound::Included("zzz")).len(), 1);
    assert!(index.is_empty());
}

#[test]
fn inverted_range_panics_and_poisons_nothing() {
    for config in [CONFIGS[0], PARTITIONED] {
        let index: OrderedIndex<u32, ()> = filled(config, (0..10).map(|k| (k, ())));
        #[allow(clippy::reversed_empty_ranges)]
        let outcome = catch_unwind(AssertUnwindSafe(|| index.range_to_vec(5..2)));
        assert!(outcome.is_err());
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            index.range_count((Bound::Excluded(3), Bound::Excluded(3)))
        }));
        assert!(outcome.is_err());
        index.insert(20, ());
        assert_eq!(index.len(), 11);
        assert_eq!(index.range_to_vec(2..5).len(), 3);
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, u16),
    Remove(u8),
    Get(u8),
    PopFirst,
    PopLast,
    DrainTo(u8, u8),
    Range(u8, u8),
    Retain(u8),
    Clear,
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..40u8, any::<u16>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => (0..40u8).prop_map(Op::Remove),
        2 => (0..40u8).prop_map(Op::Get),
        1 => Just(Op::PopFirst),
        1 => Just(Op::PopLast),
        1 => (0..3u8, 0..40u8).prop_map(|(kind, k)| Op::DrainTo(kind, k)),
        2 => (0..40u8, 0..40u8).prop_map(|(a, b)| Op::Range(a.min(b), a.max(b))),
        1 => (2..5u8).prop_map(Op::Retain),
        1 => Just(Op::Clear),
        2 => Just(Op::Snapshot),
    ]
}

fn bound(kind: u8, key: &u8) -> Bound<&u8> {
    match kind {
        0 => Bound::Included(key),
        1 => Bound::Excluded(key),
        _ => Bound::Unbounded,
    }
}

fn contents<V: Copy>(snapshot: &OrderedSnapshot<u8, V>) -> Vec<(u8, V)> {
    snapshot.iter().map(|(k, v)| (*k, **v)).collect()
}

/// A snapshot and the contents it was taken with.
type KeptSnapshot = (OrderedSnapshot<u8, u16>, Vec<(u8, u16)>);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every operation agrees with `BTreeMap`, and every snapshot keeps the
    /// contents it was taken with however the index changes afterwards.
    /// With keys whose hashes collide (all one hash, or two) the point
    /// table is a list, and every answer is the same.
    #[test]
    fn agrees_with_btreemap(
        config in 0..CONFIGS.len(),
        collide in prop_oneof![
            Just(hasher::Collide::Not),
            Just(hasher::Collide::All),
            Just(hasher::Collide::Two),
        ],
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let _watchdog = watchdog::arm(std::time::Duration::from_secs(60));
        let index: OrderedIndex<u8, u16, _> =
            configured_with(CONFIGS[config], hasher::TestState::colliding(collide));
        let mut model: BTreeMap<u8, u16> = BTreeMap::new();
        let mut snapshots: Vec<KeptSnapshot> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    prop_assert_eq!(index.insert(k, v).map(|v| *v), model.insert(k, v));
                }
                Op::Remove(k) => prop_assert_eq!(index.remove(&k).map(|v| *v), model.remove(&k)),
                Op::Get(k) => {
                    prop_assert_eq!(index.get(&k).map(|v| *v), model.get(&k).copied());
                    prop_assert_eq!(index.get_with(&k, |v| *v), model.get(&k).copied());
                    prop_assert_eq!(index.contains_key(&k), model.contains_key(&k));
                }
                Op::PopFirst => {
                    prop_assert_eq!(index.first().map(|(k, v)| (k, *v)), model.first_key_value().map(|(k, v)| (*k, *v)));
                    prop_assert_eq!(index.pop_first().map(|(k, v)| (k, *v)), model.pop_first());
                }
                Op::PopLast => {
                    prop_assert_eq!(index.last().map(|(k, v)| (k, *v)), model.last_key_value().map(|(k, v)| (*k, *v)));
                    prop_assert_eq!(index.pop_last().map(|(k, v)| (k, *v)), model.pop_last());
                }
                Op::DrainTo(kind, k) => {
                    let got: Vec<(u8, u16)> = index.drain_to(bound(kind, &k)).into_iter().map(|(k, v)| (k, *v)).collect();
                    let taken: Vec<u8> = model.range((Bound::Unbounded, bound(kind, &k))).map(|(k, _)| *k).collect();
                    let expected: Vec<(u8, u16)> = taken.iter().map(|k| (*k, model.remove(k).unwrap())).collect();
                    prop_assert_eq!(got, expected);
                }
                Op::Range(a, b) => {
                    let got: Vec<(u8, u16)> = index.range_to_vec(a..b).into_iter().map(|(k, v)| (k, *v)).collect();
                    let expected: Vec<(u8, u16)> = model.range(a..b).map(|(k, v)| (*k, *v)).collect();
                    prop_assert_eq!(index.range_count(a..b), expected.len());
                    let mut visited = Vec::new();
                    index.for_each_in(a..b, |k, v| visited.push((*k, *v)));
                    prop_assert_eq!(&got, &expected);
                    prop_assert_eq!(&visited, &expected);
                    // The first `n` of the range, and a walk stopped after `n`.
                    let n = usize::from(a % 7);
                    let page: Vec<(u8, u16)> = index.range_take(a..b, n).into_iter().map(|(k, v)| (k, *v)).collect();
                    prop_assert_eq!(&page[..], &expected[..n.min(expected.len())]);
                    let mut walked = Vec::new();
                    let stopped = index.try_for_each_in(a.., |k, v| {
                        walked.push((*k, *v));
                        if walked.len() > n { ControlFlow::Break(*k) } else { ControlFlow::Continue(()) }
                    });
                    let tail: Vec<(u8, u16)> = model.range(a..).map(|(k, v)| (*k, *v)).take(n + 1).collect();
                    prop_assert_eq!(&walked, &tail);
                    let expected_stop = if tail.len() > n { ControlFlow::Break(tail[n].0) } else { ControlFlow::Continue(()) };
                    prop_assert_eq!(stopped, expected_stop);
                }
                Op::Retain(m) => {
                    index.retain(|k, v| (u32::from(*k) + u32::from(*v)) % u32::from(m) != 0);
                    model.retain(|k, v| (u32::from(*k) + u32::from(*v)) % u32::from(m) != 0);
                }
                Op::Clear => {
                    index.clear();
                    model.clear();
                }
                Op::Snapshot => {
                    let view = index.snapshot();
                    let now: Vec<(u8, u16)> = model.iter().map(|(k, v)| (*k, *v)).collect();
                    prop_assert_eq!(contents(&view), now.clone());
                    snapshots.push((view, now));
                }
            }
            prop_assert_eq!(index.len(), model.len());
            prop_assert_eq!(index.is_empty(), model.is_empty());
            let all: Vec<(u8, u16)> = index.to_vec().into_iter().map(|(k, v)| (k, *v)).collect();
            prop_assert_eq!(all, model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
            for (view, taken) in &snapshots {
                prop_assert_eq!(&contents(view), taken, "a snapshot changed");
            }
        }
    }
}

#[test]
fn panicking_retain_removes_nothing() {
    let index: OrderedIndex<u32, u32> = (0..10).map(|k| (k, k)).collect();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        index.retain(|k, _| {
            if *k == 5 {
                panic!("user predicate failed")
            } else {
                false
            }
        });
    }));
    assert!(outcome.is_err());
    assert_eq!(
        index.len(),
        10,
        "retain removed entries before its predicate finished"
    );
    index.retain(|k, _| k % 2 == 0);
    assert_eq!(index.len(), 5);
}

#[test]
fn retain_keeps_entries_replaced_while_it_decides() {
    let index: OrderedIndex<u32, u32> = (0..4).map(|k| (k, 0)).collect();
    index.retain(|k, _| {
        if *k == 0 {
            // A concurrent writer replaces key 3 while the predicate runs.
            index.insert(3, 99);
        }
        false
    });
    let left: Vec<(u32, u32)> = index.to_vec().into_iter().map(|(k, v)| (k, *v)).collect();
    assert_eq!(
        left,
        [(3, 99)],
        "retain removed an entry it never looked at"
    );
}

#[test]
fn panicking_for_each_in_releases_the_lock() {
    let index: OrderedIndex<u32, u32> = (0..10).map(|k| (k, k)).collect();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        index.for_each_in(.., |k, _| assert!(*k < 3, "visitor failed"));
    }));
    assert!(outcome.is_err());
    index.insert(10, 10); // would deadlock if the read lock were still held
    assert_eq!(index.len(), 11);
}

#[test]
fn panicking_view_releases_the_lock() {
    let index: OrderedIndex<u32, u32> = (0..10).map(|k| (k, k)).collect();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        index.get_with(&4, |_| panic!("reader failed"));
    }));
    assert!(outcome.is_err());
    index.insert(10, 10); // would deadlock if the read lock were still held
    assert_eq!(index.get_with(&10, |v| v + 1), Some(11));
    assert_eq!(index.len(), 11);
}

/// A key whose `Ord` and `Clone` panic on demand.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Touchy(u32);
static PANIC_IN_CMP: AtomicBool = AtomicBool::new(false);
static PANIC_IN_CLONE: AtomicBool = AtomicBool::new(false);

impl Ord for Touchy {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        assert!(!PANIC_IN_CMP.load(Ordering::Relaxed), "cmp panicked");
        self.0.cmp(&other.0)
    }
}
impl PartialOrd for Touchy {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Clone for Touchy {
    fn clone(&self) -> Self {
        assert!(!PANIC_IN_CLONE.load(Ordering::Relaxed), "clone panicked");
        Touchy(self.0)
    }
}

/// One test drives both flags, so no other test sees them set.
#[test]
fn panicking_key_code_leaves_the_index_unchanged_and_unpoisoned() {
    // The partitioned engine first (leaves of four: its eight entries span
    // leaves, so `drain_to` locks several before it compares).
    let leaves: OrderedIndex<Touchy, u32> = filled(PARTITIONED, (0..8).map(|k| (Touchy(k), k)));
    panicking_cmp_changes_nothing(&leaves);
    // A panicking `clone` of the key that would become a leaf bound: the
    // insert lands, the split waits for the next write.
    PANIC_IN_CLONE.store(true, Ordering::Relaxed);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        for k in 8..12 {
            leaves.insert(Touchy(k), k);
        }
    }));
    PANIC_IN_CLONE.store(false, Ordering::Relaxed);
    assert!(outcome.is_err(), "no split was attempted");
    let keys: Vec<u32> = leaves.to_vec().into_iter().map(|(k, _)| k.0).collect();
    assert_eq!(keys.len(), 8 + keys.iter().filter(|k| **k >= 8).count());
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "unsorted after a failed split"
    );
    leaves.insert(Touchy(100), 100);
    assert_eq!(leaves.pop_last().map(|(k, _)| k.0), Some(100));

    // The single-lock engine, whose snapshots share its map.
    let index: OrderedIndex<Touchy, u32> = filled(CONFIGS[0], (0..8).map(|k| (Touchy(k), k)));
    panicking_cmp_changes_nothing(&index);
    // A live snapshot makes the next write copy the map, which clones keys.
    let view = index.snapshot();
    PANIC_IN_CLONE.store(true, Ordering::Relaxed);
    let outcome = catch_unwind(AssertUnwindSafe(|| index.pop_first()));
    PANIC_IN_CLONE.store(false, Ordering::Relaxed);
    assert!(outcome.is_err());
    assert_eq!(index.len(), 8, "a failed copy-on-write changed the index");
    assert_eq!(view.len(), 8);
    assert_eq!(index.pop_first().map(|(k, v)| (k.0, *v)), Some((0, 0)));
    assert_eq!(
        view.first().map(|(k, _)| k.0),
        Some(0),
        "a write showed through a snapshot"
    );
    assert_eq!(index.len(), 7);
}

/// An insert, a remove and a `drain_to` whose `cmp` panics leave `index`
/// as it was.
fn panicking_cmp_changes_nothing(index: &OrderedIndex<Touchy, u32>) {
    let before: Vec<u32> = index.to_vec().into_iter().map(|(k, _)| k.0).collect();
    PANIC_IN_CMP.store(true, Ordering::Relaxed);
    for attempt in [0, 1, 2] {
        let outcome = catch_unwind(AssertUnwindSafe(|| match attempt {
            0 => {
                index.insert(Touchy(100), 100);
            }
            1 => {
                index.remove(&Touchy(3));
            }
            _ => {
                index.drain_to(Bound::Included(&Touchy(4)));
            }
        }));
        assert!(outcome.is_err(), "attempt {attempt} did not reach cmp");
    }
    PANIC_IN_CMP.store(false, Ordering::Relaxed);
    assert_eq!(
        index
            .to_vec()
            .into_iter()
            .map(|(k, _)| k.0)
            .collect::<Vec<_>>(),
        before
    );
}

/// A key whose `Ord` is random: the index must stay usable and account for
/// every entry through the operations that do not search.
#[derive(Clone, Debug)]
struct Erratic(u32);
static ERRATIC_SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

impl Ord for Erratic {
    fn cmp(&self, _other: &Self) -> CmpOrdering {
        let mut x = ERRATIC_SEED.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ERRATIC_SEED.store(x, Ordering::Relaxed);
        match x % 3 {
            0 => CmpOrdering::Less,
            1 => CmpOrdering::Equal,
            _ => CmpOrdering::Greater,
        }
    }
}
impl PartialOrd for Erratic {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
/// As erratic as its `Ord`: one of four hashes, at random, on every call
/// (few hashes, so that lookups probe every slot and would meet a stale
/// one).
impl std::hash::Hash for Erratic {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let x = ERRATIC_SEED.load(Ordering::Relaxed);
        state.write_u64((x >> 7) % 4);
    }
}
impl PartialEq for Erratic {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Erratic {}

#[test]
fn inconsistent_ord_poisons_nothing() {
    for config in [CONFIGS[0], PARTITIONED] {
        erratic_keys_are_all_accounted_for(configured(config));
    }
}

fn erratic_keys_are_all_accounted_for(index: OrderedIndex<Erratic, u32>) {
    // The partitioned engine builds a snapshot's map key by key, so with
    // this `Ord` a key of the snapshot may replace another's entry.
    let exact_snapshot = index.lock_kind() != OrderedLock::Partitioned;
    let mut inserted = 0;
    for i in 0..300 {
        if index.insert(Erratic(i), i).is_none() {
            inserted += 1;
        }
        if i % 50 == 0 {
            // May panic ("range start is greater than range end"): that
            // unwinds out of this call only.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                index.range_to_vec(Erratic(0)..Erratic(1)).len()
            }));
        }
        index.get(&Erratic(i));
        if i % 7 == 0 {
            index.remove(&Erratic(i));
        }
    }
    let len = index.len();
    assert!(len <= inserted);
    assert_eq!(index.to_vec().len(), len, "iter disagrees with len");
    let view = index.snapshot();
    let mut popped = 0;
    // An insert that compared `Equal` replaced another key's value (keeping
    // that key), so keys and values may be paired arbitrarily; the count of
    // stored entries is what must hold.
    while let Some((key, _)) = index.pop_first() {
        assert!(key.0 < 300, "a key that was never inserted");
        popped += 1;
    }
    assert_eq!(
        popped, len,
        "pop_first did not hand out every stored entry once"
    );
    // The point-lookup table kept in step with the tree although the keys'
    // hashes changed at random: now that the tree is empty, no lookup finds
    // anything (a stale slot would be met, and the erratic `Eq` says
    // `Equal` one time in three).
    for i in 0..300 {
        assert!(index.get(&Erratic(i)).is_none(), "a stale lookup entry");
    }
    if exact_snapshot {
        assert_eq!(view.len(), len);
    } else {
        assert!((1..=len).contains(&view.len()));
    }
    index.insert(Erratic(1), 1);
    assert_eq!(index.drain_to(Bound::Unbounded).len(), 1);
}

/// A value whose `Drop` writes to the index it was stored in: it would
/// deadlock if the index dropped values under its lock.
struct Reentrant(u32);
static REENTRANT: OnceLock<OrderedIndex<u32, Reentrant>> = OnceLock::new();

impl Drop for Reentrant {
    fn drop(&mut self) {
        if self.0 < 1_000 {
            let index = REENTRANT.get().expect("index initialized");
            index.insert(self.0 + 1_000, Reentrant(self.0 + 1_000));
        }
    }
}

#[test]
fn removed_values_are_dropped_outside_the_lock() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let index = REENTRANT.get_or_init(OrderedIndex::new);
        for k in 0..6 {
            index.insert(k, Reentrant(k));
        }
        index.retain(|k, _| *k >= 2); // drops 0 and 1: inserts 1000, 1001
        index.insert(2, Reentrant(2_000)); // the replaced value 2 comes back
        index.clear(); // drops 2..6 and 1000, 1001: inserts 1003..1005
        let keys: Vec<u32> = index.to_vec().into_iter().map(|(k, _)| k).collect();
        tx.send(keys).unwrap();
    });
    let keys = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("dropping a removed value deadlocked: it ran under the lock");
    assert_eq!(keys, [1_003, 1_004, 1_005]);
}
