//! Work queue family: `WorkQueue` against the queue people write by hand,
//! a `Mutex<(VecDeque, HashSet)>` with a `Condvar`, deduplicating waiting
//! keys the same way (a key already waiting is not queued again; the hand-
//! made one does not track processing keys, so it promises less).
//!
//! One round: 10,000 keys, each added 4 times, then taken and marked done.
//!
//! - `1 thread`: the thread adds every key 4 times (3 of the 4 adds are
//!   deduplicated), then takes and finishes all of them.
//! - `2 producers + 2 workers`: each producer adds its half of the keys 4
//!   times while both workers take and finish keys; a key taken between
//!   two of its adds is queued and processed again, so a round processes
//!   at least 10,000 keys. The producers then shut the queue down and the
//!   workers drain it. A fresh queue and fresh threads per round.
//!
//! Criterion measures rounds (`iter_custom`), one round per iteration.

use std::collections::{HashSet, VecDeque};
use std::sync::{Barrier, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Keys per round.
pub const KEYS: u64 = 10_000;
/// Adds of every key per round.
pub const ADDS_PER_KEY: u64 = 4;

/// The operations a round needs from a queue.
pub trait QueueOps: Send + Sync + Sized + 'static {
    /// The name shown in reports.
    const NAME: &'static str;
    /// An empty queue.
    fn new() -> Self;
    /// Queues `key` unless it already waits.
    fn add(&self, key: u64);
    /// The next key, waiting for one; `None` once shut down and empty.
    fn get(&self) -> Option<u64>;
    /// The worker is finished with `key`.
    fn done(&self, key: u64);
    /// Wakes every waiting worker; `get` returns `None` once empty.
    fn shut_down(&self);
}

impl QueueOps for larder::WorkQueue<u64> {
    const NAME: &'static str = "larder WorkQueue";
    fn new() -> Self {
        larder::WorkQueue::new()
    }
    fn add(&self, key: u64) {
        self.add(key);
    }
    fn get(&self) -> Option<u64> {
        self.get()
    }
    fn done(&self, key: u64) {
        self.done(&key);
    }
    fn shut_down(&self) {
        self.shut_down();
    }
}

/// The hand-made baseline: one `Mutex` over the queue, the set of waiting
/// keys and a shutdown flag, and one `Condvar`.
pub struct MutexQueue {
    state: Mutex<(VecDeque<u64>, HashSet<u64>, bool)>,
    ready: Condvar,
}

impl QueueOps for MutexQueue {
    const NAME: &'static str = "Mutex<(VecDeque, HashSet)> + Condvar";
    fn new() -> Self {
        Self {
            state: Mutex::new((VecDeque::new(), HashSet::new(), false)),
            ready: Condvar::new(),
        }
    }
    fn add(&self, key: u64) {
        let mut state = self.state.lock().unwrap();
        if !state.2 && state.1.insert(key) {
            state.0.push_back(key);
            drop(state);
            self.ready.notify_one();
        }
    }
    fn get(&self) -> Option<u64> {
        let mut state = self.state.lock().unwrap();
        loop {
            if let Some(key) = state.0.pop_front() {
                state.1.remove(&key);
                return Some(key);
            }
            if state.2 {
                return None;
            }
            state = self.ready.wait(state).unwrap();
        }
    }
    fn done(&self, _key: u64) {}
    fn shut_down(&self) {
        self.state.lock().unwrap().2 = true;
        self.ready.notify_all();
    }
}

/// One round on one thread; returns the keys processed.
pub fn one_thread<Q: QueueOps>(queue: &Q) -> u64 {
    for _ in 0..ADDS_PER_KEY {
        for key in 0..KEYS {
            queue.add(key);
        }
    }
    let mut processed = 0;
    for _ in 0..KEYS {
        let key = queue.get().expect("a key was added");
        queue.done(key);
        processed += 1;
    }
    processed
}

/// One round with `producers` producer and `workers` worker threads on a
/// fresh queue; returns the wall time and the keys processed.
pub fn producers_and_workers<Q: QueueOps>(producers: u64, workers: usize) -> (Duration, u64) {
    let queue = Q::new();
    let start = Barrier::new(producers as usize + workers + 1);
    let produced = Barrier::new(producers as usize + 1);
    thread::scope(|s| {
        let working: Vec<_> = (0..workers)
            .map(|_| {
                let (queue, start) = (&queue, &start);
                s.spawn(move || {
                    start.wait();
                    let mut processed = 0;
                    while let Some(key) = queue.get() {
                        std::hint::black_box(key);
                        queue.done(key);
                        processed += 1;
                    }
                    processed
                })
            })
            .collect();
        for producer in 0..producers {
            let (queue, start, produced) = (&queue, &start, &produced);
            s.spawn(move || {
                start.wait();
                for _ in 0..ADDS_PER_KEY {
                    for key in (producer..KEYS).step_by(producers as usize) {
                        queue.add(key);
                    }
                }
                produced.wait();
            });
        }
        start.wait();
        let began = Instant::now();
        produced.wait();
        queue.shut_down();
        let processed = working
            .into_iter()
            .map(|worker| worker.join().expect("bench worker panicked"))
            .sum();
        (began.elapsed(), processed)
    })
}

fn bench_queue<Q: QueueOps>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
) {
    group.bench_function(criterion::BenchmarkId::new(Q::NAME, "1 thread"), |b| {
        let queue = Q::new();
        b.iter_custom(|rounds| {
            let began = Instant::now();
            for _ in 0..rounds {
                std::hint::black_box(one_thread(&queue));
            }
            began.elapsed()
        });
    });
    group.bench_function(
        criterion::BenchmarkId::new(Q::NAME, "2 producers + 2 workers"),
        |b| {
            b.iter_custom(|rounds| {
                (0..rounds)
                    .map(|_| producers_and_workers::<Q>(2, 2).0)
                    .sum()
            });
        },
    );
}

/// Registers the family's benches.
pub fn criterion_benches(c: &mut criterion::Criterion) {
    let mut group = c.benchmark_group("workqueue/add-get-done 10K keys x4");
    group.throughput(criterion::Throughput::Elements(KEYS * ADDS_PER_KEY));
    bench_queue::<larder::WorkQueue<u64>>(&mut group);
    bench_queue::<MutexQueue>(&mut group);
    group.finish();
}

/// The showdown's view of a queue: one operation is one round (10,000 keys,
/// each added 4 times, all taken and marked done). At one thread the round
/// is [`one_thread`]; at N threads it is [`producers_and_workers`] with N
/// producers and N workers (so "2 threads" is 2 producers + 2 workers, on a
/// fresh queue each round). The harness's thread 0 runs every round of a
/// measurement itself (starting the producers and workers); its other
/// threads return at once.
pub struct QueueContender<Q>(std::marker::PhantomData<fn() -> Q>);

impl<Q: QueueOps> super::Contender for QueueContender<Q> {
    fn name(&self) -> String {
        Q::NAME.to_string()
    }
    fn run(&self, thread: usize, threads: usize, ops: u64) -> u64 {
        if thread != 0 {
            return 0;
        }
        let rounds = ops * threads as u64;
        let mut processed = 0;
        if threads == 1 {
            let queue = Q::new();
            for _ in 0..rounds {
                processed += one_thread(&queue);
            }
        } else {
            for _ in 0..rounds {
                processed += producers_and_workers::<Q>(threads as u64, threads).1;
            }
        }
        processed
    }
}

/// The showdown's work queue family: rounds per second, larder's queue
/// against the hand-made one.
pub fn workloads(_size: super::Size) -> Vec<super::Workload> {
    vec![super::Workload {
        family: "workqueue",
        name: "add-get-done rounds (10K keys x4; N threads: N producers + N workers)".to_string(),
        contenders: vec![
            Box::new(QueueContender::<larder::WorkQueue<u64>>(
                std::marker::PhantomData,
            )),
            Box::new(QueueContender::<MutexQueue>(std::marker::PhantomData)),
        ],
        threads: vec![1, 2],
    }]
}
