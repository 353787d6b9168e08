//! loom models of a weighted `LruCache` (`LruCacheBuilder::weigher`): two
//! inserts of different weights race on one shard while the main thread
//! reads the total weight. An insert evicts, in the critical section that
//! stores its entry, as many entries as it takes to fit, so no interleaving
//! lets a reader see more weight than the capacity. The negative control
//! stores the new entry in one critical section and evicts in a second
//! one, and must be caught.
#![cfg(loom)]

use larder::fault::{LruFault, inject};
use larder::{EvictionPolicy, LruCache};
use loom::sync::Arc;
use loom::thread;

/// A one-shard cache of weight 4 holding key 0 (weight 2); two threads
/// insert key 1 (weight 3: evicts 0, or 0 and 2) and key 2 (weight 2)
/// while the main thread reads the total weight twice, with `stats()` (a
/// consistent pair with the capacity) and `weighted_size()`.
fn weight_bound_holds(policy: EvictionPolicy, fault: LruFault) {
    let _fault = inject(fault);
    loom::model(move || {
        // The value is the entry's weight.
        let cache = Arc::new(
            LruCache::<u32, u32>::builder()
                .capacity(4)
                .shards(1)
                .policy(policy)
                .weigher(|_key: &u32, value: &u32| *value)
                .build()
                .expect("valid settings"),
        );
        cache.insert(0, 2);
        let inserters: Vec<_> = [(1, 3), (2, 2)]
            .into_iter()
            .map(|(key, weight)| {
                let cache = Arc::clone(&cache);
                thread::spawn(move || {
                    cache.insert(key, weight);
                })
            })
            .collect();
        let stats = cache.stats();
        let weight = stats.weighted_size.expect("a weigher is set");
        assert!(
            weight <= stats.capacity.unwrap(),
            "weight bound exceeded: {weight} over {}",
            stats.capacity.unwrap()
        );
        let weight = cache.weighted_size();
        assert!(weight <= 4, "weight bound exceeded: {weight} over 4");
        for inserter in inserters {
            inserter.join().unwrap();
        }
        let stats = cache.stats();
        assert_eq!(stats.inserts, 3);
        // Key 0 always goes; key 1 fits beside nothing but itself.
        assert!(!cache.contains_key(&0));
        assert!(stats.weighted_size.unwrap() <= 4);
        assert_eq!(stats.evictions as usize + stats.len, 3);
        cache.check_invariants();
    });
}

#[test]
fn lru_weight_bound_holds_under_racing_inserts() {
    weight_bound_holds(EvictionPolicy::Exact, LruFault::None);
}

#[test]
#[should_panic(expected = "weight bound exceeded")]
fn lru_weight_bound_negative_control_split_eviction() {
    weight_bound_holds(EvictionPolicy::Exact, LruFault::SplitEviction);
}

#[test]
fn lru_clock_weight_bound_holds_under_racing_inserts() {
    weight_bound_holds(EvictionPolicy::Clock, LruFault::None);
}

#[test]
fn lru_s3fifo_weight_bound_holds_under_racing_inserts() {
    weight_bound_holds(EvictionPolicy::S3Fifo, LruFault::None);
}

#[test]
#[should_panic(expected = "weight bound exceeded")]
fn lru_s3fifo_weight_bound_negative_control_split_eviction() {
    weight_bound_holds(EvictionPolicy::S3Fifo, LruFault::SplitEviction);
}
