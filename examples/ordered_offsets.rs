//! A consumer-offset tracker, broken and fixed side by side.
//!
//! Messages carry offsets 0, 1, 2, ... Workers finish them out of order. The
//! consumer may commit offset `c` (tell the broker "everything below `c` is
//! done") only when every offset below `c` is finished; committing past an
//! unfinished message loses it if the consumer restarts.
//!
//! The bug (the first Go `sync.Map` misuse): keep the in-flight offsets in an
//! unordered concurrent map and take "the lowest pending offset" from it by
//! iterating. Iteration is in hash order, so the "lowest" is some arbitrary
//! pending offset, and the commit skips over unfinished messages.
//!
//! The fix: an [`OrderedIndex`]. `first()` is the lowest pending offset,
//! `pop_first()` hands each message to exactly one worker, and
//! `drain_to(..)` takes the finished results below the commit point in
//! order, in one step.
//!
//! The last section is a consumer of messages that arrive over time: it
//! waits for the next offset with `pop_first_timeout` (threads) or
//! `pop_first_async` (a tokio task) instead of polling `pop_first` in a
//! loop, and every message still goes to exactly one consumer.
//!
//! `cargo run --example ordered_offsets`

use dashmap::DashMap;
use larder::OrderedIndex;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

const MESSAGES: u64 = 2_000;
const WORKERS: usize = 4;

/// BROKEN: the lowest pending offset taken from an unordered map.
fn broken_commit_point(pending: &DashMap<u64, String>) -> Option<u64> {
    // Looks plausible, and is wrong: `iter()` is in hash order.
    pending.iter().next().map(|entry| *entry.key())
}

/// FIXED: the lowest pending offset from an ordered index.
fn fixed_commit_point(pending: &OrderedIndex<u64, String>) -> Option<u64> {
    pending.first().map(|(offset, _)| offset)
}

/// The in-flight offsets after workers finished some of them, out of order.
fn in_flight() -> impl Iterator<Item = u64> {
    const FINISHED: [u64; 8] = [0, 1, 3, 4, 7, 8, 9, 12];
    (0..20).filter(|offset| !FINISHED.contains(offset))
}

fn side_by_side() {
    println!("== the same in-flight offsets, two trackers ==");
    let ordered: OrderedIndex<u64, String> = in_flight()
        .map(|offset| (offset, format!("message {offset}")))
        .collect();
    let fixed = fixed_commit_point(&ordered).expect("offsets are pending");
    // Each fresh DashMap hashes with a new random seed, so try a few.
    const TRIALS: usize = 10;
    let mut wrong = 0;
    for trial in 0..TRIALS {
        let unordered: DashMap<u64, String> = in_flight()
            .map(|offset| (offset, format!("message {offset}")))
            .collect();
        let broken = broken_commit_point(&unordered).expect("offsets are pending");
        if broken != fixed {
            wrong += 1;
            if wrong == 1 {
                let skipped: Vec<u64> = in_flight().filter(|offset| *offset < broken).collect();
                println!("unordered map (trial {trial}): would commit up to {broken}");
                println!("  BUG: that skips unfinished offsets {skipped:?}, lost on restart");
            }
        }
    }
    println!("unordered map: wrong commit point in {wrong} of {TRIALS} fresh maps");
    println!("OrderedIndex:  commits up to {fixed}: offsets 0..{fixed} are all finished");
    assert_eq!(fixed, 2);
}

/// The fixed tracker under real concurrency: workers take messages with
/// `pop_first`, record results, and a committer drains results in order up
/// to the lowest pending offset.
fn concurrent_tracker() {
    println!("\n== {MESSAGES} messages, {WORKERS} workers, one committer ==");
    let inbox: Arc<OrderedIndex<u64, String>> = Arc::new(
        (0..MESSAGES)
            .map(|offset| (offset, format!("message {offset}")))
            .collect(),
    );
    let pending: Arc<OrderedIndex<u64, ()>> =
        Arc::new((0..MESSAGES).map(|offset| (offset, ())).collect());
    let results: Arc<OrderedIndex<u64, usize>> = Arc::new(OrderedIndex::new());

    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (inbox, pending, results) = (
                Arc::clone(&inbox),
                Arc::clone(&pending),
                Arc::clone(&results),
            );
            thread::spawn(move || {
                // Each message goes to exactly one worker.
                while let Some((offset, message)) = inbox.pop_first() {
                    let processed = work(&message);
                    // Record the result first, then mark the offset done:
                    // whatever is below the lowest pending offset is in
                    // `results` already.
                    results.insert(offset, processed);
                    pending.remove(&offset);
                }
            })
        })
        .collect();

    let mut committed = 0_u64;
    let mut commits = 0;
    while committed < MESSAGES {
        let commit_point = pending.first().map_or(MESSAGES, |(offset, _)| offset);
        // Everything below the commit point, in order, in one atomic step.
        let batch = results.drain_to(Bound::Excluded(&commit_point));
        for (offset, _) in &batch {
            assert_eq!(*offset, committed, "committed out of order or with a gap");
            committed += 1;
        }
        if !batch.is_empty() {
            commits += 1;
        }
        thread::yield_now();
    }
    for worker in workers {
        worker.join().expect("worker panicked");
    }
    assert!(inbox.is_empty() && pending.is_empty() && results.is_empty());
    println!("committed offsets 0..{committed} in order, in {commits} commits, no gaps");
}

/// Stands in for processing a message.
fn work(message: &str) -> usize {
    (0..200).fold(message.len(), |acc, i| std::hint::black_box(acc ^ i))
}

/// Messages arrive over time from two producers; two threads and one
/// tokio task consume them as they come, waiting (not polling) for the
/// next one, and stop once the producers are done and the inbox is empty.
fn waiting_consumers() {
    const ARRIVING: u64 = 600;
    println!("\n== {ARRIVING} messages arriving over time, 2 waiting threads + 1 async task ==");
    let inbox: Arc<OrderedIndex<u64, String>> = Arc::new(OrderedIndex::new());
    let done = Arc::new(AtomicBool::new(false));
    let idle = Duration::from_millis(50);

    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (inbox, done) = (Arc::clone(&inbox), Arc::clone(&done));
            thread::spawn(move || {
                let mut taken = Vec::new();
                loop {
                    // Blocks until a message arrives, or for `idle` at most.
                    match inbox.pop_first_timeout(idle) {
                        Some((offset, message)) => {
                            work(&message);
                            taken.push(offset);
                        }
                        None if done.load(Ordering::Acquire) && inbox.is_empty() => return taken,
                        None => {}
                    }
                }
            })
        })
        .collect();
    let task = {
        let (inbox, done) = (Arc::clone(&inbox), Arc::clone(&done));
        thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("a tokio runtime");
            runtime.block_on(async move {
                let mut taken = Vec::new();
                loop {
                    // Cancel-safe: a wait cut short by the timeout takes
                    // nothing, so no message is lost to it.
                    match tokio::time::timeout(idle, inbox.pop_first_async()).await {
                        Ok((offset, message)) => {
                            work(&message);
                            taken.push(offset);
                        }
                        Err(_) if done.load(Ordering::Acquire) && inbox.is_empty() => return taken,
                        Err(_) => {}
                    }
                }
            })
        })
    };
    let producers: Vec<_> = (0..2)
        .map(|parity| {
            let inbox = Arc::clone(&inbox);
            thread::spawn(move || {
                for offset in (parity..ARRIVING).step_by(2) {
                    inbox.insert(offset, format!("message {offset}"));
                    if offset % 50 < 2 {
                        thread::sleep(Duration::from_millis(2)); // a lull
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.join().expect("producer panicked");
    }
    done.store(true, Ordering::Release);
    let mut per_consumer = Vec::new();
    let mut all = Vec::new();
    for consumer in threads.into_iter().chain([task]) {
        let taken = consumer.join().expect("consumer panicked");
        per_consumer.push(taken.len());
        all.extend(taken);
    }
    all.sort_unstable();
    assert_eq!(
        all,
        (0..ARRIVING).collect::<Vec<_>>(),
        "a message was lost or taken twice"
    );
    println!(
        "each of {ARRIVING} messages taken exactly once (thread, thread, task: {per_consumer:?}), no polling loop"
    );
}

fn main() {
    side_by_side();
    concurrent_tracker();
    waiting_consumers();
}
