//! Panic sweeps over `TypedCache` and `AnyCache`: every write operation is
//! run with a panic planted at each call of the key's and value's `Hash`,
//! `Eq`, `Clone` and `Drop` in turn (see `common/hostile.rs`), on unbounded,
//! bounded (`capacity`, so inserts evict), weighted and expiring caches, and
//! on a
//! table churned into tombstones (so it is rehashed in place). After every
//! run, caught panic or not: the invariants hold (`check_invariants`: `len`
//! in step with the shards, within `capacity`, every entry in its shard
//! under its stored hash, nodes and table agreeing), the statistics add up,
//! every entry the operation did not touch is still there with its value,
//! and the cache still caches (a bounded one still evicts). `TypedCache`'s
//! removal listener clones each key it is given (so the `Clone` sweep
//! plants panics inside the listener too), and every entry that left
//! without being reported must be an expired one the cache still holds.
//!
//! Also here: the regression tests of user code under a lock (a re-entrant
//! `Clone`) and of the clock's saturation.

#[path = "common/hasher.rs"]
mod hasher;
#[path = "common/hostile.rs"]
mod hostile;

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use hasher::TestState;
use hostile::{Key, Trait, Value, sweep};
use larder::{
    AnyCache, BuildError, CacheStats, Clock, EvictionPolicy, ManualClock, RemovalCause, TypedCache,
};

const TRAITS: [Trait; 4] = [Trait::Hash, Trait::Eq, Trait::Clone, Trait::Drop];
/// No operation here makes this many calls of one trait.
const LIMIT: u64 = 20_000;

/// The operations the sweeps need, over both cache types.
trait Api {
    fn get(&self, id: u64) -> Option<u64>;
    fn get_or_init(&self, id: u64) -> u64;
    fn get_or_fail(&self, id: u64) -> Result<u64, ()>;
    fn insert(&self, id: u64) -> Option<u64>;
    fn remove(&self, id: u64) -> Option<u64>;
    fn clear(&self);
    fn purge_expired(&self) -> usize;
    fn resize(&self, capacity: usize);
    fn contains(&self, id: u64) -> bool;
    fn len(&self) -> usize;
    fn stats(&self) -> CacheStats;
    fn check_invariants(&self);
    /// Whether removals are reported to [`REMOVED`].
    fn listens(&self) -> bool;
}

thread_local! {
    /// The ids `TypedCache`'s removal listener was given since `fill`
    /// (sweeps run their operations on the test's thread).
    static REMOVED: RefCell<Vec<(u64, RemovalCause)>> = const { RefCell::new(Vec::new()) };
}

/// The typed fixture's removal listener: clones the key (a hostile `Clone`
/// call) and logs it.
fn listen(key: Key, _value: Value, cause: RemovalCause) {
    let copy = key.clone();
    REMOVED.with(|log| log.borrow_mut().push((copy.id, cause)));
}

impl Api for TypedCache<Key, Value, TestState> {
    fn get(&self, id: u64) -> Option<u64> {
        self.get(&Key::new(id)).map(|v| v.id)
    }
    fn get_or_init(&self, id: u64) -> u64 {
        self.get_or_init(&Key::new(id), || Value::new(id)).id
    }
    fn get_or_fail(&self, id: u64) -> Result<u64, ()> {
        self.get_or_try_init(&Key::new(id), || Err(()))
            .map(|v| v.id)
            .map_err(|_| ())
    }
    fn insert(&self, id: u64) -> Option<u64> {
        self.insert(Key::new(id), Value::new(id)).map(|v| v.id)
    }
    fn remove(&self, id: u64) -> Option<u64> {
        self.remove(&Key::new(id)).map(|v| v.id)
    }
    fn clear(&self) {
        self.clear();
    }
    fn purge_expired(&self) -> usize {
        self.purge_expired()
    }
    fn resize(&self, capacity: usize) {
        self.resize(capacity).unwrap();
    }
    fn contains(&self, id: u64) -> bool {
        self.contains_key(&Key::new(id))
    }
    fn len(&self) -> usize {
        self.len()
    }
    fn stats(&self) -> CacheStats {
        self.stats()
    }
    fn check_invariants(&self) {
        self.check_invariants();
    }
    fn listens(&self) -> bool {
        true
    }
}

impl Api for AnyCache<Key, TestState> {
    fn get(&self, id: u64) -> Option<u64> {
        self.get::<Value, _>(&Key::new(id)).map(|v| v.id)
    }
    fn get_or_init(&self, id: u64) -> u64 {
        self.get_or_init(&Key::new(id), || Value::new(id)).id
    }
    fn get_or_fail(&self, id: u64) -> Result<u64, ()> {
        self.get_or_try_init::<Value, (), _>(&Key::new(id), || Err(()))
            .map(|v| v.id)
            .map_err(|_| ())
    }
    fn insert(&self, id: u64) -> Option<u64> {
        self.insert(Key::new(id), Value::new(id)).map(|v| v.id)
    }
    fn remove(&self, id: u64) -> Option<u64> {
        self.remove::<Value, _>(&Key::new(id)).map(|v| v.id)
    }
    fn clear(&self) {
        self.clear();
    }
    fn purge_expired(&self) -> usize {
        self.purge_expired()
    }
    fn resize(&self, capacity: usize) {
        self.resize(capacity).unwrap();
    }
    fn contains(&self, id: u64) -> bool {
        self.contains_key::<Value, _>(&Key::new(id))
    }
    fn len(&self) -> usize {
        self.len()
    }
    fn stats(&self) -> CacheStats {
        self.stats()
    }
    fn check_invariants(&self) {
        self.check_invariants();
    }
    fn listens(&self) -> bool {
        false
    }
}

/// A cache under test, what it was built with, and which entries must
/// survive the operation.
struct Fixture<C> {
    cache: C,
    /// The cache's clock (kept for operations that move time).
    #[allow(dead_code)]
    clock: ManualClock,
    capacity: Option<usize>,
    /// Whether a new key must be used twice to be kept (S3-FIFO's
    /// probation evicts keys used once first).
    proves_keys: bool,
    /// Ids that must still be there with their value after the operation.
    kept: Vec<u64>,
    /// Ids stored before the operation (those not in `kept` may go).
    stored: Vec<u64>,
}

/// How to build a cache: size bound, time to live, one shard or spread.
#[derive(Clone, Copy, Debug)]
struct Shape {
    capacity: Option<usize>,
    ttl: bool,
    one_shard: bool,
    policy: EvictionPolicy,
    /// With a weigher (`TypedCache` only): ids divisible by 3 weigh 2.
    weighted: bool,
}

const UNBOUNDED: Shape = Shape {
    capacity: None,
    ttl: false,
    one_shard: true,
    policy: EvictionPolicy::Clock,
    weighted: false,
};
const BOUNDED: Shape = Shape {
    capacity: Some(8),
    ttl: false,
    one_shard: true,
    policy: EvictionPolicy::Clock,
    weighted: false,
};
const BOUNDED_SPREAD: Shape = Shape {
    capacity: Some(8),
    ttl: false,
    one_shard: false,
    policy: EvictionPolicy::Clock,
    weighted: false,
};
/// One entry over 16 shards: every insert of a new key evicts, mostly from
/// another shard.
const BOUNDED_ONE: Shape = Shape {
    capacity: Some(1),
    ttl: false,
    one_shard: false,
    policy: EvictionPolicy::Clock,
    weighted: false,
};
const EXPIRING: Shape = Shape {
    capacity: None,
    ttl: true,
    one_shard: true,
    policy: EvictionPolicy::Clock,
    weighted: false,
};
const EXPIRING_BOUNDED: Shape = Shape {
    capacity: Some(16),
    ttl: true,
    one_shard: false,
    policy: EvictionPolicy::Clock,
    weighted: false,
};

/// [`BOUNDED`] under the other policies (a hit under `Exact` takes the
/// write lock and clones under it).
const BOUNDED_EXACT: Shape = Shape {
    policy: EvictionPolicy::Exact,
    ..BOUNDED
};
const BOUNDED_S3FIFO: Shape = Shape {
    policy: EvictionPolicy::S3Fifo,
    ..BOUNDED
};
/// [`BOUNDED_SPREAD`] with a weigher: the bound is a total weight (checked
/// by `check_invariants`), and user code runs in the weigher too.
const WEIGHTED: Shape = Shape {
    weighted: true,
    ..BOUNDED_SPREAD
};

/// The weigher of [`WEIGHTED`] (user code that reads the value only).
fn weigh(_key: &Key, value: &Value) -> u32 {
    if value.id % 3 == 0 { 2 } else { 0 }
}

fn typed(shape: Shape, clock: &ManualClock) -> TypedCache<Key, Value, TestState> {
    let mut builder = TypedCache::<Key, Value>::builder()
        .hasher(TestState {
            one_shard: shape.one_shard,
            ..TestState::spread()
        })
        .clock(clock.clone())
        .policy(shape.policy)
        // 16 shards whatever the capacity (a small bounded cache gets
        // fewer by default): evictions cross shards.
        .shards(16)
        .eviction_listener(listen);
    if let Some(max) = shape.capacity {
        builder = builder.capacity(max);
    }
    if shape.ttl {
        builder = builder.time_to_live(Duration::from_secs(10));
    }
    if shape.weighted {
        builder = builder.weigher(weigh);
    }
    builder.build().unwrap()
}

fn any(shape: Shape, clock: &ManualClock) -> AnyCache<Key, TestState> {
    let mut builder = AnyCache::<Key>::builder()
        .hasher(TestState {
            one_shard: shape.one_shard,
            ..TestState::spread()
        })
        .clock(clock.clone())
        .policy(shape.policy)
        .shards(16);
    if let Some(max) = shape.capacity {
        builder = builder.capacity(max);
    }
    if shape.ttl {
        builder = builder.time_to_live(Duration::from_secs(10));
    }
    builder.build().unwrap()
}

/// Fills a fresh cache: ids 0..n (n = the bound, or 40), under a TTL half
/// of them stored 6 s before the other half and the clock then moved to
/// 12 s, so the first half has expired.
fn fill<C: Api>(cache: C, clock: ManualClock, shape: Shape) -> Fixture<C> {
    let n = shape.capacity.map_or(40, |max| max as u64);
    let mut kept = Vec::new();
    for id in 0..n {
        if shape.ttl && id == n / 2 {
            clock.advance(Duration::from_secs(6));
        }
        cache.insert(id);
        if !shape.ttl || id >= n / 2 {
            kept.push(id);
        }
    }
    if shape.ttl {
        clock.advance(Duration::from_secs(6));
    }
    // A bounded cache may evict any of its entries on the next insert.
    if shape.capacity.is_some() {
        kept.clear();
    }
    // A weighted fill evicts: what left is not stored.
    let left = REMOVED.with(|log| std::mem::take(&mut *log.borrow_mut()));
    let stored = (0..n).filter(|id| !left.iter().any(|(r, _)| r == id));
    Fixture {
        cache,
        clock,
        capacity: shape.capacity,
        proves_keys: shape.policy == EvictionPolicy::S3Fifo,
        kept,
        stored: stored.collect(),
    }
}

/// `touched` of an operation that removes every entry.
const ALL: &[u64] = &[u64::MAX];

/// Every check after one run of an operation that touched `touched`
/// (`ALL`: every entry), whether it `panicked`.
fn check<C: Api>(f: &Fixture<C>, touched: &[u64], panicked: bool) {
    f.cache.check_invariants();
    if touched == ALL && !panicked {
        assert_eq!(f.cache.len(), 0, "entries left after removing all");
    }
    let stats = f.cache.stats();
    assert!(stats.init_failures <= stats.inits, "{stats:?}");
    assert!(stats.inits + stats.waits <= stats.misses, "{stats:?}");
    if let Some(max) = f.capacity {
        assert!(f.cache.len() <= max, "{} over {max}", f.cache.len());
    }
    for &id in &f.kept {
        if touched != ALL && !touched.contains(&id) {
            assert_eq!(f.cache.get(id), Some(id), "untouched entry {id} lost");
        }
    }
    let ids: std::collections::BTreeSet<u64> = f.stored.iter().chain(touched).copied().collect();
    if f.cache.listens() {
        // Every stored entry that is gone was reported, except expired
        // ones still held (counted in `len`, not live) and, if a panic was
        // planted in a listener call, that call's one.
        let removed = REMOVED.with(|log| log.borrow().clone());
        let live = ids.iter().filter(|&&id| f.cache.contains(id)).count();
        let held_expired = f.cache.len() - live;
        let unreported = f
            .stored
            .iter()
            .filter(|&&id| !f.cache.contains(id) && !removed.iter().any(|&(r, _)| r == id))
            .count();
        assert!(
            unreported <= held_expired + usize::from(panicked),
            "{unreported} removals not reported ({held_expired} expired held): {removed:?}"
        );
        if touched == ALL && !panicked {
            assert!(
                removed
                    .iter()
                    .all(|&(_, c)| c == RemovalCause::Cleared || c == RemovalCause::Expired)
            );
        }
    }
    // No entry holds another's value, and `len` counts what is there.
    let mut present = 0;
    for id in ids {
        if let Some(value) = f.cache.get(id) {
            assert_eq!(value, id, "entry {id} holds {value}");
            present += 1;
        }
    }
    assert!(present <= f.cache.len());
    // Still caches, and (bounded) still evicts: fresh keys go in and the
    // bound holds. (A bounded cache may evict a fresh entry at once: CLOCK
    // passes over the entries just read and takes the new, unread one.)
    let fresh = 1_000_000;
    let rounds = f.capacity.map_or(3, |max| 2 * max as u64);
    for id in fresh..fresh + rounds {
        assert_eq!(f.cache.get_or_init(id), id);
        if f.proves_keys {
            assert_eq!(f.cache.get(id), Some(id));
        }
        if f.capacity.is_none() {
            assert!(f.cache.contains(id), "a fresh entry {id} was not cached");
        }
    }
    if let Some(max) = f.capacity {
        assert!(f.cache.len() <= max);
        let cached = (fresh..fresh + rounds).filter(|&id| f.cache.contains(id));
        assert!(
            cached.count() >= (max / 2).max(1),
            "the cache stopped caching"
        );
    }
    f.cache.check_invariants();
}

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

/// Sweeps `op` (which touches `touched`) over every call of every trait,
/// on caches of `shape` made by `make`; returns the total panics caught.
fn sweep_all<C: Api>(
    shape: Shape,
    make: fn(Shape, &ManualClock) -> C,
    touched: &[u64],
    op: impl Fn(&Fixture<C>),
) -> u64 {
    quiet_planted_panics();
    let mut panics = 0;
    for t in TRAITS {
        panics += sweep(
            t,
            LIMIT,
            || {
                let clock = ManualClock::new();
                let cache = make(shape, &clock);
                fill(cache, clock, shape)
            },
            &op,
            |f, panicked| check(f, touched, panicked),
        );
    }
    panics
}

/// Inserts and removes `n` fresh keys, one after another: the table fills
/// with tombstones and is rehashed in place (and the queue compacted).
fn churn<C: Api>(f: &Fixture<C>, n: u64) {
    for id in 5_000..5_000 + n {
        f.cache.insert(id);
        f.cache.remove(id);
    }
}

/// The keys `churn(f, n)` touches, for `n` up to 200.
fn churned() -> Vec<u64> {
    (5_000..5_200).collect()
}

/// Resizes its cache to its capacity when dropped.
struct Restore<'a, C: Api>(&'a C, usize);

impl<C: Api> Drop for Restore<'_, C> {
    fn drop(&mut self) {
        self.0.resize(self.1);
    }
}

/// Every write operation of both caches, on every shape.
fn sweep_every_operation<C: Api>(make: fn(Shape, &ManualClock) -> C) {
    let mut panics = 0;
    for shape in [
        UNBOUNDED,
        BOUNDED,
        BOUNDED_SPREAD,
        BOUNDED_ONE,
        EXPIRING,
        EXPIRING_BOUNDED,
        BOUNDED_EXACT,
        BOUNDED_S3FIFO,
        WEIGHTED,
    ] {
        panics += sweep_all(shape, make, &[500], |f| {
            f.cache.get_or_init(500);
        });
        panics += sweep_all(shape, make, &[501], |f| {
            let _ = f.cache.get_or_fail(501);
        });
        // A hit on a kept entry (or, expiring, a miss that removes an
        // expired one and re-inits it).
        panics += sweep_all(shape, make, &[3], |f| {
            f.cache.get_or_init(3);
        });
        panics += sweep_all(shape, make, &[3], |f| {
            f.cache.get(3);
        });
        panics += sweep_all(shape, make, &[600], |f| {
            f.cache.insert(600);
        });
        panics += sweep_all(shape, make, &[5], |f| {
            f.cache.insert(5);
        });
        panics += sweep_all(shape, make, &[4], |f| {
            f.cache.remove(4);
        });
        panics += sweep_all(shape, make, ALL, |f| {
            f.cache.clear();
        });
        panics += sweep_all(shape, make, &[], |f| {
            f.cache.purge_expired();
        });
        panics += sweep_all(shape, make, &churned(), |f| churn(f, 24));
        // Shrinking evicts (through the listener and `Drop`); the bound
        // the fixture was built with comes back, a planted panic or not
        // (growing evicts nothing, so runs no user code).
        if let Some(max) = shape.capacity {
            panics += sweep_all(shape, make, &[], |f| {
                let _restore = Restore(&f.cache, max);
                f.cache.resize(2);
            });
        }
    }
    println!("{panics} planted panics caught");
    assert!(panics > 1_000, "only {panics} panics planted");
}

#[test]
fn typed_cache_survives_a_panic_at_every_user_call() {
    sweep_every_operation(typed);
}

#[test]
fn any_cache_survives_a_panic_at_every_user_call() {
    sweep_every_operation(any);
}

/// A `Hash` panic while the table is full of tombstones: the old core
/// rehashed its `std` map in place with the user's `Hash`, and a panic
/// there dropped entries (`len` then counted entries `get` could not find).
#[test]
fn rehash_in_place_runs_no_user_hash() {
    let panics = sweep_all(UNBOUNDED, typed, &churned(), |f| churn(f, 200));
    assert!(panics >= 200);
}

/// An `Eq` (or `Hash`) panic during eviction: the old core popped the CLOCK
/// queue entry before looking the key up, so the entry could never be
/// evicted again and the bound was lost.
#[test]
fn eviction_looks_before_it_takes() {
    quiet_planted_panics();
    for t in [Trait::Eq, Trait::Hash] {
        sweep(
            t,
            LIMIT,
            || {
                let clock = ManualClock::new();
                fill(typed(BOUNDED, &clock), clock, BOUNDED)
            },
            |f| {
                for id in 100..120 {
                    Api::insert(&f.cache, id);
                }
            },
            |f, panicked| check(f, &(100..120).collect::<Vec<_>>(), panicked),
        );
    }
}

// ---------------------------------------------------------------------------
// User code under a lock: a key whose `Clone` calls back into the cache.

thread_local! {
    static ON_CLONE: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

/// A key whose `Clone` runs the thread's `ON_CLONE` hook.
#[derive(Debug, PartialEq, Eq)]
struct Reentrant(u64);

impl Hash for Reentrant {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl Clone for Reentrant {
    fn clone(&self) -> Self {
        ON_CLONE.with(|hook| {
            if let Some(hook) = hook.borrow().as_ref() {
                hook();
            }
        });
        Self(self.0)
    }
}

/// Runs `f` on a thread; fails with `name` if it does not finish in 10 s
/// (a deadlock), or resumes its panic.
fn within_10s(name: &str, f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(10)) {
        Ok(()) => handle.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{name}: deadlocked (user Clone ran under a shard lock)")
        }
    }
}

/// `K: Clone` must not run under a shard lock: a `Clone` that reads the
/// cache (same shard: one shard for every key) would deadlock on it.
#[test]
fn typed_cache_clones_keys_outside_its_locks() {
    within_10s("typed_cache_clones_keys_outside_its_locks", || {
        let cache = Arc::new(
            TypedCache::<Reentrant, u64>::builder()
                .hasher(TestState::one_shard())
                .capacity(4)
                .time_to_live(Duration::from_secs(60))
                .build()
                .unwrap(),
        );
        let probe = Arc::clone(&cache);
        ON_CLONE.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                let _ = probe.get(&Reentrant(99));
                let _ = probe.len();
            }));
        });
        for id in 0..10 {
            cache.insert(Reentrant(id), id);
            assert_eq!(cache.get_or_init(&Reentrant(100 + id), || id), id);
        }
        cache.remove(&Reentrant(9));
        ON_CLONE.with(|hook| hook.borrow_mut().take());
        cache.check_invariants();
        assert!(cache.len() <= 4);
    });
}

/// The single-flight group's `K: Clone` must not run under its shard
/// mutex: a `Clone` that starts an init of another key of the same flight
/// shard would deadlock on it.
#[test]
fn flight_clones_keys_outside_its_mutex() {
    within_10s("flight_clones_keys_outside_its_mutex", || {
        use std::hash::BuildHasher;
        let state = TestState::spread();
        let cache = Arc::new(
            TypedCache::<Reentrant, u64>::builder()
                .hasher(state)
                .build()
                .unwrap(),
        );
        // A second key in the first key's flight shard (hash mod 16).
        let shard = |id: u64| state.hash_one(Reentrant(id)) % 16;
        let other = (2..).find(|&id| shard(id) == shard(1)).unwrap();
        let probe = Arc::clone(&cache);
        let inside = Arc::new(std::sync::atomic::AtomicBool::new(false));
        ON_CLONE.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                use std::sync::atomic::Ordering::SeqCst;
                if !inside.swap(true, SeqCst) {
                    assert_eq!(probe.get_or_init(&Reentrant(other), || 2), 2);
                    inside.store(false, SeqCst);
                }
            }));
        });
        assert_eq!(cache.get_or_init(&Reentrant(1), || 1), 1);
        ON_CLONE.with(|hook| hook.borrow_mut().take());
        assert_eq!(cache.get(&Reentrant(other)), Some(2));
        cache.check_invariants();
    });
}

// ---------------------------------------------------------------------------
// Extreme arguments.

/// `advance(Duration::MAX)` saturates: the clock never wraps backwards, so
/// an entry with a 1 h time to live expires.
#[test]
fn manual_clock_saturates_instead_of_wrapping() {
    let clock = ManualClock::new();
    let cache = TypedCache::<u32, u32>::builder()
        .time_to_live(Duration::from_secs(3_600))
        .clock(clock.clone())
        .build()
        .unwrap();
    clock.advance(Duration::from_secs(3_600));
    cache.insert(1, 1);
    clock.advance(Duration::MAX);
    assert_eq!(clock.now(), Duration::from_nanos(u64::MAX));
    assert_eq!(cache.get(&1), None, "a 1 h entry outlived the end of time");
    clock.advance(Duration::from_secs(7_200));
    assert_eq!(clock.now(), Duration::from_nanos(u64::MAX));
    cache.insert(2, 2);
    assert_eq!(cache.get(&2), Some(2));
    cache.check_invariants();
}

/// Durations at and near the largest the clock can hold, and a bound of
/// `usize::MAX`, build and behave.
#[test]
fn extreme_builder_arguments_are_errors_or_work() {
    assert!(matches!(
        TypedCache::<u8, u8>::builder()
            .capacity(0)
            .build()
            .unwrap_err(),
        BuildError::ZeroCapacity
    ));
    let clock = ManualClock::new();
    let cache = TypedCache::<u64, u64>::builder()
        .capacity(usize::MAX)
        .time_to_live(Duration::MAX)
        .time_to_idle(Duration::from_nanos(u64::MAX))
        .clock(clock.clone())
        .build()
        .unwrap();
    for i in 0..100 {
        cache.insert(i, i);
    }
    clock.advance(Duration::from_nanos(u64::MAX - 1));
    assert_eq!(cache.get(&7), Some(7));
    clock.advance(Duration::MAX);
    assert_eq!(cache.len(), 100);
    assert_eq!(cache.stats().capacity, Some(usize::MAX));
    assert!(matches!(cache.resize(0), Err(BuildError::ZeroCapacity)));
    cache.resize(1).unwrap();
    assert_eq!(cache.len(), 1);
    cache.resize(usize::MAX).unwrap();
    assert_eq!(cache.stats().capacity, Some(usize::MAX));
    cache.check_invariants();
    let any = AnyCache::<u8>::builder()
        .capacity(usize::MAX)
        .time_to_idle(Duration::MAX)
        .build()
        .unwrap();
    assert_eq!(*any.get_or_init(&1, || 1_u32), 1);
}
