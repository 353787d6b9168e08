//! Stress tests of `OrderedIndex`: more threads than cores, every key
//! consumed once, contiguous cuts, every operation at once.

#[path = "common/ordered_configs.rs"]
mod configs;
#[path = "common/watchdog.rs"]
mod watchdog;

use configs::{CONFIGS, PARTITIONED, configured};
use larder::OrderedIndex;
use std::collections::HashMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// Eight threads (more than the cores): producers insert distinct keys,
/// consumers take them with `pop_first`, `pop_last`, `drain_to` and `remove`.
/// Every inserted key is consumed exactly once.
#[test]
fn stress_every_key_is_consumed_exactly_once() {
    // The default, the single-lock one, and the partitioned one (leaves of
    // four entries: splits, merges and trims race with everything).
    for config in [CONFIGS[0], CONFIGS[3], PARTITIONED, CONFIGS[5]] {
        consume_exactly_once(configured(config));
    }
}

fn consume_exactly_once(index: OrderedIndex<u64, u64>) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const PRODUCERS: u64 = 4;
    const PER_PRODUCER: u64 = 3_000;
    let produced = AtomicU64::new(0);
    let producers_done = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(30);
    let consumed: Vec<Vec<u64>> = thread::scope(|s| {
        for p in 0..PRODUCERS {
            let (index, produced) = (&index, &produced);
            s.spawn(move || {
                for i in 0..PER_PRODUCER {
                    let key = i * PRODUCERS + p;
                    assert!(
                        index.insert(key, key * 10).is_none(),
                        "key {key} inserted twice"
                    );
                    produced.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let consumers: Vec<_> = (0..4)
            .map(|c| {
                let (index, produced, producers_done) = (&index, &produced, &producers_done);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    let mut take = |key: u64, value: Arc<u64>| {
                        assert_eq!(*value, key * 10, "value does not match its key");
                        mine.push(key);
                    };
                    loop {
                        assert!(Instant::now() < deadline, "stress test ran out of time");
                        let finished = producers_done.load(Ordering::Acquire);
                        match c {
                            0 => {
                                if let Some((k, v)) = index.pop_first() {
                                    take(k, v);
                                }
                            }
                            1 => {
                                if let Some((k, v)) = index.pop_last() {
                                    take(k, v);
                                }
                            }
                            2 => {
                                let upto = produced.load(Ordering::Relaxed) / 2;
                                for (k, v) in index.drain_to(Bound::Excluded(&upto)) {
                                    take(k, v);
                                }
                            }
                            _ => {
                                // Check-then-act is safe here only because
                                // `remove`'s result decides who owns the key.
                                if let Some((k, _)) = index.first() {
                                    if let Some(v) = index.remove(&k) {
                                        take(k, v);
                                    }
                                }
                            }
                        }
                        if finished && index.is_empty() {
                            return mine;
                        }
                    }
                })
            })
            .collect();
        // A reader checks that every cut is sorted without duplicates.
        s.spawn(|| {
            for _ in 0..200 {
                let cut = index.range_to_vec(..);
                assert!(
                    cut.windows(2).all(|w| w[0].0 < w[1].0),
                    "a range was not sorted"
                );
                let view = index.snapshot();
                assert_eq!(view.len(), view.iter().count());
            }
        });
        while produced.load(Ordering::Relaxed) < PRODUCERS * PER_PRODUCER {
            assert!(Instant::now() < deadline, "producers ran out of time");
            thread::yield_now();
        }
        producers_done.store(true, Ordering::Release);
        consumers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut counts: HashMap<u64, u32> = HashMap::new();
    for key in consumed.iter().flatten() {
        *counts.entry(*key).or_default() += 1;
    }
    assert_eq!(
        counts.len() as u64,
        PRODUCERS * PER_PRODUCER,
        "an entry was lost"
    );
    assert!(
        counts.values().all(|&n| n == 1),
        "an entry was consumed twice"
    );
    assert!(index.is_empty());
}

/// Keys inserted in increasing order while the head is popped: every cut a
/// reader takes (`range`, `iter`, `snapshot`) must be one contiguous run of
/// keys, since any instant's contents are.
#[test]
fn stress_cuts_are_contiguous() {
    for config in [CONFIGS[0], PARTITIONED] {
        cuts_are_contiguous(configured(config));
    }
}

/// Eight threads (more than the cores) run every operation at random over
/// 500 keys, on two-entry leaves (splits, merges and trims all the time) and
/// on one configuration per engine. Every value equals its key, so any
/// entry torn from its key shows; every range must be sorted and inside its
/// bounds; at the end the point-lookup table must agree with the ordered
/// entries about every key.
#[test]
fn stress_every_operation_at_once_keeps_the_index_whole() {
    for config in [PARTITIONED, CONFIGS[5], CONFIGS[0]] {
        let index: OrderedIndex<u32, u32> = OrderedIndex::builder()
            .lock(config.0)
            .point_lookups(config.1)
            .leaf_size(2)
            .build()
            .unwrap();
        every_operation_at_once(&index);
        let all: Vec<u32> = index.to_vec().into_iter().map(|(k, _)| k).collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]), "unsorted: {config:?}");
        assert_eq!(all.len(), index.len());
        for k in 0..500 {
            assert_eq!(
                index.get(&k).map(|v| *v),
                all.contains(&k).then_some(k),
                "point lookup and order disagree about {k} ({config:?})"
            );
        }
    }
}

fn every_operation_at_once(index: &OrderedIndex<u32, u32>) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    thread::scope(|s| {
        for t in 0..8_u64 {
            s.spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ ((t + 1) * 7919);
                for _ in 0..20_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = (x >> 20) as u32 % 500;
                    match x % 100 {
                        0..=29 => drop(index.insert(k, k)),
                        30..=49 => drop(index.remove(&k)),
                        50..=54 => drop(index.pop_first()),
                        55..=59 => drop(index.pop_last()),
                        60..=62 => drop(index.drain_to(Bound::Excluded(&k))),
                        63..=74 => {
                            let cut: Vec<u32> = index
                                .range_to_vec(k..k + 50)
                                .into_iter()
                                .map(|(k, _)| k)
                                .collect();
                            assert!(cut.windows(2).all(|w| w[0] < w[1]), "a torn range");
                            assert!(cut.iter().all(|q| (k..k + 50).contains(q)));
                        }
                        75..=79 => {
                            let view = index.snapshot();
                            assert!(
                                view.iter().all(|(k, v)| k == &**v),
                                "a value apart from its key"
                            );
                        }
                        80..=84 => {
                            // Two calls, two instants: only each entry itself
                            // can be checked.
                            for (key, value) in index.first().into_iter().chain(index.last()) {
                                assert_eq!(key, *value, "a value apart from its key");
                            }
                            let _ = index.is_empty();
                        }
                        85..=86 => index.retain(|k, _| k % 7 != 0),
                        87 if x % 1_000 == 0 => index.clear(),
                        _ => {
                            if let Some(v) = index.get(&k) {
                                assert_eq!(*v, k, "a value apart from its key");
                            }
                            let _ = index.range_count(..k);
                        }
                    }
                }
            });
        }
    });
}

fn cuts_are_contiguous(index: OrderedIndex<u64, ()>) {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    const KEYS: u64 = 20_000;
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            for k in 0..KEYS {
                index.insert(k, ());
                if k % 3 == 0 {
                    index.pop_first();
                }
            }
            done.store(true, Ordering::Release);
        });
        for reader in 0..5 {
            let (index, done) = (&index, &done);
            s.spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let cut: Vec<u64> = match reader {
                        0 => index.range_to_vec(..).into_iter().map(|(k, _)| k).collect(),
                        1 => index.to_vec().into_iter().map(|(k, _)| k).collect(),
                        2 => index
                            .range_take(.., 300)
                            .into_iter()
                            .map(|(k, _)| k)
                            .collect(),
                        3 => {
                            let mut keys = Vec::new();
                            let _ = index.try_for_each_in(.., |k, _| {
                                keys.push(*k);
                                if keys.len() == 500 {
                                    ControlFlow::Break(())
                                } else {
                                    ControlFlow::Continue(())
                                }
                            });
                            keys
                        }
                        _ => index.snapshot().iter().map(|(k, _)| *k).collect(),
                    };
                    assert!(
                        cut.windows(2).all(|w| w[1] == w[0] + 1),
                        "a torn cut: {:?}",
                        &cut[..cut.len().min(8)]
                    );
                }
            });
        }
    });
    assert_eq!(index.len() as u64, KEYS - KEYS.div_ceil(3));
}
