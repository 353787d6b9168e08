//! loom models of `TypedCache`'s user writes against concurrent inits, its
//! release of expired entries by racing writes, and its global
//! `capacity` bound across shards, also while `resize` shrinks it: the real cache code over
//! loom's locks and atomics. Each model has a negative control that runs a
//! deliberately broken protocol (`TypedFault`) and must fail.
#![cfg(loom)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use larder::fault::{TypedFault, inject};
use larder::{ManualClock, RemovalCause, TypedCache};
use loom::thread;

/// The user write that races the init in [`write_wins_over_init`].
#[derive(Clone, Copy)]
enum Write {
    Insert,
    InvalidateAll,
}

/// An init reads the backend while another thread changes the backend and
/// then writes the key (`insert` of the new value, or `clear`):
/// whatever the interleaving, the cache never keeps the value the init read
/// before the change (the write wins).
fn write_wins_over_init(write: Write, fault: TypedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, u32>::new());
        // A loom atomic standing for the backend, so that its reads and
        // writes are scheduling points too.
        let backend = Arc::new(loom::sync::atomic::AtomicU32::new(0));
        let init = {
            let cache = Arc::clone(&cache);
            let backend = Arc::clone(&backend);
            thread::spawn(move || cache.get_or_init(&1, || backend.load(Ordering::SeqCst)))
        };
        backend.store(1, Ordering::SeqCst);
        match write {
            Write::Insert => {
                cache.insert(1, 1);
            }
            Write::InvalidateAll => cache.clear(),
        }
        let got = init.join().unwrap();
        assert!(got <= 1);
        let kept = cache.get(&1);
        assert_ne!(kept, Some(0), "a stale init outlived a user write");
        if let Write::Insert = write {
            assert_eq!(kept, Some(1), "the inserted value was lost");
        }
        cache.check_invariants();
    });
}

#[test]
fn typed_insert_wins_over_init() {
    write_wins_over_init(Write::Insert, TypedFault::None);
}

#[test]
#[should_panic(expected = "a stale init outlived a user write")]
fn typed_insert_negative_control_keeps_generation() {
    write_wins_over_init(Write::Insert, TypedFault::InsertKeepsGeneration);
}

#[test]
fn typed_invalidate_all_wins_over_init() {
    write_wins_over_init(Write::InvalidateAll, TypedFault::None);
}

#[test]
#[should_panic(expected = "a stale init outlived a user write")]
fn typed_invalidate_all_negative_control_keeps_generation() {
    write_wins_over_init(
        Write::InvalidateAll,
        TypedFault::InvalidateAllKeepsGeneration,
    );
}

/// The shard of `key` in a `TypedCache` (the crate's mapping in
/// src/shard_index.rs; the loom build's hasher has a fixed seed).
fn shard_of(cache: &TypedCache<u32, u32>, key: u32) -> u64 {
    let mixed = cache
        .hasher()
        .hash_one(key)
        .wrapping_mul(0xD1B5_4A32_D192_ED03)
        >> 32;
    (mixed * cache.shard_count() as u64) >> 32
}

/// A cache of `capacity(1)` (or, `weighted`, of total weight 3 with
/// entries of weight 2) over two shards; two threads insert keys that live in different
/// shards, so neither insert finds the other's entry in its own shard: once
/// both are done the cache holds at most one entry, its total (`len()`, or
/// `weighted_size()`) within the capacity, and the total agrees with the
/// entries `get` finds. (Both may be gone: two inserts that each evict from
/// the other's shard at once can both see the total over the bound. The
/// bound promises at most `capacity`, not that the last insert stays.)
fn bound_holds_across_shards(weighted: bool, fault: TypedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        // Two shards (a bounded cache this small gets one by default).
        let builder = TypedCache::<u32, u32>::builder().shards(2);
        let (builder, weight) = match weighted {
            true => (builder.capacity(3).weigher(|_: &u32, _: &u32| 2), 2),
            false => (builder.capacity(1), 1),
        };
        let cache = Arc::new(builder.build().unwrap());
        let first = 1;
        let second = (2..)
            .find(|&key| shard_of(&cache, key) != shard_of(&cache, first))
            .unwrap();
        let other = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                cache.insert(second, second);
            })
        };
        cache.insert(first, first);
        other.join().unwrap();
        let (len, total) = (cache.len(), cache.weighted_size());
        let capacity = cache.stats().capacity.unwrap();
        assert!(len <= 1, "bound exceeded: len {len}");
        assert!(total <= capacity, "bound exceeded: {total} over {capacity}");
        let present = [first, second]
            .iter()
            .filter(|&&key| cache.get(&key).is_some())
            .count();
        assert_eq!(present, len, "len disagrees with the entries");
        assert_eq!(
            present * weight,
            total,
            "the total disagrees with the entries"
        );
        cache.check_invariants();
    });
}

#[test]
fn typed_bound_holds_across_shards() {
    bound_holds_across_shards(false, TypedFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn typed_bound_negative_control_check_before_lock() {
    bound_holds_across_shards(false, TypedFault::EvictionCheckedBeforeLock);
}

#[test]
fn typed_weight_bound_holds_across_shards() {
    bound_holds_across_shards(true, TypedFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn typed_weight_bound_negative_control_check_before_lock() {
    bound_holds_across_shards(true, TypedFault::EvictionCheckedBeforeLock);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn typed_weight_bound_negative_control_eviction_keeps_weight() {
    bound_holds_across_shards(true, TypedFault::EvictionKeepsWeight);
}

/// An expired entry and two writes to its shard at once: an init of
/// another key (its value stored under the shard's write lock) and an
/// insert. Each write sweeps the shard for expired entries; whatever the
/// interleaving, the expired entry is released exactly once (handed to the
/// listener once, as `Expired`), `len` stays in step with the shards, and
/// the inserted value stays.
fn writes_release_an_expired_entry_once(fault: TypedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let clock = ManualClock::new();
        let released = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let seen = Arc::clone(&released);
        let cache = Arc::new(
            TypedCache::<u32, u32>::builder()
                .time_to_live(Duration::from_secs(10))
                .clock(clock.clone())
                .eviction_listener(move |key, _value, cause| {
                    assert_eq!((key, cause), (0, RemovalCause::Expired));
                    seen.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .unwrap(),
        );
        let old = 0;
        let mut same_shard = (1..).filter(|&key| shard_of(&cache, key) == shard_of(&cache, old));
        let (initialized, inserted) = (same_shard.next().unwrap(), same_shard.next().unwrap());
        cache.insert(old, 0);
        clock.advance(Duration::from_secs(11));
        let init = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || cache.get_or_init(&initialized, || 1))
        };
        cache.insert(inserted, 2);
        assert_eq!(init.join().unwrap(), 1);
        match released.load(Ordering::SeqCst) {
            0 => panic!("an expired entry outlived the writes to its shard"),
            1 => {}
            n => panic!("an expired entry was released {n} times"),
        }
        assert_eq!(cache.get(&inserted), Some(2));
        cache.check_invariants();
    });
}

#[test]
fn typed_writes_release_an_expired_entry_once() {
    writes_release_an_expired_entry_once(TypedFault::None);
}

#[test]
#[should_panic(expected = "an expired entry outlived the writes to its shard")]
fn typed_expiry_negative_control_write_skips_sweep() {
    writes_release_an_expired_entry_once(TypedFault::WriteSkipsSweep);
}

/// A full cache of `capacity(2)` over two shards shrinks to 1 while
/// another thread inserts a third key: once both are done the cache holds
/// at most one entry, `len()` agrees with the entries `get` finds, and the
/// capacity is the new one. (The resize sets the capacity before it
/// evicts; an insert reads it after storing, so one of the two sees the
/// other.)
fn bound_holds_while_resize_races_insert(fault: TypedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(
            TypedCache::<u32, u32>::builder()
                .shards(2)
                .capacity(2)
                .build()
                .unwrap(),
        );
        let first = 1;
        let second = (2..)
            .find(|&key| shard_of(&cache, key) != shard_of(&cache, first))
            .unwrap();
        cache.insert(first, first);
        cache.insert(second, second);
        assert_eq!(cache.len(), 2, "set-up: both entries held");
        let third = second + 1;
        let resizer = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || cache.resize(1).unwrap())
        };
        cache.insert(third, third);
        resizer.join().unwrap();
        let stats = cache.stats();
        assert_eq!(stats.capacity, Some(1));
        assert!(stats.len <= 1, "bound exceeded after the resize: {stats:?}");
        let present = [first, second, third]
            .iter()
            .filter(|&&key| cache.get(&key).is_some())
            .count();
        assert_eq!(present, stats.len, "len disagrees with the entries");
        cache.check_invariants();
    });
}

#[test]
fn typed_bound_holds_while_resize_races_insert() {
    bound_holds_while_resize_races_insert(TypedFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn typed_resize_negative_control_capacity_after_shrink() {
    bound_holds_while_resize_races_insert(TypedFault::CapacityAfterShrink);
}
