//! Waiting consumption: the forms of `pop_first` and `drain_to` that wait
//! for an entry, blocking (`*_wait`, `*_timeout`) or as a future
//! (`*_async`), and the wake-up protocol between them and `insert`.
//!
//! # Protocol
//!
//! [`Waiters`] holds a count of registered waiters (blocked threads and
//! pending futures), and under one mutex an epoch and the wakers of the
//! pending futures. A blocked thread waits on the condvar beside it.
//!
//! A consumer:
//!
//! 1. tries the operation (`pop_first` or `drain_to`, the engine's own
//!    atomic step); if it took something, it is done;
//! 2. registers: under the mutex, adds 1 to the count and reads the epoch;
//! 3. tries again, with no lock of ours held; if it took something, it
//!    deregisters and is done;
//! 4. under the mutex, if the epoch is the one it read, waits (a thread on
//!    the condvar, a future by leaving its waker and returning `Pending`);
//!    else it reads the new epoch and goes back to 3.
//!
//! A producer, after `insert` added a new key and released the engine's
//! locks, loads the count; if it is 0 it is done (the cost of the protocol
//! on a write with no waiters: one load of a word no writer writes).
//! Otherwise, under the mutex, it bumps the epoch, notifies the condvar's
//! threads and takes every waker, and wakes them after unlocking. Every
//! waiter is woken, not one: a woken future may be dropped before it polls
//! again, and a `drain_to` waiter may want another range than the new key,
//! so a single wake-up could land where nobody takes the entry.
//!
//! # No lost wake-up
//!
//! The window is between a consumer finding the index empty and it
//! sleeping. Two cases, for a consumer C and a producer P inserting key k:
//!
//! - P's count load does not see C's registration. Then C's retry (step 3)
//!   sees k (or the index after someone else took k). P's insert and C's
//!   retry both take the engine's locks: the one write lock of
//!   [`OrderedLock::Single`](super::OrderedLock::Single) and `Sharded`, or,
//!   with leaves, the router's read lock and the leaf that holds k (C's
//!   step locks the first leaf, or all leaves up to its bound, which holds
//!   k if k is in C's range; a leaf split or merge in between goes through
//!   the router's write lock, which orders the two steps the same way). If
//!   C's retry took those locks before P did, C's registration (sequenced
//!   before its retry) happens before P's count load, which by coherence
//!   then sees it, even Relaxed: a contradiction. So P's insert came first,
//!   and C's retry happens after it and sees k.
//! - P's count load sees the registration. P then bumps the epoch under the
//!   mutex. If C reaches step 4 before that, it is waiting and P's notify
//!   or wake reaches it (the mutex is held from C's epoch check to its
//!   wait); if after, C finds the epoch changed and retries.
//!
//! The loom models in `loom-tests/tests/ordered_wait.rs` check this, and
//! that each broken variant of [`WaitFault`] deadlocks or loses an entry.
//!
//! # Cancellation
//!
//! A future removes an entry only inside the `poll` that returns `Ready`
//! with it, so dropping a pending future takes nothing; its drop only
//! deregisters it.
//!
//! # Locks
//!
//! One mutex, never held while calling into the engine or running user
//! code (the consumer's retry runs with it released; wakers are woken after
//! it is released).

use std::borrow::Borrow;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ops::Bound;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::OrderedIndex;
use crate::sync::{Arc, AtomicUsize, CachePadded, Condvar, Mutex, Ordering};

/// A deliberately broken wake-up protocol, for the loom suite's negative
/// controls ([`OrderedIndexBuilder::build_with_wait_fault`]).
///
/// [`OrderedIndexBuilder::build_with_wait_fault`]: super::OrderedIndexBuilder::build_with_wait_fault
#[cfg(loom)]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFault {
    /// The correct protocol.
    None,
    /// `insert` never wakes anyone.
    NoWake,
    /// `insert` loads the waiter count before it publishes the entry (and
    /// wakes only if that early load saw a waiter).
    CountBeforePublish,
    /// A blocking consumer registers after its failed try and waits without
    /// trying again.
    RegisterAfterCheck,
    /// `insert` wakes one waiter: the first pending future if there is one,
    /// else one blocked thread.
    WakeOne,
    /// A future that finds an entry keeps it and returns `Pending` once
    /// (waking itself), handing it out on the next poll: dropping it then
    /// loses the entry.
    TakeThenPending,
}

/// What [`Waiters::before_insert`] hands to [`Waiters::after_insert`]:
/// nothing, except the early count load of a loom negative control.
pub(crate) struct Publishing(#[cfg(loom)] Option<bool>);

/// The consumers waiting for an entry of one index.
pub(crate) struct Waiters {
    /// The number of registered waiters. Changed under `list`'s mutex; read
    /// by every producer without it (see the module docs for why Relaxed is
    /// enough). On a line of its own, so that the producers' loads of it do
    /// not share a line with anything written.
    count: CachePadded<AtomicUsize>,
    list: Mutex<WaitList>,
    /// Where blocked threads wait.
    ready: Condvar,
    #[cfg(loom)]
    pub(super) fault: WaitFault,
}

/// The state under the mutex.
#[derive(Default)]
struct WaitList {
    /// Bumped by every wake-up, so that a consumer whose retry raced with
    /// one sees that it must retry again.
    epoch: u64,
    /// The pending futures' wakers, by registration slot; `None` for a slot
    /// whose waker was taken by a wake-up (or is free).
    wakers: Vec<Option<Waker>>,
    /// The free slots of `wakers`.
    free: Vec<usize>,
}

/// A blocking waiter's registration; deregisters on drop, panics included.
struct Registration<'a>(&'a Waiters);

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        // A loom model that deadlocks unwinds its threads, and a loom
        // atomic touched then aborts the process instead of failing the
        // model (the negative controls rely on the failure).
        #[cfg(loom)]
        if std::thread::panicking() {
            return;
        }
        // Relaxed: a late decrement only costs a producer a needless wake-up.
        self.0.count.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Waiters {
    pub(crate) fn new() -> Self {
        Self {
            count: CachePadded::new(AtomicUsize::new(0)),
            list: Mutex::new(WaitList::default()),
            ready: Condvar::new(),
            #[cfg(loom)]
            fault: WaitFault::None,
        }
    }

    /// Called by `insert` before it touches the engine: nothing, except
    /// in the loom negative control [`WaitFault::CountBeforePublish`].
    #[inline(always)]
    pub(crate) fn before_insert(&self) -> Publishing {
        #[cfg(loom)]
        if self.fault == WaitFault::CountBeforePublish {
            // BROKEN on purpose: a consumer that registers after this load
            // and tried before the insert is never woken.
            return Publishing(Some(self.count.load(Ordering::Relaxed) != 0));
        }
        Publishing(
            #[cfg(loom)]
            None,
        )
    }

    /// Called by `insert` after the engine's insert released its locks:
    /// wakes the waiters if `added` a new key and anyone waits.
    #[inline(always)]
    pub(crate) fn after_insert(&self, publishing: Publishing, added: bool) {
        #[cfg(loom)]
        match (self.fault, publishing.0) {
            (WaitFault::NoWake, _) => return,
            (_, Some(waiting)) => {
                if waiting && added {
                    self.wake_all();
                }
                return;
            }
            _ => {}
        }
        let _ = publishing;
        // Relaxed: this load comes after the insert released the engine's
        // locks, and a registration it must see is sequenced before the
        // consumer's retry under those locks (module docs, "No lost
        // wake-up").
        if added && self.count.load(Ordering::Relaxed) != 0 {
            self.wake_all();
        }
    }

    /// Wakes every waiter.
    #[cold]
    fn wake_all(&self) {
        let wakers: Vec<Waker> = {
            let mut list = self.list.lock();
            list.epoch = list.epoch.wrapping_add(1);
            #[cfg(loom)]
            if self.fault == WaitFault::WakeOne {
                // BROKEN on purpose: one waiter woken.
                return match list.wakers.iter_mut().find_map(Option::take) {
                    Some(waker) => {
                        drop(list);
                        waker.wake();
                    }
                    None => {
                        self.ready.notify_one();
                    }
                };
            }
            self.ready.notify_all();
            list.wakers.iter_mut().filter_map(Option::take).collect()
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// Registers a blocking waiter; returns its registration and the epoch.
    fn register(&self) -> (Registration<'_>, u64) {
        let list = self.list.lock();
        // Relaxed: ordered before the retry that follows by program order,
        // and through the engine's locks before a producer's load.
        self.count.fetch_add(1, Ordering::Relaxed);
        (Registration(self), list.epoch)
    }

    /// Blocks until `attempt` returns something, or until `deadline`.
    fn wait<T>(
        &self,
        deadline: Option<Instant>,
        mut attempt: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        if let Some(found) = attempt() {
            return Some(found);
        }
        let (_registration, mut seen) = self.register();
        #[cfg(loom)]
        let mut skip_retry = self.fault == WaitFault::RegisterAfterCheck;
        loop {
            #[cfg(loom)]
            let retry = !std::mem::take(&mut skip_retry);
            #[cfg(not(loom))]
            let retry = true;
            if retry {
                if let Some(found) = attempt() {
                    return Some(found);
                }
            }
            let mut list = self.list.lock();
            if list.epoch == seen {
                match deadline {
                    None => self.ready.wait(&mut list),
                    Some(deadline) => {
                        if Instant::now() >= deadline {
                            return None;
                        }
                        // Timed out or not, the loop retries once more and
                        // then looks at the clock.
                        let _ = self.ready.wait_until(&mut list, deadline);
                    }
                }
            }
            seen = list.epoch;
        }
    }

    /// One poll of a future waiting for `attempt`; `registered` is its slot
    /// and the epoch it last saw, once it has registered.
    fn poll_wait<T>(
        &self,
        registered: &mut Option<(usize, u64)>,
        cx: &mut Context<'_>,
        attempt: &mut impl FnMut() -> Option<T>,
    ) -> Poll<T> {
        loop {
            if let Some(found) = attempt() {
                self.deregister(registered);
                return Poll::Ready(found);
            }
            let mut list = self.list.lock();
            match registered {
                None => {
                    let slot = list.free.pop().unwrap_or_else(|| {
                        list.wakers.push(None);
                        list.wakers.len() - 1
                    });
                    // Relaxed: as in `register`.
                    self.count.fetch_add(1, Ordering::Relaxed);
                    *registered = Some((slot, list.epoch));
                }
                Some((_, seen)) if *seen != list.epoch => *seen = list.epoch,
                Some((slot, _)) => {
                    // Left under the mutex, in the section that found the
                    // epoch unchanged: the next wake-up takes it.
                    let waker = &mut list.wakers[*slot];
                    match waker {
                        Some(old) if old.will_wake(cx.waker()) => {}
                        _ => *waker = Some(cx.waker().clone()),
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    /// Gives back a future's slot, if it has one.
    fn deregister(&self, registered: &mut Option<(usize, u64)>) {
        if let Some((slot, _)) = registered.take() {
            let waker = {
                let mut list = self.list.lock();
                list.free.push(slot);
                self.count.fetch_sub(1, Ordering::Relaxed);
                list.wakers[slot].take()
            };
            drop(waker);
        }
    }
}

#[cfg(all(test, not(loom)))]
impl Waiters {
    /// Waiters registered now (for tests).
    pub(crate) fn registered(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// How many wake-ups there were (for tests).
    pub(crate) fn epoch(&self) -> u64 {
        self.list.lock().epoch
    }
}

/// The future of the `*_async` forms: polls `attempt` and waits between
/// polls as [`Waiters`] says.
struct Waiting<'a, T, F> {
    waiters: &'a Waiters,
    attempt: F,
    registered: Option<(usize, u64)>,
    /// [`WaitFault::TakeThenPending`]'s entry, taken and not yet returned.
    #[cfg(loom)]
    stash: Option<T>,
    output: PhantomData<fn() -> T>,
}

// No field is pinned: `poll` moves nothing out of `self` but the output.
impl<T, F> Unpin for Waiting<'_, T, F> {}

impl<'a, T, F: FnMut() -> Option<T>> Waiting<'a, T, F> {
    fn new(waiters: &'a Waiters, attempt: F) -> Self {
        Self {
            waiters,
            attempt,
            registered: None,
            #[cfg(loom)]
            stash: None,
            output: PhantomData,
        }
    }
}

impl<T, F: FnMut() -> Option<T>> Future for Waiting<'_, T, F> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        #[cfg(loom)]
        if this.waiters.fault == WaitFault::TakeThenPending {
            if let Some(found) = this.stash.take() {
                return Poll::Ready(found);
            }
            if let Poll::Ready(found) =
                this.waiters
                    .poll_wait(&mut this.registered, cx, &mut this.attempt)
            {
                // BROKEN on purpose: taken, but not handed out in this poll.
                this.stash = Some(found);
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            return Poll::Pending;
        }
        this.waiters
            .poll_wait(&mut this.registered, cx, &mut this.attempt)
    }
}

impl<T, F> Drop for Waiting<'_, T, F> {
    fn drop(&mut self) {
        // As in `Registration`'s drop.
        #[cfg(loom)]
        if std::thread::panicking() {
            return;
        }
        self.waiters.deregister(&mut self.registered);
    }
}

/// The deadline `timeout` from now; `None` (no deadline) if it is too far
/// to represent.
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// The waiting forms of ordered consumption.
impl<K: Ord + Clone + Hash, V, S: BuildHasher> OrderedIndex<K, V, S> {
    /// Removes and returns the entry with the least key, blocking the
    /// calling thread until there is one. The blocking twin of
    /// [`pop_first`](OrderedIndex::pop_first), as `Receiver::recv` is of
    /// `try_recv`.
    ///
    /// Each entry still goes to exactly one caller, whether it pops, waits
    /// or drains. Waiters are not served in any order: each new key wakes
    /// them all and they race for it, so of several consumers waiting for
    /// one entry, one gets it and the others wait again.
    ///
    /// Never call it from async code: it blocks the executor's thread.
    /// There, use [`pop_first_async`](OrderedIndex::pop_first_async).
    ///
    /// # Deadlocks
    ///
    /// Waits forever if no other thread ever inserts. Use
    /// [`pop_first_timeout`](OrderedIndex::pop_first_timeout) to bound the
    /// wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    /// use std::sync::Arc;
    /// use std::thread;
    ///
    /// let offsets = Arc::new(OrderedIndex::new());
    /// let consumer = {
    ///     let offsets = Arc::clone(&offsets);
    ///     thread::spawn(move || offsets.pop_first_wait())
    /// };
    /// offsets.insert(7_u64, "message 7");
    /// let (offset, message) = consumer.join().unwrap();
    /// assert_eq!((offset, *message), (7, "message 7"));
    /// ```
    pub fn pop_first_wait(&self) -> (K, Arc<V>) {
        self.waiters
            .wait(None, || self.pop_first())
            .expect("larder: a wait without a deadline ends with an entry")
    }

    /// Removes and returns the entry with the least key, blocking the
    /// calling thread for at most `timeout` until there is one; `None` if
    /// none came in time (as `Receiver::recv_timeout`).
    ///
    /// An entry present on the call, or inserted during the wait, is taken
    /// at once (a zero `timeout` is one `pop_first`). Otherwise as
    /// [`pop_first_wait`](OrderedIndex::pop_first_wait). A `timeout` too
    /// large to add to the current `Instant` waits forever.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    /// use std::time::Duration;
    ///
    /// let offsets: OrderedIndex<u64, &str> = OrderedIndex::new();
    /// assert_eq!(offsets.pop_first_timeout(Duration::from_millis(10)), None);
    /// offsets.insert(8, "message 8");
    /// let popped = offsets.pop_first_timeout(Duration::from_secs(1));
    /// assert_eq!(popped.map(|(offset, _)| offset), Some(8));
    /// ```
    pub fn pop_first_timeout(&self, timeout: Duration) -> Option<(K, Arc<V>)> {
        match deadline_after(timeout) {
            Some(deadline) => self.waiters.wait(Some(deadline), || self.pop_first()),
            None => Some(self.pop_first_wait()),
        }
    }

    /// Removes and returns the entry with the least key, waiting as a
    /// future until there is one. For async code: no thread is blocked, and
    /// it runs on any executor (it needs no runtime).
    ///
    /// **Cancel-safe**: the entry is removed only inside the `poll` that
    /// returns it, so a future dropped before it completes (by a timeout, a
    /// `select!` branch that lost, an aborted task) has taken nothing, and
    /// the entry goes to another consumer. Polling it does not hold any
    /// lock across `.await`s.
    ///
    /// Each entry goes to exactly one consumer among every `pop_first`,
    /// `drain_to` and waiting form, sync or async. Waiters are not served
    /// in any order.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let offsets = Arc::new(OrderedIndex::new());
    /// let consumer = {
    ///     let offsets = Arc::clone(&offsets);
    ///     tokio::spawn(async move { offsets.pop_first_async().await })
    /// };
    /// offsets.insert(9_u64, "message 9");
    /// let (offset, _message) = consumer.await.unwrap();
    /// assert_eq!(offset, 9);
    ///
    /// // A wait cut short by a timeout takes nothing.
    /// let late = tokio::time::timeout(Duration::from_millis(10), offsets.pop_first_async()).await;
    /// assert!(late.is_err());
    /// offsets.insert(10, "message 10");
    /// assert_eq!(offsets.pop_first().map(|(offset, _)| offset), Some(10));
    /// # }
    /// ```
    pub fn pop_first_async(&self) -> impl Future<Output = (K, Arc<V>)> + '_ {
        Waiting::new(&self.waiters, || self.pop_first())
    }

    /// Removes and returns, in key order, every entry up to `end` as one
    /// atomic step, as [`drain_to`](OrderedIndex::drain_to) does, blocking
    /// the calling thread until there is at least one. The returned `Vec`
    /// is never empty.
    ///
    /// Keys inserted beyond `end` wake the waiter, which finds nothing and
    /// waits again. Otherwise as
    /// [`pop_first_wait`](OrderedIndex::pop_first_wait), and like it not for
    /// async code ([`drain_to_async`](OrderedIndex::drain_to_async)).
    ///
    /// # Deadlocks
    ///
    /// Waits forever if no other thread ever inserts a key up to `end`.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    /// use std::ops::Bound;
    /// use std::sync::Arc;
    /// use std::thread;
    ///
    /// let offsets = Arc::new(OrderedIndex::new());
    /// let committer = {
    ///     let offsets = Arc::clone(&offsets);
    ///     thread::spawn(move || offsets.drain_to_wait(Bound::Included(&100)))
    /// };
    /// offsets.insert(101_u64, ()); // beyond the bound: the drain goes on waiting
    /// offsets.insert(99, ());
    /// let drained = committer.join().unwrap();
    /// assert_eq!(drained[0].0, 99);
    /// assert_eq!(offsets.first().map(|(offset, _)| offset), Some(101));
    /// ```
    pub fn drain_to_wait<Q>(&self, end: Bound<&Q>) -> Vec<(K, Arc<V>)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.waiters
            .wait(None, || {
                Some(self.drain_to(end)).filter(|drained| !drained.is_empty())
            })
            .expect("larder: a wait without a deadline ends with entries")
    }

    /// Removes and returns, in key order, every entry up to `end` as one
    /// atomic step, blocking the calling thread for at most `timeout` until
    /// there is at least one; an empty `Vec` if none came in time.
    ///
    /// Otherwise as [`drain_to_wait`](OrderedIndex::drain_to_wait); a zero
    /// `timeout` is one [`drain_to`](OrderedIndex::drain_to).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    /// use std::ops::Bound;
    /// use std::time::Duration;
    ///
    /// let offsets: OrderedIndex<u64, ()> = OrderedIndex::new();
    /// offsets.insert(5, ());
    /// let wait = Duration::from_millis(10);
    /// assert!(offsets.drain_to_timeout(Bound::Excluded(&5), wait).is_empty());
    /// assert_eq!(offsets.drain_to_timeout(Bound::Included(&5), wait).len(), 1);
    /// ```
    pub fn drain_to_timeout<Q>(&self, end: Bound<&Q>, timeout: Duration) -> Vec<(K, Arc<V>)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match deadline_after(timeout) {
            Some(deadline) => self
                .waiters
                .wait(Some(deadline), || {
                    Some(self.drain_to(end)).filter(|drained| !drained.is_empty())
                })
                .unwrap_or_default(),
            None => self.drain_to_wait(end),
        }
    }

    /// Removes and returns, in key order, every entry up to `end` as one
    /// atomic step, waiting as a future until there is at least one. The
    /// returned `Vec` is never empty.
    ///
    /// Cancel-safe as [`pop_first_async`](OrderedIndex::pop_first_async):
    /// entries are removed only in the `poll` that returns them.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    /// use std::ops::Bound;
    /// use std::sync::Arc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let offsets = Arc::new(OrderedIndex::new());
    /// let committer = {
    ///     let offsets = Arc::clone(&offsets);
    ///     tokio::spawn(async move { offsets.drain_to_async(Bound::Included(&100)).await })
    /// };
    /// for offset in [98_u64, 99, 100] {
    ///     offsets.insert(offset, ());
    /// }
    /// let drained = committer.await.unwrap();
    /// assert!(!drained.is_empty() && drained.iter().all(|(offset, _)| *offset <= 100));
    /// # }
    /// ```
    pub fn drain_to_async<'a, Q>(
        &'a self,
        end: Bound<&'a Q>,
    ) -> impl Future<Output = Vec<(K, Arc<V>)>> + 'a
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        Waiting::new(&self.waiters, move || {
            Some(self.drain_to(end)).filter(|drained| !drained.is_empty())
        })
    }
}
