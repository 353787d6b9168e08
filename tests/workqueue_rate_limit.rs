//! `WorkQueue`'s rate limiters through the public API: client-go's
//! limiter tests (`default_rate_limiters_test.go`) ported delay by delay,
//! then each limiter inside a queue on a manual clock, its key due exactly
//! when client-go says, step by step; the settings each constructor
//! refuses, and panicking keys in the per-key failure table.

#[path = "common/hostile.rs"]
mod hostile;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use larder::{
    BuildError, ExponentialBackoff, ItemFastSlow, ManualClock, MaxOf, RateLimiter, TokenBucket,
    TryGetError, WithMaxWait, WorkQueue,
};

const NOW: Duration = Duration::ZERO;

const fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

const fn secs(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// client-go's `TestItemExponentialFailureRateLimiter`.
#[test]
fn exponential_backoff_as_client_go() {
    let limiter = ExponentialBackoff::new(ms(1), secs(1));
    for expected in [1, 2, 4, 8, 16] {
        assert_eq!(limiter.when(&"one", NOW), ms(expected));
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two", NOW), ms(1));
    assert_eq!(limiter.when(&"two", NOW), ms(2));
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one", NOW), ms(1));
}

/// client-go's `TestItemExponentialFailureRateLimiterOverFlow`.
#[test]
fn exponential_backoff_overflow_as_client_go() {
    let limiter = ExponentialBackoff::new(ms(1), secs(1000));
    for _ in 0..5 {
        limiter.when(&"one", NOW);
    }
    assert_eq!(limiter.when(&"one", NOW), ms(32));
    for _ in 0..1000 {
        limiter.when(&"overflow1", NOW);
    }
    assert_eq!(limiter.when(&"overflow1", NOW), secs(1000));

    let hour = secs(3600);
    let limiter = ExponentialBackoff::new(secs(60), hour * 1000);
    for _ in 0..2 {
        limiter.when(&"two", NOW);
    }
    assert_eq!(limiter.when(&"two", NOW), secs(4 * 60));
    for _ in 0..1000 {
        limiter.when(&"overflow2", NOW);
    }
    assert_eq!(limiter.when(&"overflow2", NOW), hour * 1000);
}

/// client-go's `TestItemFastSlowRateLimiter`.
#[test]
fn item_fast_slow_as_client_go() {
    let limiter = ItemFastSlow::new(ms(5), secs(10), 3);
    for expected in [ms(5), ms(5), ms(5), secs(10), secs(10)] {
        assert_eq!(limiter.when(&"one", NOW), expected);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two", NOW), ms(5));
    assert_eq!(limiter.when(&"two", NOW), ms(5));
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one", NOW), ms(5));
}

/// client-go's `TestMaxOfRateLimiter`: fast-slow and exponential, the
/// later of the two.
#[test]
fn max_of_fast_slow_and_backoff_as_client_go() {
    let limiter = MaxOf::new()
        .with(ItemFastSlow::new(ms(5), secs(3), 3))
        .with(ExponentialBackoff::new(ms(1), secs(1)));
    for expected in [ms(5), ms(5), ms(5), secs(3), secs(3)] {
        assert_eq!(limiter.when(&"one", NOW), expected);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two", NOW), ms(5));
    assert_eq!(limiter.when(&"two", NOW), ms(5));
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one", NOW), ms(5));
}

/// client-go's test limiter for `WithMaxWait`: `base` for the first
/// `threshold` calls whatever the key, `max` after.
#[derive(Debug)]
struct Step {
    calls: AtomicU32,
    threshold: u32,
    base: Duration,
    max: Duration,
}

impl<K> RateLimiter<K> for Step {
    fn when(&self, _key: &K, _now: Duration) -> Duration {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.threshold {
            self.base
        } else {
            self.max
        }
    }

    fn forget(&self, _key: &K) {}

    fn num_requeues(&self, _key: &K) -> u32 {
        0
    }
}

/// client-go's `TestWithMaxWaitRateLimiter`: 100 delays of 5 ms, then
/// 1000 s capped at 500 s.
#[test]
fn with_max_wait_as_client_go() {
    let step = Step {
        calls: AtomicU32::new(0),
        threshold: 100,
        base: ms(5),
        max: secs(1000),
    };
    let limiter = WithMaxWait::new(step, secs(500));
    for key in 0..100_u32 {
        assert_eq!(limiter.when(&key, NOW), ms(5), "call {key}");
    }
    for key in 100..200_u32 {
        assert_eq!(limiter.when(&key, NOW), secs(500), "call {key}");
    }
    assert_eq!(limiter.inner().calls.load(Ordering::SeqCst), 200);
}

/// `WithMaxWait` passes `forget` and `num_requeues` to the limiter it
/// caps.
#[test]
fn with_max_wait_keeps_the_inner_counts() {
    let limiter = WithMaxWait::new(ExponentialBackoff::new(ms(5), secs(1000)), ms(12));
    assert_eq!(limiter.when(&"a", NOW), ms(5));
    assert_eq!(limiter.when(&"a", NOW), ms(10));
    assert_eq!(limiter.when(&"a", NOW), ms(12)); // 20 ms, capped
    assert_eq!(limiter.num_requeues(&"a"), 3);
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
    assert_eq!(limiter.when(&"a", NOW), ms(5));
    let zero = WithMaxWait::new(TokenBucket::new(1.0, 1), Duration::ZERO);
    for key in 0..3_u32 {
        assert_eq!(zero.when(&key, NOW), Duration::ZERO);
    }
}

/// Fails `key` once through `queue` and checks it becomes due exactly
/// `delay` later on `clock`, not a nanosecond sooner; then takes it and
/// marks it done, as a worker whose reconcile failed again would.
fn fails_then_due_after(clock: &ManualClock, queue: &WorkQueue<&'static str>, delay: Duration) {
    let key = "pod";
    queue.add_rate_limited(key);
    if !delay.is_zero() {
        clock.advance(delay - Duration::from_nanos(1));
        assert_eq!(
            queue.try_get(),
            Err(TryGetError::Empty),
            "due before {delay:?}"
        );
        clock.advance(Duration::from_nanos(1));
    }
    assert_eq!(queue.try_get(), Ok(key), "not due after {delay:?}");
    queue.done(&key);
}

fn manual_queue(
    limiter: impl RateLimiter<&'static str> + 'static,
) -> (ManualClock, WorkQueue<&'static str>) {
    let clock = ManualClock::new();
    let queue = WorkQueue::builder()
        .clock(clock.clone())
        .rate_limiter(limiter)
        .build()
        .unwrap();
    (clock, queue)
}

/// `ItemFastSlow` in a queue: three retries after 5 ms, then every retry
/// after 10 s, until `forget`.
#[test]
fn item_fast_slow_in_a_queue_step_by_step() {
    let (clock, queue) = manual_queue(ItemFastSlow::new(ms(5), secs(10), 3));
    for delay in [ms(5), ms(5), ms(5), secs(10), secs(10)] {
        fails_then_due_after(&clock, &queue, delay);
    }
    assert_eq!(queue.num_requeues(&"pod"), 5);
    queue.forget(&"pod");
    fails_then_due_after(&clock, &queue, ms(5));
    assert_eq!(queue.stats().retries, 6);
    queue.check_invariants();
}

/// `WithMaxWait` over client-go's default controller limiter in a queue:
/// the backoff doubles from 5 ms, and is capped at 30 ms.
#[test]
fn with_max_wait_in_a_queue_step_by_step() {
    let limiter = WithMaxWait::new(MaxOf::controller_default(), ms(30));
    let (clock, queue) = manual_queue(limiter);
    for delay in [ms(5), ms(10), ms(20), ms(30), ms(30)] {
        fails_then_due_after(&clock, &queue, delay);
    }
    assert_eq!(queue.num_requeues(&"pod"), 5);
    queue.check_invariants();
}

/// The token bucket under `WithMaxWait` in a queue: the bucket's
/// reservations run ahead under a burst of failures; the cap bounds each
/// key's wait.
#[test]
fn with_max_wait_caps_a_token_bucket_in_a_queue() {
    let limiter = WithMaxWait::new(TokenBucket::new(10.0, 1), ms(150));
    let (clock, queue) = manual_queue(limiter);
    for key in ["a", "b", "c", "d"] {
        queue.add_rate_limited(key); // the bucket says 0, 100, 200, 300 ms
    }
    assert_eq!(queue.try_get(), Ok("a"));
    clock.advance(ms(100));
    assert_eq!(queue.try_get(), Ok("b"));
    assert_eq!(queue.try_get(), Err(TryGetError::Empty));
    clock.advance(ms(50));
    let mut due: Vec<_> = std::iter::from_fn(|| queue.try_get().ok()).collect();
    due.sort_unstable();
    assert_eq!(due, ["c", "d"], "the cap did not bound the bucket's delay");
}

#[test]
fn item_fast_slow_refuses_a_fast_delay_above_the_slow_one() {
    let error = ItemFastSlow::<u32>::try_new(secs(2), secs(1), 3).unwrap_err();
    assert!(
        matches!(error, BuildError::FastAboveSlow { fast, slow } if fast == secs(2) && slow == secs(1)),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "fast retry delay 2s is above the slow one 1s"
    );
    // Equal delays, zero or any count of fast attempts: valid.
    assert!(ItemFastSlow::<u32>::try_new(secs(1), secs(1), 0).is_ok());
    assert!(ItemFastSlow::<u32>::try_new(Duration::ZERO, Duration::ZERO, u32::MAX).is_ok());
}

#[test]
fn the_new_limiters_print_their_settings() {
    let fast_slow = ItemFastSlow::new(ms(5), secs(10), 3);
    fast_slow.when(&1_u32, NOW);
    let printed = format!("{fast_slow:?}");
    assert!(printed.starts_with("ItemFastSlow"), "{printed}");
    assert!(
        printed.contains("fast_attempts: 3") && printed.contains("keys: 1"),
        "{printed}"
    );
    let capped = WithMaxWait::new(TokenBucket::new(1.0, 1), secs(1));
    let printed = format!("{capped:?}");
    assert!(
        printed.starts_with("WithMaxWait") && printed.contains("TokenBucket"),
        "{printed}"
    );
}

/// A panicking `Hash`, `Eq`, `Clone` or `Drop` of a key, at every call of
/// `when` and `forget`, leaves the per-key failure table (shared by
/// `ItemFastSlow` and `ExponentialBackoff`) consistent: the other key's
/// count is kept, and the limiter goes on counting.
#[test]
fn item_fast_slow_survives_panicking_keys() {
    use hostile::{Key, Trait, sweep};
    for t in [Trait::Hash, Trait::Eq, Trait::Clone, Trait::Drop] {
        sweep(
            t,
            64,
            || {
                let limiter = ItemFastSlow::new(ms(5), secs(10), 2);
                limiter.when(&Key::new(1), NOW);
                limiter.when(&Key::new(2), NOW);
                limiter
            },
            |limiter| {
                limiter.when(&Key::new(1), NOW);
                limiter.when(&Key::new(3), NOW);
                limiter.forget(&Key::new(1));
            },
            |limiter, _| {
                assert_eq!(limiter.num_requeues(&Key::new(2)), 1, "an untouched key");
                let one = limiter.num_requeues(&Key::new(1));
                assert!(one <= 2, "key 1 counted {one} failures");
                let expected = if one < 2 { ms(5) } else { secs(10) };
                assert_eq!(limiter.when(&Key::new(1), NOW), expected);
                assert_eq!(limiter.num_requeues(&Key::new(1)), one + 1);
            },
        );
    }
}
