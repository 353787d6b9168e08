//! Single-flight loading: concurrent misses on one key run one load and
//! share its outcome. Serves both `LruCache::get_or_load` and
//! `TypedCache::get_or_init`.
//!
//! # Protocol
//!
//! A [`FlightGroup`] maps keys to in-progress loads ("flights"). A caller
//! that missed its cache calls [`FlightGroup::load`]:
//!
//! 1. Under the shard mutex of the key's hash, it looks for a flight of the
//!    key. If there is one it *joins*: it releases the mutex and blocks on
//!    the flight's own mutex and condvar until the outcome is known.
//! 2. Otherwise it registers a new flight and becomes its *leader*. It
//!    releases the mutex, looks in the cache once more (a previous leader may
//!    have published between the caller's miss and its registration), and
//!    runs its loader with no lock held.
//! 3. The leader publishes a value to the cache *before* it completes the
//!    flight and removes it from the group, so a caller arriving after the
//!    removal finds the value in the cache in step 2.
//!
//! Outcomes, and what the waiters already joined get:
//!
//! - a value: everyone gets the same `Arc<V>`;
//! - an error: everyone already waiting gets the same `Arc<E>` (a failing
//!   backend sees one call, not one per waiter); nothing is cached, so the
//!   next call after the flight ends starts a fresh load (a transient error
//!   does not stick);
//! - a panic: the panic unwinds through the leader only; the flight is
//!   abandoned, and each waiter goes back to step 1, where one of them becomes
//!   the new leader. Nothing is poisoned.
//!
//! A loader that asks the same group for the same key on the same thread
//! would wait for itself forever; step 1 detects it by thread id and panics
//! with [`REENTRANT`] instead.
//!
//! # Locks
//!
//! Lock order: a shard mutex, then (briefly, never while blocking) a flight's
//! state mutex. No user code runs under either, except `K: Eq` during the
//! lookup of step 1 (a panic there leaves the shard as it was: the lookup
//! only reads).

use std::any::Any;
use std::fmt;

use crate::sync::{self, Arc, CachePadded, Condvar, Mutex, ThreadId};

/// The panic message of a re-entrant load of the same key.
pub(crate) const REENTRANT: &str = "larder: re-entrant load: the loader for this key asked the same cache for the same key on the same thread, which would wait for itself forever";

const SHARDS: usize = 16;

/// An error shared between the leader and the waiters of one flight.
pub(crate) type SharedError = Arc<dyn Any + Send + Sync>;

/// How the value of a [`FlightGroup::load`] was obtained (for statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// This caller ran the loader.
    Loaded,
    /// Another caller's load was joined.
    Waited,
    /// The re-check after registering found it in the cache.
    Cached,
}

/// A deliberately broken protocol, for the loom suite's negative controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[doc(hidden)]
pub enum FlightFault {
    /// The correct protocol.
    #[default]
    None,
    /// Check-then-act: no flight is registered; every miss runs its loader.
    SkipFlight,
    /// A failed flight stays registered: later callers get the old error.
    StickyError,
    /// A panicking leader leaves its flight registered and never wakes its
    /// waiters.
    AbandonOnPanic,
    /// A finishing leader wakes one waiter (`notify_one`) instead of all: a
    /// second waiter sleeps forever.
    NotifyOne,
}

enum State<V> {
    Loading,
    Value(Arc<V>),
    Failed(SharedError),
    Abandoned,
}

/// One load in progress.
struct Flight<V> {
    owner: ThreadId,
    state: Mutex<State<V>>,
    done: Condvar,
}

impl<V> Flight<V> {
    fn finish(&self, outcome: State<V>) {
        *self.state.lock() = outcome;
        self.done.notify_all();
    }

    /// Blocks until the flight has an outcome.
    fn wait(&self) -> State<V> {
        let mut state = self.state.lock();
        loop {
            match &*state {
                State::Loading => self.done.wait(&mut state),
                State::Value(v) => return State::Value(Arc::clone(v)),
                State::Failed(e) => return State::Failed(Arc::clone(e)),
                State::Abandoned => return State::Abandoned,
            }
        }
    }
}

type Bucket<K, V> = Vec<(u64, K, Arc<Flight<V>>)>;
type Shard<K, V> = CachePadded<Mutex<Bucket<K, V>>>;

/// The flights in progress of one cache, sharded by key hash.
pub(crate) struct FlightGroup<K, V> {
    shards: Box<[Shard<K, V>]>,
    fault: FlightFault,
}

impl<K, V> FlightGroup<K, V> {
    pub(crate) fn new() -> Self {
        Self::with_fault(FlightFault::None)
    }

    pub(crate) fn with_fault(fault: FlightFault) -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Vec::new())))
                .collect(),
            fault,
        }
    }

    /// Number of flights in progress (for tests and `Debug`).
    pub(crate) fn in_flight(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}

impl<K: Clone + Eq, V> FlightGroup<K, V> {
    /// Gets the value of `key` through at most one concurrent load.
    ///
    /// `hash` is the key's hash under the cache's hasher. `lookup` looks in
    /// the cache; `load` is this caller's loader (run at most once, with no
    /// lock held); `publish` stores a loaded value in the cache and must not
    /// call back into this group for the same key.
    ///
    /// Returns the value and how it was obtained, or the error of the load
    /// this caller ran or joined.
    ///
    /// # Panics
    ///
    /// Panics with [`REENTRANT`] if called from inside the loader of the same
    /// key; resumes the loader's panic if it panicked.
    pub(crate) fn load<E, L, P, F>(
        &self,
        hash: u64,
        key: &K,
        mut lookup: L,
        load: F,
        publish: P,
    ) -> Result<(Arc<V>, Source), Arc<E>>
    where
        E: Send + Sync + 'static,
        L: FnMut() -> Option<Arc<V>>,
        F: FnOnce() -> Result<V, E>,
        P: FnOnce(&Arc<V>),
    {
        if self.fault == FlightFault::SkipFlight {
            // BROKEN on purpose (loom negative control): check-then-act.
            if let Some(value) = lookup() {
                return Ok((value, Source::Cached));
            }
            let value = Arc::new(load().map_err(Arc::new)?);
            publish(&value);
            return Ok((value, Source::Loaded));
        }
        let shard = &self.shards[(hash as usize) % SHARDS];
        let me = sync::current_thread_id();
        loop {
            let mut bucket = shard.lock();
            let joined = bucket
                .iter()
                .find(|(h, k, _)| *h == hash && k == key)
                .map(|(_, _, flight)| Arc::clone(flight));
            if let Some(flight) = joined {
                drop(bucket);
                assert!(flight.owner != me, "{}", REENTRANT);
                match flight.wait() {
                    State::Value(value) => return Ok((value, Source::Waited)),
                    State::Failed(error) => match error.downcast::<E>() {
                        Ok(error) => return Err(error),
                        // The leader's error has another type than ours (its
                        // call site differs): we cannot hand it over, so
                        // this caller loads for itself.
                        Err(_) => continue,
                    },
                    // The leader panicked: go round and take over.
                    State::Abandoned | State::Loading => continue,
                }
            }
            let flight = Arc::new(Flight {
                owner: me,
                state: Mutex::new(State::Loading),
                done: Condvar::new(),
            });
            bucket.push((hash, key.clone(), Arc::clone(&flight)));
            drop(bucket);
            let lead = Leader {
                group: self,
                shard: hash as usize % SHARDS,
                flight,
                finished: false,
            };
            return lead.run(&mut lookup, load, publish);
        }
    }
}

/// The leader of one flight; abandons it if dropped unfinished (a panic).
struct Leader<'a, K, V> {
    group: &'a FlightGroup<K, V>,
    shard: usize,
    flight: Arc<Flight<V>>,
    finished: bool,
}

impl<K, V> Leader<'_, K, V> {
    fn run<E, L, F, P>(
        mut self,
        lookup: &mut L,
        load: F,
        publish: P,
    ) -> Result<(Arc<V>, Source), Arc<E>>
    where
        E: Send + Sync + 'static,
        L: FnMut() -> Option<Arc<V>>,
        F: FnOnce() -> Result<V, E>,
        P: FnOnce(&Arc<V>),
    {
        if let Some(value) = lookup() {
            self.complete(State::Value(Arc::clone(&value)));
            return Ok((value, Source::Cached));
        }
        match load() {
            Ok(value) => {
                let value = Arc::new(value);
                // Publish before the flight leaves the group (step 3).
                publish(&value);
                self.complete(State::Value(Arc::clone(&value)));
                Ok((value, Source::Loaded))
            }
            Err(error) => {
                let error = Arc::new(error);
                let shared: SharedError = error.clone();
                if self.group.fault == FlightFault::StickyError {
                    // BROKEN on purpose: the failed flight stays registered.
                    self.flight.finish(State::Failed(shared));
                    self.finished = true;
                    return Err(error);
                }
                self.complete(State::Failed(shared));
                Err(error)
            }
        }
    }

    /// Wakes the waiters with `outcome` and removes the flight.
    fn complete(&mut self, outcome: State<V>) {
        self.finished = true;
        // Remove the flight first, then wake its waiters: a waiter woken by
        // `Abandoned` goes back to step 1 and must not find this flight
        // still registered (it would join it again and spin until the
        // removal). A value was published before this call, so a caller
        // arriving after the removal finds it in step 2.
        {
            let mut bucket = self.group.shards[self.shard].lock();
            if let Some(at) = bucket
                .iter()
                .position(|(_, _, f)| Arc::ptr_eq(f, &self.flight))
            {
                bucket.swap_remove(at);
            }
        }
        if self.group.fault == FlightFault::NotifyOne {
            // BROKEN on purpose (loom negative control): one waiter woken.
            *self.flight.state.lock() = outcome;
            self.flight.done.notify_one();
            return;
        }
        self.flight.finish(outcome);
    }
}

impl<K, V> Drop for Leader<'_, K, V> {
    fn drop(&mut self) {
        if !self.finished && self.group.fault != FlightFault::AbandonOnPanic {
            self.complete(State::Abandoned);
        }
    }
}

impl<K, V> fmt::Debug for FlightGroup<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlightGroup")
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn concurrent_misses_load_once_and_share() {
        let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
        let group = FlightGroup::<u32, u32>::new();
        let cache = Mutex::new(None::<Arc<u32>>);
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
                                || cache.lock().clone(),
                                || {
                                    loads.fetch_add(1, Ordering::SeqCst);
                                    std::thread::sleep(std::time::Duration::from_millis(20));
                                    Ok(42)
                                },
                                |v| *cache.lock() = Some(Arc::clone(v)),
                            )
                            .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(results.iter().all(|(v, _)| **v == 42));
        assert_eq!(
            results.iter().filter(|(_, s)| *s == Source::Loaded).count(),
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
        assert_eq!((*v, source), (5, Source::Loaded));
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
        assert_eq!(*v, 9);
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
                        .map(|(v, _)| *v)
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
            // Key 1 is loading and blocked; key 2 (same shard: hash 17 % 16 == 1)
            // must still load at once.
            let (v, _) = group
                .load::<(), _, _, _>(17, &2, || None, || Ok(2), |_| {})
                .unwrap();
            assert_eq!(*v, 2);
            release_tx.send(()).unwrap();
        });
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
            assert_eq!((*v, source), (2, Source::Loaded));
        });
        assert_eq!(group.in_flight(), 0);
    }
}
