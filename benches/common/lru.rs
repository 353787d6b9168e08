//! LRU family: `LruCache` (exact LRU, the default, and `EvictionPolicy::Clock`;
//! each read through `get` and through `get_with`) against
//! `Mutex<lru::LruCache>` (one lock, and sharded 16 ways),
//! `moka::sync::Cache`, `mini_moka::sync::Cache`, `quick_cache::sync::Cache`
//! and `scc::HashCache`.
//!
//! Every peer is used the way its users use it with small values: the value
//! is stored as a `u64` and read out by value (quick_cache, moka and
//! mini-moka clone `V` out; `Mutex<lru::LruCache<u64, u64>>` and scc's
//! `HashCache` copy it out under their lock). So is larder: its `get`
//! copies the `u64` out and its `get_with` reads it in place; one more row
//! stores `Arc<u64>` (`LarderArc`), what a user with large values would.
//!
//! Workloads (u64 keys and values):
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
    /// The entries held now (counted in the map itself where the cache's
    /// own count lags behind its lazy eviction).
    fn len(&self) -> usize;
}

type LruMap = lru::LruCache<u64, u64, ahash::RandomState>;

fn lru_map(capacity: usize) -> LruMap {
    lru::LruCache::with_hasher(
        NonZeroUsize::new(capacity.max(1)).unwrap(),
        ahash::RandomState::new(),
    )
}

/// How a larder contender reads a hit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `get`: copies the stored `u64` out, as the peers' `get` does.
    Get,
    /// `get_with(&key, |v| *v)`: reads the value in place under the hit.
    With,
}

/// `larder::LruCache<u64, u64>` under a policy, read as `FORM` says (0:
/// [`Form::Get`], 1: [`Form::With`]). `POLICY`: 0 exact LRU, 1 CLOCK,
/// 2 S3-FIFO.
pub struct Larder<const POLICY: u8, const FORM: u8>(larder::LruCache<u64, u64>);

impl<const POLICY: u8, const FORM: u8> Larder<POLICY, FORM> {
    const FORM: Form = match FORM {
        0 => Form::Get,
        _ => Form::With,
    };
}

/// A larder cache of `capacity` under policy `policy` (0 exact LRU, 1
/// CLOCK, 2 S3-FIFO).
fn larder_cache<V>(capacity: usize, policy: u8) -> larder::LruCache<u64, V> {
    let policy = match policy {
        0 => larder::EvictionPolicy::Exact,
        1 => larder::EvictionPolicy::Clock,
        _ => larder::EvictionPolicy::S3Fifo,
    };
    larder::LruCache::builder()
        .capacity(capacity)
        .policy(policy)
        .build()
        .expect("valid capacity")
}

impl<const POLICY: u8, const FORM: u8> BenchCache for Larder<POLICY, FORM> {
    const NAME: &'static str = match (POLICY, FORM) {
        (0, 0) => "larder LruCache get",
        (0, _) => "larder LruCache get_with",
        (1, 0) => "larder LruCache (Clock) get",
        (1, _) => "larder LruCache (Clock) get_with",
        (_, 0) => "larder LruCache (S3Fifo) get",
        (_, _) => "larder LruCache (S3Fifo) get_with",
    };
    fn build(capacity: usize) -> Self {
        Self(larder_cache(capacity, POLICY))
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        match Self::FORM {
            Form::Get => self.0.get(&key),
            Form::With => self.0.get_with(&key, |v| *v),
        }
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.0.insert(key, key);
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// `larder::LruCache<u64, Arc<u64>>` read through `get` (an `Arc` clone
/// out): the cost of a boxed value, an allocation per insert, one more
/// cache line per entry and a reference-count write per hit, against
/// [`Larder`]'s plain `u64`. `POLICY` as for [`Larder`].
pub struct LarderArc<const POLICY: u8>(larder::LruCache<u64, Arc<u64>>);

impl<const POLICY: u8> BenchCache for LarderArc<POLICY> {
    const NAME: &'static str = match POLICY {
        0 => "larder LruCache<u64, Arc<u64>> get",
        1 => "larder LruCache<u64, Arc<u64>> (Clock) get",
        _ => "larder LruCache<u64, Arc<u64>> (S3Fifo) get",
    };
    fn build(capacity: usize) -> Self {
        Self(larder_cache(capacity, POLICY))
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.0.get(&key).map(|v| *v)
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.0.insert(key, Arc::new(key));
    }
    fn len(&self) -> usize {
        self.0.len()
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
        // Copy the value out of the lock, as a caller must.
        self.0.lock().get(&key).copied()
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.0.lock().put(key, key);
    }
    fn len(&self) -> usize {
        self.0.lock().len()
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
        self.shard(key).lock().get(&key).copied()
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.shard(key).lock().put(key, key);
    }
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}

impl BenchCache for moka::sync::Cache<u64, u64> {
    const NAME: &'static str = "moka::sync::Cache";
    fn build(capacity: usize) -> Self {
        moka::sync::Cache::new(capacity as u64)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        moka::sync::Cache::get(self, &key)
    }
    #[inline]
    fn insert(&self, key: u64) {
        moka::sync::Cache::insert(self, key, key);
    }
    fn len(&self) -> usize {
        self.iter().count()
    }
}

impl BenchCache for mini_moka::sync::Cache<u64, u64> {
    const NAME: &'static str = "mini_moka::sync::Cache";
    fn build(capacity: usize) -> Self {
        mini_moka::sync::Cache::new(capacity as u64)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        mini_moka::sync::Cache::get(self, &key)
    }
    #[inline]
    fn insert(&self, key: u64) {
        mini_moka::sync::Cache::insert(self, key, key);
    }
    fn len(&self) -> usize {
        self.iter().count()
    }
}

impl BenchCache for quick_cache::sync::Cache<u64, u64> {
    const NAME: &'static str = "quick_cache::sync::Cache";
    fn build(capacity: usize) -> Self {
        quick_cache::sync::Cache::new(capacity)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        quick_cache::sync::Cache::get(self, &key)
    }
    #[inline]
    fn insert(&self, key: u64) {
        quick_cache::sync::Cache::insert(self, key, key);
    }
    fn len(&self) -> usize {
        quick_cache::sync::Cache::len(self)
    }
}

/// scc's `HashCache`: a lock per bucket, LRU within each bucket (its
/// `get_sync` marks the entry used); capacity as its minimum and maximum.
impl BenchCache for scc::HashCache<u64, u64, ahash::RandomState> {
    const NAME: &'static str = "scc::HashCache";
    fn build(capacity: usize) -> Self {
        scc::HashCache::with_capacity_and_hasher(capacity, capacity, ahash::RandomState::new())
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.get_sync(&key).map(|entry| *entry.get())
    }
    #[inline]
    fn insert(&self, key: u64) {
        let _ = self.put_sync(key, key);
    }
    fn len(&self) -> usize {
        scc::HashCache::len(self)
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
            (0..TRACES)
                .map(|t| {
                    let spec = &self.spec;
                    zipf_trace(spec.keys, spec.exponent, spec.trace_len, t as u64 + 1)
                })
                .collect()
        })
    }
}

/// `len` keys drawn from `1..=keys` by a Zipf distribution of `exponent`
/// (key 1 the most popular), seeded with `seed`.
pub fn zipf_trace(keys: usize, exponent: f64, len: usize, seed: u64) -> Vec<u64> {
    let zipf = Zipf::new(keys as f64, exponent).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| zipf.sample(&mut rng) as u64).collect()
}

/// A hot set polluted by scans: Zipf 0.9 over `1..=keys`, interrupted by
/// sequential scans of `keys / 100` keys (at least 10) that are never
/// accessed again (numbered from `keys + 1` up). A scan starts before an
/// access with probability 0.2 / scan length, so about a sixth of the `len`
/// accesses are scans. Seeded with `seed`.
pub fn scan_polluted_trace(keys: usize, len: usize, seed: u64) -> Vec<u64> {
    use rand::Rng;
    let zipf = Zipf::new(keys as f64, 0.9).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let scan = (keys / 100).max(10) as u64;
    let mut next_scan_key = keys as u64 + 1;
    let mut trace = Vec::with_capacity(len);
    while trace.len() < len {
        if rng.random_bool(0.2 / scan as f64) {
            let end = (next_scan_key + scan).min(next_scan_key + (len - trace.len()) as u64);
            trace.extend(next_scan_key..end);
            next_scan_key += scan;
        } else {
            trace.push(zipf.sample(&mut rng) as u64);
        }
    }
    trace
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

    fn bound(&self) -> Option<(usize, usize)> {
        let cache = self.cache.get()?;
        Some((cache.len(), self.traces.spec.capacity))
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
    fn boxed<C: BenchCache>(traces: &Arc<Traces>) -> Box<dyn Contender> {
        Box::new(CacheContender::<C>::new(Arc::clone(traces)))
    }
    let traces = Traces::new(spec);
    vec![
        boxed::<Larder<0, 0>>(&traces),
        boxed::<Larder<0, 1>>(&traces),
        boxed::<LarderArc<0>>(&traces),
        boxed::<Larder<1, 0>>(&traces),
        boxed::<Larder<1, 1>>(&traces),
        boxed::<Larder<2, 0>>(&traces),
        boxed::<Larder<2, 1>>(&traces),
        boxed::<MutexLru>(&traces),
        boxed::<ShardedMutexLru>(&traces),
        boxed::<moka::sync::Cache<u64, u64>>(&traces),
        boxed::<mini_moka::sync::Cache<u64, u64>>(&traces),
        boxed::<quick_cache::sync::Cache<u64, u64>>(&traces),
        boxed::<scc::HashCache<u64, u64, ahash::RandomState>>(&traces),
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
