//! Hit ratios of `LruCache` against the references the showdown charts
//! beside it (`benches/common/offline.rs`): exact global LRU, Belady's OPT
//! and the popularity oracle. The references are checked first, on traces worked out by
//! hand and against brute force, then used as bounds on larder's policies.

#[path = "../benches/common/offline.rs"]
mod offline;

use larder::{EvictionPolicy, LruCache};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};

fn opt(trace: &[u64], capacity: usize) -> u64 {
    offline::opt_hits(trace, &offline::next_uses(trace), capacity)
}

/// a b c a d a b
const ABCADAB: [u64; 7] = [1, 2, 3, 1, 4, 1, 2];

/// Capacity 2. LRU: a b c miss; c evicts a, so a misses and evicts b; d
/// evicts c; a hits; b misses. One hit.
#[test]
fn lru_on_abcadab_capacity_2_hits_once() {
    assert_eq!(offline::lru_hits(&ABCADAB, 2), 1);
}

/// Capacity 2. OPT: a b miss; c (never used again) is not kept; a hits; d
/// (never used again) is not kept; a hits; b, kept throughout, hits. Three
/// hits: one more than a cache that must admit every miss could get (c
/// evicts b, then b misses).
#[test]
fn opt_on_abcadab_capacity_2_hits_three_times() {
    assert_eq!(offline::next_uses(&ABCADAB), [3, 6, 9, 5, 11, 12, 13]);
    assert_eq!(opt(&ABCADAB, 2), 3);
}

/// The textbook trace a b c d a b e a b c d e with 3 entries: LRU hits
/// twice (10 misses), OPT five times (7 misses).
#[test]
fn textbook_trace_capacity_3() {
    let trace = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];
    assert_eq!(offline::lru_hits(&trace, 3), 2);
    assert_eq!(opt(&trace, 3), 5);
}

/// Capacity 0 never hits; a capacity holding every key misses only each
/// key's first access.
#[test]
fn references_at_the_extremes() {
    let trace = [5, 6, 5, 7, 6, 5, 8, 7];
    for hits in [offline::lru_hits(&trace, 0), opt(&trace, 0)] {
        assert_eq!(hits, 0);
    }
    for capacity in [4, 100] {
        assert_eq!(offline::lru_hits(&trace, capacity), 4);
        assert_eq!(opt(&trace, capacity), 4);
    }
    assert_eq!(opt(&[], 3), 0);
}

/// The most hits any cache of `capacity` entries can get on `trace` from
/// `held`, trying every choice on every miss (keep the key or not, and
/// which key to evict).
fn brute_force(trace: &[u64], capacity: usize, held: &mut Vec<u64>) -> u64 {
    let Some((&key, rest)) = trace.split_first() else {
        return 0;
    };
    if held.contains(&key) {
        return 1 + brute_force(rest, capacity, held);
    }
    let mut best = brute_force(rest, capacity, held); // not kept
    if held.len() < capacity {
        held.push(key);
        best = best.max(brute_force(rest, capacity, held));
        held.pop();
    } else {
        for slot in 0..held.len() {
            let evicted = std::mem::replace(&mut held[slot], key);
            best = best.max(brute_force(rest, capacity, held));
            held[slot] = evicted;
        }
    }
    best
}

/// A plain LRU model: a list ordered from least to most recent.
fn model_lru_hits(trace: &[u64], capacity: usize) -> u64 {
    let mut order: Vec<u64> = Vec::new();
    let mut hits = 0;
    for &key in trace {
        if let Some(at) = order.iter().position(|&k| k == key) {
            hits += 1;
            order.remove(at);
        }
        order.push(key);
        if order.len() > capacity {
            order.remove(0);
        }
    }
    hits
}

/// The oracle keeps the most popular keys (the lowest numbers) among
/// those requested so far: a less popular key it holds gives way to a more
/// popular newcomer, and a newcomer less popular than all it holds is not
/// kept.
#[test]
fn oracle_keeps_the_most_popular_keys_seen() {
    // 1 2 1 3 1 2 4 4
    let trace = [1, 2, 1, 3, 1, 2, 4, 4];
    assert_eq!(offline::oracle_hits(&trace, 0), 0);
    assert_eq!(offline::oracle_hits(&trace, 1), 2); // the second and third 1
    assert_eq!(offline::oracle_hits(&trace, 2), 3); // and the second 2
    assert_eq!(offline::oracle_hits(&trace, 4), 4); // and the second 4
    // 5 is kept until a more popular key needs its place.
    assert_eq!(offline::oracle_hits(&[5, 5, 1, 1, 5], 1), 2);
    assert_eq!(offline::oracle_hits(&[5, 5, 1, 1, 5], 2), 3);
}

/// The long-run mass of the top keys, worked by hand: Zipf 1 over 4 keys
/// has weights 1, 1/2, 1/3, 1/4 (total 25/12).
#[test]
fn zipf_top_mass_by_hand() {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(offline::zipf_top_mass(4, 1.0, 1), 12.0 / 25.0));
    assert!(close(offline::zipf_top_mass(4, 1.0, 2), 18.0 / 25.0));
    assert!(close(offline::zipf_top_mass(4, 1.0, 4), 1.0));
    assert!(close(offline::zipf_top_mass(4, 1.0, 9), 1.0));
    assert!(close(offline::zipf_top_mass(4, 0.0, 1), 0.25));
}

/// On a long Zipf trace the oracle's hit ratio lands on the distribution's
/// top mass (less a cold miss per key), so the trace generator the
/// showdown uses draws what the bound assumes.
#[test]
fn oracle_on_a_zipf_trace_meets_the_top_mass() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let zipf = Zipf::new(2_000.0, 0.9).unwrap();
    let trace: Vec<u64> = (0..400_000).map(|_| zipf.sample(&mut rng) as u64).collect();
    for capacity in [20, 200] {
        let ratio = offline::oracle_hits(&trace, capacity) as f64 / trace.len() as f64;
        let mass = offline::zipf_top_mass(2_000, 0.9, capacity);
        assert!(
            (ratio - mass).abs() < 0.005,
            "capacity {capacity}: oracle {ratio:.4} against top mass {mass:.4}"
        );
    }
}

proptest! {
    /// The oracle is one cache of `capacity` entries among others: OPT
    /// bounds it on any trace.
    #[test]
    fn opt_bounds_the_oracle(
        trace in proptest::collection::vec(0u64..12, 0..200),
        capacity in 0usize..10,
    ) {
        prop_assert!(offline::oracle_hits(&trace, capacity) <= opt(&trace, capacity));
    }

    /// OPT is the optimum: it matches an exhaustive search on short traces.
    #[test]
    fn opt_matches_brute_force(
        trace in proptest::collection::vec(0u64..5, 0..12),
        capacity in 0usize..4,
    ) {
        prop_assert_eq!(opt(&trace, capacity), brute_force(&trace, capacity, &mut Vec::new()));
    }

    /// The LRU reference matches a plain list model, and OPT bounds it.
    #[test]
    fn lru_matches_a_list_model(
        trace in proptest::collection::vec(0u64..12, 0..200),
        capacity in 0usize..10,
    ) {
        let hits = offline::lru_hits(&trace, capacity);
        prop_assert_eq!(hits, model_lru_hits(&trace, capacity));
        prop_assert!(opt(&trace, capacity) >= hits);
    }
}

/// Zipf 0.9 over 2,000 keys, 30,000 accesses, with scans of 50
/// never-repeated keys mixed in when `scans`.
fn trace(scans: bool) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let zipf = Zipf::new(2_000.0, 0.9).unwrap();
    let mut next_scan_key = 1_000_000u64;
    let mut trace = Vec::with_capacity(30_050);
    while trace.len() < 30_000 {
        if scans && rng.random_bool(0.2 / 50.0) {
            trace.extend(next_scan_key..next_scan_key + 50);
            next_scan_key += 50;
        } else {
            trace.push(zipf.sample(&mut rng) as u64);
        }
    }
    trace
}

/// The hits of `cache` on `trace` from empty (get, insert on a miss), and
/// the most entries it held at any point.
fn replay(cache: &LruCache<u64, ()>, trace: &[u64]) -> (u64, usize) {
    let (mut hits, mut most) = (0, 0);
    for &key in trace {
        if cache.get_with(&key, |_| ()).is_some() {
            hits += 1;
        } else {
            cache.insert(key, ());
        }
        most = most.max(cache.len());
    }
    (hits, most)
}

/// No policy of larder's beats OPT at any capacity, on a Zipf trace and a
/// scan-polluted one, sharded as built by default or as one shard.
#[test]
fn opt_bounds_every_policy() {
    for scans in [false, true] {
        let trace = trace(scans);
        let next = offline::next_uses(&trace);
        for capacity in [20, 50, 100, 200, 500, 1_000] {
            let best = offline::opt_hits(&trace, &next, capacity);
            for policy in [
                EvictionPolicy::Exact,
                EvictionPolicy::Clock,
                EvictionPolicy::S3Fifo,
            ] {
                for shards in [None, Some(1)] {
                    let mut builder = LruCache::builder().capacity(capacity).policy(policy);
                    if let Some(shards) = shards {
                        builder = builder.shards(shards);
                    }
                    let (hits, most) = replay(&builder.build().unwrap(), &trace);
                    assert!(most <= capacity, "{policy:?} held {most} > {capacity}");
                    assert!(
                        hits <= best,
                        "{policy:?}, shards {shards:?}, capacity {capacity}, scans {scans}: \
                         {hits} hits, above OPT's {best}"
                    );
                }
            }
        }
    }
}

/// One shard of exact LRU is global LRU: the same hits as the reference,
/// which the showdown's LRU curve is.
#[test]
fn one_exact_shard_hits_as_the_lru_reference() {
    for scans in [false, true] {
        let trace = trace(scans);
        for capacity in [20, 100, 1_000] {
            let cache = LruCache::builder()
                .capacity(capacity)
                .policy(EvictionPolicy::Exact)
                .shards(1)
                .build()
                .unwrap();
            let (hits, _) = replay(&cache, &trace);
            assert_eq!(
                hits,
                offline::lru_hits(&trace, capacity),
                "capacity {capacity}"
            );
        }
    }
}
