//! `WorkQueue` through the public API: the protocol (dedup, one worker per
//! key, re-queue on `done`), delays, rate limits, shutdown, the waiting
//! forms (blocking, timed, async and cancel-safe), statistics, a property
//! test against a sequential model on a manual clock, panic sweeps of the
//! key's traits, and a stress test under tokio. Every test that could hang
//! runs under a watchdog (or a tokio timeout) that fails it by name.

#[path = "common/hasher.rs"]
mod hasher;
#[path = "common/hostile.rs"]
mod hostile;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use larder::{
    DrainOutcome, ExponentialBackoff, GetTimeoutError, ManualClock, TryGetError, WorkQueue,
    WorkQueueStats,
};
use proptest::prelude::*;

const WATCHDOG: Duration = Duration::from_secs(60);

fn manual() -> (ManualClock, WorkQueue<u32>) {
    let clock = ManualClock::new();
    let queue = WorkQueue::builder().clock(clock.clone()).build().unwrap();
    (clock, queue)
}

/// A waker that records that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Flag {
    fn woken(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

#[test]
fn workqueue_dedups_and_hands_each_key_to_one_worker() {
    let (_, queue) = manual();
    queue.add(1);
    queue.add(2);
    queue.add(1);
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.try_get(), Ok(1));
    queue.add(1); // during processing
    assert_eq!(
        queue.len(),
        1,
        "a processing key was queued for a second worker"
    );
    assert_eq!(queue.try_get(), Ok(2));
    assert_eq!(queue.try_get(), Err(TryGetError::Empty));
    queue.done(&1);
    assert_eq!(queue.try_get(), Ok(1), "the add during processing was lost");
    queue.done(&1);
    queue.done(&2);
    let stats = queue.stats();
    assert_eq!((stats.adds, stats.taken, stats.processed), (3, 3, 3));
    queue.check_invariants();
}

#[test]
fn workqueue_shutdown_hands_out_the_rest_then_says_so() {
    let (_, queue) = manual();
    queue.add(1);
    queue.add_after(2, Duration::from_secs(1));
    queue.shut_down();
    queue.add(3);
    assert_eq!(queue.get(), Some(1));
    assert_eq!(queue.get(), None);
    assert_eq!(queue.try_get(), Err(TryGetError::ShutDown));
    assert_eq!(
        queue.get_timeout(Duration::from_secs(1)),
        Err(GetTimeoutError::ShutDown)
    );
    assert_eq!(queue.stats().delayed, 0, "delayed keys outlived shutdown");
    queue.done(&1);
    queue.check_invariants();
}

#[test]
fn workqueue_shutdown_wakes_every_waiting_worker() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue: WorkQueue<u32> = WorkQueue::new();
    thread::scope(|s| {
        let workers: Vec<_> = (0..4).map(|_| s.spawn(|| queue.get())).collect();
        thread::sleep(Duration::from_millis(20));
        queue.shut_down();
        for worker in workers {
            assert_eq!(worker.join().unwrap(), None);
        }
    });
}

#[test]
fn workqueue_shut_down_with_drain_waits_for_done() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue: WorkQueue<u32> = WorkQueue::new();
    queue.add(1);
    let key = queue.get().unwrap();
    let finished = AtomicBool::new(false);
    thread::scope(|s| {
        let drainer = s.spawn(|| {
            assert_eq!(queue.shut_down_with_drain(), DrainOutcome::Drained);
            assert!(
                finished.load(Ordering::SeqCst),
                "drain returned before done"
            );
        });
        thread::sleep(Duration::from_millis(20));
        assert!(!drainer.is_finished());
        finished.store(true, Ordering::SeqCst);
        queue.done(&key);
        drainer.join().unwrap();
    });
}

#[test]
fn workqueue_delay_thread_wakes_a_blocked_worker() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue: WorkQueue<u32> = WorkQueue::new();
    thread::scope(|s| {
        let worker = s.spawn(|| queue.get_timeout(Duration::from_secs(30)));
        queue.add_after(1, Duration::from_millis(20));
        assert_eq!(worker.join().unwrap(), Ok(1));
    });
}

#[tokio::test]
async fn workqueue_delay_thread_wakes_an_async_worker() {
    let queue = Arc::new(WorkQueue::<u32>::new());
    let worker = tokio::spawn({
        let queue = Arc::clone(&queue);
        async move { queue.get_async().await }
    });
    queue.add_after(1, Duration::from_millis(20));
    let got = tokio::time::timeout(WATCHDOG, worker)
        .await
        .expect("timed out");
    assert_eq!(got.unwrap(), Some(1));
}

/// A key queued again by `done` (it was added during processing) wakes a
/// worker already waiting: `done` is a producer too. A lost wake-up hangs
/// the worker, and the watchdog fails the test.
#[test]
fn workqueue_done_wakes_a_worker_waiting_for_a_requeued_key() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let queue: WorkQueue<u32> = WorkQueue::new();
    queue.add(1);
    let key = queue.try_get().unwrap();
    queue.add(1);
    thread::scope(|s| {
        // Untimed: a timed wait would find the key when it timed out.
        let waiting = s.spawn(|| queue.get());
        thread::sleep(Duration::from_millis(20)); // let it wait
        queue.done(&key);
        assert_eq!(waiting.join().unwrap(), Some(1));
    });
}

/// A worker whose `get` moves several due keys into the queue takes one
/// and wakes the others' workers: the delay thread, finding nothing left
/// to move, would not: the worker would hang, and the watchdog fails the
/// test. (The delay thread may move the keys first; then this passes
/// either way.)
#[test]
fn workqueue_a_get_that_queues_several_due_keys_wakes_other_workers() {
    let _watchdog = watchdog::arm(WATCHDOG);
    let (clock, queue) = manual();
    queue.add_after(1, Duration::from_secs(1));
    queue.add_after(2, Duration::from_secs(1));
    thread::scope(|s| {
        let waiting = s.spawn(|| queue.get());
        thread::sleep(Duration::from_millis(20)); // let it wait
        clock.advance(Duration::from_secs(1));
        let mine = queue.try_get().unwrap();
        let theirs = waiting.join().unwrap().unwrap();
        assert_eq!([mine.min(theirs), mine.max(theirs)], [1, 2]);
    });
}

#[test]
fn workqueue_a_sooner_add_after_wins() {
    let (clock, queue) = manual();
    queue.add_after(1, Duration::from_secs(10));
    queue.add_after(1, Duration::from_secs(2));
    queue.add_after(1, Duration::from_secs(5)); // later: does not postpone
    clock.advance(Duration::from_secs(2));
    assert_eq!(queue.try_get(), Ok(1));
    queue.done(&1);
    clock.advance(Duration::from_secs(10));
    assert_eq!(queue.try_get(), Err(TryGetError::Empty));
    queue.check_invariants();
}

#[test]
fn workqueue_rate_limited_adds_back_off_per_key() {
    let (clock, queue) = manual();
    for _ in 0..3 {
        queue.add_rate_limited(1); // 5, 10, 20 ms: the first (5) wins
    }
    assert_eq!(queue.num_requeues(&1), 3);
    assert_eq!(queue.stats().retries, 3);
    clock.advance(Duration::from_millis(4));
    assert!(queue.try_get().is_err());
    clock.advance(Duration::from_millis(1));
    assert_eq!(queue.try_get(), Ok(1));
    queue.done(&1);
    queue.forget(&1);
    assert_eq!(queue.num_requeues(&1), 0);
}

#[test]
fn workqueue_cancelled_get_async_takes_nothing_and_wakes_its_latest_waker() {
    let queue: WorkQueue<u32> = WorkQueue::new();
    let (first, second) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
    {
        let mut waiting = pin!(queue.get_async());
        let poll = waiting
            .as_mut()
            .poll(&mut Context::from_waker(&Waker::from(Arc::clone(&first))));
        assert!(poll.is_pending());
        let poll = waiting
            .as_mut()
            .poll(&mut Context::from_waker(&Waker::from(Arc::clone(&second))));
        assert!(poll.is_pending());
        queue.add(1);
        assert!(second.woken(), "the latest waker was not woken");
        assert!(!first.woken(), "a replaced waker was woken");
        // Dropped without another poll: it took nothing.
    }
    assert_eq!(queue.try_get(), Ok(1), "a cancelled get took the key");
    queue.done(&1);
    // Waking a dropped waiter is harmless; a new one is served.
    let mut waiting = pin!(queue.get_async());
    let waker = Waker::from(Arc::clone(&first));
    assert!(
        waiting
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    queue.add(2);
    assert!(first.woken());
    let poll = waiting.as_mut().poll(&mut Context::from_waker(&waker));
    assert_eq!(poll, Poll::Ready(Some(2)));
}

#[test]
fn workqueue_stats_measure_queue_and_processing_time() {
    let (clock, queue) = manual();
    queue.add(1);
    queue.add(2);
    clock.advance(Duration::from_secs(1));
    let one = queue.try_get().unwrap();
    clock.advance(Duration::from_secs(1));
    let two = queue.try_get().unwrap();
    clock.advance(Duration::from_secs(1));
    let stats = queue.stats();
    assert_eq!(stats.total_queue_time, Duration::from_secs(3));
    assert_eq!(stats.longest_queue_time, Duration::from_secs(2));
    assert_eq!(stats.longest_running_processor, Duration::from_secs(2));
    assert_eq!(stats.unfinished_work, Duration::from_secs(3));
    assert_eq!((stats.depth, stats.processing), (0, 2));
    queue.done(&one);
    queue.done(&two);
    let stats = queue.stats();
    assert_eq!(stats.total_processing_time, Duration::from_secs(3));
    assert_eq!(stats.unfinished_work, Duration::ZERO);
    assert_ne!(stats, WorkQueueStats::default());
}

// ---------------------------------------------------------------------
// Panic sweeps: a panicking `Hash`, `Eq`, `Clone` or `Drop` of the key, at
// every call an operation makes, leaves the queue consistent and usable.

mod sweeps {
    use super::hostile::{Key, Trait, sweep};
    use larder::{ManualClock, WorkQueue};
    use std::time::Duration;

    type Queue = WorkQueue<Key>;

    /// A queue with key 1 queued, key 2 processing (and added again),
    /// key 3 delayed.
    fn setup() -> (Queue, ManualClock) {
        let clock = ManualClock::new();
        let queue = WorkQueue::builder().clock(clock.clone()).build().unwrap();
        queue.add(Key::new(2));
        let two = queue.try_get().unwrap();
        assert_eq!(two.id, 2);
        queue.add(Key::new(2));
        queue.add(Key::new(1));
        queue.add_after(Key::new(3), Duration::from_secs(1));
        (queue, clock)
    }

    /// After an operation (which may have panicked): consistent, and the
    /// keys still go through the whole protocol: the add that came while
    /// key 2 was processed, delayed key 3 and a new key are all handed out.
    fn usable((queue, clock): &(Queue, ManualClock)) {
        queue.check_invariants();
        clock.advance(Duration::from_secs(1));
        // A panic between an operation's get and its done leaves key 1
        // with its (unwound) worker, as a worker's panic would.
        queue.done(&Key::new(1));
        queue.done(&Key::new(2));
        queue.add(Key::new(9));
        let mut seen = Vec::new();
        while let Ok(key) = queue.try_get() {
            seen.push(key.id);
            queue.done(&key);
        }
        seen.sort_unstable();
        // Key 1 may have been taken and finished by the operation itself.
        for id in [2, 3, 9] {
            assert!(seen.contains(&id), "key {id} was lost: got {seen:?}");
        }
        queue.check_invariants();
        let stats = queue.stats();
        assert_eq!((stats.depth, stats.processing, stats.delayed), (0, 0, 0));
    }

    fn sweep_all(op: impl Fn(&(Queue, ManualClock))) {
        for t in [Trait::Hash, Trait::Eq, Trait::Clone, Trait::Drop] {
            sweep(t, 64, setup, &op, |queue, _| usable(queue));
        }
    }

    #[test]
    fn workqueue_add_survives_panicking_keys() {
        sweep_all(|(queue, _)| {
            queue.add(Key::new(1));
            queue.add(Key::new(4));
            queue.add(Key::new(2));
        });
    }

    #[test]
    fn workqueue_get_and_done_survive_panicking_keys() {
        sweep_all(|(queue, _)| {
            if let Ok(key) = queue.try_get() {
                queue.done(&key);
            }
            queue.done(&Key::new(2));
        });
    }

    #[test]
    fn workqueue_delays_survive_panicking_keys() {
        sweep_all(|(queue, clock)| {
            queue.add_after(Key::new(3), Duration::from_millis(10));
            queue.add_after(Key::new(5), Duration::from_millis(10));
            queue.add_rate_limited(Key::new(6));
            clock.advance(Duration::from_secs(1));
            if let Ok(key) = queue.try_get() {
                queue.done(&key);
            }
        });
    }

    #[test]
    fn workqueue_shutdown_survives_panicking_drops() {
        sweep(
            Trait::Drop,
            64,
            setup,
            |(queue, _)| queue.shut_down(),
            |(queue, _), _| {
                queue.check_invariants();
                assert!(queue.is_shutting_down());
                assert_eq!(queue.try_get().map(|key| key.id), Ok(1));
            },
        );
    }
}

// ---------------------------------------------------------------------
// A property test against a sequential model of client-go's semantics.

/// The model: client-go's queue, dirty set, processing set and delaying
/// heap written as plainly as possible. Keys promoted at the same instant
/// go in the order of their due time, then of when the key became known
/// to the queue (its entry's creation). Due keys are promoted when the
/// clock moves: the queue's `stats`, called after every step, promotes
/// them, so whether its delay thread did so first does not matter.
#[derive(Default, Debug)]
struct Model {
    now: Duration,
    queue: VecDeque<u32>,
    dirty: HashSet<u32>,
    processing: HashSet<u32>,
    delayed: HashMap<u32, Duration>,
    /// When each known key became known (an entry id).
    known: HashMap<u32, u64>,
    next_id: u64,
    failures: HashMap<u32, u32>,
    shutting_down: bool,
}

const BASE: Duration = Duration::from_millis(1);
const CAP: Duration = Duration::from_millis(16);

impl Model {
    fn know(&mut self, key: u32) {
        if !self.known.contains_key(&key) {
            self.known.insert(key, self.next_id);
            self.next_id += 1;
        }
    }

    fn forget_if_idle(&mut self, key: u32) {
        let alive = self.dirty.contains(&key)
            || self.processing.contains(&key)
            || self.delayed.contains_key(&key);
        if !alive {
            self.known.remove(&key);
        }
    }

    fn add(&mut self, key: u32) {
        if self.shutting_down {
            return;
        }
        self.know(key);
        if self.dirty.insert(key) && !self.processing.contains(&key) {
            self.queue.push_back(key);
        }
    }

    fn add_after(&mut self, key: u32, delay: Duration) {
        if self.shutting_down {
            return;
        }
        if delay.is_zero() {
            return self.add(key);
        }
        self.know(key);
        let due = self.now + delay;
        let slot = self.delayed.entry(key).or_insert(due);
        *slot = (*slot).min(due);
    }

    fn add_rate_limited(&mut self, key: u32) {
        let failures = self.failures.entry(key).or_insert(0);
        let delay = BASE
            .checked_mul(1 << (*failures).min(20))
            .unwrap_or(CAP)
            .min(CAP);
        *failures += 1;
        self.add_after(key, delay);
    }

    /// Queues the delayed keys that are due, soonest first.
    fn promote(&mut self) {
        if !self.shutting_down {
            let mut due: BinaryHeap<Reverse<(Duration, u64, u32)>> = self
                .delayed
                .iter()
                .filter(|(_, due)| **due <= self.now)
                .map(|(key, due)| Reverse((*due, self.known[key], *key)))
                .collect();
            while let Some(Reverse((_, _, key))) = due.pop() {
                self.delayed.remove(&key);
                self.add(key);
            }
        }
    }

    fn get(&mut self) -> Result<u32, TryGetError> {
        self.promote();
        let Some(key) = self.queue.pop_front() else {
            return Err(if self.shutting_down {
                TryGetError::ShutDown
            } else {
                TryGetError::Empty
            });
        };
        self.dirty.remove(&key);
        self.processing.insert(key);
        Ok(key)
    }

    fn done(&mut self, key: u32) {
        if self.processing.remove(&key) {
            if self.dirty.contains(&key) {
                self.queue.push_back(key);
            }
            self.forget_if_idle(key);
        }
    }

    fn shut_down(&mut self) {
        self.shutting_down = true;
        let delayed: Vec<u32> = self.delayed.drain().map(|(key, _)| key).collect();
        for key in delayed {
            self.forget_if_idle(key);
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(u32),
    AddAfter(u32, u64),
    AddRateLimited(u32),
    Get,
    Done(u32),
    Forget(u32),
    Advance(u64),
    ShutDown,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..6_u32;
    prop_oneof![
        6 => key.clone().prop_map(Op::Add),
        3 => (key.clone(), 0..20_u64).prop_map(|(key, ms)| Op::AddAfter(key, ms)),
        2 => key.clone().prop_map(Op::AddRateLimited),
        6 => Just(Op::Get),
        5 => key.clone().prop_map(Op::Done),
        1 => key.prop_map(Op::Forget),
        3 => (0..10_u64).prop_map(Op::Advance),
        1 => Just(Op::ShutDown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn workqueue_matches_the_sequential_model(
        collide in prop_oneof![
            Just(hasher::Collide::Not),
            Just(hasher::Collide::All),
            Just(hasher::Collide::Two),
        ],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        // Keys whose hashes collide (all one hash, or two) in the queue's
        // sets and the limiter's failure counts: the same answers.
        let _watchdog = watchdog::arm(Duration::from_secs(60));
        let state = hasher::TestState::colliding(collide);
        let clock = ManualClock::new();
        let queue: WorkQueue<u32, _> = WorkQueue::builder()
            .hasher(state)
            .clock(clock.clone())
            .rate_limiter(ExponentialBackoff::new(BASE, CAP).hasher(state))
            .build().unwrap();
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Add(key) => {
                    queue.add(key);
                    model.add(key);
                }
                Op::AddAfter(key, ms) => {
                    queue.add_after(key, Duration::from_millis(ms));
                    model.add_after(key, Duration::from_millis(ms));
                }
                Op::AddRateLimited(key) => {
                    queue.add_rate_limited(key);
                    model.add_rate_limited(key);
                }
                Op::Get => prop_assert_eq!(queue.try_get(), model.get()),
                Op::Done(key) => {
                    queue.done(&key);
                    model.done(key);
                }
                Op::Forget(key) => {
                    queue.forget(&key);
                    model.failures.remove(&key);
                }
                Op::Advance(ms) => {
                    clock.advance(Duration::from_millis(ms));
                    model.now += Duration::from_millis(ms);
                    // The queue's delay thread may move the due keys into
                    // the queue at any moment from now; its `stats` below
                    // does at the latest.
                    model.promote();
                }
                Op::ShutDown => {
                    queue.shut_down();
                    model.shut_down();
                }
            }
            queue.check_invariants();
            let stats = queue.stats();
            prop_assert_eq!(stats.depth, model.queue.len());
            prop_assert_eq!(stats.processing, model.processing.len());
            prop_assert_eq!(stats.delayed, model.delayed.len());
            prop_assert_eq!(queue.is_shutting_down(), model.shutting_down);
            for key in 0..6 {
                let failures = model.failures.get(&key).copied().unwrap_or(0);
                prop_assert_eq!(queue.num_requeues(&key), failures);
            }
        }
    }
}

// ---------------------------------------------------------------------
// Stress: more tasks than cores, exact accounting.

/// 4 producers add 100,000 keys each over 1,000 keys, bumping the key's
/// version before each add; 4 workers take keys with `get_async`. No key
/// is ever held by two workers (a per-key in-flight counter), every key's
/// last processing saw its last version (no lost add), and every add that
/// was not deduplicated was taken and processed exactly once. Well under
/// a second in a debug build on 2 cores.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workqueue_stress_producers_and_workers() {
    const PRODUCERS: u64 = 4;
    const ADDS_EACH: u64 = 100_000;
    const ADDS: u64 = PRODUCERS * ADDS_EACH;
    const KEYS: u64 = 1_000;
    struct PerKey {
        version: AtomicU64,
        in_flight: AtomicU64,
        seen: AtomicU64,
    }
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let queue = Arc::new(WorkQueue::<u64>::new());
    let keys: Arc<Vec<PerKey>> = Arc::new(
        (0..KEYS)
            .map(|_| PerKey {
                version: AtomicU64::new(0),
                in_flight: AtomicU64::new(0),
                seen: AtomicU64::new(0),
            })
            .collect(),
    );
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (queue, keys) = (Arc::clone(&queue), Arc::clone(&keys));
            tokio::spawn(async move {
                let mut processed = 0_u64;
                while let Some(key) = queue.get_async().await {
                    let state = &keys[key as usize];
                    let before = state.in_flight.fetch_add(1, Ordering::SeqCst);
                    assert_eq!(before, 0, "key {key} is processed by two workers");
                    state
                        .seen
                        .fetch_max(state.version.load(Ordering::SeqCst), Ordering::SeqCst);
                    if processed % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                    state.in_flight.fetch_sub(1, Ordering::SeqCst);
                    queue.done(&key);
                    processed += 1;
                }
                processed
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|producer| {
            let (queue, keys) = (Arc::clone(&queue), Arc::clone(&keys));
            tokio::spawn(async move {
                for n in 0..ADDS_EACH {
                    let key = (n * 7 + producer * 13) % KEYS;
                    keys[key as usize].version.fetch_add(1, Ordering::SeqCst);
                    queue.add(key);
                    if n % 256 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    let run = async {
        for producer in producers {
            producer.await.unwrap();
        }
        queue.shut_down();
        let mut processed = 0;
        for worker in workers {
            processed += worker.await.unwrap();
        }
        processed
    };
    let processed = tokio::time::timeout(watchdog::STRESS_LIMIT, run)
        .await
        .expect("the stress test timed out");
    for (key, state) in keys.iter().enumerate() {
        assert_eq!(
            state.seen.load(Ordering::SeqCst),
            state.version.load(Ordering::SeqCst),
            "key {key}: its last add was never processed"
        );
    }
    let stats = queue.stats();
    assert_eq!(stats.taken, processed);
    assert_eq!(stats.adds, processed, "an add was lost or processed twice");
    assert_eq!(stats.processed, processed);
    assert!(stats.adds <= ADDS);
    println!("{ADDS} adds, {} deduplicated", ADDS - stats.adds);
    queue.check_invariants();
}
