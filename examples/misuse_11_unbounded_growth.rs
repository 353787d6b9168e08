//! Misuse 11: a cache that grows without bound, or whose eviction never
//! runs.
//!
//! A `HashMap` used as a cache keyed by something unbounded (request ids,
//! user ids, URLs) holds every key it ever saw: memory grows with traffic
//! until the process is killed. Adding expiry does not help if expired
//! entries are only dropped when their own key is read again: keys that are
//! never read again stay for ever.
//!
//! `LruCache` has a hard bound: `len() <= capacity()` at every point any
//! thread can observe, each insert beyond it evicts the least recently used
//! entry, and `stats()` counts the evictions (`TypedCache` offers the same
//! bound with `capacity`, plus time-to-live and time-to-idle).
//!
//! Run with `cargo run --example misuse_11_unbounded_growth`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::mem::size_of;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use larder::LruCache;

/// Bytes of a cached value.
pub const VALUE_BYTES: usize = 256;

/// What each variant held at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Distinct keys requested.
    pub requests: usize,
    /// The bound the fixed cache was given.
    pub capacity: usize,
    /// `Mutex<HashMap>`: entries held at the end.
    pub broken_entries: usize,
    /// `Mutex<HashMap>`: approximate bytes held at the end.
    pub broken_bytes: usize,
    /// Lazily expiring map: entries held that had expired long ago.
    pub broken_expired_still_held: usize,
    /// LruCache: entries held at the end.
    pub fixed_entries: usize,
    /// LruCache: approximate bytes held at the end.
    pub fixed_bytes: usize,
    /// LruCache: the largest `len()` seen after any insert, single thread.
    pub fixed_max_len_seen: usize,
    /// LruCache: evictions counted by `stats()`.
    pub fixed_evictions: u64,
    /// LruCache, two writer threads: the largest `len()` a concurrent
    /// observer saw.
    pub fixed_concurrent_max_len_seen: usize,
}

fn request_key(i: usize) -> String {
    format!("request-{i:08}")
}

/// Approximate bytes held by `entries` entries: the key and value headers
/// plus their heap parts (hash table overhead not counted).
pub fn approx_bytes(entries: usize) -> usize {
    entries * (size_of::<(String, Vec<u8>)>() + request_key(0).len() + VALUE_BYTES)
}

/// BROKEN: a plain map as a cache: every key stays.
fn broken_unbounded(requests: usize) -> usize {
    let cache: Mutex<HashMap<String, Vec<u8>>> = Mutex::new(HashMap::new());
    for i in 0..requests {
        let mut map = cache.lock().expect("not poisoned");
        map.entry(request_key(i))
            .or_insert_with(|| vec![0; VALUE_BYTES]);
    }
    cache.lock().expect("not poisoned").len()
}

/// BROKEN: entries expire after `ttl` ticks, but are only removed when their
/// own key is read again, which request ids never are.
fn broken_lazy_expiry(requests: usize, ttl: usize) -> usize {
    let mut cache: HashMap<String, (usize, Vec<u8>)> = HashMap::new();
    let get = |cache: &mut HashMap<String, (usize, Vec<u8>)>, key: &str, now: usize| {
        if cache.get(key).is_some_and(|(born, _)| now - born >= ttl) {
            cache.remove(key); // the only place anything is removed
        }
        cache.get(key).map(|(_, value)| value.len())
    };
    for now in 0..requests {
        let key = request_key(now);
        if get(&mut cache, &key, now).is_none() {
            cache.insert(key, (now, vec![0; VALUE_BYTES]));
        }
    }
    let now = requests;
    cache.values().filter(|(born, _)| now - born >= ttl).count()
}

/// LARDER: an LruCache bounded at `capacity`, checked after every insert.
fn fixed_bounded(requests: usize, capacity: usize) -> (usize, usize, u64) {
    let cache: LruCache<String, Vec<u8>> = LruCache::new(capacity);
    let mut max_len = 0;
    for i in 0..requests {
        let key = request_key(i);
        if cache.get(&key).is_none() {
            cache.insert(key, vec![0; VALUE_BYTES]);
        }
        max_len = max_len.max(cache.len());
    }
    (cache.len(), max_len, cache.stats().evictions)
}

/// LARDER: two writers insert while an observer watches `len()`.
fn fixed_concurrent(requests: usize, capacity: usize) -> usize {
    let cache: LruCache<String, Vec<u8>> = LruCache::new(capacity);
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let cache = &cache;
                s.spawn(move || {
                    for i in (w..requests).step_by(2) {
                        cache.insert(request_key(i), vec![0; VALUE_BYTES]);
                    }
                })
            })
            .collect();
        let observer = s.spawn(|| {
            let mut max_len = 0;
            // Acquire pairs with the Release store after the writers joined.
            while !done.load(Ordering::Acquire) {
                max_len = max_len.max(cache.len());
            }
            max_len.max(cache.len())
        });
        for writer in writers {
            writer.join().expect("writer thread");
        }
        // Release pairs with the observer's Acquire load.
        done.store(true, Ordering::Release);
        observer.join().expect("observer thread")
    })
}

/// Runs every variant with `requests` distinct keys and a bound of
/// `capacity`.
pub fn run_with(requests: usize, capacity: usize) -> Outcome {
    let broken_entries = broken_unbounded(requests);
    let (fixed_entries, fixed_max_len_seen, fixed_evictions) = fixed_bounded(requests, capacity);
    Outcome {
        requests,
        capacity,
        broken_entries,
        broken_bytes: approx_bytes(broken_entries),
        broken_expired_still_held: broken_lazy_expiry(requests, capacity),
        fixed_entries,
        fixed_bytes: approx_bytes(fixed_entries),
        fixed_max_len_seen,
        fixed_evictions,
        fixed_concurrent_max_len_seen: fixed_concurrent(requests, capacity),
    }
}

/// Runs every variant with 50 000 request ids and a bound of 1 000.
pub fn run() -> Outcome {
    run_with(50_000, 1_000)
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn main() {
    common::header(11, "unbounded growth, or eviction that never runs");
    let outcome = run();
    common::broken(format!(
        "Mutex<HashMap> as a cache, {} distinct request ids: {} entries, about {} held, and growing with traffic",
        outcome.requests,
        outcome.broken_entries,
        mib(outcome.broken_bytes)
    ));
    common::broken(format!(
        "expiry checked only when the same key is read again (ttl {} requests): {} expired entries still held",
        outcome.capacity, outcome.broken_expired_still_held
    ));
    common::fixed(format!(
        "LruCache::new({}): {} entries, about {} held; largest len() after any insert {}; {} evictions counted",
        outcome.capacity,
        outcome.fixed_entries,
        mib(outcome.fixed_bytes),
        outcome.fixed_max_len_seen,
        outcome.fixed_evictions
    ));
    common::fixed(format!(
        "LruCache, 2 writer threads: the largest len() a concurrent observer saw was {} (bound {})",
        outcome.fixed_concurrent_max_len_seen, outcome.capacity
    ));
}
