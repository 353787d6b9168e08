//! Public-API tests of `IndexedStore`: a proptest against a sequential model
//! whose indexes are recomputed from scratch after every step, panic safety
//! with panicking index functions and hashes (where `Eq` panics and `Drop`
//! run against the locks: `indexed_drop_order.rs`), and a time-bounded
//! stress test with more threads than cores.

#[path = "common/hasher.rs"]
mod hasher;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use larder::{BuildError, IndexError, IndexedStore, IndexedStoreBuilder, Transaction};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// Send / Sync

#[test]
fn public_types_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<IndexedStore<String, String>>();
    assert_send_sync::<IndexedStoreBuilder<String, String>>();
    assert_send_sync::<Transaction<String, String>>();
    assert_send_sync::<IndexError>();
    assert_send_sync::<BuildError>();
}

// ---------------------------------------------------------------------------
// Proptest against a sequential model

/// A small object: a namespace and a set of labels.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Obj {
    ns: u8,
    labels: BTreeSet<u8>,
}

fn ns_index(o: &Obj) -> Vec<String> {
    vec![format!("ns{}", o.ns)]
}
fn label_index(o: &Obj) -> Vec<String> {
    o.labels.iter().map(|l| format!("l{l}")).collect()
}
/// Fallible: objects with label 7 are rejected.
fn checked_index(o: &Obj) -> Result<Vec<String>, String> {
    if o.labels.contains(&7) {
        Err("label 7 is forbidden".to_string())
    } else {
        Ok(vec![format!("n{}", o.labels.len())])
    }
}
fn parity_index(o: &Obj) -> Vec<String> {
    vec![if o.ns % 2 == 0 { "even" } else { "odd" }.to_string()]
}

type IndexFnPtr = fn(&Obj) -> Result<Vec<String>, String>;

/// The reference: a `HashMap` plus index functions; indexes are recomputed
/// from scratch whenever they are compared.
struct Model {
    objects: HashMap<u8, Obj>,
    indexes: Vec<(&'static str, IndexFnPtr)>,
}

impl Model {
    fn new() -> Self {
        Self {
            objects: HashMap::new(),
            indexes: vec![
                ("ns", |o| Ok(ns_index(o))),
                ("label", |o| Ok(label_index(o))),
                ("checked", checked_index),
            ],
        }
    }
    fn accepts(&self, o: &Obj) -> bool {
        self.indexes.iter().all(|(_, f)| f(o).is_ok())
    }
    /// index name -> value -> sorted keys, recomputed from the objects.
    fn index(&self, name: &str) -> BTreeMap<String, Vec<u8>> {
        let f = self.indexes.iter().find(|(n, _)| *n == name).unwrap().1;
        let mut out: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for (k, o) in &self.objects {
            let values: BTreeSet<String> = f(o).unwrap().into_iter().collect();
            for v in values {
                out.entry(v).or_default().push(*k);
            }
        }
        for keys in out.values_mut() {
            keys.sort();
        }
        out
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, Obj),
    Remove(u8),
    Replace(Vec<(u8, Obj)>),
    Transaction(Vec<(u8, Option<Obj>)>),
    Clear,
    AddParityIndex,
    Get(u8),
    Matching(Obj),
}

fn obj() -> impl Strategy<Value = Obj> {
    (0u8..4, proptest::collection::btree_set(0u8..8, 0..4))
        .prop_map(|(ns, labels)| Obj { ns, labels })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..12, obj()).prop_map(|(k, o)| Op::Insert(k, o)),
        3 => (0u8..12).prop_map(Op::Remove),
        1 => proptest::collection::vec((0u8..12, obj()), 0..6).prop_map(Op::Replace),
        2 => proptest::collection::vec((0u8..12, proptest::option::of(obj())), 0..4)
            .prop_map(Op::Transaction),
        1 => Just(Op::Clear),
        1 => Just(Op::AddParityIndex),
        2 => (0u8..12).prop_map(Op::Get),
        1 => obj().prop_map(Op::Matching),
    ]
}

fn new_store() -> IndexedStore<u8, Obj> {
    new_store_with(ahash::RandomState::new())
}

/// The proptest's store, hashing keys and index values with `hasher`.
fn new_store_with<S: BuildHasher>(hasher: S) -> IndexedStore<u8, Obj, S> {
    IndexedStore::builder()
        .hasher(hasher)
        .index("ns", ns_index)
        .index("label", label_index)
        .try_index("checked", checked_index)
        .build()
        .unwrap()
}

fn keys_of<S: BuildHasher>(objects: &[Obj], store: &IndexedStore<u8, Obj, S>) -> Vec<u8> {
    // Objects are compared by value: find the keys holding equal objects,
    // each stored entry matched at most once (equal objects under two keys
    // have the same index values, so either match is as good).
    let mut all = store.to_vec();
    let mut keys = Vec::new();
    for o in objects {
        let at = all
            .iter()
            .position(|(_, v)| v == o)
            .expect("by_index returned an object that is not stored (or too many equal ones)");
        keys.push(all.swap_remove(at).0);
    }
    keys.sort();
    keys
}

fn compare<S: BuildHasher>(store: &IndexedStore<u8, Obj, S>, model: &Model) {
    store.check_invariants();
    assert_eq!(store.len(), model.objects.len());
    let mut keys = store.keys_to_vec();
    keys.sort();
    let mut expected: Vec<u8> = model.objects.keys().copied().collect();
    expected.sort();
    assert_eq!(keys, expected);
    for (k, o) in &model.objects {
        assert_eq!(store.get(k).as_ref(), Some(o));
    }
    let names: Vec<String> = model.indexes.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(store.index_names(), names);
    for (name, _) in &model.indexes {
        let expected = model.index(name);
        let values: Vec<String> = expected.keys().cloned().collect();
        assert_eq!(
            store.index_values(name).unwrap(),
            values,
            "values of {name}"
        );
        for (value, keys) in &expected {
            assert_eq!(
                &store.index_keys(name, value).unwrap(),
                keys,
                "{name}={value}"
            );
            let objects = store.by_index(name, value).unwrap();
            assert_eq!(&keys_of(&objects, store), keys, "by_index {name}={value}");
            assert_eq!(store.index_len(name, value).unwrap(), keys.len());
        }
        assert!(store.by_index(name, "absent").unwrap().is_empty());
    }
    assert!(matches!(
        store.by_index("nope", "x"),
        Err(IndexError::UnknownIndex { .. })
    ));
}

fn step<S: BuildHasher>(store: &IndexedStore<u8, Obj, S>, model: &mut Model, op: Op) {
    match op {
        Op::Insert(k, o) => {
            let result = store.insert(k, o.clone());
            if model.accepts(&o) {
                let previous = result.unwrap();
                assert_eq!(previous.as_ref(), model.objects.get(&k));
                model.objects.insert(k, o);
            } else {
                assert!(matches!(result, Err(IndexError::IndexFunction { .. })));
            }
        }
        Op::Remove(k) => {
            assert_eq!(store.remove(&k).as_ref(), model.objects.get(&k));
            model.objects.remove(&k);
        }
        Op::Replace(items) => {
            let result = store.replace(items.clone());
            if items.iter().all(|(_, o)| model.accepts(o)) {
                result.unwrap();
                model.objects = items.into_iter().collect();
            } else {
                assert!(result.is_err());
            }
        }
        Op::Transaction(ops) => {
            let result = store.transaction(|tx| -> Result<(), IndexError> {
                for (k, o) in &ops {
                    match o {
                        Some(o) => tx.insert(*k, o.clone())?,
                        None => tx.remove(k),
                    }
                }
                Ok(())
            });
            if ops
                .iter()
                .all(|(_, o)| o.as_ref().is_none_or(|o| model.accepts(o)))
            {
                result.unwrap();
                for (k, o) in ops {
                    match o {
                        Some(o) => model.objects.insert(k, o),
                        None => model.objects.remove(&k),
                    };
                }
            } else {
                assert!(result.is_err());
            }
        }
        Op::Clear => {
            store.clear();
            model.objects.clear();
        }
        Op::AddParityIndex => {
            let result = store.add_index("parity", parity_index);
            if model.indexes.iter().any(|(n, _)| *n == "parity") {
                assert!(matches!(result, Err(IndexError::DuplicateIndex { .. })));
            } else {
                result.unwrap();
                model.indexes.push(("parity", |o| Ok(parity_index(o))));
            }
        }
        Op::Get(k) => {
            assert_eq!(store.get(&k).as_ref(), model.objects.get(&k));
            assert_eq!(store.contains_key(&k), model.objects.contains_key(&k));
        }
        Op::Matching(probe) => {
            let values: BTreeSet<String> = label_index(&probe).into_iter().collect();
            let mut expected: Vec<u8> = model
                .objects
                .iter()
                .filter(|(_, o)| label_index(o).iter().any(|v| values.contains(v)))
                .map(|(k, _)| *k)
                .collect();
            expected.sort();
            let found = store.matching("label", &probe).unwrap();
            assert_eq!(keys_of(&found, store), expected);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn behaves_like_a_hashmap_with_indexes_recomputed_from_scratch(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let store = new_store();
        let mut model = Model::new();
        for op in ops {
            step(&store, &mut model, op);
            compare(&store, &model);
        }
    }

    /// The same, with keys and index values whose hashes collide: every
    /// one hashes to 0, or to one of two hashes.
    #[test]
    fn behaves_like_a_hashmap_when_hashes_collide(
        two in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let _watchdog = watchdog::arm(Duration::from_secs(60));
        let collide = if two { hasher::Collide::Two } else { hasher::Collide::All };
        let store = new_store_with(hasher::TestState::colliding(collide));
        let mut model = Model::new();
        for op in ops {
            step(&store, &mut model, op);
            compare(&store, &model);
        }
    }

    /// A store with no index takes its own paths (no index values or
    /// positions kept, a removal that frees the slot alone): inserts,
    /// removals and replacements against a `HashMap`, its invariants
    /// (every empty slot on the free list) checked after each.
    #[test]
    fn a_store_without_indexes_behaves_like_a_hashmap(
        ops in proptest::collection::vec((0u8..8, 0u8..12, any::<u16>()), 1..60)
    ) {
        let store: IndexedStore<u8, u16> = IndexedStore::builder().shards(2).build().unwrap();
        let mut model = HashMap::new();
        for (kind, key, value) in ops {
            match kind {
                0..=3 => prop_assert_eq!(
                    store.insert(key, value).unwrap(),
                    model.insert(key, value)
                ),
                4..=6 => prop_assert_eq!(store.remove(&key), model.remove(&key)),
                _ => {
                    model.retain(|&k, _| k % 3 != key % 3);
                    store.replace(model.iter().map(|(&k, &v)| (k, v))).unwrap();
                }
            }
            store.check_invariants();
            let mut stored: Vec<(u8, u16)> = store.to_vec();
            stored.sort_unstable();
            let mut expected: Vec<(u8, u16)> = model.iter().map(|(&k, &v)| (k, v)).collect();
            expected.sort_unstable();
            prop_assert_eq!(stored, expected);
        }
    }
}

// ---------------------------------------------------------------------------
// Panic safety

/// An object whose index function panics when `boom` is set.
#[derive(Clone, Debug, PartialEq)]
struct Bomb {
    tag: &'static str,
    boom: bool,
}

fn bomb_store() -> IndexedStore<u32, Bomb> {
    IndexedStore::builder()
        .index("tag", |b: &Bomb| {
            assert!(!b.boom, "index function panics");
            [b.tag]
        })
        .build()
        .unwrap()
}

fn bomb(tag: &'static str) -> Bomb {
    Bomb { tag, boom: false }
}

fn assert_unchanged(store: &IndexedStore<u32, Bomb>) {
    store.check_invariants();
    assert_eq!(store.len(), 2);
    assert_eq!(store.get(&1).unwrap(), bomb("a"));
    assert_eq!(store.get(&2).unwrap(), bomb("b"));
    assert_eq!(store.index_keys("tag", "a").unwrap(), [1]);
    assert_eq!(store.index_values("tag").unwrap(), ["a", "b"]);
}

#[test]
fn panicking_index_function_leaves_the_store_unchanged_and_usable() {
    let store = bomb_store();
    store.insert(1, bomb("a")).unwrap();
    store.insert(2, bomb("b")).unwrap();
    let boom = Bomb {
        tag: "c",
        boom: true,
    };

    // insert (update of an existing key, and a new key)
    for key in [1, 3] {
        let b = boom.clone();
        assert!(catch_unwind(AssertUnwindSafe(|| store.insert(key, b))).is_err());
        assert_unchanged(&store);
    }
    // transaction: the second insert panics, the first must not be applied
    let result = catch_unwind(AssertUnwindSafe(|| {
        store.transaction(|tx| -> Result<(), IndexError> {
            tx.remove(&1);
            tx.insert(3, bomb("c"))?;
            tx.insert(4, boom.clone())?;
            Ok(())
        })
    }));
    assert!(result.is_err());
    assert_unchanged(&store);
    // replace
    let items = vec![(5, bomb("x")), (6, boom.clone())];
    assert!(catch_unwind(AssertUnwindSafe(|| store.replace(items))).is_err());
    assert_unchanged(&store);
    // matching runs the function on the probe
    assert!(catch_unwind(AssertUnwindSafe(|| store.matching("tag", &boom))).is_err());
    assert_unchanged(&store);
    // add_index whose function panics on an existing object
    store.insert(3, bomb("c")).unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| {
        store.add_index("second", |b: &Bomb| {
            assert!(b.tag != "c", "new index function panics");
            [b.tag]
        })
    }));
    assert!(result.is_err());
    assert_eq!(store.index_names(), ["tag"]);
    store.remove(&3);
    assert_unchanged(&store);

    // Everything still works afterwards.
    store
        .add_index("upper", |b: &Bomb| [b.tag.to_uppercase()])
        .unwrap();
    store.insert(3, bomb("c")).unwrap();
    store.remove(&1);
    assert_eq!(store.index_keys("upper", "C").unwrap(), [3]);
    assert_eq!(store.index_values("tag").unwrap(), ["b", "c"]);
    store.check_invariants();
}

/// A key whose `Hash` panics for the value 666 (deterministically).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct TouchyKey(u32);

impl Hash for TouchyKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        assert!(self.0 != 666, "Hash panics");
        self.0.hash(state);
    }
}

#[test]
fn panicking_key_hash_leaves_the_store_unchanged_and_usable() {
    let store: IndexedStore<TouchyKey, u32> = IndexedStore::builder()
        .index("parity", |n: &u32| [(n % 2).to_string()])
        .build()
        .unwrap();
    for n in 0..40 {
        store.insert(TouchyKey(n), n).unwrap();
    }
    let check = |store: &IndexedStore<TouchyKey, u32>| {
        store.check_invariants();
        assert_eq!(store.len(), 40);
        assert_eq!(store.index_len("parity", "0").unwrap(), 20);
        assert_eq!(store.get(&TouchyKey(0)), Some(0));
    };
    assert!(catch_unwind(AssertUnwindSafe(|| store.insert(TouchyKey(666), 1))).is_err());
    check(&store);
    assert!(catch_unwind(AssertUnwindSafe(|| store.remove(&TouchyKey(666)))).is_err());
    check(&store);
    let result = catch_unwind(AssertUnwindSafe(|| {
        store.transaction(|tx| -> Result<(), IndexError> {
            tx.remove(&TouchyKey(0));
            tx.insert(TouchyKey(100), 100)?;
            tx.insert(TouchyKey(666), 666)?;
            Ok(())
        })
    }));
    assert!(result.is_err());
    check(&store);
    // A replace hashes its keys before taking the lock.
    let items = vec![(TouchyKey(1), 1), (TouchyKey(666), 2)];
    assert!(catch_unwind(AssertUnwindSafe(|| store.replace(items))).is_err());
    check(&store);
    store.insert(TouchyKey(40), 40).unwrap();
    assert_eq!(store.len(), 41);
    store.check_invariants();
}

// ---------------------------------------------------------------------------
// Stress

const THREADS: usize = 8;
const KEYS_PER_THREAD: u32 = 24;

/// A stress object: its owner thread, a kind, and a changing generation.
#[derive(Clone, Debug, PartialEq)]
struct Item {
    owner: usize,
    kind: &'static str,
    generation: u32,
}

#[test]
fn stress_many_threads_keep_indexes_exact() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let store: Arc<IndexedStore<(usize, u32), Item>> = Arc::new(
        IndexedStore::builder()
            .index("owner", |i: &Item| [i.owner.to_string()])
            .index("kind", |i: &Item| [i.kind])
            .index("parity", |i: &Item| [(i.generation % 2).to_string()])
            .build()
            .unwrap(),
    );
    // Every thread owns one token, always present under exactly one key.
    for t in 0..THREADS {
        store
            .insert(
                (t, 1000),
                Item {
                    owner: t,
                    kind: "token",
                    generation: 0,
                },
            )
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_millis(1500);
    let torn_reads = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            let torn = Arc::clone(&torn_reads);
            thread::spawn(move || {
                let mut rng = (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let mut mine: HashMap<u32, Item> = HashMap::new();
                let mut token = 1000u32;
                let (mut added, mut removed) = (0usize, 0usize);
                let mut ops = 0u32;
                while Instant::now() < deadline && ops < 20_000 {
                    ops += 1;
                    if t == 0 && ops == 200 {
                        // An index added while 7 other threads write.
                        store
                            .add_index("late", |i: &Item| [format!("{}-{}", i.owner, i.kind)])
                            .unwrap();
                    }
                    let key = (next() % u64::from(KEYS_PER_THREAD)) as u32;
                    let generation = (next() % 1000) as u32;
                    match next() % 10 {
                        0..=2 => {
                            let item = Item {
                                owner: t,
                                kind: "item",
                                generation,
                            };
                            let previous = store.insert((t, key), item.clone()).unwrap();
                            assert_eq!(previous.as_ref(), mine.get(&key));
                            if previous.is_none() {
                                added += 1;
                            }
                            mine.insert(key, item);
                        }
                        3 => {
                            let gone = store.remove(&(t, key));
                            assert_eq!(gone.as_ref(), mine.get(&key));
                            if gone.is_some() {
                                removed += 1;
                            }
                            mine.remove(&key);
                        }
                        4 => {
                            // Move the token to another key, atomically.
                            let to = 1000 + (token + 1) % 4;
                            store
                                .transaction(|tx| {
                                    tx.remove(&(t, token));
                                    tx.insert(
                                        (t, to),
                                        Item {
                                            owner: t,
                                            kind: "token",
                                            generation,
                                        },
                                    )
                                })
                                .unwrap();
                            token = to;
                        }
                        5 | 6 => {
                            // Exactly one token per thread at every instant.
                            let tokens = store.index_len("kind", "token").unwrap();
                            let listed = store.by_index("kind", "token").unwrap();
                            if tokens != THREADS || listed.len() != THREADS {
                                torn.fetch_add(1, Ordering::Relaxed);
                            }
                            let owners: BTreeSet<usize> = listed.iter().map(|i| i.owner).collect();
                            assert_eq!(owners.len(), THREADS, "a token was duplicated or lost");
                        }
                        7 | 8 => {
                            // Every object listed under a value has it.
                            let p = (generation % 2).to_string();
                            for item in store.by_index("parity", &p).unwrap() {
                                assert_eq!(item.generation % 2, generation % 2);
                            }
                            let other = (next() % THREADS as u64) as usize;
                            for item in store.by_index("owner", &other.to_string()).unwrap() {
                                assert_eq!(item.owner, other);
                            }
                            let snapshot = store.values_to_vec();
                            let tokens = snapshot.iter().filter(|i| i.kind == "token").count();
                            assert_eq!(tokens, THREADS, "values() is not a consistent cut");
                        }
                        _ => {
                            if ops % 256 == 0 {
                                store.check_invariants();
                            }
                            assert_eq!(store.get(&(t, key)).as_ref(), mine.get(&key));
                        }
                    }
                }
                (mine, token, added, removed)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        torn_reads.load(Ordering::Relaxed),
        0,
        "a reader saw a torn state"
    );
    store.check_invariants();
    let mut total = 0;
    for (t, (mine, token, added, removed)) in results.iter().enumerate() {
        assert_eq!(
            mine.len(),
            added - removed,
            "thread {t}: insert/remove count"
        );
        let mut expected: Vec<(usize, u32)> = mine.keys().map(|k| (t, *k)).collect();
        expected.push((t, *token));
        expected.sort();
        assert_eq!(store.index_keys("owner", &t.to_string()).unwrap(), expected);
        for (k, item) in mine {
            assert_eq!(store.get(&(t, *k)).as_ref(), Some(item));
        }
        total += mine.len() + 1;
    }
    assert_eq!(store.len(), total);
    assert_eq!(store.index_len("kind", "token").unwrap(), THREADS);
    assert_eq!(store.index_len("kind", "item").unwrap(), total - THREADS);
    assert!(
        store.index_names().contains(&"late".to_string()),
        "thread 0 ran fewer than 200 operations"
    );
    let late: usize = (0..THREADS)
        .map(|t| store.index_len("late", &format!("{t}-item")).unwrap())
        .sum();
    assert_eq!(
        late,
        total - THREADS,
        "add_index missed or duplicated objects"
    );
}

#[test]
fn try_extend_is_all_or_nothing() {
    let store = IndexedStore::<u32, String>::builder()
        .try_index("len", |s: &String| {
            if s.is_empty() {
                Err("empty")
            } else {
                Ok([s.len().to_string()])
            }
        })
        .build()
        .unwrap();
    store.insert(0, "zero".to_string()).unwrap();
    let err = store
        .try_extend([(1, "a".to_string()), (2, String::new()), (3, "c".into())])
        .unwrap_err();
    assert!(matches!(err, IndexError::IndexFunction { .. }));
    assert_eq!(store.len(), 1, "no pair of a failed try_extend is applied");
    store
        .try_extend([(1, "a".to_string()), (1, "bb".to_string())])
        .unwrap();
    assert_eq!(store.get(&1).as_deref(), Some("bb"));
    assert_eq!(store.index_keys("len", "1").unwrap(), Vec::<u32>::new());
    store.check_invariants();
}
