//! Misuse 14: a hand-made work queue. A channel and a pool of workers,
//! with a `HashSet` of pending keys so that a key is not queued twice, as
//! controllers written without client-go's work queue do. Wherever the
//! pending mark is cleared, one of the queue's two promises breaks:
//!
//! - cleared when a worker *takes* the key: a change that arrives while
//!   the key is processed queues it again, and a second worker processes
//!   the same key at the same time;
//! - cleared when the worker is *done*: the change that arrived meanwhile
//!   finds the key still pending and is dropped; nobody processes it.
//!
//! The larder way: `WorkQueue` keeps the key's two marks apart (dirty:
//! added and not yet taken; processing: with a worker), as client-go's
//! queue does: a key added while processed waits for `done`, then goes
//! out again, to one worker.
//!
//! Every interleaving is forced with barriers and channels: no sleeps, the
//! same numbers on every run.
//!
//! Run with `cargo run --example misuse_14_handmade_work_queue`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Barrier, Mutex};
use std::thread;

use larder::WorkQueue;

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Pending mark cleared on take: most workers holding the key at once.
    pub broken_most_in_flight: usize,
    /// Pending mark cleared on done: the versions of the object processed.
    pub broken_versions: Vec<u64>,
    /// The object's last version (the change that arrived mid-processing).
    pub last_version: u64,
    /// `WorkQueue`: most workers holding the key at once.
    pub fixed_most_in_flight: usize,
    /// `WorkQueue`: whether the second worker got the key while the first
    /// still held it.
    pub fixed_second_worker_got_it_early: bool,
    /// `WorkQueue`: the versions of the object processed.
    pub fixed_versions: Vec<u64>,
}

/// The hand-made queue: a channel of keys and the set of keys sent and
/// not yet cleared.
struct Handmade {
    sender: Mutex<Option<Sender<&'static str>>>,
    receiver: Mutex<Receiver<&'static str>>,
    pending: Mutex<HashSet<&'static str>>,
}

impl Handmade {
    fn new() -> Self {
        let (sender, receiver) = mpsc::channel();
        Self {
            sender: Mutex::new(Some(sender)),
            receiver: Mutex::new(receiver),
            pending: Mutex::new(HashSet::new()),
        }
    }

    /// Sends `key` unless it is pending (the hand-made dedup).
    fn add(&self, key: &'static str) {
        if self.pending.lock().unwrap().insert(key) {
            if let Some(sender) = &*self.sender.lock().unwrap() {
                sender.send(key).unwrap();
            }
        }
    }

    /// The next key; `None` once closed and empty.
    fn take(&self) -> Option<&'static str> {
        self.receiver.lock().unwrap().recv().ok()
    }

    fn clear(&self, key: &str) {
        self.pending.lock().unwrap().remove(key);
    }

    fn close(&self) {
        self.sender.lock().unwrap().take();
    }
}

/// Workers holding the key now, and the most there ever were.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl InFlight {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A worker's reconcile: it reads the object's current version.
fn reconcile(version: &AtomicU64, processed: &Mutex<Vec<u64>>) {
    processed
        .lock()
        .unwrap()
        .push(version.load(Ordering::SeqCst));
}

/// BROKEN: the pending mark is cleared when a worker takes the key. Worker
/// 1 takes it; the object changes and the key is added again (sent: not
/// pending any more); worker 2 takes it while worker 1 still processes.
fn broken_clear_on_take() -> usize {
    let queue = Handmade::new();
    let in_flight = InFlight::default();
    let taken = Barrier::new(2);
    let both_in = Barrier::new(2);
    queue.add("pod-a");
    thread::scope(|s| {
        let worker = |first: bool| {
            let (queue, in_flight, taken, both_in) = (&queue, &in_flight, &taken, &both_in);
            move || {
                let key = queue.take().unwrap();
                queue.clear(key);
                in_flight.enter();
                if first {
                    taken.wait(); // let the producer add again
                }
                both_in.wait(); // both workers process "pod-a" now
                in_flight.leave();
            }
        };
        s.spawn(worker(true));
        taken.wait();
        queue.add("pod-a"); // the object changed during processing
        s.spawn(worker(false));
    });
    in_flight.most.load(Ordering::SeqCst)
}

/// BROKEN: the pending mark is cleared when the worker is done. Worker 1
/// takes the key and reads version 1; the object changes to version 2 and
/// the key is added again, but it is still pending: dropped. Worker 1
/// finishes; nothing is left to process version 2.
fn broken_clear_on_done() -> (Vec<u64>, u64) {
    let queue = Handmade::new();
    let version = AtomicU64::new(1);
    let processed = Mutex::new(Vec::new());
    let read = Barrier::new(2);
    let changed = Barrier::new(2);
    queue.add("pod-a");
    thread::scope(|s| {
        s.spawn(|| {
            let mut first = true;
            while let Some(key) = queue.take() {
                reconcile(&version, &processed);
                if std::mem::take(&mut first) {
                    read.wait();
                    changed.wait();
                }
                queue.clear(key);
            }
        });
        read.wait();
        version.store(2, Ordering::SeqCst);
        queue.add("pod-a"); // still pending: dropped
        changed.wait();
        queue.close(); // the worker drains what was sent, then stops
    });
    (
        processed.into_inner().unwrap(),
        version.load(Ordering::SeqCst),
    )
}

/// The larder way, the same interleaving: worker 1 takes the key and reads
/// version 1; the object changes to version 2 and the key is added again;
/// worker 2 asks and gets nothing (the key is being processed); worker 1
/// calls `done`, and the key goes out again, to worker 2, with version 2.
fn fixed() -> (usize, bool, Vec<u64>) {
    let queue = WorkQueue::new();
    let version = AtomicU64::new(1);
    let in_flight = InFlight::default();
    let processed = Mutex::new(Vec::new());
    let read = Barrier::new(2);
    let asked = Barrier::new(2);
    let mut early = false;
    queue.add("pod-a");
    thread::scope(|s| {
        s.spawn(|| {
            let key = queue.get().unwrap();
            in_flight.enter();
            reconcile(&version, &processed);
            read.wait();
            asked.wait();
            in_flight.leave();
            queue.done(&key);
        });
        read.wait();
        version.store(2, Ordering::SeqCst);
        queue.add("pod-a"); // processing: marked, not handed out
        early = queue.try_get().is_ok();
        asked.wait();
        // Worker 2 (this thread): `get` waits for worker 1's `done`.
        let key = queue.get().unwrap();
        in_flight.enter();
        reconcile(&version, &processed);
        in_flight.leave();
        queue.done(&key);
    });
    (
        in_flight.most.load(Ordering::SeqCst),
        early,
        processed.into_inner().unwrap(),
    )
}

/// Runs every variant.
pub fn run() -> Outcome {
    let broken_most_in_flight = broken_clear_on_take();
    let (broken_versions, last_version) = broken_clear_on_done();
    let (fixed_most_in_flight, fixed_second_worker_got_it_early, fixed_versions) = fixed();
    Outcome {
        broken_most_in_flight,
        broken_versions,
        last_version,
        fixed_most_in_flight,
        fixed_second_worker_got_it_early,
        fixed_versions,
    }
}

fn main() {
    common::header(14, "a hand-made work queue (channel + worker pool)");
    let o = run();
    common::broken(format!(
        "pending mark cleared on take: {} workers processed \"pod-a\" at once",
        o.broken_most_in_flight
    ));
    common::broken(format!(
        "pending mark cleared on done: versions processed {:?}, last version {} (the change mid-processing was lost)",
        o.broken_versions, o.last_version
    ));
    common::fixed(format!(
        "WorkQueue: at most {} worker(s) at once; second worker got it during processing = {}; versions processed {:?}",
        o.fixed_most_in_flight, o.fixed_second_worker_got_it_early, o.fixed_versions
    ));
}
