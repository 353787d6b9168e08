//! Memory per entry at capacity: each cache of at most N `u64 -> u64`
//! entries (1M for the figures in `docs/benchmarks.md`, 100K by default) is filled
//! with F times N distinct keys (F = 2 by default: so it is full and has
//! evicted as many as it holds; 20 for the figures in the docs: a cache
//! that has churned long enough to show growth that churn alone causes),
//! then its memory is read, two ways.
//!
//! ```text
//! cargo run --release --example heap_per_entry -- 1000000 20  # 1M entries, 20M keys
//! cargo run --release --example heap_per_entry                # 100K, 200K keys (quick)
//! ```
//!
//! Each cache is measured in a fresh child process (this program run with
//! the cache's name), from just before the cache is built to just after it
//! is filled, divided by the entries it then holds:
//!
//! - **heap**: the growth of the bytes the process holds allocated, as
//!   asked of the allocator (a counting global allocator, the `cap`
//!   crate's, around the system's). The same on every run for the same
//!   hasher seeds; capacity reserved but never written counts.
//! - **resident**: the growth of the process's resident set
//!   (`/proc/self/statm`): what the cache costs the process, allocator
//!   overhead and freed-but-kept chunks included, and pages reserved but
//!   never written not.
//!
//! It also prints each cache's final `len` against its capacity: a cache
//! that holds more than its bound is flagged, one that holds much less
//! (per-shard bounds that evict early) shows it.
//!
//! The last row is not a cache: it is `N` values allocated as `Arc<u64>`
//! plus the 8-byte slot pointing to each: what an `Arc` per value costs
//! (both caches store `V` itself, so only a cache of `Arc<T>` values pays
//! it).
//!
//! Linux only (reads `/proc`); elsewhere it says so and exits.

use std::num::NonZeroUsize;
#[path = "heap_common/mod.rs"]
mod heap_common;

use heap_common::{arguments, child_output, key, measured, resident};

/// Counts the bytes allocated (the heap column).
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

/// The caches measured, by the name passed to the child.
const CACHES: &[&str] = &[
    "larder LruCache (Exact)",
    "larder LruCache (Clock)",
    "larder LruCache (S3Fifo)",
    "larder TypedCache capacity",
    "quick_cache::sync::Cache",
    "Mutex<lru::LruCache>",
    "moka::sync::Cache",
    "scc::HashCache",
    "Arc<u64> alone",
];

/// Builds the cache named `name` with bound `capacity`, fills it with
/// `times * capacity` keys, and returns what it holds (the cache is kept
/// alive by the caller while memory is read, then dropped).
fn fill(name: &str, capacity: usize, times: usize) -> (Box<dyn std::any::Any>, usize) {
    let n = (times * capacity) as u64;
    match name {
        "larder LruCache (Exact)" | "larder LruCache (Clock)" | "larder LruCache (S3Fifo)" => {
            let policy = if name.contains("Clock") {
                larder::EvictionPolicy::Clock
            } else if name.contains("S3Fifo") {
                larder::EvictionPolicy::S3Fifo
            } else {
                larder::EvictionPolicy::Exact
            };
            let cache = larder::LruCache::<u64, u64>::builder()
                .capacity(capacity)
                .policy(policy)
                .build()
                .expect("valid capacity");
            for i in 0..n {
                cache.insert(key(i), i);
            }
            let len = cache.len();
            (Box::new(cache), len)
        }
        "larder TypedCache capacity" => {
            let cache = larder::TypedCache::<u64, u64>::builder()
                .capacity(capacity)
                .build()
                .expect("valid capacity");
            for i in 0..n {
                cache.insert(key(i), i);
            }
            let len = cache.len();
            (Box::new(cache), len)
        }
        "quick_cache::sync::Cache" => {
            let cache = quick_cache::sync::Cache::<u64, u64>::new(capacity);
            for i in 0..n {
                cache.insert(key(i), i);
            }
            let len = cache.len();
            (Box::new(cache), len)
        }
        "Mutex<lru::LruCache>" => {
            let mut cache = lru::LruCache::<u64, u64, ahash::RandomState>::with_hasher(
                NonZeroUsize::new(capacity).expect("capacity > 0"),
                ahash::RandomState::new(),
            );
            for i in 0..n {
                cache.put(key(i), i);
            }
            let len = cache.len();
            (Box::new(std::sync::Mutex::new(cache)), len)
        }
        "moka::sync::Cache" => {
            let cache = moka::sync::Cache::<u64, u64>::new(capacity as u64);
            for i in 0..n {
                cache.insert(key(i), i);
            }
            // moka evicts in batches; apply what is pending before counting.
            cache.run_pending_tasks();
            let len = cache.entry_count() as usize;
            (Box::new(cache), len)
        }
        "scc::HashCache" => {
            let cache = scc::HashCache::<u64, u64, ahash::RandomState>::with_capacity_and_hasher(
                capacity,
                capacity,
                ahash::RandomState::new(),
            );
            for i in 0..n {
                let _ = cache.put_sync(key(i), i);
            }
            let len = cache.len();
            (Box::new(cache), len)
        }
        "Arc<u64> alone" => {
            // Not a cache: the allocation an `Arc` per value makes
            // (`TypedCache`'s `Arc<V>`), and the 8-byte slot that points to
            // it.
            let values: Vec<std::sync::Arc<u64>> =
                (0..capacity as u64).map(std::sync::Arc::new).collect();
            let len = values.len();
            (Box::new(values), len)
        }
        other => panic!("unknown cache {other:?}"),
    }
}

/// The child: measures one cache and prints `heap resident len`.
fn child(name: &str, capacity: usize, times: usize) {
    let mut heap = 0;
    let (resident, (cache, len)) = measured(|| {
        let before = ALLOCATOR.allocated();
        let built = fill(name, capacity, times);
        heap = ALLOCATOR.allocated().saturating_sub(before);
        built
    });
    println!("{heap} {resident} {len}");
    drop(cache);
}

fn main() {
    let usage = "usage: heap_per_entry [CAPACITY [FILL]]";
    let (child_name, [capacity, times]) = arguments(usage, [100_000, 2]);
    if let Some(name) = child_name {
        child(&name, capacity, times);
        return;
    }
    if resident().is_none() {
        println!("heap_per_entry: needs Linux's /proc/self/statm; nothing measured");
        return;
    }
    let times = times.max(1);
    println!(
        "memory per entry, {capacity} u64 -> u64 entries at most, filled with {times}x as many keys"
    );
    println!();
    println!(
        "| cache | heap bytes per entry held | resident bytes per entry held | len / capacity |"
    );
    println!("|---|---:|---:|---|");
    for name in CACHES {
        let text = child_output(name, &[capacity, times]);
        let mut fields = text.split_whitespace().map(|f| f.parse::<usize>().unwrap());
        let mut field = || fields.next().expect("the child prints three numbers");
        let (heap, resident, len) = (field(), field(), field());
        let flag = if len > capacity {
            " **over its bound**"
        } else {
            ""
        };
        let per_entry = |bytes: usize| bytes as f64 / len.max(1) as f64;
        println!(
            "| {name} | {:.1} | {:.1} | {len} / {capacity} ({:.2}%){flag} |",
            per_entry(heap),
            per_entry(resident),
            100.0 * len as f64 / capacity as f64,
        );
    }
}
