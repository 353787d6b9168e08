//! Handler fan-out latency: how long after a change the reflector's
//! handlers are called, with one of ten handlers stuck.
//!
//! A `MemorySource` receives 100,000 puts over 1,000 keys at a steady
//! 20,000 per second (bursts of 10 every 0.5 ms) from a thread of its own;
//! the reflector mirrors them into an `IndexedStore` on a two-worker tokio
//! runtime. Each object carries the time of its put, and each handler
//! records, when it is called, the time since: the latency from the put
//! (before the reflector applies it) to the call, so an upper bound of
//! "applied, then handed to the handler".
//!
//! - `registry, 1 of 10 stuck`: ten handlers added through
//!   `HandlerRegistry`, each with its own buffer and delivery; one blocks in
//!   its first call until the run ends (its delivery on a thread of its
//!   own). The latencies of the other nine are reported.
//! - `builder, none stuck`: ten handlers given to the builder, which the
//!   loop calls one after the other (a stuck one would stop them all).
//!
//! Five rounds, contenders interleaved; the median of each percentile over
//! the rounds is printed with its spread. `cargo bench --bench fanout
//! --features reflector`.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use larder::IndexedStore;
use larder::reflector::{Handler, MemorySource, Reflector};

const HANDLERS: usize = 10;
const EVENTS: u64 = 100_000;
const KEYS: u64 = 1_000;
const BURST: u64 = 10;
const BURST_EVERY: Duration = Duration::from_micros(500);
const ROUNDS: usize = 5;

/// Records the latency of each call: now minus the put time the object
/// carries (nanoseconds since `base`).
struct Latency {
    base: Instant,
    samples: Mutex<Vec<u64>>,
}

impl Latency {
    fn new(base: Instant) -> Arc<Self> {
        Arc::new(Self {
            base,
            samples: Mutex::new(Vec::with_capacity(EVENTS as usize)),
        })
    }

    fn record(&self, put_at: u64) {
        let now = self.base.elapsed().as_nanos() as u64;
        self.samples
            .lock()
            .unwrap()
            .push(now.saturating_sub(put_at));
    }

    fn count(&self) -> usize {
        self.samples.lock().unwrap().len()
    }
}

struct Recording(Arc<Latency>);

impl Handler<u64, u64> for Recording {
    fn on_add(&self, _key: &u64, new: &Arc<u64>) {
        self.0.record(**new);
    }
    fn on_update(&self, _key: &u64, _old: &Arc<u64>, new: &Arc<u64>) {
        self.0.record(**new);
    }
}

/// Blocks in its first call until the run releases it.
struct Stuck(Mutex<mpsc::Receiver<()>>);

impl Handler<u64, u64> for Stuck {
    fn on_add(&self, _key: &u64, _new: &Arc<u64>) {
        let _ = self.0.lock().unwrap().recv();
    }
}

/// Puts `EVENTS` objects at the steady rate, each carrying its put time.
fn produce(source: MemorySource<u64, u64>, base: Instant) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut put = 0;
        let mut burst = 0u32;
        while put < EVENTS {
            let due = start + BURST_EVERY * burst;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            for _ in 0..BURST.min(EVENTS - put) {
                source.put(put % KEYS, base.elapsed().as_nanos() as u64);
                put += 1;
            }
            burst += 1;
        }
    })
}

/// Runs one contender; returns the latencies of the handlers that were
/// not stuck, in nanoseconds, sorted.
fn run(use_registry: bool) -> Vec<u64> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let base = Instant::now();
    let source = MemorySource::new();
    let store = IndexedStore::<u64, Arc<u64>>::new();
    let recorders: Vec<Arc<Latency>> = (0..HANDLERS - usize::from(use_registry))
        .map(|_| Latency::new(base))
        .collect();
    let mut builder = Reflector::builder(source.clone(), store);
    if !use_registry {
        for recorder in &recorders {
            builder = builder.handler(Recording(Arc::clone(recorder)));
        }
    }
    let reflector = builder.build().unwrap();
    let handle = reflector.handle();
    let (release, stuck_waits) = mpsc::channel();
    let mut stuck_thread = None;
    let mut deliveries = Vec::new();
    let mut registrations = Vec::new();
    if use_registry {
        let registry = reflector.handler_registry();
        let (registration, delivery) = registry.add(Stuck(Mutex::new(stuck_waits)));
        registrations.push(registration);
        let runtime_handle = runtime.handle().clone();
        stuck_thread = Some(std::thread::spawn(move || {
            runtime_handle.block_on(delivery);
        }));
        for recorder in &recorders {
            let (registration, delivery) = registry.add(Recording(Arc::clone(recorder)));
            registrations.push(registration);
            deliveries.push(runtime.spawn(delivery));
        }
    }
    let task = runtime.spawn(reflector.run());
    runtime.block_on(handle.wait_until_synced()).unwrap();
    if use_registry {
        // The stuck handler blocks only once it is called: give it one
        // object before the measured puts.
        let first = source.put(u64::MAX, 0);
        runtime.block_on(handle.wait_for_revision(first)).unwrap();
    }
    let producer = produce(source.clone(), base);
    producer.join().unwrap();
    // The registry's handlers first get the one warm-up object.
    let skip = usize::from(use_registry);
    runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        while recorders.iter().any(|r| r.count() < EVENTS as usize + skip) {
            assert!(Instant::now() < deadline, "the handlers did not catch up");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    handle.stop();
    runtime.block_on(task).unwrap();
    drop(release); // the stuck handler returns; its delivery drains and ends
    for delivery in deliveries {
        runtime.block_on(delivery).unwrap();
    }
    if let Some(thread) = stuck_thread {
        thread.join().unwrap();
    }
    drop(registrations);
    let mut all: Vec<u64> = recorders
        .iter()
        .flat_map(|r| {
            let mut samples = r.samples.lock().unwrap();
            std::mem::take(&mut *samples).into_iter().skip(skip)
        })
        .collect();
    all.sort_unstable();
    all
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at] as f64 / 1_000.0
}

fn median(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is ignored.
    let contenders = [
        ("registry, 1 of 10 stuck", true),
        ("builder, none stuck", false),
    ];
    let mut results: Vec<Vec<[f64; 3]>> = vec![Vec::new(); contenders.len()];
    for round in 0..ROUNDS {
        for (at, (name, use_registry)) in contenders.iter().enumerate() {
            let samples = run(*use_registry);
            let row = [
                percentile(&samples, 0.5),
                percentile(&samples, 0.99),
                percentile(&samples, 1.0),
            ];
            println!(
                "round {round} {name}: {} calls, p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                samples.len(),
                row[0],
                row[1],
                row[2]
            );
            results[at].push(row);
        }
    }
    println!("\nmedian of {ROUNDS} rounds (min-max), microseconds from put to handler call:");
    for (at, (name, _)) in contenders.iter().enumerate() {
        let column = |i: usize| median(results[at].iter().map(|row| row[i]).collect());
        let (p50, p99, max) = (column(0), column(1), column(2));
        println!(
            "{name:<24} p50 {:.1} ({:.1}-{:.1})  p99 {:.1} ({:.1}-{:.1})  max {:.1} ({:.1}-{:.1})",
            p50.0, p50.1, p50.2, p99.0, p99.1, p99.2, max.0, max.1, max.2
        );
    }
}
