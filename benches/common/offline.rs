//! Offline references for hit ratios: what exact LRU and the optimal
//! policy (Belady's OPT) hit on a whole trace known in advance.
//!
//! Both start empty, count every access of the trace, and run on one
//! thread. The showdown draws them beside the caches it measures on the
//! same trace; `tests/lru_hit_ratio.rs` checks them on traces worked out by
//! hand and against larder's policies.

use std::collections::{BTreeMap, BinaryHeap, HashMap};

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
