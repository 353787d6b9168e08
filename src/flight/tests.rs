//! Unit tests of the flight core, sync and async.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn concurrent_misses_load_once_and_share() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let group = FlightGroup::<u32, u32>::new();
    let cache = Mutex::new(None::<u32>);
    let loads = AtomicUsize::new(0);
    let barrier = std::sync::Barrier::new(8);
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    group
                        .load::<(), _, _, _>(
                            7,
                            &1,
                            || *cache.lock(),
                            || {
                                loads.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_millis(20));
                                Ok(42)
                            },
                            |v| *cache.lock() = Some(*v),
                        )
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    assert!(results.iter().all(|(v, _)| *v == 42));
    assert_eq!(
        results
            .iter()
            .filter(|(_, s)| *s == Obtained::Loaded)
            .count(),
        1
    );
    assert_eq!(group.in_flight(), 0);
}

#[test]
fn errors_are_returned_and_not_kept() {
    let group = FlightGroup::<u32, u32>::new();
    let err = group
        .load(1, &1, || None, || Err::<u32, _>("down"), |_| {})
        .unwrap_err();
    assert_eq!(*err, "down");
    assert_eq!(group.in_flight(), 0);
    let (v, source) = group
        .load::<&str, _, _, _>(1, &1, || None, || Ok(5), |_| {})
        .unwrap();
    assert_eq!((v, source), (5, Obtained::Loaded));
}

#[test]
fn panicking_loader_releases_the_flight() {
    let group = FlightGroup::<u32, u32>::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        group.load::<(), _, _, _>(1, &1, || None, || panic!("loader failed"), |_| {})
    }));
    assert!(outcome.is_err());
    assert_eq!(group.in_flight(), 0);
    let (v, _) = group
        .load::<(), _, _, _>(1, &1, || None, || Ok(9), |_| {})
        .unwrap();
    assert_eq!(v, 9);
}

#[test]
fn reentrant_load_panics_instead_of_hanging() {
    let group = FlightGroup::<u32, u32>::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        group.load::<(), _, _, _>(
            1,
            &1,
            || None,
            || {
                group
                    .load::<(), _, _, _>(1, &1, || None, || Ok(1), |_| {})
                    .map(|(v, _)| v)
                    .map_err(|_| ())
            },
            |_| {},
        )
    }));
    let message = outcome.unwrap_err();
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("re-entrant load"), "got {text:?}");
    assert_eq!(group.in_flight(), 0);
}

#[test]
fn different_keys_do_not_wait_for_each_other() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let group = FlightGroup::<u32, u32>::new();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let group = &group;
    std::thread::scope(|s| {
        s.spawn(move || {
            group
                .load::<(), _, _, _>(
                    1,
                    &1,
                    || None,
                    || {
                        started_tx.send(()).unwrap();
                        release_rx.recv().unwrap();
                        Ok(1)
                    },
                    |_| {},
                )
                .unwrap();
        });
        started_rx.recv().unwrap();
        assert_eq!(group.in_flight(), 1);
        // Key 1 is loading and blocked; key 2, given a hash of the same
        // shard, must still load at once.
        let same_shard = (2u64..)
            .find(|&hash| super::shard_of(hash) == super::shard_of(1))
            .unwrap();
        let (v, _) = group
            .load::<(), _, _, _>(same_shard, &2, || None, || Ok(2), |_| {})
            .unwrap();
        assert_eq!(v, 2);
        release_tx.send(()).unwrap();
    });
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    future.poll(&mut cx)
}

/// An async caller of key 1 (hash 1) whose cache always misses, with `load`
/// as its loader; outputs its result and how it was obtained.
fn load_key_one(
    group: &FlightGroup<u32, u32>,
    load: impl std::future::Future<Output = Result<u32, ()>>,
) -> impl std::future::Future<Output = (Result<u32, Arc<()>>, Obtained)> {
    group.load_async(
        &1,
        Caller {
            cx: (),
            hash: 1,
            init: load,
            make_key: |_: &u32| 1,
            lookup: |(), _: &u32, _| Err(()),
            load: |(), _, load| load,
            publish: |(), _: &u32, _, _: &u32, ()| {},
            done: |(), _, outcome, source, _| (outcome, source),
        },
    )
}

#[test]
fn dropped_async_waiter_deregisters_its_waker() {
    let group = FlightGroup::<u32, u32>::new();
    let mut leader = Box::pin(load_key_one(&group, std::future::pending()));
    assert!(poll_once(leader.as_mut()).is_pending());
    let flight = group.flight_of(1, &1).expect("the leader's flight");
    let mut waiter = Box::pin(load_key_one(&group, async { Ok(2) }));
    assert!(poll_once(waiter.as_mut()).is_pending());
    assert!(poll_once(waiter.as_mut()).is_pending());
    assert_eq!(flight.registered_wakers(), 1, "a re-poll registers once");
    drop(waiter);
    assert_eq!(
        flight.registered_wakers(),
        0,
        "a dropped waiter left its waker"
    );
    // A new waiter reuses the emptied slot: the list does not grow with
    // waiters that come and go.
    for _ in 0..100 {
        let mut waiter = Box::pin(load_key_one(&group, async { Ok(2) }));
        assert!(poll_once(waiter.as_mut()).is_pending());
    }
    assert!(
        flight.waker_slots() <= super::outcome::INLINE_WAKERS,
        "{} slots",
        flight.waker_slots()
    );
    // Waiters alive at once each hold a slot of their own.
    let mut live: Vec<_> = (0..3)
        .map(|_| Box::pin(load_key_one(&group, async { Ok(2) })))
        .collect();
    for waiter in &mut live {
        assert!(poll_once(waiter.as_mut()).is_pending());
    }
    assert_eq!(flight.registered_wakers(), 3);
    assert!(flight.waker_slots() >= 3, "{} slots", flight.waker_slots());
    drop(live);
    assert_eq!(flight.registered_wakers(), 0);
    // The cancelled leader abandons the flight: nothing stays registered.
    drop(leader);
    assert_eq!(group.in_flight(), 0);
}

#[test]
fn cancelled_async_leader_hands_over_to_its_waiter() {
    let group = FlightGroup::<u32, u32>::new();
    let mut leader = Box::pin(load_key_one(&group, std::future::pending()));
    assert!(poll_once(leader.as_mut()).is_pending());
    let mut waiter = Box::pin(load_key_one(&group, async { Ok(2) }));
    assert!(poll_once(waiter.as_mut()).is_pending());
    drop(leader);
    match poll_once(waiter.as_mut()) {
        std::task::Poll::Ready((Ok(v), source)) => assert_eq!((v, source), (2, Obtained::Loaded)),
        _ => panic!("the waiter did not take over"),
    }
    assert_eq!(group.in_flight(), 0);
}

/// Two keys with the same hash are two flights: the second key's load
/// neither joins the first's nor gets its value. (If it joined, it would
/// wait for the first load, released after 200 ms, and get 1.)
#[test]
fn equal_hashes_of_different_keys_do_not_share_a_load() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let group = FlightGroup::<u32, u32>::new();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let group = &group;
    std::thread::scope(|s| {
        s.spawn(move || {
            group
                .load::<(), _, _, _>(
                    5,
                    &1,
                    || None,
                    || {
                        started_tx.send(()).unwrap();
                        release_rx.recv().unwrap();
                        Ok(1)
                    },
                    |_| {},
                )
                .unwrap();
        });
        started_rx.recv().unwrap();
        s.spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            release_tx.send(()).unwrap();
        });
        let (v, source) = group
            .load::<(), _, _, _>(5, &2, || None, || Ok(2), |_| {})
            .unwrap();
        assert_eq!((v, source), (2, Obtained::Loaded));
    });
    assert_eq!(group.in_flight(), 0);
}

#[test]
fn debug_shows_the_flights_in_progress() {
    let group = FlightGroup::<u32, u32>::new();
    assert_eq!(format!("{group:?}"), "FlightGroup { in_flight: 0 }");
}

/// A key whose comparison with a key carrying a sender sends on it: tells a
/// test that a caller is looking through the flights of its shard.
#[derive(Clone)]
struct SignalingKey(u32, Option<std::sync::mpsc::Sender<()>>);

impl PartialEq for SignalingKey {
    fn eq(&self, other: &Self) -> bool {
        for signal in [&self.1, &other.1].into_iter().flatten() {
            let _ = signal.send(());
        }
        self.0 == other.0
    }
}

impl Eq for SignalingKey {}

/// Only a flight of the loader's *own* key is re-entrant: a loader may join
/// the flight of another key, loaded on another thread, and wait for it.
#[test]
fn a_loader_may_wait_for_the_flight_of_another_key() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let group = FlightGroup::<SignalingKey, u32>::new();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let group = &group;
    let outer = std::thread::scope(|s| {
        s.spawn(move || {
            group.load::<(), _, _, _>(
                2,
                &SignalingKey(2, None),
                || None,
                || {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    Ok(20)
                },
                |_| {},
            )
        });
        started_rx.recv().unwrap();
        // Key 2's flight is registered and its loader paused. The inner
        // call's lookup compares against it and releases it: the inner call
        // has joined that flight by the time it can finish.
        group.load::<(), _, _, _>(
            1,
            &SignalingKey(1, None),
            || None,
            || {
                let (value, source) = group
                    .load::<(), _, _, _>(
                        2,
                        &SignalingKey(2, Some(release_tx)),
                        || None,
                        || Ok(21),
                        |_| {},
                    )
                    .unwrap();
                assert_eq!(source, Obtained::Waited);
                Ok(value + 1)
            },
            |_| {},
        )
    });
    assert_eq!(outer.unwrap().0, 21);
    assert_eq!(group.in_flight(), 0);
}

/// A waker that counts its wake-ups.
struct CountingWaker(AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<CountingWaker>, std::task::Waker) {
    let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
    (Arc::clone(&counter), std::task::Waker::from(counter))
}

/// `finish` wakes the waker of each waiter's latest poll (a future may move
/// to another task between polls), and a dropped waiter takes out its own
/// waker, not another waiter's.
#[test]
fn finish_wakes_each_waiters_latest_waker() {
    use super::outcome::{Flight, Outcome, Wait};
    use std::task::{Context, Poll};
    let flight = Arc::new(Flight::<u32>::new());
    let mut first = Box::pin(Wait::new(Arc::clone(&flight)));
    let mut second = Box::pin(Wait::new(Arc::clone(&flight)));
    let (first_old, waker) = counting_waker();
    assert!(
        first
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    let (first_new, waker) = counting_waker();
    assert!(
        first
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    let (second_count, waker) = counting_waker();
    assert!(
        second
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    assert_eq!(flight.registered_wakers(), 2);
    drop(second);
    assert_eq!(flight.registered_wakers(), 1);
    flight.finish(Outcome::Value(7));
    let woken = |counter: &CountingWaker| counter.0.load(Ordering::SeqCst);
    assert_eq!(
        (woken(&first_old), woken(&first_new), woken(&second_count)),
        (0, 1, 0)
    );
    match first
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(Outcome::Value(value)) => assert_eq!(value, 7),
        _ => panic!("the waiter did not get the value"),
    }
}

/// More waiters than the list keeps inline: the list moves to the heap and
/// every waiter is still woken once with the value, the ones that spilled
/// and a slot emptied on each side of the move alike.
#[test]
fn waiters_past_the_inline_slots_are_all_woken() {
    use super::outcome::{Flight, INLINE_WAKERS, Outcome, Wait};
    use std::task::{Context, Poll};
    let flight = Arc::new(Flight::<u32>::new());
    let waiters = 3 * INLINE_WAKERS;
    let mut waits: Vec<_> = (0..waiters)
        .map(|_| Box::pin(Wait::new(Arc::clone(&flight))))
        .collect();
    let counters: Vec<_> = waits
        .iter_mut()
        .map(|wait| {
            let (counter, waker) = counting_waker();
            let polled = wait.as_mut().poll(&mut Context::from_waker(&waker));
            assert!(polled.is_pending());
            counter
        })
        .collect();
    assert_eq!(flight.registered_wakers(), waiters);
    // One waiter in the inline part and one on the heap leave.
    drop(waits.remove(waiters - 1));
    drop(waits.remove(1));
    assert_eq!(flight.registered_wakers(), waiters - 2);
    flight.finish(Outcome::Value(9));
    let woken: Vec<usize> = counters
        .iter()
        .map(|counter| counter.0.load(Ordering::SeqCst))
        .collect();
    let mut expected = vec![1; waiters];
    expected[1] = 0;
    expected[waiters - 1] = 0;
    assert_eq!(woken, expected, "wake-ups per waiter");
    for mut wait in waits {
        match wait
            .as_mut()
            .poll(&mut Context::from_waker(std::task::Waker::noop()))
        {
            Poll::Ready(Outcome::Value(value)) => assert_eq!(value, 9),
            _ => panic!("a waiter did not get the value"),
        }
    }
}
