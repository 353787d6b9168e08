//! Typed family, async forms: warm hits through `get_or_init_async` and cold
//! keys requested by many tasks on a tokio runtime, against moka's
//! `future::Cache::get_with` and quick_cache's `get_value_or_guard_async`.
//!
//! Workloads:
//! 1. `async_warm_hits_N`: each bench thread runs one current-thread tokio
//!    runtime and, inside one task, awaits random hits over N warmed keys
//!    (10 000; Quick 1000). larder's sync `get_or_init` runs in the same
//!    loop as the reference the async form must not fall behind. The LRU's
//!    `get_or_init_async` is a row too. Every contender is handed the same
//!    init, one a service would write (a future that awaits a 1 ms timer
//!    before it builds the value), never run on a warm key: a hit pays for
//!    whatever of it the API makes the call carry.
//! 2. `async_cold_keys_N_x8_1ms`: one op = a fresh set of N cold keys
//!    (1000; Quick 100), each requested by 8 tasks (8N tasks spawned at once,
//!    in 8 rounds over the keys) on a 2-worker runtime; an init is a 1 ms
//!    `tokio::time::sleep`. Two reference rows: `ideal` (the first row, what
//!    ratios are taken against) is the same runtime running the same 8N
//!    tasks with no cache and no lookup, one task per key sleeping 1 ms and
//!    sending on a `watch` channel made up front, the other seven awaiting
//!    it: the sleep, the spawn-and-join and the wake-up every single-flight
//!    pays, and nothing else; `floor` has the seven return at once, without
//!    waiting (below any single-flight: a waiter must be woken).
//!
//! Each contender counts its inits; `extra()` reports inits per key
//! requested (exactly 1 for larder).

// The trait spells its futures out as `impl Future + Send` (the cold
// workload spawns them), so its impls do too.
#![allow(clippy::manual_async_fn)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::typed::{INIT_TIME, Resource};
use super::{Contender, Rng, Size, Workload};

/// A cache with an async get-or-init, as each contender provides it.
pub trait AsyncInitCache: Send + Sync + 'static {
    /// Name shown in reports.
    fn name(&self) -> String;
    /// The value of `key`'s id, awaiting the future `init()` returns if it
    /// is absent (each contender calls `init` as late as its API lets it:
    /// larder and quick_cache only on a miss; moka takes a future, so an
    /// `async` block that calls `init` when first polled).
    fn get_or_init<'a, F, Fut>(
        &'a self,
        key: u64,
        init: F,
    ) -> impl Future<Output = u64> + Send + 'a
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Resource> + Send + 'a;
}

/// Values in `Arc`s, as the peers here store them.
impl AsyncInitCache for larder::TypedCache<u64, Arc<Resource>> {
    fn name(&self) -> String {
        "larder TypedCache::get_or_init_async".into()
    }
    fn get_or_init<'a, F, Fut>(&'a self, key: u64, init: F) -> impl Future<Output = u64> + Send + 'a
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Resource> + Send + 'a,
    {
        async move {
            self.get_or_init_async(&key, || async { Arc::new(init().await) })
                .await
                .id
        }
    }
}

/// larder's sync `get_or_init`, called in the same async loop (warm hits
/// only: its init is never needed there).
pub struct LarderSyncInLoop(larder::TypedCache<u64, Arc<Resource>>);

impl AsyncInitCache for LarderSyncInLoop {
    fn name(&self) -> String {
        "larder TypedCache::get_or_init (sync, same loop)".into()
    }
    fn get_or_init<'a, F, Fut>(
        &'a self,
        key: u64,
        _init: F,
    ) -> impl Future<Output = u64> + Send + 'a
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Resource> + Send + 'a,
    {
        async move { self.0.get_or_init(&key, || Arc::new(Resource::new(key))).id }
    }
}

impl AsyncInitCache for larder::LruCache<u64, Resource> {
    fn name(&self) -> String {
        "larder LruCache::get_or_init_async".into()
    }
    fn get_or_init<'a, F, Fut>(&'a self, key: u64, init: F) -> impl Future<Output = u64> + Send + 'a
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Resource> + Send + 'a,
    {
        async move { self.get_or_init_async(&key, init).await.id }
    }
}

impl AsyncInitCache for moka::future::Cache<u64, Arc<Resource>> {
    fn name(&self) -> String {
        "moka future get_with".into()
    }
    fn get_or_init<'a, F, Fut>(&'a self, key: u64, init: F) -> impl Future<Output = u64> + Send + 'a
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Resource> + Send + 'a,
    {
        async move {
            self.get_with(key, async { Arc::new(init().await) })
                .await
                .id
        }
    }
}

impl AsyncInitCache for quick_cache::sync::Cache<u64, Arc<Resource>> {
    fn name(&self) -> String {
        "quick_cache get_value_or_guard_async".into()
    }
    fn get_or_init<'a, F, Fut>(&'a self, key: u64, init: F) -> impl Future<Output = u64> + Send + 'a
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Resource> + Send + 'a,
    {
        async move {
            match self.get_value_or_guard_async(&key).await {
                Ok(value) => value.id,
                Err(guard) => {
                    let value = Arc::new(init().await);
                    let id = value.id;
                    let _ = guard.insert(value);
                    id
                }
            }
        }
    }
}

/// Workload 1: warm hits awaited in one task per bench thread.
pub struct AsyncWarmHits<C> {
    cache: C,
    keys: u64,
}

impl<C: AsyncInitCache> AsyncWarmHits<C> {
    /// `cache` with `keys` keys warmed.
    pub fn new(cache: C, keys: u64) -> Self {
        let runtime = current_thread();
        runtime.block_on(async {
            for key in 0..keys {
                cache
                    .get_or_init(key, move || async move { Resource::new(key) })
                    .await;
            }
        });
        Self { cache, keys }
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

impl<C: AsyncInitCache> Contender for AsyncWarmHits<C> {
    fn name(&self) -> String {
        self.cache.name()
    }
    fn run(&self, thread: usize, _threads: usize, ops: u64) -> u64 {
        let runtime = current_thread();
        runtime.block_on(async {
            let mut rng = Rng::new(thread as u64 + 1);
            let mut sum = 0u64;
            for _ in 0..ops {
                let key = rng.below(self.keys);
                // An init as a service writes one: a future that waits on
                // something (here a timer) before it builds the value. It is
                // never run on a warm key; what matters is what each API
                // makes a hit carry of it.
                let init = move || async move {
                    tokio::time::sleep(INIT_TIME).await;
                    unreachable!("warm key {key} missed")
                };
                let id = self.cache.get_or_init(key, init).await;
                sum = sum.wrapping_add(id);
            }
            sum
        })
    }
}

/// Requests per key in workload 2.
pub const TASKS_PER_KEY: u64 = 8;

/// What a workload 2 contender runs its requests through.
enum Coordination<C> {
    /// No cache and no waiting: one task per key sleeps, the rest return at
    /// once (the spawn-and-join cost every contender pays).
    Floor,
    /// The ideal single-flight: no lookup, no cache, per key a `watch`
    /// channel made up front; one task per key sleeps and sends, the other
    /// seven await it (the floor plus the unavoidable wake-up of each
    /// waiter).
    Ideal,
    /// A cache's get-or-init.
    Cache(Arc<C>),
}

/// Workload 2's contender: a cache (or the floor, or the ideal) on its own
/// 2-worker runtime.
pub struct AsyncColdKeys<C> {
    cache: Coordination<C>,
    runtime: tokio::runtime::Runtime,
    keys: u64,
    next_set: AtomicU64,
    inits: Arc<AtomicU64>,
    requested: AtomicU64,
}

impl<C: AsyncInitCache> AsyncColdKeys<C> {
    /// `cache` under sets of `keys` cold keys.
    pub fn new(cache: C, keys: u64) -> Self {
        Self::with(Coordination::Cache(Arc::new(cache)), keys)
    }

    /// The floor row (see [`Coordination::Floor`]).
    pub fn floor(keys: u64) -> Self {
        Self::with(Coordination::Floor, keys)
    }

    /// The ideal row (see [`Coordination::Ideal`]).
    pub fn ideal(keys: u64) -> Self {
        Self::with(Coordination::Ideal, keys)
    }

    fn with(cache: Coordination<C>, keys: u64) -> Self {
        Self {
            cache,
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime"),
            keys,
            next_set: AtomicU64::new(0),
            inits: Arc::new(AtomicU64::new(0)),
            requested: AtomicU64::new(0),
        }
    }

    /// One set: `TASKS_PER_KEY` rounds of one task per key, all spawned,
    /// then all joined.
    fn one_set(&self) -> u64 {
        // Relaxed: a counter handing out set numbers; no data published.
        let base = self.next_set.fetch_add(1, Ordering::Relaxed) * self.keys;
        self.requested.fetch_add(self.keys, Ordering::Relaxed);
        self.runtime.block_on(async {
            let mut tasks = Vec::with_capacity((self.keys * TASKS_PER_KEY) as usize);
            let mut channels: Vec<_> = match self.cache {
                Coordination::Ideal => (0..self.keys)
                    .map(|_| {
                        let (tx, rx) = tokio::sync::watch::channel(None::<u64>);
                        (Some(tx), rx)
                    })
                    .collect(),
                _ => Vec::new(),
            };
            for round in 0..TASKS_PER_KEY {
                for i in 0..self.keys {
                    let key = base + i;
                    let inits = Arc::clone(&self.inits);
                    let init = move || async move {
                        inits.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(INIT_TIME).await;
                        Resource::new(key)
                    };
                    tasks.push(match &self.cache {
                        Coordination::Cache(cache) => {
                            let cache = Arc::clone(cache);
                            tokio::spawn(async move { cache.get_or_init(key, init).await })
                        }
                        // The floor: the first round sleeps, the rest do
                        // nothing.
                        Coordination::Floor if round == 0 => {
                            tokio::spawn(async move { init().await.id })
                        }
                        Coordination::Floor => tokio::spawn(async move { key }),
                        // The ideal: the first round sleeps and sends, the
                        // rest wait for it.
                        Coordination::Ideal if round == 0 => {
                            let tx = channels[i as usize].0.take().expect("one sender per key");
                            tokio::spawn(async move {
                                let id = init().await.id;
                                tx.send_replace(Some(id));
                                id
                            })
                        }
                        Coordination::Ideal => {
                            let mut rx = channels[i as usize].1.clone();
                            tokio::spawn(async move {
                                let id = rx.wait_for(Option::is_some).await.expect("sender");
                                id.expect("sent")
                            })
                        }
                    });
                }
            }
            let mut sum = 0u64;
            for task in tasks {
                sum = sum.wrapping_add(task.await.expect("bench task"));
            }
            sum
        })
    }
}

impl<C: AsyncInitCache> Contender for AsyncColdKeys<C> {
    fn name(&self) -> String {
        match &self.cache {
            Coordination::Cache(cache) => cache.name(),
            Coordination::Floor => format!(
                "floor (no cache: {} sleeps, {} no-op tasks)",
                self.keys,
                self.keys * (TASKS_PER_KEY - 1)
            ),
            Coordination::Ideal => format!(
                "ideal (no cache: {} sleeps, {} tasks awaiting a watch channel each)",
                self.keys,
                self.keys * (TASKS_PER_KEY - 1)
            ),
        }
    }
    fn start(&self) -> Option<super::Background> {
        self.inits.store(0, Ordering::Relaxed);
        self.requested.store(0, Ordering::Relaxed);
        None
    }
    fn run(&self, _thread: usize, _threads: usize, ops: u64) -> u64 {
        (0..ops).fold(0u64, |sum, _| sum.wrapping_add(self.one_set()))
    }
    fn extra(&self) -> Option<(String, f64)> {
        let keys = self.requested.load(Ordering::Relaxed).max(1);
        Some((
            "inits/key".into(),
            self.inits.load(Ordering::Relaxed) as f64 / keys as f64,
        ))
    }
}

/// Keys per cold set of workload 2.
pub fn async_cold_keys(size: Size) -> u64 {
    match size {
        Size::Full => 1_000,
        Size::Quick => 100,
    }
}

/// The two async workloads.
pub fn workloads(size: Size) -> Vec<Workload> {
    let warm = super::typed::warm_keys(size);
    let cold = async_cold_keys(size);
    let moka = |capacity: u64| moka::future::Cache::<u64, Arc<Resource>>::new(capacity);
    let quick = |capacity: usize| quick_cache::sync::Cache::<u64, Arc<Resource>>::new(capacity);
    vec![
        Workload {
            family: "typed",
            name: format!("async_warm_hits_{warm}"),
            contenders: vec![
                Box::new(AsyncWarmHits::new(larder::TypedCache::new(), warm)),
                Box::new(AsyncWarmHits::new(
                    LarderSyncInLoop(larder::TypedCache::new()),
                    warm,
                )),
                Box::new(AsyncWarmHits::new(
                    larder::LruCache::new(2 * warm as usize),
                    warm,
                )),
                Box::new(AsyncWarmHits::new(moka(2 * warm), warm)),
                Box::new(AsyncWarmHits::new(quick(2 * warm as usize), warm)),
            ],
            threads: vec![1, 2],
        },
        Workload {
            family: "typed",
            name: format!("async_cold_keys_{cold}_x{TASKS_PER_KEY}_1ms"),
            contenders: vec![
                Box::new(AsyncColdKeys::<larder::TypedCache<u64, Arc<Resource>>>::ideal(cold)),
                Box::new(AsyncColdKeys::<larder::TypedCache<u64, Arc<Resource>>>::floor(cold)),
                Box::new(AsyncColdKeys::new(larder::TypedCache::new(), cold)),
                Box::new(AsyncColdKeys::new(moka(1 << 20), cold)),
                Box::new(AsyncColdKeys::new(quick(1 << 20), cold)),
            ],
            threads: vec![1],
        },
    ]
}
