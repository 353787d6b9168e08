//! A tour of `TypedCache` and `AnyCache`: 16 request threads ask at once for
//! the same expensive resources (parsed schemas, compiled patterns); each is
//! built exactly once, the others wait for it, and the statistics show it.
//!
//! Run with `cargo run --example typed_cache`.

use std::sync::Arc;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use larder::{AnyCache, TypedCache};

/// A parsed table schema: expensive to build (a remote fetch and a parse).
#[derive(Debug)]
struct Schema {
    table: String,
    columns: Vec<String>,
}

fn fetch_and_parse(table: &str, parses: &AtomicUsize) -> Schema {
    parses.fetch_add(1, Ordering::SeqCst);
    thread::sleep(Duration::from_millis(20)); // the slow backend
    Schema {
        table: table.to_string(),
        columns: vec!["id".into(), format!("{table}_name"), "created_at".into()],
    }
}

/// A compiled matcher, standing in for a compiled regex.
#[derive(Debug)]
struct Pattern {
    source: String,
    literal_prefix: String,
}

fn compile(source: &str, compiles: &AtomicUsize) -> Pattern {
    compiles.fetch_add(1, Ordering::SeqCst);
    thread::sleep(Duration::from_millis(10));
    Pattern {
        source: source.to_string(),
        literal_prefix: source.trim_end_matches(".*").to_string(),
    }
}

impl Pattern {
    fn is_match(&self, text: &str) -> bool {
        text.starts_with(&self.literal_prefix)
    }
}

const THREADS: usize = 16;
const REQUESTS_PER_THREAD: usize = 200;
const TABLES: [&str; 4] = ["users", "orders", "items", "invoices"];
const PATTERNS: [&str; 3] = ["/api/.*", "/static/.*", "/health"];

fn main() {
    // 1. One value type per cache: schemas by table name, each shared by
    //    every caller (`Arc`: a hit clones the pointer, not the schema).
    let schemas: TypedCache<String, Arc<Schema>> = TypedCache::builder()
        .time_to_live(Duration::from_secs(300))
        .capacity(1_000)
        .build()
        .expect("valid settings");
    // 2. Many value types under one key type: the request path's resources.
    let resources: AnyCache<&'static str> = AnyCache::new();

    let parses = AtomicUsize::new(0);
    let compiles = AtomicUsize::new(0);
    let barrier = Barrier::new(THREADS);
    let started = Instant::now();
    thread::scope(|s| {
        for t in 0..THREADS {
            let (schemas, resources, parses, compiles, barrier) =
                (&schemas, &resources, &parses, &compiles, &barrier);
            s.spawn(move || {
                barrier.wait(); // every thread misses at the same moment
                for i in 0..REQUESTS_PER_THREAD {
                    let table = TABLES[(t + i) % TABLES.len()];
                    let schema: Arc<Schema> = schemas.get_or_init(&table.to_string(), || {
                        Arc::new(fetch_and_parse(table, parses))
                    });
                    assert_eq!(schema.table, table);
                    assert_eq!(schema.columns.len(), 3);

                    let source = PATTERNS[(t * 7 + i) % PATTERNS.len()];
                    let pattern: Arc<Pattern> =
                        resources.get_or_init(&source, || compile(source, compiles));
                    assert_eq!(pattern.source, source);
                    // A second type under the same key: no collision.
                    let hits: Arc<AtomicUsize> =
                        resources.get_or_init(&source, || AtomicUsize::new(0));
                    if pattern.is_match("/api/v1/users") {
                        hits.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let elapsed = started.elapsed();

    let parses = parses.load(Ordering::SeqCst);
    let compiles = compiles.load(Ordering::SeqCst);
    println!(
        "{} requests on {THREADS} threads in {elapsed:.0?}",
        THREADS * REQUESTS_PER_THREAD * 2
    );
    println!(
        "schemas:  {parses} parses for {} tables      {:?}",
        TABLES.len(),
        schemas.stats()
    );
    println!(
        "patterns: {compiles} compiles for {} patterns  {:?}",
        PATTERNS.len(),
        resources.stats()
    );
    let api_hits = resources.get::<AtomicUsize, _>("/api/.*").expect("counted");
    println!(
        "requests matching /api/.*: {}",
        api_hits.load(Ordering::Relaxed)
    );

    // Exactly one init per key, however many threads asked at once.
    assert_eq!(parses, TABLES.len());
    assert_eq!(compiles, PATTERNS.len());
    let stats = schemas.stats();
    assert_eq!(stats.inits, TABLES.len() as u64);
    assert_eq!(
        stats.hits + stats.misses,
        (THREADS * REQUESTS_PER_THREAD) as u64
    );
    println!(
        "schema hit ratio {:.3}; {} callers waited for another's init instead of parsing",
        stats.hit_ratio(),
        stats.waits
    );
}
