//! [`FlightGroup::load_async`]: the flight protocol with a future as the
//! loader and a future as the waiter. Serves
//! `LruCache::get_or_load_async` and `TypedCache::get_or_init_async` (and
//! their `try`/`AnyCache` forms).
//!
//! The steps are those of the sync [`FlightGroup::load`]; what differs:
//!
//! - A waiter awaits [`Wait`], whose waker sits in the flight's waker list:
//!   no thread blocks. It is woken by the same `finish` that wakes blocked
//!   sync waiters, so sync and async callers share one flight.
//! - The leader's loader is polled with no lock held; the shard and flight
//!   mutexes are only ever held between two `.await`s, never across one.
//! - Cancellation: the leader's state (a [`Leader`]) lives in the returned
//!   future, so dropping the future mid-load drops the leader, which
//!   abandons the flight as a panicking leader does: it leaves the group and
//!   its waiters wake and go back to step 1, where one of them leads. A
//!   dropped waiter takes its waker out of the list ([`Wait`]'s `Drop`).
//! - A panic inside the loader's `poll` abandons the flight at once, while
//!   unwinding, not only when the future is later dropped.
//!
//! # Re-entrancy
//!
//! While the leader polls its loader, the flight is marked as loading on the
//! polling thread (`sync::enter_load`). A call for the same key made during
//! that poll (the loader awaiting its own key, directly or through `join!`
//! and the like) finds the mark and panics with [`REENTRANT`] instead of
//! waiting for itself. Not detected: a loader that sends the request to
//! *another task* and awaits that task (a spawned task, a channel to a
//! worker): that task is polled outside the loader's poll and cannot be told
//! apart, without a runtime, from an unrelated caller of the key. Such a
//! loader waits forever, like two sync loaders that wait for each other.

use std::borrow::Borrow;
use std::future::{Future, poll_fn};
use std::pin::pin;

use super::wait::{Flight, State, Wait};
use super::{FlightFault, FlightGroup, Leader, REENTRANT, SHARDS, Source};
use crate::sync::{self, Arc};

impl<K, V> FlightGroup<K, V> {
    /// The async [`load`](FlightGroup::load): gets the value of `key`
    /// through at most one concurrent load, sync or async.
    ///
    /// `lookup` looks in the cache and returns, on a miss, a token handed to
    /// `publish` (the typed cache passes its shard's write generation).
    /// `make_key` builds the owned key, called only when this caller
    /// registers a flight. `load` is polled with no lock held; `publish`
    /// must not call back into this group for the same key.
    ///
    /// # Panics
    ///
    /// Panics with [`REENTRANT`] if called while the loader of the same
    /// key's flight is being polled (or called) on this thread; resumes the
    /// loader's panic if it panicked.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn load_async<Q, E, T, L, F, P>(
        &self,
        hash: u64,
        key: &Q,
        make_key: impl Fn() -> K,
        mut lookup: L,
        load: F,
        publish: P,
    ) -> Result<(Arc<V>, Source), Arc<E>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
        E: Send + Sync + 'static,
        L: FnMut() -> Result<Arc<V>, T>,
        F: Future<Output = Result<V, E>>,
        P: FnOnce(&Arc<V>, T),
    {
        if self.fault == FlightFault::SkipFlight {
            // BROKEN on purpose (loom negative control): check-then-act.
            let token = match lookup() {
                Ok(value) => return Ok((value, Source::Cached)),
                Err(token) => token,
            };
            let value = Arc::new(load.await.map_err(Arc::new)?);
            publish(&value, token);
            return Ok((value, Source::Loaded));
        }
        let shard = hash as usize % SHARDS;
        // The owned key is built (user `ToOwned`/`Clone`) before the shard
        // mutex is taken, so only `Eq` runs under it; it is kept across
        // rounds, and a caller that joins drops it unlocked.
        let mut owned: Option<K> = None;
        let leader = loop {
            let key_for_flight = owned.take().unwrap_or_else(&make_key);
            // Step 1, under the shard mutex (released before any await).
            let joined = {
                let mut bucket = self.shards[shard].lock();
                let found = bucket
                    .iter()
                    .find(|(h, k, _)| *h == hash && k.borrow() == key)
                    .map(|(_, _, flight)| Arc::clone(flight));
                match found {
                    Some(flight) => Ok((flight, key_for_flight)),
                    None => {
                        let flight = Arc::new(Flight::new(self.fault));
                        bucket.push((hash, key_for_flight, Arc::clone(&flight)));
                        Err(flight)
                    }
                }
            };
            match joined {
                Ok((flight, unused_key)) => {
                    owned = Some(unused_key);
                    assert!(!sync::is_loading(flight.id()), "{}", REENTRANT);
                    match Wait::new(flight).await {
                        State::Value(value) => return Ok((value, Source::Waited)),
                        State::Failed(error) => match error.downcast::<E>() {
                            Ok(error) => return Err(error),
                            // Another call site's error type: load for
                            // ourselves (as the sync form does).
                            Err(_) => continue,
                        },
                        // Abandoned (panic or cancellation): take over.
                        State::Abandoned | State::Loading => continue,
                    }
                }
                Err(flight) => break Leader::new(self, hash, flight, true),
            }
        };
        lead(leader, &mut lookup, load, publish).await
    }
}

/// Steps 2 and 3 for an async leader. Dropping this future mid-load drops
/// `leader`, which abandons the flight.
async fn lead<K, V, E, T, L, F, P>(
    mut leader: Leader<'_, K, V>,
    lookup: &mut L,
    load: F,
    publish: P,
) -> Result<(Arc<V>, Source), Arc<E>>
where
    E: Send + Sync + 'static,
    L: FnMut() -> Result<Arc<V>, T>,
    F: Future<Output = Result<V, E>>,
    P: FnOnce(&Arc<V>, T),
{
    let token = match lookup() {
        Ok(value) => {
            leader.complete(State::Value(Arc::clone(&value)));
            return Ok((value, Source::Cached));
        }
        Err(token) => token,
    };
    let id = leader.flight.id();
    let mut load = pin!(load);
    let outcome = poll_fn(|cx| {
        let _entered = sync::enter_load(id);
        let abandon = AbandonOnUnwind(&mut leader);
        let poll = load.as_mut().poll(cx);
        std::mem::forget(abandon);
        poll
    })
    .await;
    leader.settle(outcome, |value| publish(value, token))
}

/// Abandons the flight if the loader's `poll` unwinds (disarmed with
/// `mem::forget` when it returns).
struct AbandonOnUnwind<'l, 'a, K, V>(&'l mut Leader<'a, K, V>);

impl<K, V> Drop for AbandonOnUnwind<'_, '_, K, V> {
    fn drop(&mut self) {
        // The same as dropping the leader unfinished (which honours the
        // loom faults); `finished` keeps the later drop from acting twice.
        let leader = &mut *self.0;
        if !leader.finished {
            leader.abandon();
        }
    }
}
