//! loom models of the async single-flight (`TypedCache::get_or_init_async`
//! over `FlightGroup::load_async`): every interleaving of two or three
//! loom threads, each driving its future with [`block_on`], over the real
//! flight code and loom's stand-ins for its mutexes. A waiter whose waker is
//! never woken parks forever, which loom reports as a deadlock.
//!
//! [`block_on`] is `loom::future::block_on` with its park/unpark spelled
//! out over a loom `Mutex`/`Condvar` and a std `Arc` waker: loom's own drops
//! a loom `Arc` while a deadlock panic unwinds, which aborts the whole test
//! binary instead of failing the one `should_panic` model (the negative
//! controls below need exactly that deadlock report).
//! Each model has a negative control that runs a deliberately broken
//! protocol (`FlightFault`) and must fail.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use larder::TypedCache;
use larder::fault::{FlightFault, inject};
use loom::sync::{Condvar, Mutex};
use loom::thread;

/// The waker of [`block_on`]: a flag under a loom mutex, and a condvar.
struct Signal {
    woken: Mutex<bool>,
    wake: Condvar,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        *self.woken.lock().unwrap() = true;
        self.wake.notify_one();
    }
}

/// Drives `future` to completion on this loom thread, parking (on a loom
/// condvar, so a lost wake-up is a reported deadlock) while it is pending.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let signal = Arc::new(Signal {
        woken: Mutex::new(false),
        wake: Condvar::new(),
    });
    let waker = Waker::from(Arc::clone(&signal));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        let mut woken = signal.woken.lock().unwrap();
        while !*woken {
            woken = signal.wake.wait(woken).unwrap();
        }
        *woken = false;
    }
}

/// Returns `Pending` once (waking itself), then `Ready`: an init that
/// suspends once, so waiters can register while it is in progress.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// `tasks` loom threads await `get_or_init_async` on one cold key, the init
/// suspending once: it runs once and everyone gets the same `Arc`.
fn exactly_one_load(tasks: usize, fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, Arc<u32>>::new());
        // A std atomic: a counter the model reads, not a protocol it checks.
        let inits = Arc::new(AtomicUsize::new(0));
        let call = {
            let cache = Arc::clone(&cache);
            let inits = Arc::clone(&inits);
            move || {
                block_on(cache.get_or_init_async(&1, || async {
                    inits.fetch_add(1, Ordering::SeqCst);
                    YieldOnce(false).await;
                    Arc::new(42)
                }))
            }
        };
        let others: Vec<_> = (1..tasks).map(|_| thread::spawn(call.clone())).collect();
        let mine = call();
        let theirs: Vec<_> = others.into_iter().map(|o| o.join().unwrap()).collect();
        assert_eq!(inits.load(Ordering::SeqCst), 1, "init ran more than once");
        for theirs in theirs {
            assert!(Arc::ptr_eq(&mine, &theirs), "callers got different values");
        }
        cache.check_invariants();
    });
}

#[test]
fn flight_async_exactly_one_load_two_tasks() {
    exactly_one_load(2, FlightFault::None);
}

#[test]
#[should_panic(expected = "init ran more than once")]
fn flight_async_exactly_one_load_negative_control_check_then_act() {
    exactly_one_load(2, FlightFault::SkipFlight);
}

#[test]
fn flight_async_exactly_one_load_three_tasks() {
    exactly_one_load(3, FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn flight_async_three_tasks_negative_control_wake_one() {
    exactly_one_load(3, FlightFault::WakeOneAsync);
}

#[test]
#[should_panic(expected = "deadlock")]
fn flight_async_two_tasks_negative_control_register_unlocked() {
    // A waiter that registers its waker under a second lock, after seeing
    // `Loading` under the first, misses a `finish` in between.
    exactly_one_load(2, FlightFault::RegisterUnlocked);
}

/// The main thread starts a load, polls it once (the init suspends; a
/// no-op waker, so nobody will poll it again) and drops it: a cancelled
/// leader. `waiters` other threads await the same key: they all complete,
/// with one value, loaded once among them.
fn cancelled_leader_hands_over(waiters: usize, fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, Arc<u32>>::new());
        let loads = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..waiters)
            .map(|_| {
                let cache = Arc::clone(&cache);
                let loads = Arc::clone(&loads);
                thread::spawn(move || {
                    block_on(cache.get_or_init_async(&1, || async {
                        loads.fetch_add(1, Ordering::SeqCst);
                        Arc::new(2)
                    }))
                })
            })
            .collect();
        {
            let leader = cache.get_or_init_async(&1, || async {
                YieldOnce(false).await;
                unreachable!("the cancelled leader is never polled again")
            });
            let mut leader = Box::pin(leader);
            let mut cx = Context::from_waker(Waker::noop());
            match leader.as_mut().poll(&mut cx) {
                // A waiter loaded and published first: a plain hit.
                Poll::Ready(value) => assert_eq!(*value, 2),
                Poll::Pending => {}
            }
            // Dropped here: cancelled mid-load (or mid-wait).
        }
        let values: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for value in &values {
            assert!(
                Arc::ptr_eq(value, &values[0]),
                "waiters got different values"
            );
            assert_eq!(**value, 2);
        }
        assert_eq!(
            loads.load(Ordering::SeqCst),
            1,
            "the waiters loaded more than once"
        );
        cache.check_invariants();
    });
}

#[test]
fn flight_async_cancelled_leader_hands_over_one_waiter() {
    cancelled_leader_hands_over(1, FlightFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn flight_async_cancelled_leader_negative_control_leak_on_cancel() {
    cancelled_leader_hands_over(1, FlightFault::LeakOnCancel);
}

#[test]
fn flight_async_cancelled_leader_hands_over_two_waiters() {
    cancelled_leader_hands_over(2, FlightFault::None);
}

/// A sync caller (blocking) and an async caller of one key share a flight,
/// whichever leads: one init, one value.
fn sync_and_async_share(fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(TypedCache::<u32, Arc<u32>>::new());
        let inits = Arc::new(AtomicUsize::new(0));
        let sync_caller = {
            let cache = Arc::clone(&cache);
            let inits = Arc::clone(&inits);
            thread::spawn(move || {
                cache.get_or_init(&1, || {
                    inits.fetch_add(1, Ordering::SeqCst);
                    Arc::new(7)
                })
            })
        };
        let mine = block_on(cache.get_or_init_async(&1, || async {
            inits.fetch_add(1, Ordering::SeqCst);
            YieldOnce(false).await;
            Arc::new(7)
        }));
        let theirs = sync_caller.join().unwrap();
        assert_eq!(inits.load(Ordering::SeqCst), 1, "init ran more than once");
        assert!(Arc::ptr_eq(&mine, &theirs), "callers got different values");
        cache.check_invariants();
    });
}

#[test]
fn flight_async_sync_and_async_callers_share_one_flight() {
    sync_and_async_share(FlightFault::None);
}

#[test]
#[should_panic(expected = "init ran more than once")]
fn flight_async_sync_and_async_negative_control_check_then_act() {
    sync_and_async_share(FlightFault::SkipFlight);
}
