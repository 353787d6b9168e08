//! `LruCache`'s hit ratio against an exact global LRU on Zipf traces over
//! 1M keys, under each policy; `TypedCache`'s against `LruCache`'s.

use std::collections::{BTreeMap, HashMap};

use larder::{EvictionPolicy, LruCache, TypedCache};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};

// ---------------------------------------------------------------------------
// hit ratio against an exact global LRU on Zipf(0.9) traces over 1M keys

/// Exact global LRU in O(log n) per access: key -> last-use tick, and tick ->
/// key ordered, the smallest tick being the least recently used.
struct ExactLru {
    ticks: HashMap<u64, u64>,
    order: BTreeMap<u64, u64>,
    capacity: usize,
    now: u64,
}

impl ExactLru {
    fn new(capacity: usize) -> Self {
        Self {
            ticks: HashMap::new(),
            order: BTreeMap::new(),
            capacity,
            now: 0,
        }
    }
    /// Accesses `key`; true on a hit. A miss inserts it.
    fn access(&mut self, key: u64) -> bool {
        self.now += 1;
        let hit = match self.ticks.insert(key, self.now) {
            Some(old) => {
                self.order.remove(&old);
                true
            }
            None => false,
        };
        self.order.insert(self.now, key);
        if self.ticks.len() > self.capacity {
            let (_, victim) = self.order.pop_first().unwrap();
            self.ticks.remove(&victim);
        }
        hit
    }
}

/// A Zipf(0.9) trace over 1M keys (rank 1 the most popular), drawn by
/// inverting the exact discrete CDF (binary search in a table built once):
/// fast enough for debug builds, unlike rejection sampling.
fn zipf_trace(requests: usize, seed: u64) -> Vec<u64> {
    static CDF: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    let cdf = CDF.get_or_init(|| {
        let mut sum = 0.0;
        let mut cdf: Vec<f64> = (1..=1_000_000u32)
            .map(|rank| {
                sum += f64::from(rank).powf(-0.9);
                sum
            })
            .collect();
        cdf.iter_mut().for_each(|c| *c /= sum);
        cdf
    });
    let mut rng = StdRng::seed_from_u64(seed);
    (0..requests)
        .map(|_| {
            let u: f64 = rand::Rng::random(&mut rng);
            cdf.partition_point(|&c| c < u) as u64 + 1
        })
        .collect()
}

/// Runs a Zipf(0.9) trace over 1M keys through a cache of the default
/// shard count (get, insert on miss) and the exact model; returns both hit
/// ratios.
fn zipf_hit_ratios(capacity: usize, requests: usize, policy: EvictionPolicy) -> (f64, f64) {
    let cache = LruCache::builder()
        .capacity(capacity)
        .policy(policy)
        .build()
        .unwrap();
    let mut model = ExactLru::new(capacity);
    let (mut cache_hits, mut model_hits) = (0u64, 0u64);
    for key in zipf_trace(requests, capacity as u64) {
        if cache.get(&key).is_some() {
            cache_hits += 1;
        } else {
            cache.insert(key, ());
        }
        model_hits += u64::from(model.access(key));
    }
    assert!(cache.len() <= capacity);
    assert_eq!(cache.stats().hits, cache_hits);
    assert!(cache.shard_count() > 1, "the default must shard");
    (
        cache_hits as f64 / requests as f64,
        model_hits as f64 / requests as f64,
    )
}

/// Debug builds run 300K requests (the 1% cache is warm well before the
/// end; the 10% one has just filled); release builds (`cargo test
/// --release`) run 3M, the steady state.
const ZIPF_REQUESTS: usize = if cfg!(debug_assertions) {
    300_000
} else {
    3_000_000
};

#[test]
fn zipf_hit_ratio_within_one_point_of_global_lru_at_1_percent() {
    let (cache, exact) = zipf_hit_ratios(10_000, ZIPF_REQUESTS, EvictionPolicy::Exact);
    println!("capacity 1%: sharded {cache:.4} exact {exact:.4}");
    assert!(
        (cache - exact).abs() < 0.01,
        "sharded {cache:.4} vs exact {exact:.4}"
    );
}

#[test]
fn zipf_hit_ratio_within_one_point_of_global_lru_at_10_percent() {
    let (cache, exact) = zipf_hit_ratios(100_000, ZIPF_REQUESTS, EvictionPolicy::Exact);
    println!("capacity 10%: sharded {cache:.4} exact {exact:.4}");
    assert!(
        (cache - exact).abs() < 0.01,
        "sharded {cache:.4} vs exact {exact:.4}"
    );
}

/// CLOCK is not LRU, so its hit ratio may differ either way; the cost the
/// docs promise is at most 1 point *below* exact global LRU on these traces.
#[test]
fn clock_hit_ratio_at_most_one_point_below_global_lru() {
    for capacity in [10_000, 100_000] {
        let (clock, exact) = zipf_hit_ratios(capacity, ZIPF_REQUESTS, EvictionPolicy::Clock);
        println!("capacity {capacity}: clock {clock:.4} exact {exact:.4}");
        assert!(clock > exact - 0.01, "clock {clock:.4} vs exact {exact:.4}");
    }
}

/// S3-FIFO, sharded by default, misses less than exact *global* LRU on the
/// same Zipf trace (the docs promise the best hit ratio of the policies on
/// skewed workloads). At 10K entries the cache is warm well before the end
/// of a debug build's trace; at 100K only a release build's trace (3M
/// requests) reaches the steady state, so that capacity runs there only.
#[test]
fn s3fifo_hit_ratio_above_global_lru() {
    let capacities: &[usize] = if cfg!(debug_assertions) {
        &[10_000]
    } else {
        &[10_000, 100_000]
    };
    for &capacity in capacities {
        let (s3, exact) = zipf_hit_ratios(capacity, ZIPF_REQUESTS, EvictionPolicy::S3Fifo);
        println!("capacity {capacity}: s3fifo {s3:.4} exact {exact:.4}");
        assert!(s3 > exact + 0.01, "s3fifo {s3:.4} vs exact {exact:.4}");
    }
}

#[test]
fn one_shard_is_exactly_global_lru_on_a_zipf_trace() {
    let zipf = Zipf::new(10_000.0, 0.9).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let cache = LruCache::builder().capacity(500).shards(1).build().unwrap();
    let mut model = ExactLru::new(500);
    for _ in 0..50_000 {
        let key = zipf.sample(&mut rng) as u64;
        let hit = cache.get(&key).is_some();
        if !hit {
            cache.insert(key, ());
        }
        assert_eq!(hit, model.access(key), "diverged at key {key}");
    }
}

/// `TypedCache` under S3-FIFO has `LruCache`'s hit ratio at small
/// capacities. Its bound is global: it stores a new key, then evicts,
/// passing over the key just stored; passing over it must leave it on
/// probation, not count a use that sends it to main (with that, S3-FIFO
/// fell to CLOCK's ratio once a shard's probation queue held one entry:
/// 24% against 34% at 1,000 entries). And a small cache gets few shards
/// (16 shards of one entry each hit 4.7% at 16 entries, one shard 16.3%).
#[test]
fn typed_cache_s3fifo_hit_ratio_matches_lru_cache_at_small_capacities() {
    for capacity in [16, 64, 500, 1_000] {
        let lru = LruCache::builder()
            .capacity(capacity)
            .policy(EvictionPolicy::S3Fifo)
            .build()
            .unwrap();
        let typed = TypedCache::builder()
            .capacity(capacity)
            .policy(EvictionPolicy::S3Fifo)
            .build()
            .unwrap();
        let requests = 300_000;
        let (mut lru_hits, mut typed_hits) = (0u64, 0u64);
        for key in zipf_trace(requests, 7 + capacity as u64) {
            if lru.get(&key).is_some() {
                lru_hits += 1;
            } else {
                lru.insert(key, ());
            }
            if typed.get(&key).is_some() {
                typed_hits += 1;
            } else {
                typed.insert(key, ());
            }
        }
        assert!(typed.len() <= capacity);
        let (lru_ratio, typed_ratio) = (
            lru_hits as f64 / requests as f64,
            typed_hits as f64 / requests as f64,
        );
        assert!(
            typed_ratio >= lru_ratio - 0.01,
            "capacity {capacity}: TypedCache {:.2}% against LruCache {:.2}%",
            typed_ratio * 100.0,
            lru_ratio * 100.0
        );
    }
}

/// Hit ratios of `TypedCache` and `LruCache` (exact LRU) over one Zipf 0.9
/// trace, where a tenth of the requests first remove a key drawn from the
/// same trace if `removes`, and a key weighs `key % 3 + 1` if `weighted`
/// (capacity 2,000, about 1,000 entries; else 1,000 entries).
fn typed_and_lru_hit_ratios(weighted: bool, removes: bool) -> (f64, f64) {
    let weigh = |key: &u64, (): &()| (key % 3) as u32 + 1;
    let capacity = if weighted { 2_000 } else { 1_000 };
    let mut typed = TypedCache::builder()
        .capacity(capacity)
        .policy(EvictionPolicy::Exact);
    let mut lru = LruCache::builder()
        .capacity(capacity)
        .policy(EvictionPolicy::Exact);
    if weighted {
        typed = typed.weigher(weigh);
        lru = lru.weigher(weigh);
    }
    let (typed, lru) = (typed.build().unwrap(), lru.build().unwrap());
    let requests = 300_000;
    let trace = zipf_trace(requests, 11);
    let (mut typed_hits, mut lru_hits) = (0u64, 0u64);
    for (i, &key) in trace.iter().enumerate() {
        if removes && i % 10 == 0 {
            let gone = trace[(i * 7_919) % requests];
            typed.remove(&gone);
            lru.remove(&gone);
        }
        if typed.get(&key).is_some() {
            typed_hits += 1;
        } else {
            typed.insert(key, ());
        }
        if lru.get(&key).is_some() {
            lru_hits += 1;
        } else {
            lru.insert(key, ());
        }
    }
    typed.check_invariants();
    (
        typed_hits as f64 / requests as f64,
        lru_hits as f64 / requests as f64,
    )
}

/// `TypedCache`'s bound is global: a write evicts from its own shard,
/// then from others. Its shards must stay level in what they hold, or a
/// shard left small evicts its keys young. Victims heavier than the room
/// needed (a weigher) and removals leave slack that the next insert takes
/// in whatever shard it lands; evicting from the writer's shard whatever
/// it held let the shards' sizes walk apart (2 to 163 entries where about
/// 63 are level), which cost 4 points with the weigher below and 5 with
/// the removals (29.7% and 26.4% against `LruCache`'s 33.9% and 31.7%).
#[test]
fn typed_cache_shards_stay_level_under_weights_and_removals() {
    for (weighted, removes) in [(true, false), (false, true)] {
        let (typed, lru) = typed_and_lru_hit_ratios(weighted, removes);
        assert!(
            typed >= lru - 0.01,
            "weighted {weighted}, removes {removes}: TypedCache {:.2}% against LruCache {:.2}%",
            typed * 100.0,
            lru * 100.0
        );
    }
}
