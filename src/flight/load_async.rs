//! [`FlightGroup::load_async`]: the flight protocol with a future as the
//! loader and a future as the waiter. Serves
//! `LruCache::get_or_init_async` and `TypedCache::get_or_init_async` (and
//! their `try`/`AnyCache` forms).
//!
//! The steps are those of the sync [`FlightGroup::load`]; what differs:
//!
//! - A waiter awaits [`Wait`], whose waker sits in the flight's waker list:
//!   no thread blocks. It is woken by the same `finish` that wakes blocked
//!   sync waiters, so sync and async callers share one flight. Waiting is
//!   inline in the caller's future: a waiter allocates nothing (no box, no
//!   key; its [`Wait`] holds the flight's `Arc` and one slot index).
//! - Only the leader boxes: the steps it runs after registering (the
//!   re-check, the loader, publishing) are one boxed future, built when it
//!   becomes the leader. Every caller's future is one hand-written
//!   [`LoadAsync`] holding its arguments (the user's init once: the caches
//!   pass the closure that makes the loader's future, which is called
//!   inside the leader's box, so no caller's future carries the loader's
//!   future), a `Wait` and one pointer: no nested `async fn` levels that
//!   would each hold (and move) their own copy of the init.
//! - The lookup comes first, when the caller's method is called, before
//!   any future exists: a hit returns [`Looked::Hit`], a ready output and
//!   nothing else (no flight state, no flight lock, no allocation, no copy
//!   of the loader kept); only a miss builds a [`LoadAsync`], which starts
//!   at stage 1 on its first `poll`.
//! - The leader's loader is polled with no lock held; the shard and flight
//!   mutexes are only ever held between two `.await`s, never across one.
//! - Cancellation: the leader's state (a [`Leader`]) lives in its boxed
//!   future, so dropping the future mid-load drops the leader, which
//!   abandons the flight as a panicking leader does: it leaves the group and
//!   its waiters wake and go back to stage 1, where one of them leads. A
//!   dropped waiter empties its slot in the list ([`Wait`]'s `Drop`).
//! - A panic inside the loader's `poll` abandons the flight at once, while
//!   unwinding, not only when the future is later dropped: the panic
//!   unwinds through [`lead`]'s own frame, which drops its live locals, the
//!   leader among them (the test
//!   `panicking_init_hands_over_while_the_panicked_future_is_kept` keeps the
//!   panicked future alive and sees a waiter take over).
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
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use super::outcome::{Outcome, Wait};
use super::{Entered, FlightGroup, Leader, Obtained, REENTRANT, enter};
use crate::sync::{self, Arc};

/// What one async caller that missed brings to
/// [`FlightGroup::load_async`]: a context `cx` (the cache, a `Copy`
/// reference), the key's hash, its init (the user's closure that makes the
/// loader's future), and closures that get the
/// context, the key and its hash as arguments instead of capturing them, so
/// that the future holds each of those once and the closures are (usually)
/// zero-sized.
pub(crate) struct Caller<C, I, M, L, F, P, D> {
    /// The cache the closures work on.
    pub(crate) cx: C,
    /// The key's hash under the cache's hasher.
    pub(crate) hash: u64,
    /// The caller's init, handed to `load` if it runs.
    pub(crate) init: I,
    /// Builds the owned key, only if no flight of the key is found.
    pub(crate) make_key: M,
    /// The leader's re-check of the cache after registering: the value, or
    /// a token handed to `publish` (the typed cache's write generation).
    pub(crate) lookup: L,
    /// Builds this caller's loader future from `init`; called only if it
    /// leads and the re-check missed.
    pub(crate) load: F,
    /// Stores a loaded value in the cache (must not call back into the
    /// group for the same key); what it returns reaches `done`.
    pub(crate) publish: P,
    /// Shapes the outcome: `(cx, hash, result, source, published)`.
    pub(crate) done: D,
}

/// A leader's outcome: the result, how it was obtained and what `publish`
/// returned (if it ran).
type Led<V, E, T> = (Result<V, Arc<E>>, Obtained, Option<T>);

impl<K, V> FlightGroup<K, V> {
    /// The async [`load`](FlightGroup::load) for a caller whose lookup
    /// missed: gets the value of `key` through at most one concurrent load,
    /// sync or async. See [`Caller`] for what each closure does and when it
    /// runs.
    ///
    /// # Panics
    ///
    /// The future panics with [`REENTRANT`] if polled while the loader of
    /// the same key's flight is being polled (or called) on this thread; it
    /// resumes the loader's panic if it panicked.
    #[allow(clippy::type_complexity)]
    pub(crate) fn load_async<'a, 'k, Q, C, I, E, T, R, O, M, L, F, Fut, P, D>(
        &'a self,
        key: &'k Q,
        caller: Caller<C, I, M, L, F, P, D>,
    ) -> impl Future<Output = O> + Unpin
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
        C: Copy,
        E: Send + Sync + 'static,
        M: Fn(&Q) -> K,
        V: Clone,
        L: FnMut(C, &Q, u64) -> Result<V, T>,
        F: FnOnce(C, u64, I) -> Fut,
        Fut: Future<Output = Result<V, E>>,
        P: FnOnce(C, &Q, u64, &V, T) -> R,
        D: FnOnce(C, u64, Result<V, Arc<E>>, Obtained, Option<R>) -> O,
    {
        let Caller {
            cx,
            hash,
            init,
            make_key,
            lookup,
            load,
            publish,
            done,
        } = caller;
        LoadAsync {
            group: self,
            key,
            hash,
            cx,
            init: Some(init),
            make_key,
            start: Some(
                move |leader: Leader<'a, K, V>, cx: C, key: &'k Q, init: I| {
                    lead(leader, cx, key, init, lookup, load, publish)
                },
            ),
            done: Some(done),
            stage: Stage::Enter,
        }
    }
}

/// An async caller's future: a hit found at the call, or the rest of the
/// protocol for a miss. `Unpin`: a hit's output is never pinned, and `F`
/// (a [`LoadAsync`]) is `Unpin`.
pub(crate) enum Looked<O, F> {
    /// The lookup hit: the output, taken by the one `poll`.
    Hit(Option<O>),
    /// The lookup missed.
    Miss(F),
}

impl<O, F: Unpin> Unpin for Looked<O, F> {}

impl<O, F: Future<Output = O> + Unpin> Future for Looked<O, F> {
    type Output = O;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O> {
        match self.get_mut() {
            Looked::Hit(output) => Poll::Ready(output.take().expect(POLLED_AFTER_DONE)),
            Looked::Miss(load) => Pin::new(load).poll(cx),
        }
    }
}

/// Where a [`LoadAsync`] stands.
enum Stage<V, LF> {
    /// Missed: join or register (steps 1 and 2).
    Enter,
    /// Joined a flight: waiting for its outcome (inline, unboxed).
    Waiting(Wait<V>),
    /// Leads the flight: the boxed rest of the protocol.
    Leading(Pin<Box<LF>>),
    /// Returned its output.
    Done,
}

/// The future of [`FlightGroup::load_async`].
///
/// Hand-written, so that the user's init sits in it once, unpinned, until
/// this caller leads and moves it into the leader's box; a waiter never
/// boxes. It is `Unpin` (declared below): no
/// field is ever pinned in place, the loader is pinned only inside its box.
struct LoadAsync<'a, 'k, K, V, Q: ?Sized, C, I, M, S, LF, D> {
    group: &'a FlightGroup<K, V>,
    key: &'k Q,
    hash: u64,
    cx: C,
    /// The user's init, not pinned: it moves into the leader's box, where
    /// `load` makes the loader's future from it.
    init: Option<I>,
    make_key: M,
    /// Builds the leader's future (holds the loader, the re-check and the
    /// publish closures until then).
    start: Option<S>,
    done: Option<D>,
    stage: Stage<V, LF>,
}

// No field is structurally pinned: `poll` never hands out a `Pin` to one
// (the leader's future is pinned in its own box), so moving the whole
// future between polls moves nothing that relies on staying put.
impl<K, V, Q: ?Sized, C, I, M, S, LF, D> Unpin for LoadAsync<'_, '_, K, V, Q, C, I, M, S, LF, D> {}

const POLLED_AFTER_DONE: &str = "larder: a loading future was polled after it completed";

impl<'a, 'k, K, V, Q, C, I, E, R, O, M, S, LF, D> Future
    for LoadAsync<'a, 'k, K, V, Q, C, I, M, S, LF, D>
where
    K: Borrow<Q>,
    Q: ?Sized + Eq,
    C: Copy,
    E: Send + Sync + 'static,
    V: Clone,
    M: Fn(&Q) -> K,
    S: FnOnce(Leader<'a, K, V>, C, &'k Q, I) -> LF,
    LF: Future<Output = Led<V, E, R>>,
    D: FnOnce(C, u64, Result<V, Arc<E>>, Obtained, Option<R>) -> O,
{
    type Output = O;

    /// Steps 1 to 3: joining or leading, waiting, finishing.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O> {
        let this = self.get_mut();
        loop {
            let (outcome, source, published) = match &mut this.stage {
                Stage::Enter => {
                    this.enter();
                    continue;
                }
                Stage::Waiting(wait) => match Pin::new(wait).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Outcome::Value(value)) => (Ok(value), Obtained::Waited, None),
                    Poll::Ready(Outcome::Failed(error)) => match error.downcast::<E>() {
                        Ok(error) => (Err(error), Obtained::Waited, None),
                        // Another call site's error type: load for
                        // ourselves (as the sync form does).
                        Err(_) => {
                            this.stage = Stage::Enter;
                            continue;
                        }
                    },
                    // Abandoned (panic or cancellation): take over.
                    Poll::Ready(Outcome::Abandoned | Outcome::Loading) => {
                        this.stage = Stage::Enter;
                        continue;
                    }
                },
                Stage::Leading(lead) => match lead.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(led) => led,
                },
                Stage::Done => panic!("{}", POLLED_AFTER_DONE),
            };
            this.stage = Stage::Done;
            let done = this.done.take().expect(POLLED_AFTER_DONE);
            return Poll::Ready(done(this.cx, this.hash, outcome, source, published));
        }
    }
}

impl<'a, 'k, K, V, Q, C, I, M, S, LF, D> LoadAsync<'a, 'k, K, V, Q, C, I, M, S, LF, D>
where
    K: Borrow<Q>,
    Q: ?Sized + Eq,
    C: Copy,
    M: Fn(&Q) -> K,
    S: FnOnce(Leader<'a, K, V>, C, &'k Q, I) -> LF,
{
    /// Steps 1 and 2: joins the key's flight (`Waiting`) or leads a new one
    /// (`Leading`, the only allocation of the miss path besides the flight
    /// and the key).
    fn enter(&mut self) {
        let group = self.group;
        let entered = enter(group, self.hash, self.key, || (self.make_key)(self.key));
        self.stage = match entered {
            Entered::Joined(flight) => {
                assert!(!sync::is_loading(flight.id()), "{}", REENTRANT);
                Stage::Waiting(Wait::new(flight))
            }
            Entered::Leading(flight) => {
                let leader = Leader::new(group, self.hash, flight);
                let start = self.start.take().expect(POLLED_AFTER_DONE);
                let init = self.init.take().expect(POLLED_AFTER_DONE);
                Stage::Leading(Box::pin(start(leader, self.cx, self.key, init)))
            }
        };
    }
}

/// Steps 2 and 3 for an async leader. Dropping this future mid-load drops
/// `leader`, which abandons the flight.
#[allow(clippy::too_many_arguments)]
async fn lead<K, V, Q, C, I, E, T, R, L, F, Fut, P>(
    mut leader: Leader<'_, K, V>,
    cx: C,
    key: &Q,
    init: I,
    mut lookup: L,
    load: F,
    publish: P,
) -> Led<V, E, R>
where
    Q: ?Sized,
    C: Copy,
    E: Send + Sync + 'static,
    V: Clone,
    L: FnMut(C, &Q, u64) -> Result<V, T>,
    F: FnOnce(C, u64, I) -> Fut,
    Fut: Future<Output = Result<V, E>>,
    P: FnOnce(C, &Q, u64, &V, T) -> R,
{
    let hash = leader.hash;
    let token = match lookup(cx, key, hash) {
        Ok(value) => {
            leader.complete_with(&value);
            return (Ok(value), Obtained::Cached, None);
        }
        Err(token) => token,
    };
    let id = leader.flight.id();
    let mut load = pin!(load(cx, hash, init));
    let outcome = poll_fn(|cx| {
        let _entered = sync::enter_load(id);
        load.as_mut().poll(cx)
    })
    .await;
    let mut published = None;
    let outcome = leader.settle(outcome, |value| {
        published = Some(publish(cx, key, hash, value, token))
    });
    (
        outcome.map(|(value, _source)| value),
        Obtained::Loaded,
        published,
    )
}
