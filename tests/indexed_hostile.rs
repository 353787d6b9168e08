//! Panic sweeps of `IndexedStore`: every write operation, and the reads
//! that clone keys and objects out under the read lock, run with a panic
//! planted at each call it makes of the key's `Hash`, `Eq` and `Clone`, of
//! the object's `Clone`, of `Drop` (keys and objects) and of the index
//! functions, on stores whose table is full of tombstones (so an insert
//! may grow or rehash it). After every caught panic the store must pass
//! `check_invariants`, hold exactly the content it had before the
//! operation or the content the operation makes (every write is atomic; a
//! read changes nothing), and its indexes must agree with a recomputation
//! from the objects. Also: keys whose `Hash` changes after insertion, and
//! capacities that cannot be reserved.

#[path = "common/hostile.rs"]
mod hostile;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use hostile::{Key, Trait, Value, sweep};
use larder::{BuildError, IndexError, IndexedStore};

/// The keys' hasher: fixed seeds, so every run lays the table out alike
/// and a setup that puts the table on the edge of a rehash does so every
/// time.
fn fixed() -> ahash::RandomState {
    ahash::RandomState::with_seeds(7, 11, 13, 17)
}

type Store = IndexedStore<Key, Value, ahash::RandomState>;

/// Content, as key id -> object id.
type Model = BTreeMap<u64, u64>;

thread_local! {
    /// A planned panic of the index functions: at call `n` since arming.
    static INDEX_PLAN: Cell<Option<u64>> = const { Cell::new(None) };
    static INDEX_CALLS: Cell<u64> = const { Cell::new(0) };
}

fn index_tick() {
    let n = INDEX_CALLS.with(Cell::get);
    INDEX_CALLS.with(|c| c.set(n + 1));
    if INDEX_PLAN.with(Cell::get) == Some(n) {
        INDEX_PLAN.with(|p| p.set(None));
        panic!("hostile index function panics at call {n}");
    }
}

fn parity(v: &Value) -> [String; 1] {
    index_tick();
    [(v.id % 2).to_string()]
}

fn tens(v: &Value) -> Vec<String> {
    index_tick();
    // Zero, one or two values.
    match v.id % 3 {
        0 => Vec::new(),
        1 => vec![(v.id / 10).to_string()],
        _ => vec![(v.id / 10).to_string(), "x".to_string()],
    }
}

/// The object stored under key `k` in the setups.
fn object(k: u64) -> u64 {
    k * 7 % 101
}

/// A store holding `live` keys (0..live) after `churn` fresh keys were each
/// inserted and removed again, on a table grown to 56 keys first: the
/// removals and the churn leave tombstones (see [`REHASH_IN_PLACE`]).
fn churned(live: u64, churn: u64) -> (Store, Model) {
    churned_in(false, live, churn)
}

/// [`churned`], with striped shard locks when `read_mostly`.
fn churned_in(read_mostly: bool, live: u64, churn: u64) -> (Store, Model) {
    let store: Store = IndexedStore::builder()
        .index("parity", parity)
        .index("tens", tens)
        .hasher(fixed())
        .read_mostly(read_mostly)
        .build()
        .unwrap();
    for k in 0..56 {
        store.insert(Key::new(k), Value::new(object(k))).unwrap();
    }
    for k in live..56 {
        store.remove(&Key::new(k));
    }
    for i in 0..churn {
        let k = 10_000 + i;
        store.insert(Key::new(k), Value::new(object(k))).unwrap();
        store.remove(&Key::new(k));
    }
    let model = (0..live).map(|k| (k, object(k))).collect();
    (store, model)
}

/// The store's content, read through `iter`.
fn content(store: &Store) -> Model {
    let mut model = Model::new();
    for (key, value) in store.to_vec().into_iter() {
        assert!(
            model.insert(key.id, value.id).is_none(),
            "key {} stored twice",
            key.id
        );
    }
    model
}

/// Everything a store must satisfy after an operation, panicked or not:
/// invariants, `len`, `get` of every key, index agreement, and content
/// equal to `before` or `after` (the write is atomic; only `after` if the
/// operation completed).
fn check(store: &Store, before: &Model, after: &Model, fired: bool) {
    store.check_invariants();
    let now = content(store);
    assert_eq!(store.len(), now.len(), "len disagrees with iter");
    if !fired {
        assert_eq!(&now, after, "completed operation left the wrong content");
    } else if now != *before && now != *after {
        let lost: Vec<u64> = before
            .keys()
            .filter(|k| !now.contains_key(k) && after.contains_key(k))
            .copied()
            .collect();
        panic!(
            "a panic left a content that is neither before nor after: {} of {} entries \
             lost ({lost:?}), {} now",
            lost.len(),
            before.len(),
            now.len()
        );
    }
    // Every key of both models answers `get` as the content says.
    for k in before.keys().chain(after.keys()) {
        assert_eq!(
            store.get(&Key::new(*k)).map(|v| v.id),
            now.get(k).copied(),
            "get({k}) disagrees with iter"
        );
    }
    // The indexes, recomputed from the content.
    let mut expected: BTreeMap<(&str, String), BTreeSet<u64>> = BTreeMap::new();
    for (&k, &v) in &now {
        let value = Value::new(v);
        for p in parity(&value) {
            expected.entry(("parity", p)).or_default().insert(k);
        }
        for t in tens(&value) {
            expected.entry(("tens", t)).or_default().insert(k);
        }
    }
    for name in ["parity", "tens"] {
        let values = store.index_values(name).unwrap();
        let want: Vec<String> = expected
            .keys()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .collect();
        assert_eq!(values, want, "index {name}'s values");
        for value in values {
            let mut listed: Vec<u64> = store
                .by_index(name, &value)
                .unwrap()
                .iter()
                .map(|v| v.id)
                .collect();
            listed.sort_unstable();
            let keys: BTreeSet<u64> = store
                .index_keys(name, &value)
                .unwrap()
                .iter()
                .map(|k| k.id)
                .collect();
            let want = &expected[&(name, value.clone())];
            assert_eq!(&keys, want, "index_keys({name}, {value})");
            let mut objects: Vec<u64> = want.iter().map(|k| now[k]).collect();
            objects.sort_unstable();
            assert_eq!(listed, objects, "by_index({name}, {value})");
        }
    }
}

/// Sweeps `op` over every call of every trait and of the index functions,
/// on stores made by `setup`, checking each outcome against `before`/`after`
/// (`after` computed from `before`). Returns the number of panics planted.
fn sweep_all(
    setup: impl Fn() -> (Store, Model),
    op: impl Fn(&Store),
    after: impl Fn(&Model) -> Model,
) -> u64 {
    let mut planted = 0;
    for t in [Trait::Hash, Trait::Eq, Trait::Clone, Trait::Drop] {
        planted += sweep(
            t,
            10_000,
            &setup,
            |(store, _)| op(store),
            |(store, before), fired| check(store, before, &after(before), fired),
        );
    }
    // The index functions, with their own plan.
    for n in 0.. {
        let (store, before) = setup();
        INDEX_CALLS.with(|c| c.set(0));
        INDEX_PLAN.with(|p| p.set(Some(n)));
        let outcome = catch_unwind(AssertUnwindSafe(|| op(&store)));
        let fired = INDEX_PLAN.with(Cell::get).is_none();
        INDEX_PLAN.with(|p| p.set(None));
        match (outcome, fired) {
            (Ok(()), false) => {
                check(&store, &before, &after(&before), false);
                break;
            }
            (Err(_), true) => check(&store, &before, &after(&before), true),
            (Ok(()), true) => panic!("an index function's panic was swallowed"),
            (Err(payload), false) => std::panic::resume_unwind(payload),
        }
        planted += 1;
    }
    planted
}

fn with(model: &Model, f: impl FnOnce(&mut Model)) -> Model {
    let mut model = model.clone();
    f(&mut model);
    model
}

/// `(live, churn)` setups after which, with the fixed seeds, the next
/// insert of a new key finds no room left and rehashes the table in place
/// (20 and 27 live keys in a 64-bucket table full of tombstones). Found by
/// counting `Hash` calls with a std `HashMap`, which hashes every stored
/// key again at that point; the layout depends only on the hashes, so it
/// is the same for any table of the SwissTable family.
const REHASH_IN_PLACE: [(u64, u64); 2] = [(20, 172), (27, 92)];

/// Sizes at which the next insert doubles the table (`7/8` of a power of
/// two, and the small tables' exact sizes).
const GROWTH: [u64; 5] = [3, 7, 14, 28, 56];

fn insert_500(store: &Store) {
    store
        .insert(Key::new(500), Value::new(object(500)))
        .unwrap();
}

fn with_500(before: &Model) -> Model {
    with(before, |m| {
        m.insert(500, object(500));
    })
}

#[test]
fn insert_of_a_new_key_loses_nothing_when_the_table_rehashes_in_place() {
    for (live, churn) in REHASH_IN_PLACE {
        sweep_all(|| churned(live, churn), insert_500, with_500);
    }
}

#[test]
fn insert_of_a_new_key_loses_nothing_when_the_table_grows() {
    for live in GROWTH {
        sweep_all(|| churned(live, 0), insert_500, with_500);
    }
}

#[test]
fn update_and_remove_lose_nothing() {
    for churn in [0, 40] {
        sweep_all(
            || churned(20, churn),
            |store| {
                store.insert(Key::new(3), Value::new(999)).unwrap();
            },
            |before| {
                with(before, |m| {
                    m.insert(3, 999);
                })
            },
        );
        sweep_all(
            || churned(20, churn),
            |store| drop(store.remove(&Key::new(4))),
            |before| {
                with(before, |m| {
                    m.remove(&4);
                })
            },
        );
        sweep_all(
            || churned(20, churn),
            |store| drop(store.remove(&Key::new(4_000))),
            Model::clone,
        );
    }
}

#[test]
fn a_transaction_is_applied_whole_or_not_at_all() {
    let ops = |store: &Store| {
        store
            .transaction(|tx| -> Result<(), IndexError> {
                for k in 100..130 {
                    tx.insert(Key::new(k), Value::new(object(k)))?;
                }
                tx.insert(Key::new(2), Value::new(998))?;
                tx.remove(&Key::new(5));
                tx.insert(Key::new(200), Value::new(1))?;
                tx.remove(&Key::new(200));
                tx.remove(&Key::new(6));
                tx.insert(Key::new(6), Value::new(997))?;
                tx.remove(&Key::new(7_000));
                Ok(())
            })
            .unwrap();
    };
    let after = |before: &Model| {
        with(before, |m| {
            for k in 100..130 {
                m.insert(k, object(k));
            }
            m.insert(2, 998);
            m.remove(&5);
            m.insert(6, 997);
        })
    };
    // The 30 inserts cross a growth, or first an in-place rehash.
    for (live, churn) in [(20, 0), REHASH_IN_PLACE[0], REHASH_IN_PLACE[1]] {
        sweep_all(|| churned(live, churn), ops, after);
    }
    // On striped shard locks, once.
    sweep_all(|| churned_in(true, 20, 0), ops, after);
}

#[test]
fn replace_clear_and_add_index_lose_nothing() {
    // On plain, then on striped shard locks.
    for read_mostly in [false, true] {
        sweep_all(
            || churned_in(read_mostly, 20, 30),
            |store| {
                store
                    .replace((40..70).map(|k| (Key::new(k), Value::new(object(k)))))
                    .unwrap();
            },
            |_| (40..70).map(|k| (k, object(k))).collect(),
        );
    }
    sweep_all(|| churned(20, 30), Store::clear, |_| Model::new());
    // `add_index` changes no content; a third index must appear whole or
    // not at all.
    let planted = sweep_all(
        || churned(20, 30),
        |store| {
            store
                .add_index("mod5", |v: &Value| {
                    index_tick();
                    [(v.id % 5).to_string()]
                })
                .unwrap();
        },
        Model::clone,
    );
    assert!(
        planted >= 20,
        "add_index ran the index function once per object"
    );
}

/// `reads`, then a write to every shard of the store whether `reads`
/// panicked or not, then `reads`' panic if it had one. Each write waits
/// for its shard's read locks: one that a panicking read left held hangs
/// it (a test using this arms the watchdog, which fails it then). `sample`
/// is a store built as the swept ones are (same shards, same fixed seeds).
fn then_write_every_shard(sample: &Store, reads: impl Fn(&Store)) -> impl Fn(&Store) {
    // A key absent from the setups on each shard.
    let absent: Vec<u64> = (0..sample.shard_count())
        .map(|shard| {
            (9_000..)
                .find(|&id| sample.shard_of(&Key::new(id)) == shard)
                .expect("some key falls on every shard")
        })
        .collect();
    move |store: &Store| {
        assert_eq!(store.shard_count(), absent.len());
        let outcome = catch_unwind(AssertUnwindSafe(|| reads(store)));
        for &id in &absent {
            store.remove(&Key::new(id));
        }
        if let Err(payload) = outcome {
            std::panic::resume_unwind(payload);
        }
    }
}

/// The by-index reads and visits change nothing whichever user call panics
/// (`K::clone` and `V::clone` in `by_index_entries`, run under the read
/// lock, `Drop` of the keys and objects it cloned, a visit closure), and
/// release the lock: the op ends with a write to every shard, made even
/// when a read panicked, which would wait forever on a read lock left held
/// (the watchdog fails the test then).
#[test]
fn by_index_reads_and_visits_change_nothing() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let read_all = |store: &Store| {
        for (name, value) in [
            ("parity", "0"),
            ("parity", "1"),
            ("tens", "1"),
            ("tens", "x"),
        ] {
            let entries = store.by_index_entries(name, value).unwrap();
            let mut keys: Vec<u64> = entries.iter().map(|(k, _)| k.id).collect();
            keys.sort_unstable();
            let mut visited = Vec::new();
            store
                .for_each_by_index(name, value, |k, _| visited.push(k.id))
                .unwrap();
            visited.sort_unstable();
            assert_eq!(visited, keys);
            let mut first = None;
            let flow = store
                .try_for_each_by_index(name, value, |k, v| {
                    first = Some((k.id, v.id));
                    std::ops::ControlFlow::Break(())
                })
                .unwrap();
            assert_eq!(flow.is_break(), !keys.is_empty());
            if let Some((k, v)) = first {
                assert_eq!(object(k), v);
            }
        }
    };
    let planted = sweep_all(
        || churned(20, 30),
        then_write_every_shard(&churned(0, 0).0, read_all),
        Model::clone,
    );
    assert!(
        planted > 0,
        "the reads made no user call to plant a panic at"
    );
    // A visit closure that panics: nothing changes, the lock is released.
    let (store, before) = churned(20, 30);
    for stop_at in 0..3 {
        let mut calls = 0;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            store
                .for_each_by_index("parity", "0", |_, _| {
                    assert!(calls != stop_at, "the visit panics at call {stop_at}");
                    calls += 1;
                })
                .unwrap();
        }));
        assert!(outcome.is_err());
        store.remove(&Key::new(9_999));
        check(&store, &before, &before, false);
    }
}

/// The reads that clone objects out (`get`, `values`, `to_vec`, `by_index`,
/// `matching` and the revisioned reads) run `V::clone` (and `K::clone`)
/// under the read lock: whichever call panics, or a `Drop` of what they
/// cloned, the store is unchanged and the lock released (the op ends with
/// a write to every shard, made even when a read panicked, which would
/// wait forever on a read lock left held: the watchdog fails the test
/// then). On plain and on striped shard locks.
#[test]
fn reads_that_clone_objects_change_nothing_and_release_the_lock() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let read_all = |store: &Store| {
        let key = Key::new(3);
        let got = store.get(&key).map(|v| v.id);
        assert_eq!(got, Some(object(3)));
        let (with_revision, _) = store.get_with_revision(&key);
        assert_eq!(with_revision.map(|v| v.id), got);
        assert_eq!(store.values_to_vec().len(), 20);
        assert_eq!(store.to_vec().len(), 20);
        assert_eq!(store.to_vec_with_revision().0.len(), 20);
        let listed = store.by_index("parity", "1").unwrap();
        assert!(!listed.is_empty());
        let matched = store.matching("parity", &Value::new(1)).unwrap();
        assert_eq!(matched.len(), listed.len());
    };
    for read_mostly in [false, true] {
        // The clones the reads make, counted: the sweep below makes each
        // of them a panic site once.
        let (store, _) = churned_in(read_mostly, 20, 30);
        let counting = hostile::arm(Trait::Clone, u64::MAX);
        read_all(&store);
        let clones = hostile::calls(Trait::Clone);
        drop(counting);
        // `values`, `to_vec` and `to_vec_with_revision` clone the 20
        // objects each, and the two `to_vec`s the 20 keys too.
        assert!(clones >= 100, "the reads made {clones} clones");
        let planted = sweep_all(
            || churned_in(read_mostly, 20, 30),
            then_write_every_shard(&store, read_all),
            Model::clone,
        );
        assert!(
            planted > clones,
            "{planted} panics planted, {clones} clones"
        );
    }
}

// ---------------------------------------------------------------------------
// A key whose hash changes after insertion

/// Added to every `Fickle` hash: changing it changes every key's hash.
static EPOCH: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Fickle(u64);

impl Hash for Fickle {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0 ^ EPOCH.load(Ordering::Relaxed)).hash(state);
    }
}

#[test]
fn keys_whose_hash_changes_do_not_corrupt_the_store() {
    let store: IndexedStore<Fickle, u64, _> = IndexedStore::builder()
        .index("parity", |v: &u64| [(v % 2).to_string()])
        .hasher(fixed())
        .build()
        .unwrap();
    for k in 0..40 {
        store.insert(Fickle(k), k).unwrap();
    }
    EPOCH.store(0xdead_beef, Ordering::Relaxed);
    // Lookups may miss now; growth (0..200 more keys) must not use the
    // changed hashes to move the old entries.
    for k in 0..200 {
        store.insert(Fickle(k), k + 1000).unwrap();
        store.check_invariants();
    }
    // Mostly stored twice, once per hash; a probe under the new hash may
    // still meet the old entry (tags match by chance) and update it.
    assert!(
        (200..=240).contains(&store.len()),
        "{} entries",
        store.len()
    );
    for k in 0..40 {
        store.remove(&Fickle(k + 40));
    }
    store.check_invariants();
    EPOCH.store(0, Ordering::Relaxed);
    // Back to the first hash: the first 40 keys are found again (with
    // their second value where the second insert met the first entry).
    for k in 0..40 {
        let found = store.get(&Fickle(k));
        assert!(
            found == Some(k) || found == Some(k + 1000),
            "{k}: {found:?}"
        );
    }
    // Remove through iteration, under each hash the keys had.
    for (key, _) in store.to_vec().into_iter() {
        if store.remove(&key).is_none() {
            EPOCH.store(0xdead_beef, Ordering::Relaxed);
            assert!(store.remove(&key).is_some(), "entry {key:?} unreachable");
            EPOCH.store(0, Ordering::Relaxed);
        }
        store.check_invariants();
    }
    assert!(store.is_empty());
    assert!(store.index_values("parity").unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// Capacities that cannot be reserved

#[test]
fn an_impossible_capacity_is_an_error_not_a_panic() {
    for capacity in [usize::MAX, usize::MAX / 2, usize::MAX / 8 + 1, 1 << 60] {
        let built = catch_unwind(|| {
            IndexedStore::<u64, u64>::builder()
                .initial_capacity(capacity)
                .build()
                .map(|_| ())
        });
        let built = built.unwrap_or_else(|_| panic!("initial_capacity({capacity}) panicked"));
        assert!(
            matches!(built, Err(BuildError::CapacityOverflow { initial_capacity: c }) if c == capacity),
            "initial_capacity({capacity}) gave {built:?}"
        );
    }
    let store = IndexedStore::<u64, u64>::builder()
        .initial_capacity(1000)
        .build()
        .unwrap();
    store.insert(1, 1).unwrap();
    assert_eq!(store.len(), 1);
}
