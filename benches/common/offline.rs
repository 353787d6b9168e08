//! References for hit ratios: what exact LRU and the optimal policy
//! (Belady's OPT) hit on a whole trace known in advance, and what the best
//! *online* policy can expect when accesses are independent draws from a
//! known distribution (the popularity oracle).
//!
//! All start empty, count every access of the trace, and run on one
//! thread. The showdown draws them beside the caches it measures on the
//! same trace; `tests/lru_offline_refs.rs` checks them on traces worked out
//! by hand and against larder's policies.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

/// The hits of one global exact LRU cache of `capacity` entries on
/// `trace`: a hit makes its key the most recent; a miss inserts the key
/// and, when the cache is then over `capacity`, evicts the least recent.
/// O(n log n).
pub fn lru_hits(trace: &[u64], capacity: usize) -> u64 {
    if capacity == 0 {
        return 0;
    }
    // key -> time of its last access; time -> key (oldest first).
    let mut last_access: HashMap<u64, usize> = HashMap::with_capacity(capacity + 1);
    let mut by_time: BTreeMap<usize, u64> = BTreeMap::new();
    let mut hits = 0;
    for (now, &key) in trace.iter().enumerate() {
        if let Some(before) = last_access.insert(key, now) {
            hits += 1;
            by_time.remove(&before);
        }
        by_time.insert(now, key);
        if last_access.len() > capacity {
            let (_, victim) = by_time.pop_first().expect("the cache is not empty");
            last_access.remove(&victim);
        }
    }
    hits
}

/// For each access of `trace`, the position of the next access to the same
/// key; an access never repeated gets `trace.len() + i` (a distinct
/// position past the end, so "never" sorts after every real next use).
pub fn next_uses(trace: &[u64]) -> Vec<usize> {
    let mut next = vec![0; trace.len()];
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for (i, &key) in trace.iter().enumerate().rev() {
        next[i] = seen.insert(key, i).unwrap_or(trace.len() + i);
    }
    next
}

/// The hits of the optimal cache of `capacity` entries on `trace` (Belady's
/// OPT): on a miss the new key is admitted, and if the cache is then over
/// `capacity`, the key whose next use is farthest away is evicted (the new
/// key itself when it is that key: the optimum may decline to cache a key,
/// as an admission filter does). No cache of `capacity` entries, online or
/// not, hits more often on the same trace from empty. `next` is
/// [`next_uses`] of `trace`. O(n log n).
///
/// Each cached key is represented by the position of its next use, which is
/// unique: access `i` hits exactly when position `i` is cached.
pub fn opt_hits(trace: &[u64], next: &[usize], capacity: usize) -> u64 {
    assert_eq!(trace.len(), next.len(), "next_uses of another trace");
    if capacity == 0 {
        return 0;
    }
    // cached[p]: the key next used at position p is cached. Positions of
    // keys already accessed stay in the heap as stale entries: all are
    // below every live one (live positions are ahead of `i`), so the
    // heap's maximum is always live.
    let mut cached = vec![false; 2 * trace.len()];
    let mut farthest: BinaryHeap<usize> = BinaryHeap::with_capacity(trace.len());
    let (mut held, mut hits) = (0usize, 0u64);
    for (i, &next_use) in next.iter().enumerate() {
        if cached[i] {
            hits += 1;
            cached[i] = false;
        } else {
            held += 1;
        }
        cached[next_use] = true;
        farthest.push(next_use);
        if held > capacity {
            let victim = farthest.pop().expect("the cache is not empty");
            debug_assert!(cached[victim], "the maximum is live");
            cached[victim] = false;
            held -= 1;
        }
    }
    hits
}

/// The hits of the popularity oracle of `capacity` entries on `trace`,
/// whose keys are numbered by popularity (key 1 the most likely, as in the
/// Zipf traces here; the scan traces' never-repeated keys are numbered
/// above the Zipf range, so they rank last). The oracle admits every miss
/// and, when it then holds more than `capacity` keys, evicts the least
/// likely one (the new key itself when it is that one): it always holds the
/// `capacity` most likely keys among those requested so far (Aho, Denning
/// and Ullman's A0 policy, 1971).
///
/// When every access is an independent draw from one fixed distribution
/// (the independent reference model, which the Zipf traces here follow),
/// no online cache of `capacity` entries can *expect* more hits: a cache
/// can only hold keys requested before, so whatever it holds, the chance
/// that the next access hits is the total probability of at most
/// `capacity` of those keys, which the oracle's choice maximises. OPT gets
/// more only by knowing the future draws; a real cache gets less by having
/// to learn the popularities. On one finite trace an online cache may
/// still land a little above the oracle by chance. O(n log capacity).
pub fn oracle_hits(trace: &[u64], capacity: usize) -> u64 {
    if capacity == 0 {
        return 0;
    }
    let mut held: BTreeSet<u64> = BTreeSet::new();
    let mut hits = 0;
    for &key in trace {
        if held.contains(&key) {
            hits += 1;
        } else {
            held.insert(key);
            if held.len() > capacity {
                held.pop_last();
            }
        }
    }
    hits
}

/// The popularity oracle's hit ratio in the long run under a Zipf
/// distribution of `exponent` over keys `1..=keys` (the probability of key
/// `k` proportional to `k^-exponent`): the probability mass of the
/// `capacity` most likely keys, the most any online cache of `capacity`
/// entries can expect per access on such a trace (see [`oracle_hits`]).
pub fn zipf_top_mass(keys: usize, exponent: f64, capacity: usize) -> f64 {
    let weight = |k: usize| (k as f64).powf(-exponent);
    let top: f64 = (1..=capacity.min(keys)).map(weight).sum();
    let rest: f64 = (capacity.min(keys) + 1..=keys).map(weight).sum();
    top / (top + rest)
}
