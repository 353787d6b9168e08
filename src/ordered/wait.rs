//! Waiting consumption: the forms of `pop_first` and `drain_to` that wait
//! for an entry, blocking (`*_wait`, `*_timeout`) or as a future
//! (`*_async`).
//!
//! The waiting itself and its wake-up protocol (no lost wake-up,
//! cancellation) are `crate::waiters`'s `Waiters`, shared with `WorkQueue`.

use std::borrow::Borrow;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::ops::Bound;
use std::time::{Duration, Instant};

use super::OrderedIndex;
use crate::sync::Arc;
use crate::waiters::Waiting;

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
