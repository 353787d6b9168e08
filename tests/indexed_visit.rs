//! Public-API tests of `IndexedStore`'s by-index entries and visits
//! (`by_index_entries`, `for_each_by_index`, `try_for_each_by_index`): they
//! agree with `by_index` and `index_keys` on random stores, stop early,
//! report unknown indexes, survive a panicking closure, and see one
//! consistent cut while writers move objects between index values.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use larder::{IndexError, IndexedStore};
use proptest::prelude::*;

/// A small object: a namespace and a set of labels (ordered, so that
/// answers compare as sorted lists).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Obj {
    ns: u8,
    labels: BTreeSet<u8>,
}

fn store_of(objects: &BTreeMap<u16, Obj>) -> IndexedStore<u16, Obj> {
    let store = IndexedStore::builder()
        .index("ns", |o: &Obj| [o.ns.to_string()])
        .index("label", |o: &Obj| {
            o.labels.iter().map(|l| l.to_string()).collect::<Vec<_>>()
        })
        .build()
        .unwrap();
    for (k, o) in objects {
        store.insert(*k, o.clone()).unwrap();
    }
    store
}

fn objects() -> impl Strategy<Value = BTreeMap<u16, Obj>> {
    let obj = (0u8..4, proptest::collection::btree_set(0u8..6, 0..4))
        .prop_map(|(ns, labels)| Obj { ns, labels });
    proptest::collection::btree_map(0u16..200, obj, 0..60)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_forms_agree_with_by_index_and_index_keys(objects in objects(), stop_after in 1usize..8) {
        let store = store_of(&objects);
        // Values that occur and values that do not ("9", "x").
        let probes: Vec<(&str, String)> = (0..5)
            .map(|ns| ("ns", ns.to_string()))
            .chain((0..7).map(|l| ("label", l.to_string())))
            .chain([("ns", "x".to_string())])
            .collect();
        for (name, value) in &probes {
            let (name, value) = (*name, value.as_str());
            let keys = store.index_keys(name, value).unwrap();
            let mut objects_by_index: Vec<Obj> = store.by_index(name, value).unwrap();
            objects_by_index.sort_unstable();

            // by_index_entries: the same keys and the same objects, each
            // key with its own object.
            let entries = store.by_index_entries(name, value).unwrap();
            let mut entry_keys: Vec<u16> = entries.iter().map(|(k, _)| *k).collect();
            entry_keys.sort_unstable();
            prop_assert_eq!(&entry_keys, &keys);
            let mut entry_objects: Vec<Obj> = entries.iter().map(|(_, o)| o.clone()).collect();
            entry_objects.sort_unstable();
            prop_assert_eq!(&entry_objects, &objects_by_index);
            for (k, o) in &entries {
                prop_assert_eq!(Some(o.clone()), store.get(k));
                prop_assert_eq!(Some(o), objects.get(k));
            }
            let mut pairs: Vec<(u16, Obj)> = entries.clone();
            pairs.sort_unstable();

            // for_each_by_index: exactly those pairs, each once.
            let mut visited = Vec::new();
            store.for_each_by_index(name, value, |k, o| visited.push((*k, o.clone()))).unwrap();
            visited.sort_unstable();
            prop_assert_eq!(&visited, &pairs);

            // try_for_each_by_index, never stopping: the same pairs.
            let mut tried = Vec::new();
            let flow = store
                .try_for_each_by_index(name, value, |k, o| {
                    tried.push((*k, o.clone()));
                    ControlFlow::<()>::Continue(())
                })
                .unwrap();
            prop_assert_eq!(flow, ControlFlow::Continue(()));
            tried.sort_unstable();
            prop_assert_eq!(&tried, &pairs);

            // Stopping after `stop_after` calls: that many distinct pairs
            // from the answer, and a break exactly when the answer had them.
            let mut calls = Vec::new();
            let flow = store
                .try_for_each_by_index(name, value, |k, o| {
                    calls.push((*k, o.clone()));
                    if calls.len() == stop_after { ControlFlow::Break(*k) } else { ControlFlow::Continue(()) }
                })
                .unwrap();
            prop_assert_eq!(calls.len(), stop_after.min(pairs.len()));
            match flow {
                ControlFlow::Break(k) => {
                    prop_assert!(pairs.len() >= stop_after);
                    prop_assert_eq!(Some(&k), calls.last().map(|(k, _)| k));
                }
                ControlFlow::Continue(()) => prop_assert!(pairs.len() < stop_after),
            }
            let distinct: BTreeSet<_> = calls.iter().collect();
            prop_assert_eq!(distinct.len(), calls.len());
            prop_assert!(calls.iter().all(|pair| pairs.binary_search(pair).is_ok()));

            // The objects agree with the index value they were found under.
            for (_, o) in &entries {
                let has = match name {
                    "ns" => o.ns.to_string() == value,
                    _ => o.labels.iter().any(|l| l.to_string() == value),
                };
                prop_assert!(has);
            }
        }
        store.check_invariants();
    }
}

#[test]
fn a_visit_stops_at_the_first_break() {
    let store = IndexedStore::<u32, u32>::builder()
        .index("all", |_: &u32| ["all"])
        .build()
        .unwrap();
    for n in 0..1_000 {
        store.insert(n, n).unwrap();
    }
    let mut calls = 0;
    let flow = store
        .try_for_each_by_index("all", "all", |key, _| {
            calls += 1;
            if calls == 3 {
                ControlFlow::Break(*key)
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(calls, 3);
    assert!(matches!(flow, ControlFlow::Break(key) if key < 1_000));
    // A value no object has: no call, and the walk completes.
    let mut calls = 0;
    let flow = store
        .try_for_each_by_index("all", "none", |_, _| {
            calls += 1;
            ControlFlow::Break(())
        })
        .unwrap();
    assert_eq!((calls, flow), (0, ControlFlow::Continue(())));
}

#[test]
fn an_unknown_index_is_an_error_and_calls_nothing() {
    let store = IndexedStore::<u32, u32>::builder()
        .index("all", |_: &u32| ["all"])
        .build()
        .unwrap();
    store.insert(1, 1).unwrap();
    let unknown = |error: IndexError| matches!(error, IndexError::UnknownIndex { .. });
    assert!(unknown(store.by_index_entries("nope", "all").unwrap_err()));
    let mut called = false;
    assert!(unknown(
        store
            .for_each_by_index("nope", "all", |_, _| called = true)
            .unwrap_err()
    ));
    assert!(unknown(
        store
            .try_for_each_by_index("nope", "all", |_, _| {
                called = true;
                ControlFlow::<()>::Continue(())
            })
            .unwrap_err()
    ));
    assert!(!called);
}

#[test]
fn a_panicking_visit_leaves_the_store_unchanged_and_the_lock_released() {
    let _watchdog = watchdog::arm(Duration::from_secs(60));
    let store = IndexedStore::<u32, u32>::builder()
        .index("parity", |n: &u32| [(n % 2).to_string()])
        .build()
        .unwrap();
    for n in 0..20 {
        store.insert(n, n).unwrap();
    }
    let before: BTreeMap<u32, u32> = store.to_vec().into_iter().collect();
    let mut calls = 0;
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        store
            .for_each_by_index("parity", "0", |_, _| {
                calls += 1;
                assert!(calls < 3, "the visit panics");
            })
            .unwrap();
    }));
    assert!(panicked.is_err());
    assert_eq!(calls, 3);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        store
            .try_for_each_by_index("parity", "1", |_, _| -> ControlFlow<()> {
                panic!("the visit panics at once")
            })
            .unwrap()
    }));
    assert!(panicked.is_err());
    // The lock was released: a write on this thread and one on another
    // complete (a held read lock would hang them; the watchdog fails it).
    store.insert(100, 100).unwrap();
    thread::scope(|s| {
        s.spawn(|| store.remove(&100)).join().unwrap();
    });
    store.check_invariants();
    let after: BTreeMap<u32, u32> = store.to_vec().into_iter().collect();
    assert_eq!(after, before);
    assert_eq!(store.index_len("parity", "0").unwrap(), 10);
}

/// An object of the stress test: its key (so a visit can check that it got
/// each key with its own object), its group (the index value) and how many
/// times it was written.
#[derive(Clone, Debug)]
struct Item {
    key: u32,
    group: u8,
    writes: u64,
}

const WRITERS: u32 = 3;
const KEYS_PER_WRITER: u32 = 16;
const GROUPS: u8 = 4;

#[test]
fn visits_see_a_consistent_cut_while_writers_move_objects() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let store = IndexedStore::<u32, Item>::builder()
        .index("group", |item: &Item| [item.group.to_string()])
        .build()
        .unwrap();
    // Each writer owns KEYS_PER_WRITER keys, spread evenly over the groups,
    // and only ever swaps the groups of two of its own keys in one
    // transaction: every group always holds exactly `PER_GROUP` objects.
    const PER_GROUP: usize = (WRITERS * KEYS_PER_WRITER) as usize / GROUPS as usize;
    for key in 0..WRITERS * KEYS_PER_WRITER {
        let group = (key % u32::from(GROUPS)) as u8;
        store
            .insert(
                key,
                Item {
                    key,
                    group,
                    writes: 0,
                },
            )
            .unwrap();
    }
    let stop = AtomicBool::new(false);
    let visits = AtomicUsize::new(0);
    let swaps = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_millis(1_500);
    thread::scope(|s| {
        for writer in 0..WRITERS {
            let (store, stop, swaps) = (&store, &stop, &swaps);
            s.spawn(move || {
                let first = writer * KEYS_PER_WRITER;
                let mut groups: Vec<u8> = (first..first + KEYS_PER_WRITER)
                    .map(|key| (key % u32::from(GROUPS)) as u8)
                    .collect();
                let mut writes = 0;
                let mut state = u64::from(writer) + 1;
                while !stop.load(Ordering::Relaxed) {
                    // xorshift: which two of this writer's keys to swap.
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let a = (state % u64::from(KEYS_PER_WRITER)) as usize;
                    let b = ((state >> 20) % u64::from(KEYS_PER_WRITER)) as usize;
                    if groups[a] == groups[b] {
                        continue;
                    }
                    groups.swap(a, b);
                    writes += 1;
                    store
                        .transaction(|tx| -> Result<(), IndexError> {
                            for at in [a, b] {
                                let key = first + at as u32;
                                let item = Item {
                                    key,
                                    group: groups[at],
                                    writes,
                                };
                                tx.insert(key, item)?;
                            }
                            Ok(())
                        })
                        .unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for visitor in 0..3_u8 {
            let (store, stop, visits) = (&store, &stop, &visits);
            s.spawn(move || {
                let mut round = 0_u8;
                while !stop.load(Ordering::Relaxed) {
                    let group = (visitor + round) % GROUPS;
                    let value = group.to_string();
                    round = (round + 1) % GROUPS;
                    // for_each_by_index: every object in the group, each
                    // once, each with its own key.
                    let mut seen = BTreeSet::new();
                    store
                        .for_each_by_index("group", &value, |key, item| {
                            assert_eq!(item.group, group, "visited under a value it lacks");
                            assert_eq!(item.key, *key, "a key with another key's object");
                            assert!(seen.insert(*key), "key {key} visited twice");
                        })
                        .unwrap();
                    assert_eq!(seen.len(), PER_GROUP, "a torn cut: {seen:?}");
                    // by_index_entries: the same, as owned pairs.
                    let entries = store.by_index_entries("group", &value).unwrap();
                    assert_eq!(entries.len(), PER_GROUP);
                    let keys: BTreeSet<u32> = entries.iter().map(|(k, _)| *k).collect();
                    assert_eq!(keys.len(), PER_GROUP);
                    for (key, item) in &entries {
                        assert_eq!((item.key, item.group), (*key, group));
                    }
                    // try_for_each_by_index, stopping halfway.
                    let mut calls = 0;
                    let flow = store
                        .try_for_each_by_index("group", &value, |_, item| {
                            assert_eq!(item.group, group);
                            calls += 1;
                            if calls == PER_GROUP / 2 {
                                ControlFlow::Break(item.writes)
                            } else {
                                ControlFlow::Continue(())
                            }
                        })
                        .unwrap();
                    assert!(flow.is_break());
                    visits.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
    });
    store.check_invariants();
    for group in 0..GROUPS {
        assert_eq!(
            store.index_len("group", &group.to_string()).unwrap(),
            PER_GROUP
        );
    }
    assert!(visits.load(Ordering::Relaxed) > 0, "no visit ran");
    assert!(swaps.load(Ordering::Relaxed) > 0, "no write ran");
}

/// A key that knows its store: the copies `Clone` makes write to that store
/// when they are dropped (a write waits for every read lock, so a copy
/// dropped under the store's read lock would hang), and the `Clone` of a
/// stored copy of key `PANICKY` panics.
#[derive(Debug)]
struct Loyal {
    id: u32,
    store: std::sync::Weak<IndexedStore<Loyal, u32>>,
    copy: bool,
}

/// The key whose stored copy panics when cloned (none until a test sets it).
static PANICKY: AtomicU32 = AtomicU32::new(u32::MAX);

/// Copies of `Loyal` keys dropped so far.
static COPIES_DROPPED: AtomicUsize = AtomicUsize::new(0);

impl std::hash::Hash for Loyal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl PartialEq for Loyal {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Loyal {}

impl Clone for Loyal {
    fn clone(&self) -> Self {
        assert!(
            !(self.copy && self.id == PANICKY.load(Ordering::Relaxed)),
            "Clone of key {} panics",
            self.id
        );
        Self {
            id: self.id,
            store: self.store.clone(),
            copy: true,
        }
    }
}

impl Drop for Loyal {
    fn drop(&mut self) {
        if self.copy {
            COPIES_DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        if self.copy
            && let Some(store) = self.store.upgrade()
        {
            let absent = Loyal {
                id: u32::MAX,
                store: std::sync::Weak::new(),
                copy: false,
            };
            store.remove(&absent);
        }
    }
}

#[test]
fn keys_cloned_before_a_panicking_clone_are_dropped_after_the_lock_is_released() {
    let _watchdog = watchdog::arm(Duration::from_secs(30));
    let store = Arc::new(
        IndexedStore::<Loyal, u32>::builder()
            .index("all", |_: &u32| ["all"])
            .build()
            .unwrap(),
    );
    // The stored keys are copies (cloned here: the store keeps the key it
    // is given); only the copies of `PANICKY` panic when cloned again.
    for id in 0..20 {
        let key = Loyal {
            id,
            store: Arc::downgrade(&store),
            copy: false,
        };
        store.insert(key.clone(), id).unwrap();
    }
    // The second key in the bucket's order panics, so one key is cloned
    // before it whatever the hasher's seed (the order holds while nothing
    // is written).
    let order: Vec<u32> = store
        .by_index_entries("all", "all")
        .unwrap()
        .iter()
        .map(|(key, _)| key.id)
        .collect();
    PANICKY.store(order[1], Ordering::Relaxed);
    let dropped = COPIES_DROPPED.load(Ordering::Relaxed);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        store.by_index_entries("all", "all").unwrap();
    }));
    assert!(
        panicked.is_err(),
        "no Clone of key {} was reached",
        order[1]
    );
    // The key before it was cloned, and its copy was dropped, writing to
    // the store: the lock was released first.
    assert!(
        COPIES_DROPPED.load(Ordering::Relaxed) > dropped,
        "no key was cloned before the panic: the test proves nothing"
    );
    store.check_invariants();
    assert_eq!(store.len(), 20);
    assert_eq!(store.index_len("all", "all").unwrap(), 20);
}
