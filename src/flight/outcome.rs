//! One flight and the two ways of waiting for it: a blocking wait on its
//! condition variable (sync callers) and the [`Wait`] future, whose waker
//! sits in the flight's waker list (async callers).
//!
//! Both lists are woken by the one [`Flight::finish`], so sync and async
//! callers of a key share one flight whatever form its leader has.
//!
//! # Locks
//!
//! One mutex per flight guards its state and its waker list together: a
//! waiter that sees `Loading` registers its waker (or blocks on the
//! condvar) under the same lock that `finish` takes to set the outcome, so
//! no wake-up can fall between the check and the registration. Wakers are
//! woken after the lock is released (a waker is runtime code).
//!
//! # Waker slots
//!
//! The waker list is a vector of `Option<Waker>` whose first
//! [`INLINE_WAKERS`] slots live inside the flight itself (a `SmallVec`);
//! a [`Wait`] keeps the index of the slot it registered in. A re-poll
//! updates its slot in place, a dropped `Wait` empties its slot (no search,
//! no shifting: the other waiters' indices stay valid), a new waiter reuses
//! an emptied slot before the list grows, and `finish` takes the whole list.
//! Joining a flight thus allocates nothing per waiter (the list moves to the
//! heap only past [`INLINE_WAKERS`] waiters, then grows amortised): the
//! `Wait` holds a clone of the flight's `Arc` and one index.
//!
//! # The value
//!
//! A finished flight keeps its value itself, not in an `Arc` of its own:
//! each waiter clones it out under the flight's mutex (`V: Clone`, user
//! code, on a flight whose state is final: nothing is between two states,
//! and a panicking clone unwinds through that waiter only, the mutex
//! released). The caches' values are small or `Arc`s, so the clone is a copy
//! or a reference-count increment; saving the `Arc` saves an allocation per
//! load.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use smallvec::SmallVec;

use super::SharedError;
use crate::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(loom)]
use super::broken::{register, wake};
#[cfg(not(loom))]
use {register_locked as register, wake_all as wake};

/// The outcome of a flight, or `Loading` while it runs.
pub(crate) enum Outcome<V> {
    Loading,
    Value(V),
    Failed(SharedError),
    Abandoned,
}

/// Waker slots kept inside the flight before its list moves to the heap:
/// enough for the waiters of a key most loads see.
pub(crate) const INLINE_WAKERS: usize = 8;

/// The waker list: [`INLINE_WAKERS`] slots inline, more on the heap.
pub(super) type Wakers = SmallVec<[Option<Waker>; INLINE_WAKERS]>;

impl<V: Clone> Outcome<V> {
    /// A copy of a finished outcome (`None` while loading): a value is
    /// cloned (`V: Clone`, see the module docs).
    fn outcome(&self) -> Option<Outcome<V>> {
        match self {
            Outcome::Loading => None,
            Outcome::Value(v) => Some(Outcome::Value(v.clone())),
            Outcome::Failed(e) => Some(Outcome::Failed(Arc::clone(e))),
            Outcome::Abandoned => Some(Outcome::Abandoned),
        }
    }
}

pub(super) struct FlightState<V> {
    state: Outcome<V>,
    /// The async waiters registered while loading, one slot each; a
    /// dropped [`Wait`] empties its own slot.
    wakers: Wakers,
}

/// One load in progress.
pub(crate) struct Flight<V> {
    pub(super) inner: Mutex<FlightState<V>>,
    pub(super) done: Condvar,
}

impl<V> Flight<V> {
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(FlightState {
                state: Outcome::Loading,
                wakers: Wakers::new(),
            }),
            done: Condvar::new(),
        }
    }

    /// A number naming this flight among the live ones (its address), for
    /// the re-entrancy check.
    pub(crate) fn id(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    /// Sets the outcome and wakes every waiter, blocked or async.
    pub(crate) fn finish(&self, outcome: Outcome<V>) {
        let wakers = {
            let mut inner = self.inner.lock();
            inner.state = outcome;
            std::mem::take(&mut inner.wakers)
        };
        wake(&self.done, wakers);
    }
}

/// Wakes the blocked waiters (`done`'s) and the async ones (`wakers`, taken
/// from the list under the flight's lock and woken after it).
#[inline(always)]
pub(super) fn wake_all(done: &Condvar, wakers: Wakers) {
    done.notify_all();
    for waker in wakers.into_iter().flatten() {
        waker.wake();
    }
}

/// Registers `waker` in a slot of the flight's list, under the lock
/// (`inner`) that found the flight still loading, so no `finish` can fall
/// between the check and the registration; returns the slot. A slot
/// emptied by a dropped waiter is reused before the list grows, so a long
/// load that waiters keep joining and leaving holds at most twice as many
/// slots as waiters.
pub(super) fn register_locked<V>(
    _flight: &Flight<V>,
    mut inner: MutexGuard<'_, FlightState<V>>,
    waker: &Waker,
) -> usize {
    let waker = Some(waker.clone());
    let free = if inner.wakers.len() == inner.wakers.capacity() {
        inner.wakers.iter().position(Option::is_none)
    } else {
        None
    };
    match free {
        Some(slot) => {
            inner.wakers[slot] = waker;
            slot
        }
        None => {
            inner.wakers.push(waker);
            inner.wakers.len() - 1
        }
    }
}

impl<V: Clone> Flight<V> {
    /// Blocks until the flight has an outcome.
    pub(crate) fn wait(&self) -> Outcome<V> {
        let mut inner = self.inner.lock();
        loop {
            match inner.state.outcome() {
                None => self.done.wait(&mut inner),
                Some(outcome) => return outcome,
            }
        }
    }
}

/// Waits for a flight's outcome without blocking: the async form of
/// [`Flight::wait`]. Dropping it before it completes takes its waker out of
/// the flight's list.
pub(crate) struct Wait<V> {
    flight: Arc<Flight<V>>,
    /// The index of this waiter's slot in the list, once registered.
    registered: Option<usize>,
}

impl<V> Wait<V> {
    pub(crate) fn new(flight: Arc<Flight<V>>) -> Self {
        Self {
            flight,
            registered: None,
        }
    }
}

impl<V: Clone> Future for Wait<V> {
    type Output = Outcome<V>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome<V>> {
        let this = &mut *self;
        let mut inner = this.flight.inner.lock();
        if let Some(outcome) = inner.state.outcome() {
            // `finish` emptied the list when it set the outcome.
            this.registered = None;
            return Poll::Ready(outcome);
        }
        match this.registered {
            Some(slot) => {
                if let Some(Some(waker)) = inner.wakers.get_mut(slot) {
                    // Polled again by another task or with another waker:
                    // keep the latest, as the `Future` contract asks.
                    if !waker.will_wake(cx.waker()) {
                        waker.clone_from(cx.waker());
                    }
                }
            }
            None => this.registered = Some(register(&this.flight, inner, cx.waker())),
        }
        Poll::Pending
    }
}

impl<V> Drop for Wait<V> {
    fn drop(&mut self) {
        // loom reports a deadlock by panicking in the blocked thread, and
        // can run no lock operation while that panic unwinds (a second
        // panic aborts the test run): leave the waker; the flight is
        // leaked by the broken protocol under test anyway.
        #[cfg(loom)]
        if std::thread::panicking() {
            return;
        }
        if let Some(slot) = self.registered {
            // Taken out under the lock, dropped (runtime code) after it.
            let waker = {
                let mut inner = self.flight.inner.lock();
                // Once `finish` has taken the list it is empty and the
                // state final: no slot to empty.
                inner.wakers.get_mut(slot).and_then(Option::take)
            };
            drop(waker);
        }
    }
}

impl<V> Flight<V> {
    /// Async waiters registered now (for tests).
    #[cfg(test)]
    pub(crate) fn registered_wakers(&self) -> usize {
        self.inner.lock().wakers.iter().flatten().count()
    }

    /// Slots in the waker list, used or emptied (for tests).
    #[cfg(test)]
    pub(crate) fn waker_slots(&self) -> usize {
        self.inner.lock().wakers.len()
    }
}
