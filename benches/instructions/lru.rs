//! `LruCache` under each policy against quick_cache 0.7, `lru` 0.19 under a
//! `parking_lot::Mutex`, and moka 0.12, all `u64 -> u64` read by value (the
//! peers clone `V` out; so does larder's `get`):
//!
//! - `get_hit`: 10,000 keys held in caches of capacity 20,000;
//! - `miss_insert`: a `get` of a key not held, then its `insert`, in a
//!   full cache of 10,000 (each insert evicts);
//! - `zipf_trace`: a `get`, then an `insert` on a miss (a decorator's job),
//!   over a Zipf(0.9) trace of a million keys, capacity 10,000 (1%), after a
//!   warm-up of 30,000 operations;
//! - `get_or_init`: the same trace through each cache's load-on-miss call.
//!
//! Shard counts are fixed at what each cache picks on two cores (larder:
//! 256 shards under exact LRU, 1024 under CLOCK, 128 under S3-FIFO for
//! 10,000 entries; quick_cache: 8), so a count does not depend on the
//! machine's core count.

use std::hint::black_box;
use std::num::NonZeroUsize;

use gungraun::{library_benchmark, library_benchmark_group};
use larder::{EvictionPolicy, LruCache};
use parking_lot::Mutex;

use crate::inputs::{
    OPS, QuickCache, fresh, hasher, quick_cache, quick_cache_get_or_init, scattered, zipf,
};

/// The bounded caches' capacity.
const CAPACITY: usize = 10_000;

trait Bounded: Sized {
    fn build(capacity: usize) -> Self;
    fn get(&self, key: u64) -> Option<u64>;
    fn insert(&self, key: u64);
    fn get_or_init(&self, key: u64) -> u64;
}

/// larder's cache under policy `P` (0 exact LRU, 1 CLOCK, 2 S3-FIFO).
struct Larder<const P: u8>(LruCache<u64, u64, ahash::RandomState>);
struct Quickcache(QuickCache);
struct LockedLru(Mutex<::lru::LruCache<u64, u64, ahash::RandomState>>);
struct Moka(moka::sync::Cache<u64, u64, ahash::RandomState>);

impl<const P: u8> Bounded for Larder<P> {
    fn build(capacity: usize) -> Self {
        // What `default_shards` picks on two cores for 10,000 entries.
        let (policy, shards) = match P {
            0 => (EvictionPolicy::Exact, 256),
            1 => (EvictionPolicy::Clock, 1024),
            _ => (EvictionPolicy::S3Fifo, 128),
        };
        let cache = LruCache::builder()
            .capacity(capacity)
            .policy(policy)
            .shards(shards)
            .hasher(hasher())
            .build()
            .expect("valid capacity");
        Self(cache)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.0.get(&key)
    }
    #[inline]
    fn insert(&self, key: u64) {
        black_box(self.0.insert(key, key));
    }
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        self.0.get_or_init(&key, || key)
    }
}

impl Bounded for Quickcache {
    fn build(capacity: usize) -> Self {
        Self(quick_cache(capacity, capacity as u64))
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.0.get(&key)
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.0.insert(key, key);
    }
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        quick_cache_get_or_init(&self.0, key)
    }
}

impl Bounded for LockedLru {
    fn build(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).expect("capacity above zero");
        Self(Mutex::new(::lru::LruCache::with_hasher(capacity, hasher())))
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.0.lock().get(&key).copied()
    }
    #[inline]
    fn insert(&self, key: u64) {
        black_box(self.0.lock().put(key, key));
    }
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        *self.0.lock().get_or_insert(key, || key)
    }
}

impl Bounded for Moka {
    fn build(capacity: usize) -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(capacity as u64)
                .build_with_hasher(hasher()),
        )
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.0.get(&key)
    }
    #[inline]
    fn insert(&self, key: u64) {
        self.0.insert(key, key);
    }
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        self.0.get_with(key, || key)
    }
}

/// 10,000 keys held in a cache of 20,000, and [`OPS`] of them to read.
fn held<C: Bounded>() -> (C, Vec<u64>) {
    let keys = scattered(CAPACITY, 20);
    let cache = C::build(2 * CAPACITY);
    for &k in &keys {
        cache.insert(k);
    }
    for &k in &keys {
        black_box(cache.get(k)); // every key read once: hits from now on
    }
    (cache, crate::inputs::drawn(&keys, 21))
}

/// A full cache of 10,000 (20,000 keys inserted) and [`OPS`] keys never
/// inserted.
fn full<C: Bounded>() -> (C, Vec<u64>) {
    let cache = C::build(CAPACITY);
    for k in scattered(2 * CAPACITY, 22) {
        cache.insert(k);
    }
    (cache, fresh(2 * CAPACITY, OPS, 23))
}

/// A cache of 10,000 warmed with 30,000 get-then-insert operations of a
/// Zipf(0.9) trace over a million keys, and the trace's next [`OPS`] keys.
fn traced<C: Bounded>() -> (C, Vec<u64>) {
    let cache = C::build(CAPACITY);
    let trace = zipf(1_000_000, 0.9, 3 * CAPACITY + OPS, 24);
    let (warm, measured) = trace.split_at(3 * CAPACITY);
    for &k in warm {
        if cache.get(k).is_none() {
            cache.insert(k);
        }
    }
    (cache, measured.to_vec())
}

#[library_benchmark]
#[bench::larder_exact(setup = held::<Larder<0>>)]
#[bench::larder_clock(setup = held::<Larder<1>>)]
#[bench::larder_s3fifo(setup = held::<Larder<2>>)]
#[bench::quick_cache(setup = held::<Quickcache>)]
#[bench::mutex_lru(setup = held::<LockedLru>)]
#[bench::moka(setup = held::<Moka>)]
fn get_hit<C: Bounded>((cache, keys): (C, Vec<u64>)) -> C {
    let mut sum = 0;
    for &key in &keys {
        sum += cache.get(key).unwrap_or(0);
    }
    black_box(sum);
    cache
}

#[library_benchmark]
#[bench::larder_exact(setup = full::<Larder<0>>)]
#[bench::larder_clock(setup = full::<Larder<1>>)]
#[bench::larder_s3fifo(setup = full::<Larder<2>>)]
#[bench::quick_cache(setup = full::<Quickcache>)]
#[bench::mutex_lru(setup = full::<LockedLru>)]
#[bench::moka(setup = full::<Moka>)]
fn miss_insert<C: Bounded>((cache, keys): (C, Vec<u64>)) -> C {
    for &key in &keys {
        if cache.get(key).is_none() {
            cache.insert(key);
        }
    }
    cache
}

#[library_benchmark]
#[bench::larder_exact(setup = traced::<Larder<0>>)]
#[bench::larder_clock(setup = traced::<Larder<1>>)]
#[bench::larder_s3fifo(setup = traced::<Larder<2>>)]
#[bench::quick_cache(setup = traced::<Quickcache>)]
#[bench::mutex_lru(setup = traced::<LockedLru>)]
#[bench::moka(setup = traced::<Moka>)]
fn zipf_trace<C: Bounded>((cache, keys): (C, Vec<u64>)) -> C {
    let mut sum = 0;
    for &key in &keys {
        match cache.get(key) {
            Some(value) => sum += value,
            None => cache.insert(key),
        }
    }
    black_box(sum);
    cache
}

#[library_benchmark]
#[bench::larder_exact(setup = traced::<Larder<0>>)]
#[bench::larder_clock(setup = traced::<Larder<1>>)]
#[bench::larder_s3fifo(setup = traced::<Larder<2>>)]
#[bench::quick_cache(setup = traced::<Quickcache>)]
#[bench::mutex_lru(setup = traced::<LockedLru>)]
#[bench::moka(setup = traced::<Moka>)]
fn get_or_init<C: Bounded>((cache, keys): (C, Vec<u64>)) -> C {
    let mut sum = 0;
    for &key in &keys {
        sum += cache.get_or_init(key);
    }
    black_box(sum);
    cache
}

library_benchmark_group!(
    name = lru;
    benchmarks = get_hit, miss_insert, zipf_trace, get_or_init
);
