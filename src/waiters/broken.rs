//! The broken variants of the waiting protocol, for the loom negative
//! controls of [`WaitFault`] (`crate::fault`); compiled only under
//! `cfg(loom)`. Each step below is a dispatcher: the broken variant the
//! model selected, else the correct step, which outside loom is the step
//! itself.

use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::{
    Waiters, Waiting, no_count_before, poll_wait, retry_then_sleep, take_every_waker,
    wake_if_waiting,
};
use crate::fault::{WaitFault, is_selected};
use crate::sync::Ordering;

/// What `before_insert` hands to `after_insert`: the waiter count
/// `CountBeforePublish` loaded before the insert, if it did.
#[derive(Default)]
pub(crate) struct Publishing(Option<bool>);

/// `CountBeforePublish`'s early load: a consumer that registers after it
/// and tried before the insert is never woken.
pub(super) fn before_publish(waiters: &Waiters) -> Publishing {
    if !is_selected(WaitFault::CountBeforePublish) {
        return no_count_before(waiters);
    }
    Publishing(Some(waiters.count.load(Ordering::Relaxed) != 0))
}

/// `after_insert`. `NoWake`: nobody is woken. `CountBeforePublish`: wakes
/// by the count loaded before the insert.
pub(super) fn wake_after(waiters: &Waiters, publishing: Publishing, added: bool) {
    if is_selected(WaitFault::NoWake) {
        return;
    }
    match publishing.0 {
        Some(waiting) => {
            if waiting && added {
                waiters.wake_all();
            }
        }
        None => wake_if_waiting(waiters, super::Publishing::default(), added),
    }
}

/// A wake-up. `WakeOne`: bumps the epoch and wakes one waiter, the first
/// pending future if there is one, else one blocked thread.
pub(super) fn take_wakers(waiters: &Waiters) -> Vec<Waker> {
    if !is_selected(WaitFault::WakeOne) {
        return take_every_waker(waiters);
    }
    waiters.wake_one();
    Vec::new()
}

/// A registered blocking waiter. `RegisterAfterCheck`: it waits without
/// trying again after registering (the try before registering is its
/// only one until a wake-up).
pub(super) fn wait_registered<T>(
    waiters: &Waiters,
    seen: u64,
    deadline: Option<Instant>,
    attempt: impl FnMut() -> Option<T>,
) -> Option<T> {
    if !is_selected(WaitFault::RegisterAfterCheck) {
        return retry_then_sleep(waiters, seen, deadline, attempt);
    }
    let seen = {
        let mut list = waiters.list.lock();
        if list.epoch == seen {
            match deadline {
                None => waiters.ready.wait(&mut list),
                Some(deadline) => {
                    if Instant::now() >= deadline {
                        return None;
                    }
                    waiters.ready.wait_until(&mut list, deadline);
                }
            }
        }
        list.epoch
    };
    retry_then_sleep(waiters, seen, deadline, attempt)
}

/// The entry `TakeThenPending` took and has not handed out yet.
pub(crate) type Held<T> = Option<T>;

/// A waiting future's poll. `TakeThenPending`: an entry found is kept and
/// `Pending` returned once (the future wakes itself), the entry handed out
/// on the next poll: dropping the future then loses it.
pub(super) fn poll_waiting<T, F: FnMut() -> Option<T>>(
    waiting: &mut Waiting<'_, T, F>,
    cx: &mut Context<'_>,
) -> Poll<T> {
    if !is_selected(WaitFault::TakeThenPending) {
        return poll_wait(waiting, cx);
    }
    if let Some(found) = waiting.held.take() {
        return Poll::Ready(found);
    }
    if let Poll::Ready(found) = poll_wait(waiting, cx) {
        waiting.held = Some(found);
        cx.waker().wake_by_ref();
    }
    Poll::Pending
}
