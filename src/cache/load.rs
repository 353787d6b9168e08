//! Load on miss for both concurrent faces (`LruCache`, and `TypedCache` /
//! `AnyCache` through `typed::raw`): the one piece of code that turns a
//! miss into a flight (`crate::flight`), stores the loaded value, counts
//! the loader run or the wait, and hands what the store displaced to the
//! face to release once the flight has ended and no lock is held.
//!
//! A face says how to do each of those steps on its own shards
//! ([`LoadFace`]); [`load`] (sync) and [`load_async`] (async) run them in
//! the order the flight protocol needs:
//!
//! 1. the leader's re-check of the cache after registering its flight
//!    (`LoadFace::recheck`): the value, or a token for the store (the typed
//!    face's write generation, so a write that landed while the loader ran
//!    wins over the loaded value);
//! 2. the loader, run with no lock held, counted once in `inits` as it
//!    starts and in `init_failures` if it errs, panics or is cancelled
//!    ([`LoaderRun`]);
//! 3. the store of a loaded value (`LoadFace::publish`), before the flight
//!    leaves the group;
//! 4. once the flight has ended: one `waits` for a caller that did not run
//!    its loader, and the release of what the store displaced
//!    (`LoadFace::release`: listener, drops), unlocked.

use std::borrow::Borrow;
use std::cell::Cell;
use std::future::Future;
use std::hash::Hash;
use std::marker::PhantomData;

use super::Event;
use crate::flight::{Caller, FlightGroup, Obtained};
use crate::sync::Arc;

/// What a concurrent face gives the load glue.
pub(crate) trait LoadFace<K, V> {
    /// What a re-check that missed hands to [`publish`](Self::publish).
    type Seen: Copy;
    /// What [`publish`](Self::publish) displaced, for
    /// [`release`](Self::release).
    type Leftover;

    /// The face's flights in progress.
    fn flights(&self) -> &FlightGroup<K, V>;

    /// The leader's re-check: a live entry's value (the access recorded,
    /// no hit or miss counted), or what [`publish`](Self::publish) needs to
    /// know of the shard as the re-check saw it.
    fn recheck<Q>(&self, hash: u64, key: &Q) -> Result<V, Self::Seen>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq;

    /// Counts `event` (`Init`, `InitFailure` or `Wait`) for the key of
    /// `hash`, with no lock held on entry.
    fn count(&self, hash: u64, event: Event);

    /// Nothing displaced.
    fn nothing() -> Self::Leftover;

    /// Stores a loaded value (`K` and `V` already cloned, no lock held on
    /// entry); what it displaces goes into `out`.
    fn publish(
        &self,
        hash: u64,
        key: K,
        value: V,
        seen: Option<Self::Seen>,
        out: &mut Self::Leftover,
    );

    /// Hands what a store displaced to the listener and drops it; called
    /// with no lock held, after the flight has ended.
    fn release(&self, displaced: Self::Leftover);
}

/// One loader run's place in the statistics: counted in `inits` as it
/// starts (a load in progress shows in `stats()`), and in `init_failures`
/// as it returns an error, unwinds or its future is dropped, before the
/// value is stored: `inits` is always the number of loader runs.
struct LoaderRun<'a, C: LoadFace<K, V>, K, V> {
    face: &'a C,
    hash: u64,
    failed: bool,
    types: PhantomData<fn(K, V)>,
}

impl<'a, C: LoadFace<K, V>, K, V> LoaderRun<'a, C, K, V> {
    /// Counts a loader run for the key of `hash`: call right before the
    /// loader, and hand its result to [`finish`](Self::finish).
    fn start(face: &'a C, hash: u64) -> Self {
        face.count(hash, Event::Init);
        let types = PhantomData;
        Self {
            face,
            hash,
            failed: true,
            types,
        }
    }

    /// Counts the run's failure, if it failed (on drop, no lock held).
    fn finish<T, E>(mut self, result: Result<T, E>) -> Result<T, E> {
        self.failed = result.is_err();
        result
    }
}

impl<C: LoadFace<K, V>, K, V> Drop for LoaderRun<'_, C, K, V> {
    fn drop(&mut self) {
        // An error, a panic, or a future dropped mid-load.
        if self.failed {
            self.face.count(self.hash, Event::InitFailure);
        }
    }
}

/// The miss path of a sync loading call, after the lookup of `key` (hashed
/// to `hash`) missed and counted its miss: the value through at most one
/// concurrent load of the key, stored before the flight ends.
pub(crate) fn load<C, K, V, E, F>(face: &C, hash: u64, key: &K, load: F) -> Result<V, Arc<E>>
where
    C: LoadFace<K, V>,
    K: Hash + Eq + Clone,
    V: Clone,
    E: Send + Sync + 'static,
    F: FnOnce() -> Result<V, E>,
{
    let seen = Cell::new(None);
    let ran = Cell::new(false);
    // Written in place by the store (nothing if the load stored nothing).
    let mut displaced = C::nothing();
    let outcome = face.flights().load(
        hash,
        key,
        // Re-check after registering: a flight that ended between our miss
        // and our registration has published its value.
        || face.recheck(hash, key).map_err(|s| seen.set(Some(s))).ok(),
        || {
            ran.set(true);
            LoaderRun::start(face, hash).finish(load())
        },
        // `K: Clone` and `V: Clone` run here, before any shard lock.
        |value| face.publish(hash, key.clone(), value.clone(), seen.get(), &mut displaced),
    );
    // Not the loader's runner: waited for another caller's load, or found
    // the value on the re-check. Either way one `waits`, so every miss of a
    // loading call is one init or one wait.
    if !ran.get() {
        face.count(hash, Event::Wait);
    }
    face.release(displaced);
    outcome.map(|(value, _source)| value)
}

/// The miss path of an async loading call, after its lookup of `key`
/// (hashed to `hash`) missed and counted its miss: the flight protocol's
/// future. `init` makes the loader's future, inside the leader's box only
/// (a waiter's future holds the closure, never the loader's future);
/// `make_key` builds the owned key, only if no flight is found and again to
/// store the value; `lift` turns the loader's output into a `Result`;
/// `finish` shapes the outcome. Out of line and `#[cold]`, so that a face's
/// hit half, forced inline, stays a lookup and a ready future in the
/// caller's own code.
#[cold]
pub(crate) fn load_async<'a, C, K, V, Q, E, I, Fut, O>(
    face: &'a C,
    hash: u64,
    key: &Q,
    init: I,
    make_key: impl Fn(&Q) -> K + Copy,
    lift: impl Fn(Fut::Output) -> Result<V, E> + Copy,
    finish: impl Fn(Result<V, Arc<E>>) -> O + Copy,
) -> impl Future<Output = O> + Unpin
where
    C: LoadFace<K, V>,
    K: Borrow<Q> + 'a,
    Q: ?Sized + Hash + Eq,
    V: 'a,
    V: Clone,
    E: Send + Sync + 'static,
    I: FnOnce() -> Fut,
    Fut: Future,
{
    // The closures capture only `make_key`, `lift` and `finish`
    // (zero-sized for every caller in the crate but `AnyCache`'s
    // `make_key`): the face, the key and the hash come in as arguments, so
    // the future holds them once.
    let lookup = |face: &'a C, key: &Q, hash: u64| face.recheck(hash, key);
    let run = move |face: &'a C, hash: u64, init: I| async move {
        // Counts this run once, as the loader returns; a panic or a drop
        // mid-load (cancellation) counts a failure.
        let run = LoaderRun::start(face, hash);
        run.finish(lift(init().await))
    };
    let publish = move |face: &'a C, key: &Q, hash: u64, value: &V, seen| {
        // `make_key` (user `ToOwned`) and `V: Clone` run here, before the
        // shard lock is taken.
        let mut displaced = C::nothing();
        face.publish(
            hash,
            make_key(key),
            value.clone(),
            Some(seen),
            &mut displaced,
        );
        displaced
    };
    let done = move |face: &'a C, hash, outcome, source, displaced: Option<_>| {
        // One load or one wait per miss of a loading call.
        if source != Obtained::Loaded {
            face.count(hash, Event::Wait);
        }
        // The listener (user code) runs after the flight has ended and with
        // no lock held.
        if let Some(displaced) = displaced {
            face.release(displaced);
        }
        finish(outcome)
    };
    face.flights().load_async(
        key,
        Caller {
            cx: face,
            hash,
            init,
            make_key,
            lookup,
            load: run,
            publish,
            done,
        },
    )
}
