//! Single-flight loading: concurrent misses on one key run one load and
//! share its outcome. Serves both `LruCache::get_or_init` and
//! `TypedCache::get_or_init`.
//!
//! # Protocol
//!
//! A [`FlightGroup`] maps keys to in-progress loads ("flights"). A caller
//! that missed its cache calls [`FlightGroup::load`]:
//!
//! 1. Under the shard mutex of the key's hash, it looks for a flight of the
//!    key. If there is one it *joins*: it releases the mutex and blocks on
//!    the flight's own mutex and condvar until the outcome is known. A
//!    caller that joins builds nothing: no owned key, no allocation.
//! 2. Otherwise it releases the mutex, builds the owned key (user code, so
//!    unlocked), takes the mutex again and looks once more: if another
//!    caller registered the key meanwhile it joins that flight; if not it
//!    registers a new flight and becomes its *leader*. It releases the mutex,
//!    looks in the cache once more (a previous leader may have published
//!    between the caller's miss and its registration), and runs its loader
//!    with no lock held.
//! 3. The leader publishes a value to the cache *before* it completes the
//!    flight and removes it from the group, so a caller arriving after the
//!    removal finds the value in the cache in step 2.
//!
//! Outcomes, and what the waiters already joined get:
//!
//! - a value: everyone gets a clone of the same value (the flight keeps a
//!   clone of it, which each waiter clones out under the flight's own
//!   mutex, on a state that is final; see `outcome.rs`);
//! - an error: everyone already waiting gets the same `Arc<E>` (a failing
//!   backend sees one call, not one per waiter); nothing is cached, so the
//!   next call after the flight ends starts a fresh load (a transient error
//!   does not stick);
//! - a panic: the panic unwinds through the leader only; the flight is
//!   abandoned, and each waiter goes back to step 1, where one of them becomes
//!   the new leader. Nothing is poisoned.
//!
//! A loader that asks the same group for the same key from inside itself
//! would wait for itself forever; step 1 detects it and panics with
//! [`REENTRANT`] instead. The detection is a per-thread list of the flights
//! whose loader is running on the thread's stack (`sync::enter_load`): a sync
//! loader while it is called, an async loader while it is *polled*. A caller
//! that finds the flight it would join in that list is inside that loader.
//! This is sound for both forms (a thread runs nothing else while one of its
//! frames is inside a loader), and it sees every re-entrant call made from
//! the loader's own poll; it cannot see a loader that hands the request to
//! another task and awaits that task (see `load_async.rs`).
//!
//! # Async flights
//!
//! [`FlightGroup::load_async`] is the same protocol with a future as the
//! loader and the [`outcome::Wait`] future as the waiter: the waiter's waker
//! goes into the flight's waker list, which [`outcome::Flight::finish`] wakes
//! together with the condvar's blocked waiters. A sync waiter of an async
//! leader blocks as before; an async waiter of a sync leader is woken by the
//! same `finish`. A leader future dropped before it finishes (cancelled)
//! abandons its flight exactly as a panicking leader does.
//!
//! # Locks
//!
//! Lock order: a shard mutex, then (briefly, never while blocking) a flight's
//! state mutex. No user code runs under either, except `K: Eq` during the
//! lookups of steps 1 and 2 (a panic there leaves the shard as it was: the
//! lookup only reads). The owned key is built before the mutex is taken for
//! registration. Each shard is a `hashbrown::HashTable` of entries that
//! store their key's full hash: growing, shrinking and removal rehash from
//! the stored hashes and never call the user's `Hash`, and a lookup calls
//! `K: Eq` only on a full 64-bit hash match.
//!
//! # Files
//!
//! - this one: [`FlightGroup`], the registry of flights and the sync
//!   protocol above;
//! - `outcome.rs`: one flight, its outcome and its waiters (the condvar,
//!   the wakers, the [`outcome::Wait`] future);
//! - `load_async.rs`: the async protocol;
//! - `broken.rs`: the loom models' broken variants (`cfg(loom)` only);
//!   `tests.rs`: unit tests.

#[cfg(loom)]
mod broken;
mod load_async;
mod outcome;

use std::any::Any;
use std::borrow::Borrow;
use std::fmt;

use hashbrown::HashTable;

use crate::sync::{self, Arc, CachePadded, Mutex};
#[cfg(loom)]
use broken::{abandon, enter, fail};
pub(crate) use load_async::{Caller, Looked};
use outcome::{Flight, Outcome};
#[cfg(not(loom))]
use {abandon_and_hand_over as abandon, complete_failed as fail, join_or_register as enter};

/// The panic message of a re-entrant load of the same key.
pub(crate) const REENTRANT: &str = "larder: re-entrant load: the loader for this key asked the same cache for the same key from inside itself, which would wait for itself forever";

const SHARDS: usize = 16;

/// An error shared between the leader and the waiters of one flight.
pub(crate) type SharedError = Arc<dyn Any + Send + Sync>;

/// How the value of a [`FlightGroup::load`] was obtained (for statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Obtained {
    /// This caller ran the loader.
    Loaded,
    /// Another caller's load was joined.
    Waited,
    /// The re-check after registering found it in the cache.
    Cached,
}

/// One registered flight: its key, the key's full hash and the flight.
struct Registered<K, V> {
    hash: u64,
    key: K,
    flight: Arc<Flight<V>>,
}

type RegistryShard<K, V> = CachePadded<Mutex<HashTable<Registered<K, V>>>>;

/// The shard of a hash (`shard_index.rs`).
fn shard_of(hash: u64) -> usize {
    crate::shard_index::shard_index(hash, SHARDS)
}

/// What [`FlightGroup::enter`] made of a caller.
enum Entered<V> {
    /// A flight of the key was in progress: wait for it.
    Joined(Arc<Flight<V>>),
    /// This caller registered the flight and leads it.
    Leading(Arc<Flight<V>>),
}

/// The flights in progress of one cache, sharded by key hash.
pub(crate) struct FlightGroup<K, V> {
    shards: Box<[RegistryShard<K, V>]>,
}

impl<K, V> FlightGroup<K, V> {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(HashTable::new())))
                .collect(),
        }
    }

    /// Number of flights in progress (for tests and `Debug`).
    pub(crate) fn in_flight(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// The flight registered for `key` (for tests).
    #[cfg(test)]
    fn flight_of(&self, hash: u64, key: &K) -> Option<Arc<Flight<V>>>
    where
        K: Eq,
    {
        let table = self.shards[shard_of(hash)].lock();
        let entry = table.find(hash, |e| e.hash == hash && e.key == *key)?;
        Some(Arc::clone(&entry.flight))
    }
}

/// Steps 1 and 2 of the protocol: joins the flight of `key` in `group` if
/// there is one, registers one otherwise. `make_key` (user code) runs only
/// if no flight was found, and with no lock held; a key it built and that
/// is not registered (a flight appeared meanwhile) is dropped unlocked.
#[inline(always)]
fn join_or_register<K, V, Q>(
    group: &FlightGroup<K, V>,
    hash: u64,
    key: &Q,
    make_key: impl FnOnce() -> K,
) -> Entered<V>
where
    K: Borrow<Q>,
    Q: ?Sized + Eq,
{
    let shard = &group.shards[shard_of(hash)];
    let same = |e: &Registered<K, V>| e.hash == hash && e.key.borrow() == key;
    if let Some(entry) = shard.lock().find(hash, same) {
        return Entered::Joined(Arc::clone(&entry.flight));
    }
    let owned = make_key();
    let mut table = shard.lock();
    if let Some(entry) = table.find(hash, same) {
        let flight = Arc::clone(&entry.flight);
        drop(table);
        drop(owned);
        return Entered::Joined(flight);
    }
    let flight = Arc::new(Flight::new());
    let entry = Registered {
        hash,
        key: owned,
        flight: Arc::clone(&flight),
    };
    // Rehashes (if the table grows) from the stored hashes: no user code.
    table.insert_unique(hash, entry, |e| e.hash);
    Entered::Leading(flight)
}

impl<K: Clone + Eq, V: Clone> FlightGroup<K, V> {
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
    ) -> Result<(V, Obtained), Arc<E>>
    where
        E: Send + Sync + 'static,
        L: FnMut() -> Option<V>,
        F: FnOnce() -> Result<V, E>,
        P: FnOnce(&V),
    {
        loop {
            let flight = match enter(self, hash, key, || key.clone()) {
                Entered::Joined(flight) => flight,
                Entered::Leading(flight) => {
                    let lead = Leader::new(self, hash, flight);
                    return lead.run(&mut lookup, load, publish);
                }
            };
            assert!(!sync::is_loading(flight.id()), "{}", REENTRANT);
            match flight.wait() {
                Outcome::Value(value) => return Ok((value, Obtained::Waited)),
                Outcome::Failed(error) => match error.downcast::<E>() {
                    Ok(error) => return Err(error),
                    // The leader's error has another type than ours (its
                    // call site differs): we cannot hand it over, so this
                    // caller loads for itself.
                    Err(_) => continue,
                },
                // The leader panicked: go round and take over.
                Outcome::Abandoned | Outcome::Loading => continue,
            }
        }
    }
}

/// The leader of one flight; abandons it if dropped unfinished (a panic, or
/// an async leader's future dropped mid-load).
struct Leader<'a, K, V> {
    group: &'a FlightGroup<K, V>,
    hash: u64,
    flight: Arc<Flight<V>>,
    finished: bool,
}

impl<'a, K, V> Leader<'a, K, V> {
    fn new(group: &'a FlightGroup<K, V>, hash: u64, flight: Arc<Flight<V>>) -> Self {
        Self {
            group,
            hash,
            flight,
            finished: false,
        }
    }

    fn run<E, L, F, P>(
        mut self,
        lookup: &mut L,
        load: F,
        publish: P,
    ) -> Result<(V, Obtained), Arc<E>>
    where
        V: Clone,
        E: Send + Sync + 'static,
        L: FnMut() -> Option<V>,
        F: FnOnce() -> Result<V, E>,
        P: FnOnce(&V),
    {
        if let Some(value) = lookup() {
            self.complete_with(&value);
            return Ok((value, Obtained::Cached));
        }
        let outcome = {
            let _entered = sync::enter_load(self.flight.id());
            load()
        };
        self.settle(outcome, publish)
    }

    /// Step 3 for a leader whose loader returned, sync or async: a value is
    /// published before the flight leaves the group; an error is shared with
    /// the waiters already joined and not kept.
    fn settle<E: Send + Sync + 'static>(
        &mut self,
        outcome: Result<V, E>,
        publish: impl FnOnce(&V),
    ) -> Result<(V, Obtained), Arc<E>>
    where
        V: Clone,
    {
        match outcome {
            Ok(value) => {
                // Publish before the flight leaves the group (step 3).
                publish(&value);
                self.complete_with(&value);
                Ok((value, Obtained::Loaded))
            }
            Err(error) => {
                let error = Arc::new(error);
                fail(self, error.clone());
                Err(error)
            }
        }
    }

    /// Completes the flight with a value: the flight keeps a clone of it,
    /// which each waiter clones out (`V: Clone` runs here with no lock held;
    /// if it panics the leader is dropped unfinished and abandons the
    /// flight, whose waiters then find the published value in the cache).
    fn complete_with(&mut self, value: &V)
    where
        V: Clone,
    {
        self.complete(Outcome::Value(value.clone()));
    }

    /// Wakes the waiters with `outcome` and removes the flight.
    fn complete(&mut self, outcome: Outcome<V>) {
        self.finished = true;
        // Remove the flight first, then wake its waiters: a waiter woken by
        // `Abandoned` goes back to step 1 and must not find this flight
        // still registered (it would join it again and spin until the
        // removal). A value was published before this call, so a caller
        // arriving after the removal finds it in step 2.
        let removed = {
            let mut table = self.group.shards[shard_of(self.hash)].lock();
            // Found by the stored hash and the flight's address: no user
            // code runs under the lock.
            match table.find_entry(self.hash, |e| Arc::ptr_eq(&e.flight, &self.flight)) {
                Ok(entry) => Some(entry.remove().0),
                Err(_) => None,
            }
        };
        // The owned key (user `Drop`) is dropped with no lock held.
        drop(removed);
        self.flight.finish(outcome);
    }
}

/// Completes a failed flight: its waiters get the shared error, and the
/// flight leaves the group (the error is not kept for later callers).
fn complete_failed<K, V>(leader: &mut Leader<'_, K, V>, error: SharedError) {
    leader.complete(Outcome::Failed(error));
}

/// Gives a flight up unfinished (its loader panicked, or its async leader
/// was dropped): removes it and wakes its waiters, who go back to step 1
/// and elect a new leader.
fn abandon_and_hand_over<K, V>(leader: &mut Leader<'_, K, V>) {
    leader.complete(Outcome::Abandoned);
}

impl<K, V> Drop for Leader<'_, K, V> {
    fn drop(&mut self) {
        if !self.finished {
            abandon(self);
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

#[cfg(test)]
mod tests;
