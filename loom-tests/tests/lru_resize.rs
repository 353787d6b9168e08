//! loom models of `LruCache` with two shards: a `resize` that shrinks the
//! cache races an `insert` while a third thread checks the bound. The real
//! cache code over loom's stand-ins for the shard locks and atomics, under
//! both policies, each with a negative control (`LruFault`) that must fail.
#![cfg(loom)]

use larder::EvictionPolicy;
use larder::fault::{LruFault, inject};
use loom::sync::Arc;
use loom::thread;

/// A full two-shard cache of capacity 4 (two per shard) shrinks to 2 while
/// another thread inserts a new key; the main thread takes `stats()` (every
/// shard locked at once) in between: its `len` never exceeds its
/// `capacity`. At the end the cache holds at most 2 entries and every
/// insert is either present or counted as an eviction.
fn bound_holds_while_resize_races_insert(policy: EvictionPolicy, fault: LruFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(loom_tests::lru(4, 2, policy));
        // Before any other thread exists: fill both shards (the fixed-seed
        // hasher of loom builds spreads these keys over both).
        let mut inserted = 0;
        for key in 0..16 {
            cache.insert(key, key);
            inserted += 1;
            if cache.len() == 4 {
                break;
            }
        }
        assert_eq!(cache.len(), 4, "set-up: both shards should be full");
        let resizer = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || cache.resize(2).unwrap())
        };
        let inserter = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                cache.insert(100, 100);
            })
        };
        let seen = cache.stats();
        assert!(
            seen.len <= seen.capacity.unwrap(),
            "bound exceeded: len {} over capacity {}",
            seen.len,
            seen.capacity.unwrap()
        );
        resizer.join().unwrap();
        inserter.join().unwrap();
        let stats = cache.stats();
        assert_eq!(stats.capacity.unwrap(), 2);
        assert!(stats.len <= 2, "bound exceeded after the resize: {stats:?}");
        assert_eq!(
            stats.len as u64,
            stats.inserts - stats.evictions,
            "entries lost or counted twice: {stats:?}"
        );
        assert_eq!(stats.inserts, inserted + 1);
    });
}

#[test]
fn lru_bound_holds_while_resize_races_insert() {
    bound_holds_while_resize_races_insert(EvictionPolicy::Exact, LruFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn lru_resize_negative_control_capacity_before_shrink() {
    bound_holds_while_resize_races_insert(EvictionPolicy::Exact, LruFault::CapacityBeforeShrink);
}

#[test]
fn lru_clock_bound_holds_while_resize_races_insert() {
    bound_holds_while_resize_races_insert(EvictionPolicy::Clock, LruFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn lru_clock_resize_negative_control_capacity_before_shrink() {
    bound_holds_while_resize_races_insert(EvictionPolicy::Clock, LruFault::CapacityBeforeShrink);
}

#[test]
fn lru_s3fifo_bound_holds_while_resize_races_insert() {
    bound_holds_while_resize_races_insert(EvictionPolicy::S3Fifo, LruFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn lru_s3fifo_resize_negative_control_capacity_before_shrink() {
    bound_holds_while_resize_races_insert(EvictionPolicy::S3Fifo, LruFault::CapacityBeforeShrink);
}
