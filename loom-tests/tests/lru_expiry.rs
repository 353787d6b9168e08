//! loom model of `LruCache`'s expiry: a read that finds its entry expired
//! drops its lock, then releases the entry under the write lock; a write of
//! the same key can come in between. Under every policy, with a negative
//! control per policy that releases without looking again.
#![cfg(loom)]

use std::time::Duration;

use larder::fault::{LruFault, inject};
use larder::{EvictionPolicy, LruCache, ManualClock, RemovalCause};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// One shard holding key 0 (expired) and key 1 (expired); two readers get
/// key 0 (`get`, `get_with`) while the main thread stores a fresh value
/// under it. Whatever the interleaving: each reader sees nothing or the
/// fresh value; the expired
/// value of key 0 reaches the listener exactly once, as `Expired`; the
/// fresh value is never released and is there at the end; key 1 goes
/// once at most (a sweep may or may not reach it), as `Expired`.
fn an_expired_read_and_a_write_release_the_old_value_once(policy: EvictionPolicy, fault: LruFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let clock = ManualClock::new();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let cache = Arc::new(
            LruCache::<u32, u32>::builder()
                .capacity(4)
                .shards(1)
                .policy(policy)
                .time_to_live(Duration::from_secs(10))
                .clock(clock.clone())
                .eviction_listener(move |key, value, cause| {
                    log.lock().unwrap().push((key, value, cause));
                })
                .build()
                .unwrap(),
        );
        cache.insert(0, 0);
        cache.insert(1, 1);
        clock.advance(Duration::from_secs(11));
        let readers = [false, true].map(|visit| {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                if visit {
                    cache.get_with(&0, |value| *value)
                } else {
                    cache.get(&0)
                }
            })
        });
        cache.insert(0, 2);
        for reader in readers {
            let read = reader.join().unwrap();
            assert!(matches!(read, None | Some(2)), "a read saw {read:?}");
        }
        let heard = heard.lock().unwrap().clone();
        for &(key, value, cause) in &heard {
            assert_eq!(cause, RemovalCause::Expired, "{heard:?}");
            assert!(value != 2, "a fresh value was released: {heard:?}");
            assert_eq!(key, value, "{heard:?}");
        }
        let count = |key| heard.iter().filter(|&&(k, _, _)| k == key).count();
        assert_eq!(count(0), 1, "the expired value of key 0: {heard:?}");
        assert!(count(1) <= 1, "key 1 released twice: {heard:?}");
        assert_eq!(cache.get(&0), Some(2));
        cache.check_invariants();
    });
}

#[test]
fn lru_expired_read_and_write_release_once() {
    an_expired_read_and_a_write_release_the_old_value_once(EvictionPolicy::Exact, LruFault::None);
}

#[test]
#[should_panic(expected = "a fresh value was released")]
fn lru_expiry_negative_control_release_unchecked() {
    an_expired_read_and_a_write_release_the_old_value_once(
        EvictionPolicy::Exact,
        LruFault::ReleaseUnchecked,
    );
}

#[test]
fn lru_clock_expired_read_and_write_release_once() {
    an_expired_read_and_a_write_release_the_old_value_once(EvictionPolicy::Clock, LruFault::None);
}

#[test]
#[should_panic(expected = "a fresh value was released")]
fn lru_clock_expiry_negative_control_release_unchecked() {
    an_expired_read_and_a_write_release_the_old_value_once(
        EvictionPolicy::Clock,
        LruFault::ReleaseUnchecked,
    );
}

#[test]
fn lru_s3fifo_expired_read_and_write_release_once() {
    an_expired_read_and_a_write_release_the_old_value_once(EvictionPolicy::S3Fifo, LruFault::None);
}

#[test]
#[should_panic(expected = "a fresh value was released")]
fn lru_s3fifo_expiry_negative_control_release_unchecked() {
    an_expired_read_and_a_write_release_the_old_value_once(
        EvictionPolicy::S3Fifo,
        LruFault::ReleaseUnchecked,
    );
}
