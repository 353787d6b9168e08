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

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::{FlightFault, SharedError};
use crate::sync::{Arc, Condvar, Mutex};

/// The outcome of a flight, or `Loading` while it runs.
pub(crate) enum State<V> {
    Loading,
    Value(Arc<V>),
    Failed(SharedError),
    Abandoned,
}

impl<V> State<V> {
    /// A copy of a finished outcome (`None` while loading).
    fn outcome(&self) -> Option<State<V>> {
        match self {
            State::Loading => None,
            State::Value(v) => Some(State::Value(Arc::clone(v))),
            State::Failed(e) => Some(State::Failed(Arc::clone(e))),
            State::Abandoned => Some(State::Abandoned),
        }
    }
}

struct Inner<V> {
    state: State<V>,
    /// The async waiters registered while loading, each under its own
    /// number so that a dropped [`Wait`] takes out its own waker.
    wakers: Vec<(u64, Waker)>,
    next_waiter: u64,
}

/// One load in progress.
pub(crate) struct Flight<V> {
    inner: Mutex<Inner<V>>,
    done: Condvar,
    fault: FlightFault,
}

impl<V> Flight<V> {
    pub(crate) fn new(fault: FlightFault) -> Self {
        Self {
            inner: Mutex::new(Inner {
                state: State::Loading,
                wakers: Vec::new(),
                next_waiter: 0,
            }),
            done: Condvar::new(),
            fault,
        }
    }

    /// A number naming this flight among the live ones (its address), for
    /// the re-entrancy check.
    pub(crate) fn id(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    /// Sets the outcome and wakes every waiter, blocked or async.
    pub(crate) fn finish(&self, outcome: State<V>) {
        let wakers = {
            let mut inner = self.inner.lock();
            inner.state = outcome;
            std::mem::take(&mut inner.wakers)
        };
        if self.fault == FlightFault::NotifyOne {
            // BROKEN on purpose (loom negative control): one blocked waiter
            // woken; the others sleep forever.
            self.done.notify_one();
        } else {
            self.done.notify_all();
        }
        if self.fault == FlightFault::WakeOneAsync {
            // BROKEN on purpose (loom negative control): `notify_one` for
            // the async waiters; the others are never woken.
            if let Some((_, waker)) = wakers.into_iter().next() {
                waker.wake();
            }
            return;
        }
        for (_, waker) in wakers {
            waker.wake();
        }
    }

    /// Blocks until the flight has an outcome.
    pub(crate) fn wait(&self) -> State<V> {
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
    /// The number of this waiter's waker in the list, once registered.
    registered: Option<u64>,
}

impl<V> Wait<V> {
    pub(crate) fn new(flight: Arc<Flight<V>>) -> Self {
        Self {
            flight,
            registered: None,
        }
    }
}

impl<V> Future for Wait<V> {
    type Output = State<V>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<State<V>> {
        let this = &mut *self;
        let mut inner = this.flight.inner.lock();
        if let Some(outcome) = inner.state.outcome() {
            // `finish` emptied the list when it set the outcome.
            this.registered = None;
            return Poll::Ready(outcome);
        }
        match this.registered {
            Some(number) => {
                if let Some((_, waker)) = inner.wakers.iter_mut().find(|(n, _)| *n == number) {
                    // Polled again by another task or with another waker:
                    // keep the latest, as the `Future` contract asks.
                    if !waker.will_wake(cx.waker()) {
                        waker.clone_from(cx.waker());
                    }
                }
            }
            None => {
                let number = inner.next_waiter;
                inner.next_waiter += 1;
                inner.wakers.push((number, cx.waker().clone()));
                this.registered = Some(number);
            }
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
        if let Some(number) = self.registered {
            let mut inner = self.flight.inner.lock();
            if let Some(at) = inner.wakers.iter().position(|(n, _)| *n == number) {
                inner.wakers.swap_remove(at);
            }
        }
    }
}

impl<V> Flight<V> {
    /// Async waiters registered now (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn registered_wakers(&self) -> usize {
        self.inner.lock().wakers.len()
    }
}
