//! The broken variants of the flight protocol, for the loom negative
//! controls of [`FlightFault`] (`crate::fault`); compiled only under
//! `cfg(loom)`. Each step below is a dispatcher: the broken variant the
//! model selected, else the correct step, which outside loom is the step
//! itself.

use std::task::Waker;

use super::outcome::{Flight, FlightState, Wakers, register_locked, wake_all};
use super::{
    Entered, FlightGroup, Leader, Outcome, SharedError, abandon_and_hand_over, complete_failed,
    join_or_register,
};
use crate::fault::{FlightFault, is_selected};
use crate::sync::{Arc, Condvar, MutexGuard};

/// Steps 1 and 2. `SkipFlight`: check-then-act, every caller leads a
/// flight of its own that no one can join (it is never registered).
pub(super) fn enter<K, V, Q>(
    group: &FlightGroup<K, V>,
    hash: u64,
    key: &Q,
    make_key: impl FnOnce() -> K,
) -> Entered<V>
where
    K: std::borrow::Borrow<Q>,
    Q: ?Sized + Eq,
{
    if is_selected(FlightFault::SkipFlight) {
        return Entered::Leading(Arc::new(Flight::new()));
    }
    join_or_register(group, hash, key, make_key)
}

/// A failed flight's completion. `StickyError`: the waiters get the error,
/// and the flight stays registered, so later callers join it and get the
/// old error too.
pub(super) fn fail<K, V>(leader: &mut Leader<'_, K, V>, error: SharedError) {
    if is_selected(FlightFault::StickyError) {
        leader.flight.finish(Outcome::Failed(error));
        leader.finished = true;
        return;
    }
    complete_failed(leader, error);
}

/// A leader dropped unfinished. `AbandonOnPanic` (dropped while its loader's
/// panic unwinds) and `LeakOnCancel` (dropped without a panic: an async
/// leader's future dropped mid-load): the flight stays registered and its
/// waiters are never woken.
pub(super) fn abandon<K, V>(leader: &mut Leader<'_, K, V>) {
    let panicking = std::thread::panicking();
    if (panicking && is_selected(FlightFault::AbandonOnPanic))
        || (!panicking && is_selected(FlightFault::LeakOnCancel))
    {
        return;
    }
    abandon_and_hand_over(leader);
}

/// A finished flight's wake-up. `NotifyOne`: one blocked waiter is woken,
/// the others sleep forever. `WakeOneAsync`: one async waiter is woken.
pub(super) fn wake(done: &Condvar, wakers: Wakers) {
    let notify_one = is_selected(FlightFault::NotifyOne);
    let wake_one_async = is_selected(FlightFault::WakeOneAsync);
    if !notify_one && !wake_one_async {
        return wake_all(done, wakers);
    }
    if notify_one {
        done.notify_one();
    } else {
        done.notify_all();
    }
    let mut wakers = wakers.into_iter().flatten();
    if wake_one_async {
        if let Some(waker) = wakers.next() {
            waker.wake();
        }
        return;
    }
    for waker in wakers {
        waker.wake();
    }
}

/// An async waiter's registration. `RegisterUnlocked`: the lock that found
/// the flight loading is released before the registration takes it again,
/// so a `finish` in between is never seen (a lost wake-up).
pub(super) fn register<V>(
    flight: &Flight<V>,
    inner: MutexGuard<'_, FlightState<V>>,
    waker: &Waker,
) -> usize {
    if is_selected(FlightFault::RegisterUnlocked) {
        drop(inner);
        return register_locked(flight, flight.inner.lock(), waker);
    }
    register_locked(flight, inner, waker)
}
