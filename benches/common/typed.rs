//! Typed family: single-flight init under contention and warm hits.
//!
//! Workloads (three sync ones here; the async ones are in
//! `typed_async.rs`):
//! 1. `cold_one_key_1ms`: all threads request one cold key whose init
//!    sleeps 1 ms; every op is one request, every round a new key.
//! 2. `cold_keys_1ms`: 8 threads each request every key of a fresh set of
//!    cold keys (1000; `Size::Quick` 100), each thread in its own random
//!    order, inits sleep 1 ms. One op is one thread's pass over a set, so
//!    the time of one set is 8 x the time per op; the ideal is
//!    keys / threads x 1 ms.
//! 3. `warm_hits`: random hits over a warmed set of keys (10 000; Quick
//!    1000).
//!
//! Each contender counts the inits it ran; `extra()` reports inits per key
//! requested, which must be exactly 1 for larder.

use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::{Contender, Rng, Size, Workload};

/// The cached resource: 64 bytes, as a small parsed object would be.
#[derive(Debug, Clone)]
pub struct Resource {
    /// Its key (what readers sum).
    pub id: u64,
    /// Padding to 64 bytes.
    pub payload: [u64; 7],
}

impl Resource {
    /// The resource of `id`.
    pub fn new(id: u64) -> Self {
        Self {
            id,
            payload: [id; 7],
        }
    }
}

/// How long a cold init takes.
pub const INIT_TIME: Duration = Duration::from_millis(1);

/// Makes the calling thread's sleeps, and those of every thread it spawns
/// afterwards, end close to when they are due: sets the Linux timer slack
/// to 1 ns (the default 50 us makes `sleep(1 ms)` take about 1.06 ms here,
/// which the cold workloads would charge to the caches). Threads inherit
/// the slack from the thread that spawns them, so call it on the main
/// thread before any workload runs. Returns whether it took effect (only
/// on Linux; elsewhere sleeps keep the system's slack).
pub fn tighten_timer_slack() -> bool {
    // /proc/self is the main thread's entry: this works when called from the
    // main thread, which is where criterion and the showdown call it.
    std::fs::write("/proc/self/timerslack_ns", "1").is_ok()
}

/// A cache with a per-key get-or-init, as each contender provides it.
pub trait InitCache: Send + Sync + 'static {
    /// Name shown in reports.
    fn name(&self) -> String;
    /// Returns the value of `key`'s id, running `init` if it is absent.
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64;
}

impl<S: BuildHasher + Clone + Send + Sync + 'static> InitCache
    for larder::TypedCache<u64, Resource, S>
{
    fn name(&self) -> String {
        "larder TypedCache::get_or_init (V = Resource, cloned out)".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        larder::TypedCache::get_or_init(self, &key, init).id
    }
}

impl InitCache for larder::TypedCache<u64, Arc<Resource>> {
    fn name(&self) -> String {
        "larder TypedCache::get_or_init".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        larder::TypedCache::get_or_init(self, &key, || Arc::new(init())).id
    }
}

/// larder's cache read through `get_with` (the value read in place, not
/// cloned), `get_or_init` on a miss: how a caller that only needs a
/// field of the value reads it.
pub struct LarderGetWith(larder::TypedCache<u64, Resource>);

impl InitCache for LarderGetWith {
    fn name(&self) -> String {
        "larder TypedCache::get_with, else get_or_init".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        match self.0.get_with(&key, |resource| resource.id) {
            Some(id) => id,
            None => self.0.get_or_init(&key, init).id,
        }
    }
}

/// larder's cache with time to live and time to idle on (a clock read and
/// the idle bookkeeping on every hit), on the given clock.
pub struct LarderExpiring(larder::TypedCache<u64, Resource>, &'static str);

impl InitCache for LarderExpiring {
    fn name(&self) -> String {
        format!("larder TypedCache ttl+tti {}", self.1)
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        self.0.get_or_init(&key, init).id
    }
}

impl InitCache for larder::AnyCache<u64> {
    fn name(&self) -> String {
        "larder AnyCache::get_or_init".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        larder::AnyCache::get_or_init(self, &key, init).id
    }
}

impl InitCache for moka::sync::Cache<u64, Arc<Resource>> {
    fn name(&self) -> String {
        "moka get_with".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        self.get_with(key, || Arc::new(init())).id
    }
}

/// `DashMap::entry().or_insert_with`: the init runs under the shard's write
/// lock (and every hit takes it too).
pub struct DashEntry(dashmap::DashMap<u64, Arc<Resource>, ahash::RandomState>);

impl InitCache for DashEntry {
    fn name(&self) -> String {
        "DashMap entry().or_insert_with".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        // Clone the value out, as the other contenders hand out an owned
        // `Arc`: holding the shard guard beyond this line is DashMap's
        // classic deadlock.
        let value = Arc::clone(&self.0.entry(key).or_insert_with(|| Arc::new(init())));
        value.id
    }
}

/// `DashMap<K, Arc<OnceLock<V>>>`: read lock on a hit, the init outside it.
pub struct DashOnce(dashmap::DashMap<u64, Arc<OnceLock<Resource>>, ahash::RandomState>);

impl InitCache for DashOnce {
    fn name(&self) -> String {
        "DashMap<K, Arc<OnceLock<V>>>".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        // A hit reads through the shard's read guard, as a DashMap user
        // does (no `Arc` clone); a miss clones the cell out of the guard to
        // run the init with no shard lock held.
        if let Some(id) = self.0.get(&key).and_then(|cell| cell.get().map(|r| r.id)) {
            return id;
        }
        let cell = Arc::clone(&self.0.entry(key).or_default());
        cell.get_or_init(init).id
    }
}

/// `Mutex<HashMap<K, Arc<OnceLock<V>>>>`: every call takes one lock.
pub struct MutexOnce(Mutex<HashMap<u64, Arc<OnceLock<Resource>>, ahash::RandomState>>);

impl InitCache for MutexOnce {
    fn name(&self) -> String {
        "Mutex<HashMap<K, Arc<OnceLock<V>>>>".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        let cell = Arc::clone(self.0.lock().unwrap().entry(key).or_default());
        cell.get_or_init(init).id
    }
}

impl InitCache for quick_cache::sync::Cache<u64, Resource> {
    fn name(&self) -> String {
        "quick_cache get_or_insert_with (V = Resource, cloned out)".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        match self.get_or_insert_with(&key, || Ok::<_, Infallible>(init())) {
            Ok(value) => value.id,
            Err(never) => match never {},
        }
    }
}

impl InitCache for quick_cache::sync::Cache<u64, Arc<Resource>> {
    fn name(&self) -> String {
        "quick_cache get_or_insert_with".into()
    }
    fn get_or_init(&self, key: u64, init: &dyn Fn() -> Resource) -> u64 {
        match self.get_or_insert_with(&key, || Ok::<_, Infallible>(Arc::new(init()))) {
            Ok(value) => value.id,
            Err(never) => match never {},
        }
    }
}

/// Every contender's cache, larder first, sized for `capacity` keys.
pub fn caches(capacity: usize) -> Vec<Box<dyn InitCache>> {
    let hasher = ahash::RandomState::new;
    vec![
        Box::new(larder::TypedCache::<u64, Arc<Resource>>::new()),
        Box::new(larder::TypedCache::<u64, Resource>::new()),
        Box::new(LarderGetWith(larder::TypedCache::new())),
        Box::new(LarderExpiring(
            larder::TypedCache::builder()
                .time_to_live(Duration::from_secs(3600))
                .time_to_idle(Duration::from_secs(600))
                .build()
                .unwrap(),
            "SystemClock",
        )),
        Box::new(LarderExpiring(
            larder::TypedCache::builder()
                .time_to_live(Duration::from_secs(3600))
                .time_to_idle(Duration::from_secs(600))
                .clock(larder::CoarseClock::new(Duration::from_millis(1)))
                .build()
                .unwrap(),
            "CoarseClock",
        )),
        Box::new(larder::AnyCache::<u64>::new()),
        Box::new(
            moka::sync::Cache::<u64, Arc<Resource>>::builder()
                .max_capacity(capacity as u64 * 2)
                .build(),
        ),
        Box::new(DashEntry(dashmap::DashMap::with_hasher(hasher()))),
        Box::new(DashOnce(dashmap::DashMap::with_hasher(hasher()))),
        Box::new(MutexOnce(Mutex::new(HashMap::with_hasher(hasher())))),
        Box::new(quick_cache::sync::Cache::<u64, Arc<Resource>>::new(
            capacity * 2,
        )),
        Box::new(quick_cache::sync::Cache::<u64, Resource>::new(capacity * 2)),
    ]
}

/// What the threads of one contender request.
#[derive(Clone)]
pub enum Mode {
    /// Workload 1: every thread the same fresh key each op.
    OneColdKey,
    /// Workload 2: one op = one thread's pass over a fresh set of `keys`
    /// keys in the thread's own order (`orders[thread]`).
    ColdKeySets {
        /// Keys per set.
        keys: u64,
        /// One random permutation of `0..keys` per thread.
        orders: Arc<Vec<Vec<u32>>>,
    },
    /// Workload 3: random hits over `keys` warmed keys.
    WarmHits {
        /// Warmed keys.
        keys: u64,
    },
}

/// One cache under one workload.
pub struct InitContender {
    cache: Box<dyn InitCache>,
    mode: Mode,
    inits: Arc<AtomicU64>,
    /// Distinct keys requested since `start` (for inits per key).
    keys: AtomicU64,
    /// Per (thread count, thread): ops done so far, so the threads of one
    /// run agree on which keys are fresh.
    progress: Mutex<HashMap<(usize, usize), u64>>,
}

impl InitContender {
    /// `cache` under `mode`; warms the keys of `WarmHits`.
    pub fn new(cache: Box<dyn InitCache>, mode: Mode) -> Self {
        let contender = Self {
            cache,
            mode,
            inits: Arc::new(AtomicU64::new(0)),
            keys: AtomicU64::new(0),
            progress: Mutex::new(HashMap::new()),
        };
        if let Mode::WarmHits { keys } = contender.mode {
            for key in 0..keys {
                contender.cache.get_or_init(key, &|| Resource::new(key));
            }
            contender.inits.store(keys, Ordering::Relaxed);
            contender.keys.store(keys, Ordering::Relaxed);
        }
        contender
    }

    /// Ops done so far by thread `thread` of runs on `threads` threads;
    /// advances it by `ops`.
    fn advance(&self, thread: usize, threads: usize, ops: u64) -> u64 {
        let mut progress = self.progress.lock().unwrap();
        let done = progress.entry((threads, thread)).or_insert(0);
        let start = *done;
        *done += ops;
        start
    }

    fn request(&self, key: u64, sleep: bool) -> u64 {
        let inits = &self.inits;
        self.cache.get_or_init(key, &|| {
            inits.fetch_add(1, Ordering::Relaxed);
            if sleep {
                std::thread::sleep(INIT_TIME);
            }
            Resource::new(key)
        })
    }
}

impl Contender for InitContender {
    fn name(&self) -> String {
        self.cache.name()
    }

    fn start(&self) -> Option<super::Background> {
        if !matches!(self.mode, Mode::WarmHits { .. }) {
            self.inits.store(0, Ordering::Relaxed);
            self.keys.store(0, Ordering::Relaxed);
        }
        None
    }

    fn run(&self, thread: usize, threads: usize, ops: u64) -> u64 {
        let mut sum = 0u64;
        match &self.mode {
            Mode::OneColdKey => {
                let first = self.advance(thread, threads, ops);
                if thread == 0 {
                    self.keys.fetch_add(ops, Ordering::Relaxed);
                }
                // Keys of different thread counts never meet.
                let base = (threads as u64) << 40;
                for round in first..first + ops {
                    sum = sum.wrapping_add(self.request(base + round, true));
                }
            }
            Mode::ColdKeySets { keys, orders } => {
                let first = self.advance(thread, threads, ops);
                if thread == 0 {
                    self.keys.fetch_add(ops * keys, Ordering::Relaxed);
                }
                let base = ((threads as u64) << 40) + first * keys;
                let order = &orders[thread % orders.len()];
                for set in 0..ops {
                    let set_base = base + set * keys;
                    for &i in order {
                        sum = sum.wrapping_add(self.request(set_base + u64::from(i), true));
                    }
                }
            }
            Mode::WarmHits { keys } => {
                let mut rng = Rng::new(thread as u64 + 1);
                for _ in 0..ops {
                    let key = rng.below(*keys);
                    sum = sum.wrapping_add(self.request(key, false));
                }
            }
        }
        sum
    }

    fn extra(&self) -> Option<(String, f64)> {
        let keys = self.keys.load(Ordering::Relaxed).max(1);
        Some((
            "inits/key".into(),
            self.inits.load(Ordering::Relaxed) as f64 / keys as f64,
        ))
    }
}

/// One random permutation of `0..keys` per thread.
fn orders(keys: u64, threads: usize) -> Arc<Vec<Vec<u32>>> {
    Arc::new(
        (0..threads)
            .map(|t| {
                let mut order: Vec<u32> = (0..keys as u32).collect();
                let mut rng = Rng::new(0xC0FFEE + t as u64);
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.below(i as u64 + 1) as usize);
                }
                order
            })
            .collect(),
    )
}

/// Keys per cold set of workload 2.
pub fn cold_set_keys(size: Size) -> u64 {
    match size {
        Size::Full => 1_000,
        Size::Quick => 100,
    }
}

/// Warmed keys of workload 3.
pub fn warm_keys(size: Size) -> u64 {
    match size {
        Size::Full => 10_000,
        Size::Quick => 1_000,
    }
}

/// Threads of workload 2.
pub const COLD_SET_THREADS: usize = 8;

/// The family's three workloads, then the async ones
/// (`typed_async::workloads`).
pub fn workloads(size: Size) -> Vec<Workload> {
    let mut all = sync_workloads(size);
    all.extend(super::typed_async::workloads(size));
    all
}

/// The family's three sync workloads.
fn sync_workloads(size: Size) -> Vec<Workload> {
    let set_keys = cold_set_keys(size);
    let warm = warm_keys(size);
    let with = |mode: Mode, capacity: usize| -> Vec<Box<dyn Contender>> {
        caches(capacity)
            .into_iter()
            .map(|cache| Box::new(InitContender::new(cache, mode.clone())) as Box<dyn Contender>)
            .collect()
    };
    vec![
        Workload {
            family: "typed",
            name: "cold_one_key_1ms".into(),
            contenders: with(Mode::OneColdKey, 1 << 16),
            threads: vec![2, 8, 32],
        },
        Workload {
            family: "typed",
            name: format!("cold_keys_{set_keys}_1ms"),
            contenders: with(
                Mode::ColdKeySets {
                    keys: set_keys,
                    orders: orders(set_keys, COLD_SET_THREADS),
                },
                1 << 17,
            ),
            threads: vec![COLD_SET_THREADS],
        },
        Workload {
            family: "typed",
            name: format!("warm_hits_{warm}"),
            contenders: with(Mode::WarmHits { keys: warm }, warm as usize),
            threads: vec![1, 2, 4],
        },
    ]
}

/// The size sweep's workload: warm hits over `n` keys.
pub fn sweep(n: usize) -> Vec<Workload> {
    vec![Workload {
        family: "typed",
        name: format!("warm_hits {n}"),
        contenders: caches(n)
            .into_iter()
            .map(|cache| {
                Box::new(InitContender::new(cache, Mode::WarmHits { keys: n as u64 }))
                    as Box<dyn Contender>
            })
            .collect(),
        threads: vec![1, 2, 4],
    }]
}
