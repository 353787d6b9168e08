//! Memory per entry of an `IndexedStore` of `u64 -> u64` (1M entries for
//! the figures in `docs/benchmarks.md`, 100K by default), with no index and
//! with one and two indexes, beside `HashMap` and `DashMap`; optionally
//! after its objects have been replaced by others R times over (R = 20 for
//! the second figure in the docs: a store of steady size whose keys come
//! and go).
//!
//! ```text
//! cargo run --release --example indexed_heap -- 1000000      # filled
//! cargo run --release --example indexed_heap -- 1000000 20   # then 20M replaced
//! ```
//!
//! Each row is measured in a fresh child process (this program run with
//! the row's name) as the growth of the resident set (`/proc/self/statm`)
//! from just before the map is built to just after `N` scattered keys were
//! inserted one by one (and, with R, each of `R * N` more inserted after
//! the oldest key was removed), divided by `N`: what the map costs the process,
//! allocator overhead included (a counting allocator needs `unsafe`, which
//! the crate forbids). The store holds each `u64` as given, with no
//! allocation of its own; the last row is what an `Arc<u64>` per object
//! would add (an `IndexedStore<u64, Arc<u64>>`): the allocation and the 8-byte pointer to it (glibc
//! hands out 32 bytes for the 24 requested). Linux only.

#[path = "heap_common/mod.rs"]
mod heap_common;

use heap_common::{arguments, child_output, key, measured, resident};

const ROWS: &[&str] = &[
    "HashMap<u64, u64>",
    "DashMap<u64, u64>",
    "IndexedStore, no index",
    "IndexedStore, 1 index (100 values)",
    "IndexedStore, 2 indexes (100 and 10K values)",
    "Arc<u64> alone",
];

fn store(indexes: usize) -> larder::IndexedStore<u64, u64> {
    let mut builder = larder::IndexedStore::builder();
    if indexes >= 1 {
        builder = builder.index("mod100", |v: &u64| [(v % 100).to_string()]);
    }
    if indexes >= 2 {
        builder = builder.index("mod10k", |v: &u64| [(v % 10_000).to_string()]);
    }
    builder.build().expect("distinct index names")
}

/// Builds the map named `name` with `n` keys, then replaces the oldest
/// key by a new one `replaced * n` times.
fn fill(name: &str, n: u64, replaced: u64) -> Box<dyn std::any::Any> {
    let last = n + replaced * n;
    match name {
        "HashMap<u64, u64>" => {
            let mut map = std::collections::HashMap::with_hasher(ahash::RandomState::new());
            for i in 0..last {
                if i >= n {
                    map.remove(&key(i - n));
                }
                map.insert(key(i), i);
            }
            Box::new(map)
        }
        "DashMap<u64, u64>" => {
            let map = dashmap::DashMap::with_hasher(ahash::RandomState::new());
            for i in 0..last {
                if i >= n {
                    map.remove(&key(i - n));
                }
                map.insert(key(i), i);
            }
            Box::new(map)
        }
        "Arc<u64> alone" => {
            // What an `Arc` per object would cost the process (an
            // `IndexedStore<u64, Arc<u64>>`), with the 8-byte pointer to it.
            let values: Vec<std::sync::Arc<u64>> = (0..n).map(std::sync::Arc::new).collect();
            Box::new(values)
        }
        other => {
            let indexes = if other.contains("2 indexes") {
                2
            } else if other.contains("1 index") {
                1
            } else {
                0
            };
            let store = store(indexes);
            for i in 0..last {
                if i >= n {
                    store.remove(&key(i - n));
                }
                store.insert(key(i), i).expect("infallible index functions");
            }
            assert_eq!(store.len() as u64, n);
            Box::new(store)
        }
    }
}

fn main() {
    let usage = "usage: indexed_heap [ENTRIES [REPLACED]]";
    let (child_name, [n, replaced]) = arguments(usage, [100_000, 0]);
    if let Some(name) = child_name {
        let (bytes, map) = measured(|| fill(&name, n as u64, replaced as u64));
        println!("{bytes}");
        drop(map);
        return;
    }
    if resident().is_none() {
        println!("indexed_heap: needs Linux's /proc/self/statm; nothing measured");
        return;
    }
    println!(
        "resident memory per entry, {n} u64 -> u64 entries, then replaced by others {replaced} times over"
    );
    println!();
    println!("| map | bytes per entry |");
    println!("|---|---:|");
    for name in ROWS {
        let bytes: usize = child_output(name, &[n, replaced])
            .trim()
            .parse()
            .expect("bytes");
        println!("| {name} | {:.1} |", bytes as f64 / n as f64);
    }
}
