//! `TypedCache` against quick_cache 0.7, moka 0.12 and a
//! `DashMap<K, Arc<OnceLock<V>>>`, all `u64 -> u64`, unbounded where the
//! cache allows it (quick_cache and moka: bounded at twice what they hold):
//!
//! - `warm_hit`: `get_or_init` of one of 10,000 held keys;
//! - `cold_init`: `get_or_init` of a key not held (a trivial init: what is
//!   counted is the cache's own cold path);
//! - `async_warm_hit`: the async form of a warm hit, its future polled once
//!   (it is ready: a hit never waits).

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use dashmap::DashMap;
use gungraun::{library_benchmark, library_benchmark_group};
use larder::TypedCache;

use crate::inputs::{
    OPS, QuickCache, drawn, fresh, hasher, quick_cache, quick_cache_get_or_init, scattered,
};

/// Keys held before a benchmark starts.
const HELD: usize = 10_000;

trait InitOnce: Sized {
    fn build() -> Self;
    fn get_or_init(&self, key: u64) -> u64;
}

trait InitOnceAsync: Sized {
    fn build() -> Self;
    fn get_or_init_async<'a>(&'a self, key: &'a u64) -> impl Future<Output = u64> + 'a;
}

struct Larder(TypedCache<u64, u64, ahash::RandomState>);
struct Quickcache(QuickCache);
struct Moka(moka::sync::Cache<u64, u64, ahash::RandomState>);
struct MokaAsync(moka::future::Cache<u64, u64, ahash::RandomState>);
struct DashOnce(DashMap<u64, Arc<OnceLock<u64>>, ahash::RandomState>);

fn larder() -> Larder {
    Larder(
        TypedCache::builder()
            .hasher(hasher())
            .build()
            .expect("valid settings"),
    )
}

fn quick() -> Quickcache {
    Quickcache(quick_cache(2 * HELD, 4 * HELD as u64))
}

impl InitOnce for Larder {
    fn build() -> Self {
        larder()
    }
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        self.0.get_or_init(&key, || key)
    }
}

impl InitOnce for Quickcache {
    fn build() -> Self {
        quick()
    }
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        quick_cache_get_or_init(&self.0, key)
    }
}

impl InitOnce for Moka {
    fn build() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(4 * HELD as u64)
                .build_with_hasher(hasher()),
        )
    }
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        self.0.get_with(key, || key)
    }
}

impl InitOnce for DashOnce {
    fn build() -> Self {
        Self(DashMap::with_hasher(hasher()))
    }
    /// A read lock on a hit; the init outside the map's locks.
    #[inline]
    fn get_or_init(&self, key: u64) -> u64 {
        let cell = match self.0.get(&key) {
            Some(cell) => Arc::clone(&cell),
            None => Arc::clone(&self.0.entry(key).or_default()),
        };
        *cell.get_or_init(|| key)
    }
}

impl InitOnceAsync for Larder {
    fn build() -> Self {
        larder()
    }
    #[inline]
    fn get_or_init_async<'a>(&'a self, key: &'a u64) -> impl Future<Output = u64> + 'a {
        let value = *key;
        self.0.get_or_init_async(key, move || async move { value })
    }
}

impl InitOnceAsync for Quickcache {
    fn build() -> Self {
        quick()
    }
    #[inline]
    async fn get_or_init_async<'a>(&'a self, key: &'a u64) -> u64 {
        let init = async { Ok::<_, std::convert::Infallible>(*key) };
        match self.0.get_or_insert_async(key, init).await {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }
}

impl InitOnceAsync for MokaAsync {
    fn build() -> Self {
        Self(
            moka::future::Cache::builder()
                .max_capacity(4 * HELD as u64)
                .build_with_hasher(hasher()),
        )
    }
    #[inline]
    fn get_or_init_async<'a>(&'a self, key: &'a u64) -> impl Future<Output = u64> + 'a {
        self.0.get_with(*key, async move { *key })
    }
}

/// Polls `future` once: a warm hit is ready at once.
#[inline]
fn ready<F: Future>(future: F) -> F::Output {
    let mut context = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut context) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("a warm hit waited"),
    }
}

/// A cache holding 10,000 keys and [`OPS`] of them to ask for.
fn warm<C: InitOnce>() -> (C, Vec<u64>) {
    let cache = C::build();
    let keys = scattered(HELD, 30);
    for &k in &keys {
        black_box(cache.get_or_init(k));
    }
    (cache, drawn(&keys, 31))
}

/// A cache holding 10,000 keys and [`OPS`] keys it does not hold.
fn cold<C: InitOnce>() -> (C, Vec<u64>) {
    let cache = C::build();
    for k in scattered(HELD, 30) {
        black_box(cache.get_or_init(k));
    }
    (cache, fresh(HELD, OPS, 32))
}

/// [`warm`] for the async forms.
fn warm_async<C: InitOnceAsync>() -> (C, Vec<u64>) {
    let cache = C::build();
    let keys = scattered(HELD, 30);
    for &k in &keys {
        black_box(ready(cache.get_or_init_async(&k)));
    }
    (cache, drawn(&keys, 31))
}

#[library_benchmark]
#[bench::larder(setup = warm::<Larder>)]
#[bench::quick_cache(setup = warm::<Quickcache>)]
#[bench::moka(setup = warm::<Moka>)]
#[bench::dashmap_oncelock(setup = warm::<DashOnce>)]
fn warm_hit<C: InitOnce>((cache, keys): (C, Vec<u64>)) -> C {
    let mut sum = 0;
    for &key in &keys {
        sum += cache.get_or_init(key);
    }
    black_box(sum);
    cache
}

#[library_benchmark]
#[bench::larder(setup = cold::<Larder>)]
#[bench::quick_cache(setup = cold::<Quickcache>)]
#[bench::moka(setup = cold::<Moka>)]
#[bench::dashmap_oncelock(setup = cold::<DashOnce>)]
fn cold_init<C: InitOnce>((cache, keys): (C, Vec<u64>)) -> C {
    let mut sum = 0;
    for &key in &keys {
        sum += cache.get_or_init(key);
    }
    black_box(sum);
    cache
}

#[library_benchmark]
#[bench::larder(setup = warm_async::<Larder>)]
#[bench::quick_cache(setup = warm_async::<Quickcache>)]
#[bench::moka(setup = warm_async::<MokaAsync>)]
fn async_warm_hit<C: InitOnceAsync>((cache, keys): (C, Vec<u64>)) -> C {
    let mut sum = 0;
    for key in &keys {
        sum += ready(cache.get_or_init_async(key));
    }
    black_box(sum);
    cache
}

library_benchmark_group!(name = typed; benchmarks = warm_hit, cold_init, async_warm_hit);
