//! `OrderedIndex`'s waiting consumption, through the public API: the
//! blocking forms (`pop_first_wait`, `pop_first_timeout`, `drain_to_wait`,
//! `drain_to_timeout`) and the async ones (`pop_first_async`,
//! `drain_to_async`), on both engines. Every test that could hang runs under
//! a timeout that fails it by name. (Kept apart from `tests/ordered.rs`,
//! which holds the rest of the type's tests, to keep files short.)

use std::collections::BTreeSet;
use std::future::Future;
use std::ops::Bound;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use larder::{OrderedIndex, OrderedLock};

/// Generous: a hang fails the test, a slow machine does not.
const WATCHDOG: Duration = Duration::from_secs(60);

/// Both engines: small leaves (so that splits and merges happen under the
/// waits), and one lock.
fn engines() -> Vec<(&'static str, OrderedIndex<u64, u64>)> {
    vec![
        (
            "partitioned",
            OrderedIndex::builder()
                .lock(OrderedLock::Partitioned)
                .leaf_size(8)
                .build()
                .unwrap(),
        ),
        (
            "single",
            OrderedIndex::builder()
                .lock(OrderedLock::Single)
                .build()
                .unwrap(),
        ),
    ]
}

/// Runs `body` on a thread and fails with `name` if it does not finish
/// within the watchdog.
fn within<T: Send + 'static>(name: &str, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(body()).unwrap());
    rx.recv_timeout(WATCHDOG)
        .unwrap_or_else(|_| panic!("{name}: hung (or panicked) past the watchdog"))
}

/// Every key of `0..total` handed out exactly once.
fn assert_each_once(engine: &str, mut keys: Vec<u64>, total: u64) {
    keys.sort_unstable();
    let distinct: BTreeSet<u64> = keys.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        keys.len(),
        "{engine}: an entry was handed out twice"
    );
    assert_eq!(
        keys,
        (0..total).collect::<Vec<_>>(),
        "{engine}: an entry was lost"
    );
}

const PER_PRODUCER: u64 = 2_000;
const PRODUCERS: u64 = 4;

#[test]
fn four_async_producers_and_consumers_hand_out_every_entry_once() {
    for (engine, index) in engines() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let keys = runtime.block_on(async move {
            tokio::time::timeout(WATCHDOG, produce_and_consume(index))
                .await
                .unwrap_or_else(|_| panic!("{engine}: the async producers and consumers hung"))
        });
        assert_each_once(engine, keys, PRODUCERS * PER_PRODUCER);
    }
}

/// 4 producer tasks, and 4 consumer tasks: two `pop_first_async`, one
/// `drain_to_async`, one `pop_first_async` under a 1 ms timeout in a loop
/// (most of its waits are cancelled). Consumers stop when told to, which
/// cancels their pending waits.
async fn produce_and_consume(index: OrderedIndex<u64, u64>) -> Vec<u64> {
    let index = Arc::new(index);
    let total = (PRODUCERS * PER_PRODUCER) as usize;
    let taken = Arc::new(AtomicUsize::new(0));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut consumers = Vec::new();
    for kind in 0..4 {
        let index = Arc::clone(&index);
        let taken = Arc::clone(&taken);
        let mut stop = stop_rx.clone();
        consumers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got: Vec<(u64, Arc<u64>)> = tokio::select! {
                    _ = stop.changed() => break,
                    got = async {
                        match kind {
                            2 => index.drain_to_async(Bound::Unbounded).await,
                            3 => tokio::time::timeout(Duration::from_millis(1), index.pop_first_async())
                                .await
                                .map(|entry| vec![entry])
                                .unwrap_or_default(),
                            _ => vec![index.pop_first_async().await],
                        }
                    } => got,
                };
                for (key, value) in got {
                    assert_eq!(*value, key * 10, "a value came apart from its key");
                    mine.push(key);
                    taken.fetch_add(1, Ordering::Relaxed);
                }
            }
            mine
        }));
    }
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let index = Arc::clone(&index);
        producers.push(tokio::spawn(async move {
            for key in p * PER_PRODUCER..(p + 1) * PER_PRODUCER {
                index.insert(key, key * 10);
                if key % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    for producer in producers {
        producer.await.unwrap();
    }
    while taken.load(Ordering::Relaxed) < total {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    stop_tx.send(true).unwrap();
    let mut keys = Vec::new();
    for consumer in consumers {
        keys.extend(consumer.await.unwrap());
    }
    assert!(index.is_empty(), "entries left after all were counted");
    keys
}

#[test]
fn four_blocking_producers_and_consumers_hand_out_every_entry_once() {
    for (engine, index) in engines() {
        let keys = within(engine, move || {
            let index = Arc::new(index);
            let total = (PRODUCERS * PER_PRODUCER) as usize;
            let taken = Arc::new(AtomicUsize::new(0));
            let consumers: Vec<_> = (0..4)
                .map(|kind| {
                    let index = Arc::clone(&index);
                    let taken = Arc::clone(&taken);
                    thread::spawn(move || {
                        let mut mine = Vec::new();
                        let wait = Duration::from_millis(5);
                        while taken.load(Ordering::Relaxed) < total {
                            let got = if kind == 0 {
                                index.drain_to_timeout(Bound::Unbounded, wait)
                            } else {
                                index.pop_first_timeout(wait).into_iter().collect()
                            };
                            taken.fetch_add(got.len(), Ordering::Relaxed);
                            mine.extend(got.into_iter().map(|(key, _)| key));
                        }
                        mine
                    })
                })
                .collect();
            let producers: Vec<_> = (0..PRODUCERS)
                .map(|p| {
                    let index = Arc::clone(&index);
                    thread::spawn(move || {
                        for key in p * PER_PRODUCER..(p + 1) * PER_PRODUCER {
                            index.insert(key, key * 10);
                        }
                    })
                })
                .collect();
            for producer in producers {
                producer.join().unwrap();
            }
            let keys: Vec<u64> = consumers
                .into_iter()
                .flat_map(|consumer| consumer.join().unwrap())
                .collect();
            assert!(index.is_empty());
            keys
        });
        assert_each_once(engine, keys, PRODUCERS * PER_PRODUCER);
    }
}

#[test]
fn blocked_consumers_without_timeout_are_all_woken() {
    for (engine, index) in engines() {
        within(engine, move || {
            let index = Arc::new(index);
            let consumers: Vec<_> = (0..4)
                .map(|_| {
                    let index = Arc::clone(&index);
                    thread::spawn(move || index.pop_first_wait().0)
                })
                .collect();
            thread::sleep(Duration::from_millis(20)); // let most of them block
            for key in 0..4 {
                index.insert(key, key * 10);
            }
            let keys: Vec<u64> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
            assert_each_once(engine, keys, 4);
        });
    }
}

#[test]
fn pop_first_timeout_gives_up_on_an_empty_index() {
    for (engine, index) in engines() {
        let start = Instant::now();
        let wait = Duration::from_millis(30);
        assert_eq!(index.pop_first_timeout(wait), None, "{engine}");
        assert!(
            start.elapsed() >= wait,
            "{engine}: returned before its timeout"
        );
        assert!(
            index.drain_to_timeout(Bound::Unbounded, wait).is_empty(),
            "{engine}"
        );
        assert_eq!(index.pop_first_timeout(Duration::ZERO), None, "{engine}");
    }
}

#[test]
fn pop_first_timeout_returns_when_a_producer_inserts() {
    for (engine, index) in engines() {
        // A timeout far longer than the watchdog: only the insert can end
        // the wait in time.
        let popped = within(engine, move || {
            let index = Arc::new(index);
            let consumer = {
                let index = Arc::clone(&index);
                thread::spawn(move || index.pop_first_timeout(Duration::from_secs(3_600)))
            };
            thread::sleep(Duration::from_millis(20));
            index.insert(42, 420);
            consumer.join().unwrap().map(|(key, value)| (key, *value))
        });
        assert_eq!(popped, Some((42, 420)), "{engine}");
    }
}

#[test]
fn drain_to_wait_waits_for_a_key_in_its_range() {
    for (engine, index) in engines() {
        within(engine, move || {
            let index = Arc::new(index);
            let (tx, rx) = mpsc::channel();
            let committer = {
                let index = Arc::clone(&index);
                thread::spawn(move || {
                    let drained = index.drain_to_wait(Bound::Included(&10));
                    tx.send(drained.iter().map(|(key, _)| *key).collect::<Vec<_>>())
                        .unwrap();
                })
            };
            index.insert(20, 200); // out of range: wakes it, and it waits again
            assert!(
                rx.recv_timeout(Duration::from_millis(50)).is_err(),
                "{engine}: drain_to_wait returned with nothing in its range"
            );
            index.insert(5, 50);
            assert_eq!(rx.recv().unwrap(), [5], "{engine}");
            committer.join().unwrap();
            assert_eq!(index.first().map(|(key, _)| key), Some(20), "{engine}");
        });
    }
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_cancelled_async_wait_takes_nothing() {
    for (engine, index) in engines() {
        // Pending on an empty index; an insert; then dropped unpolled.
        {
            let mut waiting = pin!(index.pop_first_async());
            assert!(poll_once(waiting.as_mut()).is_pending(), "{engine}");
            index.insert(1, 10);
        }
        assert_eq!(index.len(), 1, "{engine}: a dropped wait took its entry");
        // Present at the first poll: taken in that poll.
        {
            let mut waiting = pin!(index.pop_first_async());
            match poll_once(waiting.as_mut()) {
                Poll::Ready((key, _)) => assert_eq!(key, 1, "{engine}"),
                Poll::Pending => panic!("{engine}: pending with an entry present"),
            }
        }
        // The same for a drain.
        {
            let mut waiting = pin!(index.drain_to_async(Bound::Included(&5)));
            assert!(poll_once(waiting.as_mut()).is_pending(), "{engine}");
            index.insert(3, 30);
            index.insert(4, 40);
        }
        assert_eq!(index.len(), 2, "{engine}: a dropped drain took entries");
        assert_eq!(index.drain_to(Bound::Unbounded).len(), 2);
    }
}

#[test]
fn a_cancelled_async_wait_does_not_swallow_a_wake_up() {
    for (engine, index) in engines() {
        within(engine, move || {
            let index = Arc::new(index);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            runtime.block_on(async {
                // One waiter registers, then a blocked thread; the insert
                // wakes both; the first is cancelled before it polls again,
                // so the thread must take the entry.
                let mut first = Box::pin(index.pop_first_async());
                assert!(poll_once(first.as_mut()).is_pending());
                let blocked = {
                    let index = Arc::clone(&index);
                    thread::spawn(move || index.pop_first_wait().0)
                };
                thread::sleep(Duration::from_millis(20));
                index.insert(7, 70);
                drop(first);
                assert_eq!(blocked.join().unwrap(), 7, "{engine}");
                // And a select! that loses its race takes nothing.
                index.insert(8, 80);
                tokio::select! {
                    biased;
                    () = std::future::ready(()) => {}
                    _ = index.pop_first_async() => panic!("{engine}: the biased branch lost"),
                }
                let late = tokio::time::timeout(
                    Duration::from_millis(5),
                    index.drain_to_async(Bound::Excluded(&8)),
                )
                .await;
                assert!(late.is_err(), "{engine}");
                assert_eq!(index.pop_first().map(|(key, _)| key), Some(8), "{engine}");
            });
        });
    }
}

#[test]
fn replacing_a_value_hands_out_nothing_new() {
    for (engine, index) in engines() {
        index.insert(1, 10);
        index.insert(1, 11);
        assert_eq!(
            index
                .pop_first_timeout(Duration::ZERO)
                .map(|(k, v)| (k, *v)),
            Some((1, 11)),
            "{engine}"
        );
        assert_eq!(
            index.pop_first_timeout(Duration::from_millis(5)),
            None,
            "{engine}"
        );
    }
}
