//! Panic sweeps over `LruCache` and `LoadingLruCache`, under both policies
//! (exact LRU and CLOCK): every write operation (and `get` under exact LRU,
//! which moves its entry) is run with a panic planted at each call of the
//! key's and value's `Hash`, `Eq`, `Clone` and `Drop` in turn (see
//! `common/hostile.rs`), on full caches (so inserts evict), during resizes
//! both ways, and on a table churned into tombstones. After every run,
//! caught panic or not: the invariants hold (`check_invariants`: each
//! shard's table, list or ring and bound), `len <= capacity`,
//! `inits` equals the loader runs, every entry the
//! operation did not touch is still there with its value, and the cache
//! still caches.
//!
//! Also here: the regression tests of the load statistics and of extreme
//! capacities.

#[path = "common/hasher.rs"]
mod hasher;
#[path = "common/hostile.rs"]
mod hostile;

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::convert::Infallible;

use hasher::TestState;
use hostile::{Key, Trait, Value, sweep};
use larder::{BuildError, EvictionPolicy, LoadingLruCache, LruCache, RemovalCause};

const TRAITS: [Trait; 4] = [Trait::Hash, Trait::Eq, Trait::Clone, Trait::Drop];
const LIMIT: u64 = 20_000;
const CAPACITY: usize = 16;

type Cache = LruCache<Key, Value, TestState>;

/// Keeps the planted panics quiet (thousands of them); every other panic
/// is reported as usual.
fn quiet_planted_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let planted = info
                .payload()
                .downcast_ref::<String>()
                .is_some_and(|m| m.starts_with("hostile "));
            if !planted {
                report(info);
            }
        }));
    });
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    policy: EvictionPolicy,
    shards: usize,
}

const SHAPES: [Shape; 6] = [
    Shape {
        policy: EvictionPolicy::Exact,
        shards: 1,
    },
    Shape {
        policy: EvictionPolicy::Exact,
        shards: 4,
    },
    Shape {
        policy: EvictionPolicy::Clock,
        shards: 1,
    },
    Shape {
        policy: EvictionPolicy::Clock,
        shards: 4,
    },
    Shape {
        policy: EvictionPolicy::S3Fifo,
        shards: 1,
    },
    Shape {
        policy: EvictionPolicy::S3Fifo,
        shards: 4,
    },
];

thread_local! {
    /// Loader runs on this thread since the last `Fixture::new` (sweeps run
    /// their operations on the test's thread).
    static RUNS: Cell<u64> = const { Cell::new(0) };
}

thread_local! {
    /// What the fixture's removal listener saw since the last
    /// `Fixture::new`: each entry's id and cause.
    static REMOVED: RefCell<Vec<(u64, RemovalCause)>> = const { RefCell::new(Vec::new()) };
}

/// The fixture's removal listener: clones the key (a hostile `Clone`
/// call, so the sweeps plant panics inside the listener too) and logs it.
fn listen(key: Key, _value: Value, cause: RemovalCause) {
    let copy = key.clone();
    REMOVED.with(|log| log.borrow_mut().push((copy.id, cause)));
}

fn count_run() {
    RUNS.with(|runs| runs.set(runs.get() + 1));
}

fn runs() -> u64 {
    RUNS.with(Cell::get)
}

/// The loader of the fixture's `LoadingLruCache`.
fn loader(key: &Key) -> Value {
    count_run();
    Value::new(key.id)
}

/// A cache filled with ids `0..CAPACITY` (each value's id is its key's;
/// with 4 shards, some are evicted on the way: shards fill unevenly).
struct Fixture {
    cache: LoadingLruCache<Key, Value, Infallible, TestState>,
}

impl Fixture {
    fn new(shape: Shape) -> Self {
        let cache = LruCache::<Key, Value>::builder()
            .capacity(CAPACITY)
            .shards(shape.shards)
            .policy(shape.policy)
            .hasher(TestState {
                one_shard: shape.shards == 1,
                ..TestState::spread()
            })
            .eviction_listener(listen)
            .build_with_loader(loader)
            .unwrap();
        RUNS.with(|runs| runs.set(0));
        let fixture = Self { cache };
        for id in 0..CAPACITY as u64 {
            fixture.cache.cache().insert(Key::new(id), Value::new(id));
        }
        fixture.cache.cache().reset_stats();
        REMOVED.with(|log| log.borrow_mut().clear());
        fixture
    }

    fn load(&self, id: u64) -> u64 {
        let cache: &Cache = self.cache.cache();
        cache
            .get_or_init(&Key::new(id), || {
                count_run();
                Value::new(id)
            })
            .id
    }

    fn fail(&self, id: u64) {
        let cache: &Cache = self.cache.cache();
        let _ = cache.get_or_try_init(&Key::new(id), || {
            count_run();
            Err::<Value, _>("down")
        });
    }

    fn ids(&self) -> BTreeSet<u64> {
        self.cache
            .cache()
            .to_vec()
            .into_iter()
            .map(|(k, _)| k.id)
            .collect()
    }
}

/// What an operation may do to the entries that were there before it.
#[derive(Clone, Copy, PartialEq)]
enum Effect {
    /// Touches only the listed ids.
    Keeps,
    /// May evict up to this many other entries.
    Evicts(usize),
    /// May remove every entry.
    Clears,
}

fn check(f: &Fixture, before: &BTreeSet<u64>, touched: &[u64], effect: Effect, fired: bool) {
    let cache: &Cache = f.cache.cache();
    cache.check_invariants();
    let stats = cache.stats();
    assert!(Some(stats.len) <= stats.capacity, "{stats:?}");
    assert!(cache.len() <= cache.capacity());
    assert_eq!(
        stats.inits,
        runs(),
        "loader runs lost from the statistics: {stats:?}"
    );
    let now = f.ids();
    // Every entry that left went to the listener with its cause, and the
    // evictions it saw are the counted ones; a panic planted in one
    // listener call loses that call's record only.
    let removed = REMOVED.with(|log| log.borrow().clone());
    let slack = usize::from(fired);
    let unreported = before
        .difference(&now)
        .filter(|id| !removed.iter().any(|(r, _)| r == *id))
        .count();
    assert!(
        unreported <= slack,
        "{unreported} removals not reported: {removed:?}"
    );
    let evicted = removed
        .iter()
        .filter(|(_, cause)| *cause == RemovalCause::Evicted)
        .count() as u64;
    assert!(
        evicted <= stats.evictions && evicted + slack as u64 >= stats.evictions,
        "listener saw {evicted} evictions, {} counted",
        stats.evictions
    );
    if effect == Effect::Clears && !fired {
        assert!(
            removed
                .iter()
                .all(|(_, cause)| *cause == RemovalCause::Cleared)
        );
    }
    assert_eq!(now.len(), cache.len(), "iter and len disagree");
    for &id in &now {
        assert_eq!(cache.peek(&Key::new(id)).map(|v| v.id), Some(id));
    }
    let untouched: Vec<u64> = before
        .iter()
        .copied()
        .filter(|id| !touched.contains(id))
        .collect();
    let lost = untouched.iter().filter(|id| !now.contains(id)).count();
    // With 4 shards of 4 the fill left some ids out: storing one of them
    // may evict from its (full) shard.
    let effect = match effect {
        Effect::Keeps if touched.iter().any(|id| !before.contains(id)) && before.len() > 4 => {
            Effect::Evicts(touched.len())
        }
        effect => effect,
    };
    match effect {
        Effect::Keeps => assert_eq!(lost, 0, "an untouched entry was lost"),
        Effect::Evicts(n) => assert!(lost <= n, "{lost} untouched entries lost, at most {n}"),
        Effect::Clears => {}
    }
    // Still caches: a fresh key goes in and is found; the bound holds.
    for id in 1_000_000..1_000_000 + 2 * CAPACITY as u64 {
        assert_eq!(f.load(id), id);
        assert!(
            cache.contains_key(&Key::new(id)),
            "fresh entry {id} not cached"
        );
    }
    assert!(cache.len() <= cache.capacity());
    cache.check_invariants();
    let stats = cache.stats();
    assert_eq!(stats.inits, runs());
}

/// Sweeps `op` over every call of every trait on full caches of every
/// shape; returns the panics caught.
fn sweep_op(touched: &[u64], effect: Effect, op: impl Fn(&Fixture)) -> u64 {
    sweep_shapes(&SHAPES, touched, effect, op)
}

/// [`sweep_op`] on caches of `shapes`.
fn sweep_shapes(shapes: &[Shape], touched: &[u64], effect: Effect, op: impl Fn(&Fixture)) -> u64 {
    quiet_planted_panics();
    let mut panics = 0;
    for &shape in shapes {
        for t in TRAITS {
            let before = RefCell::new(BTreeSet::new());
            panics += sweep(
                t,
                LIMIT,
                || {
                    let f = Fixture::new(shape);
                    *before.borrow_mut() = f.ids();
                    f
                },
                &op,
                |f, fired| check(f, &before.borrow(), touched, effect, fired),
            );
        }
    }
    panics
}

#[test]
fn lookups_and_loads_survive_a_panic_at_every_user_call() {
    let mut panics = 0;
    // `get` moves its entry under exact LRU (a write) and sets a bit under
    // CLOCK.
    panics += sweep_op(&[3], Effect::Keeps, |f| {
        f.cache.cache().get(&Key::new(3));
    });
    panics += sweep_op(&[500], Effect::Evicts(1), |f| {
        f.load(500);
    });
    panics += sweep_op(&[3], Effect::Keeps, |f| {
        f.load(3);
    });
    panics += sweep_op(&[501], Effect::Keeps, |f| f.fail(501));
    panics += sweep_op(&[502], Effect::Evicts(1), |f| {
        f.cache.get_or_load(&Key::new(502));
    });
    println!("{panics} planted panics caught");
    assert!(panics > 50, "only {panics} panics planted");
}

#[test]
fn writes_survive_a_panic_at_every_user_call() {
    let mut panics = 0;
    panics += sweep_op(&[600], Effect::Evicts(1), |f| {
        f.cache.cache().insert(Key::new(600), Value::new(600));
    });
    panics += sweep_op(&[5], Effect::Keeps, |f| {
        f.cache.cache().insert(Key::new(5), Value::new(5));
    });
    panics += sweep_op(&[4], Effect::Keeps, |f| {
        f.cache.cache().remove(&Key::new(4));
    });
    panics += sweep_op(&[], Effect::Clears, |f| f.cache.cache().clear());
    // Inserts and removes fresh keys in one shard: tombstones, then
    // rehashing in place.
    let churned: Vec<u64> = (0..4).chain(5_000..5_032).collect();
    let one_shard = [SHAPES[0], SHAPES[2], SHAPES[4]];
    panics += sweep_shapes(&one_shard, &churned, Effect::Keeps, |f| {
        for id in 5_000..5_032 {
            f.cache.cache().remove(&Key::new(id % 4));
            f.cache.cache().insert(Key::new(id), Value::new(id));
            f.cache.cache().remove(&Key::new(id));
            f.cache.cache().insert(Key::new(id % 4), Value::new(id % 4));
        }
    });
    println!("{panics} planted panics caught");
    assert!(panics > 100, "only {panics} panics planted");
}

#[test]
fn resizes_survive_a_panic_at_every_user_call() {
    let mut panics = 0;
    panics += sweep_op(&[], Effect::Evicts(CAPACITY - 4), |f| {
        f.cache.cache().resize(4).unwrap();
    });
    panics += sweep_op(&[], Effect::Keeps, |f| {
        f.cache.cache().resize(4 * CAPACITY).unwrap();
    });
    panics += sweep_op(&[700, 701], Effect::Evicts(CAPACITY), |f| {
        f.cache.cache().resize(4).unwrap();
        f.cache.cache().insert(Key::new(700), Value::new(700));
        f.cache.cache().resize(CAPACITY).unwrap();
        f.cache.cache().insert(Key::new(701), Value::new(701));
    });
    println!("{panics} planted panics caught");
    assert!(panics > 10, "only {panics} panics planted");
}

/// A panic while storing a loaded value (here `K: Clone` of the key; `K:
/// Eq` in the insert would need a full 64-bit hash collision) used to drop
/// that loader run from the statistics.
#[test]
fn every_loader_run_is_counted_even_when_storing_it_panics() {
    quiet_planted_panics();
    let mut panics = 0;
    for (t, id) in [(Trait::Clone, 800), (Trait::Drop, 801)] {
        panics += sweep(
            t,
            LIMIT,
            || Fixture::new(SHAPES[0]),
            |f| {
                f.cache.cache().remove(&Key::new(id));
                f.cache.get_or_load(&Key::new(id));
            },
            |f, _| {
                let stats = f.cache.cache().stats();
                assert_eq!(stats.inits, runs(), "{t:?}: {stats:?}");
            },
        );
    }
    assert!(panics > 0);
}

// ---------------------------------------------------------------------------
// Extreme arguments.

#[test]
fn any_capacity_from_one_up_builds() {
    for policy in [
        EvictionPolicy::Exact,
        EvictionPolicy::Clock,
        EvictionPolicy::S3Fifo,
    ] {
        for capacity in [1, u32::MAX as usize, usize::MAX / 2, usize::MAX] {
            let cache = LruCache::<u64, u64>::builder()
                .capacity(capacity)
                .policy(policy)
                .build()
                .unwrap();
            assert_eq!(cache.capacity(), capacity);
            for i in 0..100 {
                cache.insert(i, i);
            }
            assert_eq!(cache.len(), 100.min(capacity));
            cache.resize(usize::MAX).unwrap();
            cache.resize(capacity).unwrap();
            cache.check_invariants();
        }
        let cache = LruCache::<u64, u64>::builder()
            .capacity(usize::MAX)
            .shards(1)
            .policy(policy)
            .build()
            .unwrap();
        cache.insert(1, 1);
        assert_eq!(cache.stats().capacity, Some(usize::MAX));
    }
    let cache = LruCache::<u8, u8>::new(usize::MAX);
    cache.insert(1, 1);
    assert_eq!(cache.get(&1), Some(1));
}

#[test]
fn invalid_builder_arguments_are_errors_not_panics() {
    let too_many = LruCache::<u8, u8>::MAX_SHARDS + 1;
    for (capacity, shards) in [
        (0, None),
        (0, Some(1)),
        (1, Some(0)),
        (1, Some(2)),
        (usize::MAX, Some(usize::MAX)),
        (usize::MAX, Some(too_many)),
    ] {
        let result = std::panic::catch_unwind(|| {
            let mut builder = LruCache::<u8, u8>::builder().capacity(capacity);
            if let Some(shards) = shards {
                builder = builder.shards(shards);
            }
            builder.build().map(drop)
        });
        let result = result.unwrap_or_else(|_| panic!("build({capacity}, {shards:?}) panicked"));
        assert!(result.is_err(), "build({capacity}, {shards:?}) succeeded");
    }
    assert!(matches!(
        LruCache::<u8, u8>::builder()
            .capacity(usize::MAX)
            .shards(usize::MAX)
            .build()
            .unwrap_err(),
        BuildError::TooManyShards {
            shards: usize::MAX,
            max: 65536
        }
    ));
    let cache = LruCache::<u8, u8>::new(4);
    assert!(cache.resize(0).is_err());
}
