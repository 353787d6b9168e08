//! Panic sweeps of `OrderedIndex`, every engine: each write operation run
//! with a panic planted at each call it makes of the key's `Hash`, `Eq`,
//! `Ord` and `Clone` and of `Drop` (keys and values), on indexes with small
//! leaves (so writes split, merge and trim them), with and without a
//! snapshot sharing the entries (so writes copy them first). After every
//! caught panic the index must pass `check_invariants`, its point lookups
//! must agree with its ordered entries, and its content must be what it was
//! before the operation (a panic in `Hash`, `Eq`, `Ord` or `Clone`, which
//! every operation calls before its first change) or, for a panicking
//! `Drop` (which runs after the change, with no lock held), what the
//! operation makes. Also: leaf capacities at the extremes.

#[path = "common/hostile.rs"]
mod hostile;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::panic::catch_unwind;

use hostile::{Key, Trait, Value, sweep};
use larder::{OrderedIndex, OrderedLock, OrderedSnapshot};

/// Every engine: (lock, point lookups).
const CONFIGS: [(OrderedLock, bool); 6] = [
    (OrderedLock::Partitioned, true),
    (OrderedLock::Partitioned, false),
    (OrderedLock::Sharded, true),
    (OrderedLock::Sharded, false),
    (OrderedLock::Single, true),
    (OrderedLock::Single, false),
];

type Index = OrderedIndex<Key, Value>;

/// Content, as key id -> value id.
type Model = BTreeMap<u64, u64>;

/// An index and, optionally, a snapshot that shares its entries.
struct Setup {
    index: Index,
    _snapshot: Option<OrderedSnapshot<Key, Value>>,
    before: Model,
}

/// An index of `config` with leaves of at most 4 entries, holding the even
/// keys `0, 2, .., 2 * (n - 1)` (value `10 * key`), inserted in a scrambled
/// order so the leaves are split unevenly.
fn setup((lock, point_lookups): (OrderedLock, bool), n: u64, shared: bool) -> Setup {
    let index = OrderedIndex::builder()
        .lock(lock)
        .point_lookups(point_lookups)
        .leaf_size(4)
        .build()
        .unwrap();
    for i in 0..n {
        let k = 2 * ((i * 7) % n);
        index.insert(Key::new(k), Value::new(10 * k));
    }
    let before: Model = (0..n).map(|i| (2 * i, 20 * i)).collect();
    let snapshot = shared.then(|| index.snapshot());
    Setup {
        index,
        _snapshot: snapshot,
        before,
    }
}

fn content(index: &Index) -> Model {
    let entries = index.to_vec().into_iter().collect::<Vec<_>>();
    assert!(
        entries.windows(2).all(|w| w[0].0.id < w[1].0.id),
        "iter not strictly sorted"
    );
    entries.iter().map(|(k, v)| (k.id, v.id)).collect()
}

/// What an outcome may be.
enum Expect {
    /// Before or after (an atomic step).
    Atomic(Model),
    /// `retain`: removals one at a time; any subset of `rejected` removed.
    Retain { rejected: Vec<u64>, after: Model },
}

fn check(index: &Index, before: &Model, expect: &Expect, fired: Option<Trait>) {
    index.check_invariants();
    let now = content(index);
    assert_eq!(index.len(), now.len(), "len disagrees with iter");
    assert_eq!(
        index.range_count::<Key, _>(..),
        now.len(),
        "range_count(..)"
    );
    match (expect, fired) {
        (Expect::Atomic(after) | Expect::Retain { after, .. }, None) => {
            assert_eq!(&now, after, "completed operation left the wrong content");
        }
        (Expect::Atomic(after), Some(Trait::Drop)) => assert!(
            now == *before || now == *after,
            "a panicking Drop left neither the content before nor after: {now:?}"
        ),
        (Expect::Atomic(_), Some(t)) => assert_eq!(
            &now, before,
            "a panicking {t:?} (called before the first change) changed the index"
        ),
        (Expect::Retain { rejected, .. }, Some(_)) => {
            for (k, v) in before {
                match now.get(k) {
                    Some(w) => assert_eq!(v, w, "retain changed the value of {k}"),
                    None => assert!(rejected.contains(k), "retain lost kept key {k}"),
                }
            }
            assert!(now.keys().all(|k| before.contains_key(k)), "retain added");
        }
    }
    // Point lookups (the table, if any) agree with the ordered entries.
    let probes = before.keys().chain(now.keys()).copied().chain(0..50);
    for k in probes {
        assert_eq!(
            index.get(&Key::new(k)).map(|v| v.id),
            now.get(&k).copied(),
            "get({k}) disagrees with iter"
        );
    }
    assert_eq!(index.first().map(|(k, _)| k.id), now.keys().next().copied());
    assert_eq!(
        index.last().map(|(k, _)| k.id),
        now.keys().next_back().copied()
    );
}

/// Sweeps `op` over every call of every trait, for every engine, with and
/// without a snapshot, on indexes of `n` entries.
fn sweep_op(n: u64, op: impl Fn(&Index), expect: impl Fn(&Model) -> Expect) {
    for config in CONFIGS {
        for shared in [false, true] {
            for t in [
                Trait::Hash,
                Trait::Eq,
                Trait::Ord,
                Trait::Clone,
                Trait::Drop,
            ] {
                sweep(
                    t,
                    10_000,
                    || setup(config, n, shared),
                    |s| op(&s.index),
                    |s, fired| {
                        let expect = expect(&s.before);
                        check(&s.index, &s.before, &expect, fired.then_some(t));
                    },
                );
            }
        }
    }
}

fn atomic(f: impl Fn(&mut Model)) -> impl Fn(&Model) -> Expect {
    move |before| {
        let mut after = before.clone();
        f(&mut after);
        Expect::Atomic(after)
    }
}

#[test]
fn insert_across_leaf_splits() {
    // Odd keys land between the even ones: one of these finds its leaf full.
    for k in [1, 3, 5, 9, 13, 17, 23, 25, 101] {
        sweep_op(
            12,
            |index| drop(index.insert(Key::new(k), Value::new(7))),
            atomic(|m| {
                m.insert(k, 7);
            }),
        );
    }
    // Replacing a value.
    sweep_op(
        12,
        |index| drop(index.insert(Key::new(6), Value::new(7))),
        atomic(|m| {
            m.insert(6, 7);
        }),
    );
}

#[test]
fn remove_across_leaf_merges() {
    for k in [0, 6, 12, 22, 7] {
        for n in [3, 12] {
            sweep_op(
                n,
                |index| drop(index.remove(&Key::new(k))),
                atomic(|m| {
                    m.remove(&k);
                }),
            );
        }
    }
}

#[test]
fn pops_and_drains_hand_out_or_keep_every_entry() {
    for n in [1, 3, 12] {
        sweep_op(
            n,
            |index| drop(index.pop_first()),
            atomic(|m| {
                m.pop_first();
            }),
        );
        sweep_op(
            n,
            |index| drop(index.pop_last()),
            atomic(|m| {
                m.pop_last();
            }),
        );
    }
    for (end, last) in [
        (Bound::Included(9), 9),
        (Bound::Excluded(4), 3),
        (Bound::Included(100), 100),
    ] {
        sweep_op(
            12,
            |index| {
                let end = end.map(Key::new);
                drop(index.drain_to(end.as_ref()));
            },
            atomic(|m| m.retain(|k, _| *k > last)),
        );
    }
    sweep_op(
        12,
        |index| drop(index.drain_to::<Key>(Bound::Unbounded)),
        atomic(Model::clear),
    );
}

#[test]
fn retain_and_clear_lose_nothing_else() {
    sweep_op(
        12,
        |index| index.retain(|k, _| k.id % 4 != 0),
        |before| Expect::Retain {
            rejected: before.keys().filter(|k| *k % 4 == 0).copied().collect(),
            after: before
                .iter()
                .filter(|(k, _)| *k % 4 != 0)
                .map(|(k, v)| (*k, *v))
                .collect(),
        },
    );
    sweep_op(12, Index::clear, atomic(Model::clear));
}

#[test]
fn extreme_leaf_capacities_work() {
    for capacity in [0, 1, usize::MAX / 2, usize::MAX] {
        let built = catch_unwind(|| {
            let index: OrderedIndex<u64, u64> = OrderedIndex::builder()
                .lock(OrderedLock::Partitioned)
                .leaf_size(capacity)
                .build()
                .unwrap();
            for k in 0..100 {
                index.insert(k, k);
            }
            assert_eq!(index.len(), 100);
            index.check_invariants();
            let collected: OrderedIndex<u64, u64> = (0..100).map(|k| (k, k)).collect();
            assert_eq!(collected.len(), 100);
            index.leaf_size()
        });
        let leaf_size = built.unwrap_or_else(|_| panic!("leaf_size({capacity}) panicked"));
        assert!(leaf_size.is_some_and(|c| c >= 2));
    }
}

/// Consumers pop and remove entries one at a time until the index is
/// nearly empty, so leaves empty and merge (and, with a snapshot, would
/// have to be copied to merge). Every entry must be either still in the
/// index or handed to the consumer: a panic in the reshaping after a pop
/// must not lose the popped entry.
#[test]
fn consuming_one_entry_at_a_time_loses_none() {
    use std::cell::RefCell;
    type Step = fn(&Index, u64) -> Option<u64>;
    let steps: [(&str, Step); 3] = [
        ("pop_first", |index, _| index.pop_first().map(|(k, _)| k.id)),
        ("pop_last", |index, _| index.pop_last().map(|(k, _)| k.id)),
        ("remove", |index, i| {
            let k = 2 * ((i * 5) % 12);
            index.remove(&Key::new(k)).map(|_| k)
        }),
    ];
    for (name, step) in steps {
        for config in CONFIGS {
            for shared in [false, true] {
                for t in [
                    Trait::Hash,
                    Trait::Eq,
                    Trait::Ord,
                    Trait::Clone,
                    Trait::Drop,
                ] {
                    let taken = RefCell::new(Vec::new());
                    sweep(
                        t,
                        10_000,
                        || {
                            taken.borrow_mut().clear();
                            setup(config, 12, shared)
                        },
                        |s| {
                            for i in 0..11 {
                                if let Some(k) = step(&s.index, i) {
                                    taken.borrow_mut().push(k);
                                }
                            }
                        },
                        |s, fired| {
                            s.index.check_invariants();
                            let now = content(&s.index);
                            let mut accounted: Vec<u64> = now.keys().copied().collect();
                            accounted.extend(taken.borrow().iter().copied());
                            accounted.sort_unstable();
                            let all: Vec<u64> = s.before.keys().copied().collect();
                            if fired && t == Trait::Drop {
                                // The step whose `Drop` panicked took its
                                // entry out before the panic: at most one
                                // entry is dropped with it.
                                assert!(
                                    accounted.len() + 1 >= all.len(),
                                    "{name}: {} of {} accounted for",
                                    accounted.len(),
                                    all.len()
                                );
                            } else {
                                assert_eq!(
                                    accounted, all,
                                    "{name} ({config:?}, shared {shared}, {t:?}): entries \
                                     lost or duplicated"
                                );
                            }
                        },
                    );
                }
            }
        }
    }
}
