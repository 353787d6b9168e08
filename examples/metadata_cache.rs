//! A document-metadata cache in front of a slow lookup: the concurrent Rust
//! form of
//!
//! ```python
//! @functools.lru_cache(maxsize=1024)
//! def metadata(path): return db.fetch(path)
//! print(metadata.cache_info())
//! ```
//!
//! Four threads look up paths with a skewed popularity (a few documents are
//! hot); concurrent misses of one path share one fetch. The program prints
//! the statistics like `cache_info()`, then checks them.
//!
//! `cargo run --example metadata_cache`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use larder::LruCache;

/// What the database returns for a document.
#[derive(Debug)]
struct Metadata {
    path: String,
    size: u64,
    owner: &'static str,
}

/// Calls to the slow backend, to compare with the cache's load count.
static FETCHES: AtomicU64 = AtomicU64::new(0);

/// The slow lookup: a database round trip.
fn fetch(path: &str) -> Result<Metadata, String> {
    // Relaxed: a statistic read after the threads are joined.
    FETCHES.fetch_add(1, Ordering::Relaxed);
    thread::sleep(Duration::from_micros(200));
    if path.ends_with("/missing") {
        return Err(format!("{path}: no such document"));
    }
    Ok(Metadata {
        path: path.to_string(),
        size: path.len() as u64 * 1024,
        owner: "docs-team",
    })
}

fn main() {
    // `lru_cache(maxsize=1024)`, with the loader owned by the cache. The
    // cache hands out clones of what it stores: an `Arc<Metadata>`, so a
    // hit copies a pointer, not the document's strings.
    let metadata = LruCache::builder()
        .capacity(1024)
        .build_with_try_loader(|path: &String| fetch(path).map(Arc::new))
        .expect("valid configuration");

    thread::scope(|s| {
        for worker in 0..4u64 {
            let metadata = &metadata;
            s.spawn(move || {
                let mut x = worker + 1;
                for _ in 0..5_000 {
                    // A cheap skewed draw: low document numbers are hot.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let doc = (x % 4096) * (x % 4096) / 4096 / 2;
                    let path = if doc % 997 == 0 {
                        format!("/docs/{doc}/missing")
                    } else {
                        format!("/docs/{doc}")
                    };
                    match metadata.get_or_try_load(&path) {
                        Ok(meta) => assert_eq!(meta.path, path),
                        // Errors are shared by the callers waiting for that
                        // fetch, and never cached.
                        Err(error) => assert!(error.contains("no such document")),
                    }
                }
            });
        }
    });

    let info = metadata.cache().stats();
    // Python: CacheInfo(hits=..., misses=..., maxsize=1024, currsize=...)
    println!(
        "CacheInfo(hits={}, misses={}, maxsize={}, currsize={})",
        info.hits,
        info.misses,
        info.capacity.unwrap_or(usize::MAX),
        info.len
    );
    println!("larder extras: {info}");
    println!(
        "hit ratio {:.1}%, backend fetches {}",
        info.hit_ratio() * 100.0,
        FETCHES.load(Ordering::Relaxed)
    );
    if let Some(hot) = metadata.cache().peek(&"/docs/0".to_string()) {
        println!(
            "hottest document: {} ({} bytes, {})",
            hot.path, hot.size, hot.owner
        );
    }

    assert_eq!(info.hits + info.misses, 4 * 5_000);
    assert!(Some(info.len) <= info.capacity);
    // Every backend call was one load of this cache, successful or not.
    assert_eq!(info.inits, FETCHES.load(Ordering::Relaxed));
}
