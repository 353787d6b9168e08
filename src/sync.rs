//! The synchronization facade: the only module that names `std::sync`,
//! `parking_lot`, `arc_swap`, `crossbeam_utils` or `loom`.
//!
//! Every other module imports its locks, atomics and atomically swapped
//! pointers from here, so that a `--cfg loom` build model-checks the code that
//! ships. Normal builds get the fast types (parking_lot locks, arc-swap,
//! crossbeam's `ShardedLock`); loom builds get loom-visible stand-ins with the
//! same *contract* (parking_lot-shaped API, no poisoning):
//!
//! | normal build | loom build | what loom therefore cannot check |
//! |---|---|---|
//! | `parking_lot::{Mutex, RwLock, Condvar}` | wrappers over `loom::sync` | parking_lot's own lock implementation, fairness |
//! | `crossbeam_utils::sync::ShardedLock` | wrapper over `loom::sync::RwLock` | the per-shard lock words |
//! | `thread_stripe` (a reader's stripe of a `StripedRwLock`) | the loom thread number | the thread-number hand-over |
//! | `arc_swap::ArcSwap` ([`AtomicArc`]: load, swap) | `loom::sync::RwLock<Arc<T>>` | arc-swap's debt lists and hazard protocol |
//! | `std::sync::atomic::*` | `loom::sync::atomic::*` | nothing: loom explores these (SeqCst is modelled as AcqRel) |
//! | `Condvar::wait_until` (a deadline) | loom's `Condvar::wait` | timeouts: loom has no clock, so a timed wait ends only when notified |
//!
//! Waiting threads always block on a [`Mutex`]/[`Condvar`]; nothing spins, so
//! loom's branch limit is not exhausted by `yield_now` loops.
//!
//! `Arc` is `std::sync::Arc` in both builds: reference counting is not a
//! protocol larder implements, and public signatures stay the same.

#![allow(dead_code, unused_imports)]

pub(crate) use std::sync::Arc;

/// A fixed-seed hasher for loom builds (models must be deterministic) and the
/// default `ahash::RandomState` otherwise.
#[cfg(loom)]
pub(crate) fn default_hasher() -> ahash::RandomState {
    ahash::RandomState::with_seeds(1, 2, 3, 4)
}

/// The default hasher: ahash's `RandomState` (hash-flooding resistant).
#[cfg(not(loom))]
pub(crate) fn default_hasher() -> ahash::RandomState {
    ahash::RandomState::new()
}

#[cfg(not(loom))]
mod imp {
    pub(crate) use crossbeam_utils::CachePadded;
    pub(crate) use parking_lot::{
        Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    };
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
    };

    pub(crate) use std::thread::ThreadId;

    /// The id of the calling thread.
    #[inline]
    pub(crate) fn current_thread_id() -> ThreadId {
        std::thread::current().id()
    }

    /// A number unique among the live threads (a number given back by an
    /// exited thread if there is one, else the next of 0, 1, 2, ...; taken
    /// when the thread first asks, given back when it exits), so numbers
    /// stay as small as the number of threads alive at once, and
    /// a thread with a small number can own a padded counter stripe and
    /// update it without a locked instruction. Cheaper than hashing a
    /// `ThreadId`: one thread-local read. Returns `usize::MAX` ("no number")
    /// while the thread's locals are being destroyed.
    ///
    /// A number's next owner sees everything its previous owner wrote: the
    /// hand-over goes through the `FREE` mutex.
    #[inline]
    pub(crate) fn thread_stripe() -> usize {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        static FREE: Mutex<Vec<usize>> = parking_lot::const_mutex(Vec::new());
        struct Number(usize);
        impl Drop for Number {
            fn drop(&mut self) {
                FREE.lock().push(self.0);
            }
        }
        thread_local! {
            static NUMBER: Number = Number(
                // Relaxed: only uniqueness matters, and fetch_add is atomic.
                FREE.lock().pop().unwrap_or_else(|| NEXT.fetch_add(1, Ordering::Relaxed)),
            );
        }
        NUMBER.try_with(|number| number.0).unwrap_or(usize::MAX)
    }

    /// The read stripe of a [`StripedRwLock`](crate::striped_lock) the
    /// calling thread takes (mod the stripe count): its [`thread_stripe`],
    /// cached in a constant-initialized thread-local with no destructor
    /// (one load on the read path). A cached number outlives the thread's
    /// hold on it while its locals are destroyed and may then be shared
    /// with a new thread: contention, never a wrong result.
    #[inline]
    pub(crate) fn lock_stripe() -> usize {
        thread_local! {
            static CACHED: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
        }
        CACHED.with(|cached| {
            let number = cached.get();
            if number != usize::MAX {
                return number;
            }
            let number = thread_stripe();
            cached.set(number);
            number
        })
    }

    /// A read-mostly reader-writer lock whose read path writes only a
    /// per-thread shard of the lock state (crossbeam's `ShardedLock`), so
    /// readers on different cores do not bounce one cache line.
    ///
    /// parking_lot-shaped: no poisoning (a panic while a guard is held leaves
    /// the data as it was at that moment; callers keep their invariants by
    /// never running user code under a write guard).
    #[derive(Default)]
    pub(crate) struct ShardedLock<T>(crossbeam_utils::sync::ShardedLock<T>);

    /// Shared guard of a [`ShardedLock`].
    pub(crate) type ShardedReadGuard<'a, T> = crossbeam_utils::sync::ShardedLockReadGuard<'a, T>;
    /// Exclusive guard of a [`ShardedLock`].
    pub(crate) type ShardedWriteGuard<'a, T> = crossbeam_utils::sync::ShardedLockWriteGuard<'a, T>;

    impl<T> ShardedLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(crossbeam_utils::sync::ShardedLock::new(value))
        }
        #[inline]
        pub(crate) fn read(&self) -> ShardedReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|poison| poison.into_inner())
        }
        #[inline]
        pub(crate) fn write(&self) -> ShardedWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|poison| poison.into_inner())
        }
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0
                .get_mut()
                .unwrap_or_else(|poison| poison.into_inner())
        }
    }

    /// An atomically swappable `Arc<T>`: arc-swap's `ArcSwap`.
    pub(crate) struct AtomicArc<T>(arc_swap::ArcSwap<T>);

    /// A short-lived read guard of an [`AtomicArc`].
    pub(crate) type ArcGuard<T> = arc_swap::Guard<std::sync::Arc<T>>;

    /// A per-thread caching reader of an [`AtomicArc`]: arc-swap's `Cache`,
    /// which revalidates with one relaxed pointer load and writes nothing
    /// shared while the value is unchanged.
    pub(crate) struct ArcCache<'a, T>(arc_swap::Cache<&'a arc_swap::ArcSwap<T>, std::sync::Arc<T>>);

    impl<'a, T> ArcCache<'a, T> {
        pub(crate) fn new(source: &'a AtomicArc<T>) -> Self {
            Self(arc_swap::Cache::new(&source.0))
        }
        #[inline]
        pub(crate) fn load(&mut self) -> &std::sync::Arc<T> {
            self.0.load()
        }
    }

    /// Turns a guard into an owned `Arc` (arc-swap's `Guard::into_inner`).
    #[inline]
    pub(crate) fn guard_into_arc<T>(guard: ArcGuard<T>) -> std::sync::Arc<T> {
        arc_swap::Guard::into_inner(guard)
    }

    impl<T> AtomicArc<T> {
        pub(crate) fn new(value: std::sync::Arc<T>) -> Self {
            Self(arc_swap::ArcSwap::new(value))
        }
        #[inline]
        pub(crate) fn load(&self) -> ArcGuard<T> {
            self.0.load()
        }
        #[inline]
        pub(crate) fn load_full(&self) -> std::sync::Arc<T> {
            self.0.load_full()
        }
        pub(crate) fn swap(&self, new: std::sync::Arc<T>) -> std::sync::Arc<T> {
            self.0.swap(new)
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
    };
    use std::ops::{Deref, DerefMut};

    pub(crate) use loom::thread::ThreadId;

    /// The id of the calling (loom) thread.
    pub(crate) fn current_thread_id() -> ThreadId {
        loom::thread::current().id()
    }

    /// Stand-in for the per-thread number: `usize::MAX` for every loom
    /// thread ("no stripe of its own"), so callers take their shared,
    /// fully atomic fallback path.
    pub(crate) fn thread_stripe() -> usize {
        usize::MAX
    }

    /// The read stripe of a striped lock the calling loom thread takes: a
    /// number per loom thread (0, 1, 2, ... in the order the model's
    /// threads first ask; both statics start afresh with each execution),
    /// so that a model's threads read through different stripes and a
    /// writer that misses one is caught. The counter is a std atomic: the
    /// numbering is bookkeeping, not an operation for loom to permute.
    pub(crate) fn lock_stripe() -> usize {
        loom::lazy_static! {
            static ref NEXT: std::sync::atomic::AtomicUsize =
                std::sync::atomic::AtomicUsize::new(0);
        }
        loom::thread_local! {
            static STRIPE: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        STRIPE.with(|stripe| *stripe)
    }

    /// loom has no `CachePadded`; padding is irrelevant to a model.
    #[derive(Default, Debug)]
    pub(crate) struct CachePadded<T>(T);
    impl<T> CachePadded<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(value)
        }
    }
    impl<T> Deref for CachePadded<T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.0
        }
    }
    impl<T> std::ops::DerefMut for CachePadded<T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.0
        }
    }

    /// parking_lot-shaped mutex over loom's (no poisoning).
    #[derive(Default, Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);
    /// Guard of [`Mutex`]; the `Option` lets [`Condvar::wait`] take it by `&mut`.
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(|p| p.into_inner())))
        }
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok().map(|guard| MutexGuard(Some(guard)))
        }
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(|p| p.into_inner())
        }
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner().unwrap_or_else(|p| p.into_inner())
        }
    }
    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present")
        }
    }
    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present")
        }
    }

    /// parking_lot-shaped condition variable over loom's.
    #[derive(Default, Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);
    impl Condvar {
        pub(crate) fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard present");
            guard.0 = Some(self.0.wait(inner).unwrap_or_else(|p| p.into_inner()));
        }
        /// Waits until notified; the deadline is ignored (loom has no
        /// clock), so a model must not rely on a timeout firing.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: std::time::Instant,
        ) {
            self.wait(guard);
        }
        pub(crate) fn notify_all(&self) -> usize {
            self.0.notify_all();
            0
        }
        pub(crate) fn notify_one(&self) -> bool {
            self.0.notify_one();
            false
        }
    }

    /// parking_lot-shaped reader-writer lock over loom's.
    #[derive(Default, Debug)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);
    /// Shared guard of [`RwLock`].
    pub(crate) type RwLockReadGuard<'a, T> = loom::sync::RwLockReadGuard<'a, T>;
    /// Exclusive guard of [`RwLock`].
    pub(crate) type RwLockWriteGuard<'a, T> = loom::sync::RwLockWriteGuard<'a, T>;
    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::RwLock::new(value))
        }
        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|p| p.into_inner())
        }
        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|p| p.into_inner())
        }
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(|p| p.into_inner())
        }
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner().unwrap_or_else(|p| p.into_inner())
        }
    }

    /// Stand-in for crossbeam's `ShardedLock`: one loom `RwLock`.
    pub(crate) type ShardedLock<T> = RwLock<T>;
    /// Shared guard of [`ShardedLock`].
    pub(crate) type ShardedReadGuard<'a, T> = RwLockReadGuard<'a, T>;
    /// Exclusive guard of [`ShardedLock`].
    pub(crate) type ShardedWriteGuard<'a, T> = RwLockWriteGuard<'a, T>;

    /// Stand-in for `ArcSwap`: the same contract (atomic load, swap and
    /// compare-exchange by address) on a loom `RwLock<Arc<T>>`.
    pub(crate) struct AtomicArc<T>(loom::sync::RwLock<std::sync::Arc<T>>);
    /// Stand-in for arc-swap's guard: an owned `Arc`, dereferencing to the
    /// `Arc` as arc-swap's guard does.
    pub(crate) struct ArcGuard<T>(std::sync::Arc<T>);
    impl<T> Deref for ArcGuard<T> {
        type Target = std::sync::Arc<T>;
        fn deref(&self) -> &std::sync::Arc<T> {
            &self.0
        }
    }

    /// Stand-in for arc-swap's `Cache`: compares addresses under the read
    /// lock and reloads when they differ.
    pub(crate) struct ArcCache<'a, T> {
        source: &'a AtomicArc<T>,
        cached: std::sync::Arc<T>,
    }

    impl<'a, T> ArcCache<'a, T> {
        pub(crate) fn new(source: &'a AtomicArc<T>) -> Self {
            Self {
                source,
                cached: source.load_full(),
            }
        }
        pub(crate) fn load(&mut self) -> &std::sync::Arc<T> {
            let current = self.source.0.read().unwrap();
            if !std::sync::Arc::ptr_eq(&current, &self.cached) {
                self.cached = std::sync::Arc::clone(&current);
            }
            drop(current);
            &self.cached
        }
    }

    /// Turns a guard into an owned `Arc` (identity: the guard is an `Arc`).
    pub(crate) fn guard_into_arc<T>(guard: ArcGuard<T>) -> std::sync::Arc<T> {
        guard.0
    }

    impl<T> AtomicArc<T> {
        pub(crate) fn new(value: std::sync::Arc<T>) -> Self {
            Self(loom::sync::RwLock::new(value))
        }
        pub(crate) fn load(&self) -> ArcGuard<T> {
            ArcGuard(self.load_full())
        }
        pub(crate) fn load_full(&self) -> std::sync::Arc<T> {
            std::sync::Arc::clone(&self.0.read().unwrap())
        }
        pub(crate) fn swap(&self, new: std::sync::Arc<T>) -> std::sync::Arc<T> {
            std::mem::replace(&mut *self.0.write().unwrap(), new)
        }
        /// Stores `new` if the current value is `current` (by address);
        /// gives `new` back otherwise. Only the loom negative controls
        /// exchange without a lock of their own (`snapshot/broken.rs`).
        pub(crate) fn compare_exchange(
            &self,
            current: *const T,
            new: std::sync::Arc<T>,
        ) -> Result<ArcGuard<T>, std::sync::Arc<T>> {
            let mut slot = self.0.write().unwrap();
            if std::ptr::eq(std::sync::Arc::as_ptr(&slot), current) {
                Ok(ArcGuard(std::mem::replace(&mut *slot, new)))
            } else {
                Err(new)
            }
        }
    }
}

pub(crate) use imp::*;

// The loads this thread is running right now, innermost last: each entry is
// the address of a flight whose loader is on this thread's stack (a sync
// loader being called, or an async loader being polled). A caller that finds
// the flight it would join in this list is inside that flight's own loader,
// and waiting would wait for itself. loom threads share one OS thread, so
// loom builds use loom's thread-locals.
#[cfg(not(loom))]
std::thread_local! {
    static LOADING: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}
#[cfg(loom)]
loom::thread_local! {
    static LOADING: std::cell::RefCell<Vec<usize>> = std::cell::RefCell::new(Vec::new());
}

/// Marks the load `id` as running on this thread until the returned guard
/// drops (also when a loader unwinds).
pub(crate) fn enter_load(id: usize) -> LoadEntered {
    LOADING.with(|loading| loading.borrow_mut().push(id));
    LoadEntered(id)
}

/// Whether the load `id` is running on this thread, below the caller.
pub(crate) fn is_loading(id: usize) -> bool {
    LOADING.with(|loading| loading.borrow().contains(&id))
}

/// See [`enter_load`].
pub(crate) struct LoadEntered(usize);

impl Drop for LoadEntered {
    fn drop(&mut self) {
        let id = self.0;
        // `try_with`: a guard dropped while the thread's locals are being
        // destroyed has nothing left to unmark.
        let _ = LOADING.try_with(|loading| {
            let mut loading = loading.borrow_mut();
            if let Some(at) = loading.iter().rposition(|&entry| entry == id) {
                loading.remove(at);
            }
        });
    }
}

/// Adds 1 to the calling thread's counter in `stripes`: the counter `pick`
/// chooses in stripe [`thread_stripe()`], or in the last stripe, shared by
/// every thread numbered `stripes.len() - 1` or more (and by every loom
/// thread).
///
/// A thread is its own stripe's only writer, so there a load and a store
/// lose no increment and cost no locked instruction; the shared stripe
/// takes a real read-modify-write. Relaxed: counters that publish no other
/// data, summed after the fact.
#[inline]
pub(crate) fn count_striped<T>(stripes: &[CachePadded<T>], pick: impl FnOnce(&T) -> &AtomicU64) {
    count_striped_as(thread_stripe(), stripes, pick);
}

/// [`count_striped`] for the thread numbered `thread` (the tests call it
/// with the boundary number `stripes.len() - 1`).
#[inline]
fn count_striped_as<T>(
    thread: usize,
    stripes: &[CachePadded<T>],
    pick: impl FnOnce(&T) -> &AtomicU64,
) {
    let shared = stripes.len() - 1;
    if thread < shared {
        let counter = pick(&stripes[thread]);
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    } else {
        pick(&stripes[shared]).fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads numbered at the boundary (`stripes.len() - 1`, the first
    /// number without a stripe of its own) share the last stripe with every
    /// later thread, so they must take the read-modify-write path: a load
    /// and a store there lose increments as soon as two such threads
    /// overlap. Four threads all counting as the boundary number, each for
    /// tens of milliseconds (longer than a scheduler slice, so that even on
    /// a loaded machine they overlap or preempt each other mid-increment),
    /// make the loss certain; with far fewer, a load-and-store boundary
    /// can pass on a busy machine.
    #[test]
    fn the_boundary_thread_counts_with_a_read_modify_write() {
        const THREADS: u64 = 4;
        const EACH: u64 = 2_000_000;
        let stripes: Vec<CachePadded<AtomicU64>> = (0..4)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect();
        let boundary = stripes.len() - 1;
        let start = std::sync::Barrier::new(THREADS as usize);
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    start.wait();
                    for _ in 0..EACH {
                        count_striped_as(boundary, &stripes, |stripe| stripe);
                    }
                });
            }
        });
        let counts: Vec<u64> = stripes
            .iter()
            .map(|stripe| stripe.load(Ordering::Relaxed))
            .collect();
        assert_eq!(
            counts,
            [0, 0, 0, THREADS * EACH],
            "increments lost or misplaced at the stripe boundary"
        );
    }

    /// A thread below the boundary owns its stripe; one past it shares the
    /// last one.
    #[test]
    fn numbers_pick_their_stripe() {
        let stripes: Vec<CachePadded<AtomicU64>> = (0..3)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect();
        for thread in [0, 1, 2, 3, usize::MAX] {
            count_striped_as(thread, &stripes, |stripe| stripe);
        }
        let counts: Vec<u64> = stripes
            .iter()
            .map(|stripe| stripe.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counts, [1, 1, 3]);
    }
}
