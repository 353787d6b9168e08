//! A hot-reloaded configuration read by worker threads.
//!
//! A reloader thread publishes a new configuration every few milliseconds
//! with `update` (read-copy-update: no reload is lost even if two reloaders
//! race). Workers read it in their hot loop through a `CachedReader`, which
//! costs one pointer comparison while nothing changed, and notice a reload
//! by its version.
//!
//! `cargo run --release --example snapshot_config`

use larder::Snapshot;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

#[derive(Debug, Clone)]
struct Config {
    rate_limit: u32,
    upstream: String,
}

fn main() {
    let config = Arc::new(Snapshot::new(Config {
        rate_limit: 100,
        upstream: "10.0.0.1:8080".to_string(),
    }));
    let stop = Arc::new(AtomicBool::new(false));

    let workers: Vec<_> = (0..2)
        .map(|id| {
            let config = Arc::clone(&config);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let mut reader = config.cached_reader();
                let (mut requests, mut reloads_seen, mut last_version) = (0u64, 0u64, 0u64);
                let mut budget = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let current = reader.load();
                    if current.version() != last_version {
                        assert!(current.version() > last_version, "versions never go back");
                        reloads_seen += 1;
                        last_version = current.version();
                    }
                    budget = budget.wrapping_add(u64::from(current.rate_limit));
                    requests += 1;
                }
                let current = reader.load();
                println!(
                    "worker {id}: {requests} requests, saw {reloads_seen} reloads, \
                     ends on version {} (rate limit {}, upstream {})",
                    current.version(),
                    current.rate_limit,
                    current.upstream
                );
                std::hint::black_box(budget);
            })
        })
        .collect();

    let reloader = {
        let config = Arc::clone(&config);
        thread::spawn(move || {
            for i in 1..=50u32 {
                config.update(|old| Config {
                    rate_limit: old.rate_limit + 10,
                    upstream: format!("10.0.0.{}:8080", i % 4 + 1),
                });
                thread::sleep(Duration::from_millis(4));
            }
        })
    };
    reloader.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    let last = config.load();
    println!(
        "final config: version {}, rate limit {} (100 + 50 reloads x 10 = 600: no reload lost)",
        last.version(),
        last.rate_limit
    );
    assert_eq!(last.rate_limit, 600);
}
