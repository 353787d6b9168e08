//! Inputs shared by the instruction benchmarks: the operation count, the
//! fixed-seed hasher and key sequences drawn from fixed seeds.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// Operations per benchmark: every count is divided by it
/// (`scripts/instructions.py` reads it here; `baselines.json` records it
/// beside the counts).
pub const OPS: usize = 1_000;

/// The hasher every map of every contender uses: ahash with fixed seeds, so
/// probe sequences, and so instruction counts, are the same on every run.
pub fn hasher() -> ahash::RandomState {
    ahash::RandomState::with_seeds(0x5eed_0001, 0x5eed_0002, 0x5eed_0003, 0x5eed_0004)
}

/// A seeded generator: `stream` tells apart the sequences of one benchmark.
pub fn rng(stream: u64) -> StdRng {
    StdRng::seed_from_u64(0x1a2d_e200 + stream)
}

/// Key number `i`, scattered over `u64` (a bijection: distinct numbers give
/// distinct keys).
pub fn key(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ 0x5555_5555
}

/// Keys `0..n` in a fixed shuffled order, for maps filled with them.
pub fn scattered(n: usize, stream: u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..n as u64).map(key).collect();
    keys.shuffle(&mut rng(stream));
    keys
}

/// [`OPS`] keys drawn uniformly from `keys`.
pub fn drawn(keys: &[u64], stream: u64) -> Vec<u64> {
    let mut rng = rng(stream);
    (0..OPS)
        .map(|_| keys[rng.random_range(0..keys.len())])
        .collect()
}

/// Keys `from..from + n` in a fixed shuffled order: none of them is in a
/// map filled from `scattered(m)` when `from >= m`.
pub fn fresh(from: usize, n: usize, stream: u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (from as u64..(from + n) as u64).map(key).collect();
    keys.shuffle(&mut rng(stream));
    keys
}

/// A Zipf(`exponent`) trace of `len` keys over `universe` keys (rank `r`
/// maps to a scrambled key), for the caches' get-then-insert traces.
pub fn zipf(universe: usize, exponent: f64, len: usize, stream: u64) -> Vec<u64> {
    use rand_distr::{Distribution, Zipf};
    let zipf = Zipf::new(universe as f64, exponent).expect("valid Zipf parameters");
    let mut rng = rng(stream);
    (0..len)
        .map(|_| key(zipf.sample(&mut rng) as u64))
        .collect()
}

/// quick_cache's sync cache of `u64 -> u64` with the fixed hasher.
pub type QuickCache =
    quick_cache::sync::Cache<u64, u64, quick_cache::UnitWeighter, ahash::RandomState>;

/// A [`QuickCache`] for about `items` entries, bounded at `weight`, with 8
/// shards (what quick_cache picks on two cores).
pub fn quick_cache(items: usize, weight: u64) -> QuickCache {
    let options = quick_cache::OptionsBuilder::new()
        .estimated_items_capacity(items)
        .weight_capacity(weight)
        .shards(8)
        .build()
        .expect("valid options");
    QuickCache::with_options(
        options,
        quick_cache::UnitWeighter,
        hasher(),
        Default::default(),
    )
}

/// quick_cache's load-on-miss call with an init that cannot fail (the key
/// is its own value).
#[inline]
pub fn quick_cache_get_or_init(cache: &QuickCache, key: u64) -> u64 {
    match cache.get_or_insert_with(&key, || Ok::<_, std::convert::Infallible>(key)) {
        Ok(value) => value,
        Err(never) => match never {},
    }
}
