//! LRU family: `LruCache` (exact LRU, the default, and `LruPolicy::Clock`)
//! against `Mutex<lru::LruCache>` (one lock, and sharded 16 ways),
//! `moka::sync::Cache`, `mini_moka::sync::Cache` and
//! `quick_cache::sync::Cache`.
//!
//! Workloads (u64 keys, values `Arc<u64>`-sized: every contender hands out a
//! shared value, so every hit pays one reference-count increment):
//!
//! - `get-insert zipf{0.9,1.1} cap{1%,10%}`: each op is a `get`, then an
//!   `insert` of the key on a miss (the decorator's job), over Zipf-distributed
//!   keys from 1M (`Size::Quick`: 10K); capacity 1% or 10% of the keys.
//!   The hit ratio is reported beside throughput (`Contender::extra`).
//! - `pure-hit`: only `get`s of keys that are all cached (Zipf 0.9 over
//!   10K keys, capacity 20K; `Quick`: 1K keys).
//!
//! Each thread replays its own precomputed trace (4 traces, shared by all
//! contenders of a workload, so each meets the same keys) from where its
//! previous run stopped. Caches and traces are built lazily on the first
//! `start()`, and warmed with one pass of 3 x capacity ops, so listing the
//! workloads costs nothing.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand_distr::{Distribution, Zipf};

use super::{Background, Contender, Size, Workload};

/// Thread counts measured.
pub const THREADS: &[usize] = &[1, 2, 4];

/// Number of precomputed traces (threads beyond this share them, offset).
const TRACES: usize = 4;

/// One cache under test, seen one op at a time.
pub trait BenchCache: Send + Sync + 'static {
    /// The name shown in reports.
    const NAME: &'static str;
    /// A cache of at most `capacity` entries.
    fn build(capacity: usize) -> Self;
    /// The value of `key`, if cached (as the cache hands it out).
    fn get(&self, key: u64) -> Option<u64>;
    /// Caches `key`.
    fn insert(&self, key: u64);
}

type LruMap = lru::LruCache<u64, Arc<u64>, ahash::RandomState>;

fn lru_map(capacity: usize) -> LruMap {
    lru::LruCache::with_hasher(
        NonZeroUsize::new(capacity.max(1)).unwrap(),
        ahash::RandomState::new(),
    )
}

impl BenchCache for larder::LruCache<u64, u64> {
    const NAME: &'static str = "larder LruCache";
    fn build(capacity: usize) -> Self {
        larder::LruCache::new(capacity)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        larder::LruCache::get(self, &key).map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        larder::LruCache::insert(self, key, key);
    }
}

/// `LruCache` under `LruPolicy::Clock` (second chance: hits share the
/// shard's lock; default shard count for that policy).
pub struct ClockLarder(larder::LruCache<u64, u64>);

impl BenchCache for ClockLarder {
    const NAME: &'static str = "larder LruCache (Clock)";
    fn build(capacity: usize) -> Self {
        Self(
            larder::LruCache::builder(capacity)
                .policy(larder::LruPolicy::Clock)
                .build()
                .expect("valid capacity"),
        )
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.0.get(&key).map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.0.insert(key, key);
    }
}

/// One `Mutex<lru::LruCache>`: every op, hits included, takes the lock
/// (`lru`'s `get` needs `&mut`).
pub struct MutexLru(Mutex<LruMap>);

impl BenchCache for MutexLru {
    const NAME: &'static str = "Mutex<lru::LruCache>";
    fn build(capacity: usize) -> Self {
        Self(Mutex::new(lru_map(capacity)))
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        // Clone the `Arc` out of the lock, as a caller must.
        let value = self.0.lock().get(&key).cloned();
        value.map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.0.lock().put(key, Arc::new(key));
    }
}

/// `Mutex<lru::LruCache>` sharded 16 ways by hash, `capacity / 16` each.
pub struct ShardedMutexLru {
    shards: Box<[CachePadded<Mutex<LruMap>>]>,
    hasher: ahash::RandomState,
}

impl ShardedMutexLru {
    #[inline]
    fn shard(&self, key: u64) -> &Mutex<LruMap> {
        let hash = self.hasher.hash_one(key);
        &self.shards[(hash >> 60) as usize]
    }
}

impl BenchCache for ShardedMutexLru {
    const NAME: &'static str = "16 x Mutex<lru::LruCache>";
    fn build(capacity: usize) -> Self {
        Self {
            shards: (0..16)
                .map(|_| CachePadded::new(Mutex::new(lru_map(capacity / 16))))
                .collect(),
            hasher: ahash::RandomState::new(),
        }
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        let value = self.shard(key).lock().get(&key).cloned();
        value.map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.shard(key).lock().put(key, Arc::new(key));
    }
}

impl BenchCache for moka::sync::Cache<u64, Arc<u64>> {
    const NAME: &'static str = "moka::sync::Cache";
    fn build(capacity: usize) -> Self {
        moka::sync::Cache::new(capacity as u64)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        moka::sync::Cache::get(self, &key).map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        moka::sync::Cache::insert(self, key, Arc::new(key));
    }
}

impl BenchCache for mini_moka::sync::Cache<u64, Arc<u64>> {
    const NAME: &'static str = "mini_moka::sync::Cache";
    fn build(capacity: usize) -> Self {
        mini_moka::sync::Cache::new(capacity as u64)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        mini_moka::sync::Cache::get(self, &key).map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        mini_moka::sync::Cache::insert(self, key, Arc::new(key));
    }
}

impl BenchCache for quick_cache::sync::Cache<u64, Arc<u64>> {
    const NAME: &'static str = "quick_cache::sync::Cache";
    fn build(capacity: usize) -> Self {
        quick_cache::sync::Cache::new(capacity)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        quick_cache::sync::Cache::get(self, &key).map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        quick_cache::sync::Cache::insert(self, key, Arc::new(key));
    }
}

/// The shape of one workload.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Distinct keys the trace draws from.
    pub keys: usize,
    /// Zipf exponent.
    pub exponent: f64,
    /// Cache capacity.
    pub capacity: usize,
    /// Only gets, of keys all inserted beforehand.
    pub pure_hit: bool,
    /// Trace length per thread.
    pub trace_len: usize,
}

/// Traces shared by the contenders of one workload.
pub struct Traces {
    spec: Spec,
    traces: OnceLock<Vec<Vec<u64>>>,
}

impl Traces {
    fn new(spec: Spec) -> Arc<Self> {
        Arc::new(Self {
            spec,
            traces: OnceLock::new(),
        })
    }

    fn get(&self) -> &[Vec<u64>] {
        self.traces.get_or_init(|| {
            let zipf = Zipf::new(self.spec.keys as f64, self.spec.exponent).unwrap();
            (0..TRACES)
                .map(|t| {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(t as u64 + 1);
                    (0..self.spec.trace_len)
                        .map(|_| zipf.sample(&mut rng) as u64)
                        .collect()
                })
                .collect()
        })
    }
}

/// One contender: a cache, the shared traces, per-thread cursors and the
/// hit counters behind `extra()`.
pub struct CacheContender<C: BenchCache> {
    traces: Arc<Traces>,
    cache: OnceLock<C>,
    cursors: Box<[CachePadded<AtomicUsize>]>,
    hits: AtomicU64,
    ops: AtomicU64,
}

impl<C: BenchCache> CacheContender<C> {
    fn new(traces: Arc<Traces>) -> Self {
        Self {
            traces,
            cache: OnceLock::new(),
            cursors: (0..64)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            hits: AtomicU64::new(0),
            ops: AtomicU64::new(0),
        }
    }

    fn cache(&self) -> &C {
        self.cache.get_or_init(|| {
            let spec = self.traces.spec;
            let cache = C::build(spec.capacity);
            if spec.pure_hit {
                for key in 1..=spec.keys as u64 {
                    cache.insert(key);
                }
            } else {
                let trace = &self.traces.get()[0];
                for &key in trace.iter().cycle().take(3 * spec.capacity) {
                    if cache.get(key).is_none() {
                        cache.insert(key);
                    }
                }
            }
            cache
        })
    }
}

impl<C: BenchCache> Contender for CacheContender<C> {
    fn name(&self) -> String {
        C::NAME.to_string()
    }

    fn start(&self) -> Option<Background> {
        self.traces.get();
        self.cache();
        // Relaxed: statistics of the previous measurement, reset between
        // runs (no thread is running).
        self.hits.store(0, Ordering::Relaxed);
        self.ops.store(0, Ordering::Relaxed);
        None
    }

    fn run(&self, thread: usize, _threads: usize, ops: u64) -> u64 {
        let cache = self.cache();
        let traces = self.traces.get();
        let trace = &traces[thread % TRACES];
        let cursor = &self.cursors[thread % self.cursors.len()];
        // Relaxed: each cursor belongs to one thread index; runs of the same
        // index are ordered by the harness's thread joins.
        let mut at = cursor.load(Ordering::Relaxed) % trace.len();
        let (mut hits, mut sum) = (0u64, 0u64);
        let pure_hit = self.traces.spec.pure_hit;
        for _ in 0..ops {
            let key = trace[at];
            at += 1;
            if at == trace.len() {
                at = 0;
            }
            match cache.get(key) {
                Some(value) => {
                    hits += 1;
                    sum = sum.wrapping_add(value);
                }
                None if !pure_hit => cache.insert(key),
                None => {}
            }
        }
        cursor.store(at, Ordering::Relaxed);
        // Relaxed: summed by `extra()` after the measurement's joins.
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.ops.fetch_add(ops, Ordering::Relaxed);
        sum
    }

    fn extra(&self) -> Option<(String, f64)> {
        // Relaxed: read after the measurement's threads were joined.
        let ops = self.ops.load(Ordering::Relaxed);
        (ops > 0).then(|| {
            let hits = self.hits.load(Ordering::Relaxed);
            ("hit ratio".to_string(), hits as f64 / ops as f64)
        })
    }
}

fn contenders(spec: Spec) -> Vec<Box<dyn Contender>> {
    let traces = Traces::new(spec);
    vec![
        Box::new(CacheContender::<larder::LruCache<u64, u64>>::new(
            Arc::clone(&traces),
        )),
        Box::new(CacheContender::<ClockLarder>::new(Arc::clone(&traces))),
        Box::new(CacheContender::<MutexLru>::new(Arc::clone(&traces))),
        Box::new(CacheContender::<ShardedMutexLru>::new(Arc::clone(&traces))),
        Box::new(CacheContender::<moka::sync::Cache<u64, Arc<u64>>>::new(
            Arc::clone(&traces),
        )),
        Box::new(CacheContender::<mini_moka::sync::Cache<u64, Arc<u64>>>::new(Arc::clone(&traces))),
        Box::new(CacheContender::<quick_cache::sync::Cache<u64, Arc<u64>>>::new(traces)),
    ]
}

/// The family's workloads: get-then-insert at two skews and two capacities,
/// and pure hits.
pub fn workloads(size: Size) -> Vec<Workload> {
    let (keys, trace_len, hit_keys) = match size {
        Size::Full => (1_000_000, 1 << 20, 10_000),
        Size::Quick => (10_000, 1 << 16, 1_000),
    };
    let mut out = Vec::new();
    for exponent in [0.9, 1.1] {
        for percent in [1, 10] {
            let spec = Spec {
                keys,
                exponent,
                capacity: keys * percent / 100,
                pure_hit: false,
                trace_len,
            };
            out.push(Workload {
                family: "lru",
                name: format!("get-insert zipf{exponent} cap{percent}%"),
                contenders: contenders(spec),
                threads: THREADS.to_vec(),
            });
        }
    }
    let spec = Spec {
        keys: hit_keys,
        exponent: 0.9,
        capacity: 2 * hit_keys,
        pure_hit: true,
        trace_len,
    };
    out.push(Workload {
        family: "lru",
        name: "pure-hit".to_string(),
        contenders: contenders(spec),
        threads: THREADS.to_vec(),
    });
    out
}

/// The size sweep's workload: get-then-insert, Zipf 0.9, over `n` keys at
/// a capacity of 10% of them.
pub fn sweep(n: usize) -> Vec<Workload> {
    let spec = Spec {
        keys: n,
        exponent: 0.9,
        capacity: (n / 10).max(1),
        pure_hit: false,
        trace_len: 1 << 20,
    };
    vec![Workload {
        family: "lru",
        name: format!("get-insert zipf0.9 cap10% {n}"),
        contenders: contenders(spec),
        threads: THREADS.to_vec(),
    }]
}
