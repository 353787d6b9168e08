//! [`Snapshot`]: an atomically replaced immutable value with lock-free reads.
//!
//! This is Go's `atomic.Value` holding an immutable struct, done right: the
//! value is shared as an `Arc`, replaced whole, stamped with a version, and
//! modified with read-copy-update instead of load-then-store.
//!
//! The type's docs show the lost update of load-then-store beside `update`.
//!
//! Files: this one ([`Snapshot`], its reads, stores and read-copy-update),
//! `versioned.rs` (a value with its version in one allocation),
//! `cached.rs` ([`CachedReader`]), `broken.rs` (the broken variants of the
//! loom negative controls, compiled only under `cfg(loom)`), `tests.rs`.

#[cfg(loom)]
mod broken;
mod cached;
mod versioned;

pub use cached::CachedReader;
pub use versioned::Versioned;

use std::fmt;
use std::ops::Deref;

use crate::sync::{self, Arc, AtomicArc, Mutex};

#[cfg(loom)]
use broken::{exchange, store_versioned, update_versioned};
#[cfg(not(loom))]
use {
    compare_exchange as exchange, publish_version as store_versioned,
    update_until_published as update_versioned,
};

/// An atomically replaced, immutable, versioned value with lock-free reads.
///
/// Readers call [`load`](Snapshot::load) (a short-lived guard),
/// [`load_full`](Snapshot::load_full) (an owned `Arc`) or keep a
/// [`CachedReader`] in their hottest loop. Writers publish a whole new value
/// with [`store`](Snapshot::store), [`swap`](Snapshot::swap),
/// [`compare_and_swap`](Snapshot::compare_and_swap),
/// [`update`](Snapshot::update) or [`try_update`](Snapshot::try_update).
/// Readers never block writers and never wait for them; a read writes no
/// shared memory (built on `arc_swap::ArcSwap`). Writers take turns: each
/// holds a writers' lock only while it stamps the next version and swaps
/// the value in, never while user code runs.
///
/// # What each write returns
///
/// | write | returns | why |
/// |---|---|---|
/// | [`store`](Snapshot::store) | the version it published | the cheapest write: it hands out no `Arc` |
/// | [`swap`](Snapshot::swap) | the value it replaced | `std::mem::replace`'s and `ArcSwap::swap`'s convention |
/// | [`compare_and_swap`](Snapshot::compare_and_swap) | `Ok(replaced)`, or `Err` with the value handed back and the current one | `AtomicPtr::compare_exchange`'s convention |
/// | [`update`](Snapshot::update), [`try_update`](Snapshot::try_update) | the value it published (or `f`'s error) | `f` already saw the old value; the caller wants what its change became, with its version |
///
/// Every returned value carries its version ([`Versioned::version`]).
///
/// # Guarantees
///
/// - Every write is atomic: a reader sees the old value or the new one,
///   never a mix (the value is immutable behind an `Arc`).
/// - Writes are linearizable: they take effect in one total order, and a
///   load sees the latest write that completed before it started.
/// - Every successful write stamps the published value with the previous
///   version plus one, inside the same allocation as the value. So versions
///   follow the write order exactly, and the versions one thread observes
///   never decrease.
/// - [`update`](Snapshot::update) never loses a concurrent write: its result
///   is published on top of exactly the value it was computed from.
/// - No user code runs under the writers' lock: `update`'s closure runs
///   before it is taken, and a replaced value is dropped after it is
///   released (so a value's `Drop` may write to the same snapshot).
///
/// # When to use it
///
/// Configuration, routing tables, feature flags, any read-mostly value that is
/// replaced whole. A `RwLock<Arc<T>>` does the same job, but every read writes
/// the lock word, so readers on different cores contend on one cache line;
/// the [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md) measure the difference. For values that
/// change often and are read rarely, a `Mutex<T>` is simpler.
///
/// # The lost update, and `update`
///
/// The most common misuse of an atomically swapped value is to read it, build
/// a modified copy and store that copy. Two threads doing so at once both read
/// the same old value, and the second store silently discards the first
/// thread's change:
///
/// ```
/// use larder::Snapshot;
///
/// let counter = Snapshot::new(0_u64);
///
/// // BROKEN: load-then-store. If another thread stores between the two
/// // lines, its update is lost.
/// let current = counter.load();
/// counter.store(**current + 1);
///
/// // CORRECT: `update` retries the closure until its result is stored on
/// // top of exactly the value it was computed from.
/// counter.update(|n| n + 1);
/// assert_eq!(**counter.load(), 2);
/// ```
///
/// The loom model `snapshot_update_loses_nothing` in `loom-tests/` proves
/// `update` loses nothing and that the load-then-store variant does.
///
/// # Examples
///
/// ```
/// use larder::Snapshot;
/// use std::sync::Arc;
/// use std::thread;
///
/// #[derive(Debug, Clone)]
/// struct Config { workers: usize, greeting: String }
///
/// let config = Arc::new(Snapshot::new(Config { workers: 4, greeting: "hi".into() }));
/// let reader = {
///     let config = Arc::clone(&config);
///     thread::spawn(move || config.load().workers)
/// };
/// config.update(|old| Config { workers: old.workers * 2, ..old.clone() });
/// let seen = reader.join().unwrap();
/// assert!(seen == 4 || seen == 8);
/// assert_eq!(config.load().workers, 8);
/// assert_eq!(config.load().greeting, "hi");
/// assert_eq!(config.version(), 1);
/// ```
// `repr(C)`: `inner` first, at the address of the snapshot itself, so a
// load reaches it with no offset to add (one instruction fewer per load).
#[repr(C)]
pub struct Snapshot<T> {
    inner: AtomicArc<Versioned<T>>,
    /// The writers' lock, holding the version of the value `inner` holds:
    /// every write replaces `inner` only while holding it, so that version
    /// is current for as long as the lock is held.
    writers: Mutex<u64>,
}

/// A read guard returned by [`Snapshot::load`], made for one unit of work.
///
/// It dereferences to [`Versioned<T>`], which dereferences to `T`. It holds
/// no lock: writers never wait for it, and it keeps showing the value it
/// loaded however many stores follow. Keeping it long, moving it to another
/// thread (it is `Send`) or holding it across an `.await` in a spawned task
/// is correct; what it costs (arc-swap's guard underneath, as arc-swap's
/// documentation describes under "Limitations: Too many Guards" and
/// "Performance: Choosing the right reading operation"):
///
/// - its value stays alive until the guard is dropped, as with an `Arc`;
/// - until then it occupies one of the 8 borrow slots arc-swap lends the
///   thread that loaded it (wherever the guard has moved since). While all
///   8 of a thread's slots are taken, every further `load` on that thread
///   takes arc-swap's fallback path: about three times slower on one
///   thread (the
///   [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#snapshot-guards-held)),
///   and it writes the value's shared reference count as
///   [`load_full`](Snapshot::load_full) does. An
///   executor's worker thread runs many tasks, so tasks that each hold a
///   guard across an `.await` can use up their worker's slots;
/// - a store that replaces its value pays the guard's borrow: one
///   reference-count increment, once.
///
/// So for a value kept across an `.await` or for long, prefer
/// [`Snapshot::load_full`] (or [`Guard::into_arc`]): one reference-count
/// increment up front, and no slot held.
///
/// # Examples
///
/// ```
/// use larder::Snapshot;
/// use std::sync::Arc;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let config = Arc::new(Snapshot::new(String::from("v0")));
/// let task = {
///     let config = Arc::clone(&config);
///     tokio::spawn(async move {
///         let guard = config.load(); // correct across the .await below
///         tokio::task::yield_now().await;
///         guard.version()
///     })
/// };
/// config.store(String::from("v1"));
/// assert!(task.await.unwrap() <= 1);
/// // For long waits, an owned `Arc` that holds no borrow slot:
/// let kept = config.load_full();
/// tokio::task::yield_now().await;
/// assert_eq!(kept.as_str(), "v1");
/// # }
/// ```
pub struct Guard<T> {
    inner: sync::ArcGuard<Versioned<T>>,
}

impl<T> Guard<T> {
    /// Turns the guard into an owned `Arc` that may be kept as long as needed.
    pub fn into_arc(guard: Self) -> Arc<Versioned<T>> {
        sync::guard_into_arc(guard.inner)
    }
}

impl<T> Deref for Guard<T> {
    type Target = Versioned<T>;
    #[inline]
    fn deref(&self) -> &Versioned<T> {
        &self.inner
    }
}

impl<T: fmt::Debug> fmt::Debug for Guard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The error of a failed [`Snapshot::compare_and_swap`]: the value that was
/// not stored, and the value that was current instead.
pub struct CompareAndSwapError<T> {
    /// The value the caller wanted to store, handed back.
    pub new: T,
    /// The value that was current when the exchange failed.
    pub current: Arc<Versioned<T>>,
}

impl<T> fmt::Debug for CompareAndSwapError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompareAndSwapError")
            .field("current_version", &self.current.version())
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Display for CompareAndSwapError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "compare_and_swap failed: the snapshot moved on to version {}",
            self.current.version()
        )
    }
}

impl<T> std::error::Error for CompareAndSwapError<T> {}

impl<T> Snapshot<T> {
    /// Creates a snapshot holding `value` at version 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = larder::Snapshot::new(vec![1, 2, 3]);
    /// assert_eq!(snap.load().len(), 3);
    /// assert_eq!(snap.version(), 0);
    /// ```
    pub fn new(value: T) -> Self {
        Self {
            inner: AtomicArc::new(Arc::new(Versioned { version: 0, value })),
            writers: Mutex::new(0),
        }
    }

    /// The current value, behind a short-lived guard.
    ///
    /// Lock-free; on the fast path it writes only a slot owned by the calling
    /// thread, never a shared cache line. Sees every write that completed
    /// before the call. See [`Guard`] for how long to keep it.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = larder::Snapshot::new(String::from("v0"));
    /// let guard = snap.load();
    /// assert_eq!(guard.as_str(), "v0");
    /// assert_eq!(guard.version(), 0);
    /// ```
    #[inline]
    pub fn load(&self) -> Guard<T> {
        Guard {
            inner: self.inner.load(),
        }
    }

    /// The current value as an owned `Arc`, to keep beyond a unit of work.
    ///
    /// Costs one increment of the value's shared reference count (a write to
    /// a shared cache line), so prefer [`load`](Snapshot::load) or a
    /// [`CachedReader`] in hot loops.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = larder::Snapshot::new(1);
    /// let kept = snap.load_full();
    /// snap.store(2);
    /// assert_eq!(**kept, 1); // an old value stays valid while it is held
    /// ```
    pub fn load_full(&self) -> Arc<Versioned<T>> {
        self.inner.load_full()
    }

    /// The version of the current value (see [`Versioned::version`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = larder::Snapshot::new(0);
    /// snap.store(1);
    /// snap.store(2);
    /// assert_eq!(snap.version(), 2);
    /// ```
    pub fn version(&self) -> u64 {
        self.inner.load().version
    }

    /// A reader handle for one thread's hot loop; see [`CachedReader`].
    pub fn cached_reader(&self) -> CachedReader<'_, T> {
        CachedReader::new(self)
    }

    /// Publishes `value`, replacing whatever is current; returns the version
    /// it was stamped with.
    ///
    /// Unconditional: a value computed from an earlier load replaces writes
    /// made since (see [the lost update](Snapshot#the-lost-update-and-update)); use
    /// [`update`](Snapshot::update) to derive the new value from the old.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = larder::Snapshot::new("old");
    /// assert_eq!(snap.store("new"), 1);
    /// assert_eq!(**snap.load(), "new");
    /// ```
    pub fn store(&self, value: T) -> u64 {
        store_versioned(self, value)
    }

    /// Publishes `value` and returns the value it replaced.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = larder::Snapshot::new(1);
    /// let old = snap.swap(2);
    /// assert_eq!((**old, old.version()), (1, 0));
    /// ```
    pub fn swap(&self, value: T) -> Arc<Versioned<T>> {
        self.replace(value).1
    }

    /// Publishes `new` only if `current` is still the current value (compared
    /// by identity, not by `==`), atomically.
    ///
    /// Returns the replaced value on success. On failure nothing is stored
    /// and the error hands `new` back together with the value that is current.
    /// Of several threads racing to replace the same value, exactly one
    /// succeeds: the comparison and the swap happen under the writers' lock.
    ///
    /// # Errors
    ///
    /// [`CompareAndSwapError`] when another write got there first.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = larder::Snapshot::new(1);
    /// let seen = snap.load_full();
    /// assert!(snap.compare_and_swap(&seen, 2).is_ok());
    /// // `seen` is no longer current: the second exchange fails.
    /// let err = snap.compare_and_swap(&seen, 3).unwrap_err();
    /// assert_eq!((err.new, **err.current), (3, 2));
    /// ```
    pub fn compare_and_swap(
        &self,
        current: &Versioned<T>,
        new: T,
    ) -> Result<Arc<Versioned<T>>, CompareAndSwapError<T>> {
        let expected: *const Versioned<T> = current;
        let candidate = Arc::new(Versioned {
            version: current.version + 1,
            value: new,
        });
        match exchange(self, expected, candidate) {
            Ok(previous) => Ok(previous),
            Err(candidate) => Err(CompareAndSwapError {
                new: unwrap_unshared(candidate),
                current: self.inner.load_full(),
            }),
        }
    }

    /// Read-copy-update: publishes `f(current)` on top of exactly the value it
    /// was computed from, and returns what was published.
    ///
    /// If another write lands between the load and the publish, `f` runs
    /// again on the newer value, so **`f` may run more than once** and must
    /// not have side effects that cannot be repeated. No concurrent write is
    /// ever lost. `f` runs outside every lock (only the final check and swap
    /// take the writers' lock); if it panics, nothing is stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::Snapshot;
    /// use std::sync::Arc;
    ///
    /// let hits = Arc::new(Snapshot::new(0_u64));
    /// std::thread::scope(|s| {
    ///     for _ in 0..4 {
    ///         s.spawn(|| for _ in 0..100 { hits.update(|n| n + 1); });
    ///     }
    /// });
    /// assert_eq!(**hits.load(), 400);
    /// assert_eq!(hits.version(), 400);
    /// ```
    pub fn update<F>(&self, f: F) -> Arc<Versioned<T>>
    where
        F: FnMut(&T) -> T,
    {
        update_versioned(self, f)
    }

    /// Fallible read-copy-update: publishes `f(current)` if it is `Ok`, on
    /// top of exactly the value it was computed from, and returns what was
    /// published; if `f` returns `Err`, nothing is stored and the error is
    /// returned (a validated change: "raise the limit unless it would pass
    /// the maximum").
    ///
    /// Like [`update`](Snapshot::update), `f` runs again if another write
    /// lands between the load and the publish, so it may run more than once;
    /// the error, if any, is computed from the value current at that moment.
    /// `f` runs outside every lock; if it panics, nothing is stored.
    ///
    /// # Errors
    ///
    /// Whatever `f` returns, from the value current when it ran.
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = larder::Snapshot::new(8_u32);
    /// let raise = |n: &u32| if *n < 10 { Ok(n + 1) } else { Err(format!("{n} is the maximum")) };
    /// assert_eq!(**limit.try_update(raise).unwrap(), 9);
    /// limit.store(10);
    /// assert_eq!(limit.try_update(raise).unwrap_err(), "10 is the maximum");
    /// assert_eq!((**limit.load(), limit.version()), (10, 2)); // nothing stored
    /// ```
    pub fn try_update<F, E>(&self, mut f: F) -> Result<Arc<Versioned<T>>, E>
    where
        F: FnMut(&T) -> Result<T, E>,
    {
        let mut current = self.inner.load();
        loop {
            let next = Arc::new(Versioned {
                version: current.version + 1,
                value: f(&current.value)?,
            });
            match exchange(self, Arc::as_ptr(&*current), Arc::clone(&next)) {
                Ok(_) => return Ok(next),
                Err(_) => current = self.inner.load(),
            }
        }
    }

    /// Publishes `value` as the successor of whatever is current; returns
    /// the version it was stamped with and the value it replaced.
    ///
    /// The writers' lock is held from reading the current version to the
    /// swap, so no other write lands in between; the replaced value is
    /// returned after the lock is released, so its `Drop` (user code, if
    /// this was its last reference) runs outside the lock.
    fn replace(&self, value: T) -> (u64, Arc<Versioned<T>>) {
        let mut current = self.writers.lock();
        let version = *current + 1;
        let previous = self.inner.swap(Arc::new(Versioned { version, value }));
        *current = version;
        drop(current);
        (version, previous)
    }
}

/// Takes the value out of an `Arc` that was never published.
fn unwrap_unshared<T>(arc: Arc<Versioned<T>>) -> T {
    match Arc::try_unwrap(arc) {
        Ok(versioned) => versioned.value,
        Err(_) => unreachable!("a value that was never published is shared"),
    }
}

/// `store`'s step: publishes `value` stamped with the version after the
/// one it replaces, under the writers' lock, and drops the replaced value
/// once the lock is released.
fn publish_version<T>(snapshot: &Snapshot<T>, value: T) -> u64 {
    let (version, previous) = snapshot.replace(value);
    drop(previous);
    version
}

/// The exchange of `compare_and_swap` and `try_update`: publishes
/// `candidate` if `expected` is current, else hands `candidate` back.
///
/// The comparison and the swap happen under the writers' lock, so no
/// other write lands between them. `candidate` is stamped with
/// `expected`'s version plus one, which is the lock's version exactly when
/// `expected` is current. The guard of the current value is dropped under
/// the lock, but frees nothing: the snapshot still holds that value.
fn compare_exchange<T>(
    snapshot: &Snapshot<T>,
    expected: *const Versioned<T>,
    candidate: Arc<Versioned<T>>,
) -> Result<Arc<Versioned<T>>, Arc<Versioned<T>>> {
    let mut version = snapshot.writers.lock();
    if !std::ptr::eq(Arc::as_ptr(&*snapshot.inner.load()), expected) {
        return Err(candidate);
    }
    debug_assert_eq!(candidate.version, *version + 1);
    *version = candidate.version;
    let previous = snapshot.inner.swap(candidate);
    drop(version);
    Ok(previous)
}

/// `update`'s step: read-copy-update through `try_update`, so `f`'s value
/// is published on top of exactly the value it was computed from.
fn update_until_published<T>(
    snapshot: &Snapshot<T>,
    mut f: impl FnMut(&T) -> T,
) -> Arc<Versioned<T>> {
    match snapshot.try_update(|value| Ok::<T, std::convert::Infallible>(f(value))) {
        Ok(next) => next,
        Err(never) => match never {},
    }
}

impl<T: Default> Default for Snapshot<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> From<T> for Snapshot<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for Snapshot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = self.load();
        f.debug_struct("Snapshot")
            .field("version", &current.version)
            .field("value", &current.value)
            .finish()
    }
}

#[cfg(test)]
mod tests;
