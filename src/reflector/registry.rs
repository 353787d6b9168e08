//! Handlers added and removed while the reflector runs (the handler side
//! of client-go's shared informer: `AddEventHandler`,
//! `RemoveEventHandler`, one `processorListener` per handler).
//!
//! # Protocol
//!
//! Each added handler gets a [`Buffer`]: an unbounded FIFO of
//! notifications, drained by the handler's own [`HandlerDelivery`] future,
//! so a slow handler delays only itself (not the loop, not the other
//! handlers).
//!
//! A handler added with [`HandlerRegistry::add`] waits in `pending`. The
//! loop *joins* pending handlers only between two revisions (in its poll
//! points, never between a store write and the push of its
//! notification): it reads the store's content, pushes one synthetic add
//! per object into the new buffer, then moves the buffer to `active`,
//! which receives every later notification. The loop is the store's only
//! writer and pushes each change's notification before it polls again, so
//! the content it reads holds exactly the changes already pushed to the
//! active buffers: the new handler sees each object once, from the
//! synthetic add or from the notification of a later change, never both
//! and never neither (no gap, no repeat).
//!
//! A handler added with its own resync period
//! ([`HandlerRegistry::add_with_resync`]) has its own timer, polled by the
//! loop at the same poll points: when it fires, the loop pushes one update
//! per stored object (old and new the same) into that handler's buffer
//! alone, so its resync too sits between two revisions. The reflector-wide
//! resync ([`ReflectorBuilder::resync`](super::ReflectorBuilder::resync))
//! goes to the handlers added with [`HandlerRegistry::add`].
//!
//! A relist does the resync of every handler whose resync is due (its
//! timer, or the reflector's, has fired): before it delivers, the loop
//! marks those handlers ([`Registry::mark_due`]) and restarts their timers;
//! the objects the relist found unchanged (syncs) go to the marked handlers
//! alone, its changes to every handler; then the marks are cleared. The
//! loop is inside one step between two revisions throughout, so no handler
//! joins meanwhile.
//!
//! When the loop ends (stopped, its future dropped, or the reflector
//! dropped unrun), the registry is *closed*: pending handlers are joined
//! with the final content, every buffer is marked closed (its delivery
//! drains it, then completes), and a handler added later gets the store's
//! content and then nothing more.
//!
//! # Locks
//!
//! The registry's mutex, then a buffer's: the loop pushes under both (a
//! clone made before), a delivery pops under its buffer's alone. Joining
//! and resyncs read the published revision (the status mutex, briefly) and
//! the store under the registry's mutex; nothing takes the registry's
//! mutex while holding the status mutex.
//! Handlers run with no lock held; wakers are woken after unlocking.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::builder::Resync;
use super::error::ReflectorBuildError;
use super::handler::{Handler, Notification};
use super::report::Reporter;
use super::source::Revision;
use super::status::Status;
use super::timer::{SharedTimer, Sleep};
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};

/// Reads the store's whole content (the registry does not name the store's
/// hasher).
pub(crate) type SnapshotFn<K, V> = Box<dyn Fn() -> Vec<(K, Arc<V>)> + Send + Sync>;

/// How many notifications a delivery hands its handler per poll before it
/// yields to its executor.
const PER_POLL: usize = 64;

/// One entry of a buffer.
enum Item<K, V> {
    Notify(Notification<K, V>),
    /// The synthetic adds before it are delivered: the handler has synced.
    Synced,
}

/// A handler's queue of notifications.
struct Buffer<K, V> {
    id: u64,
    handler: Box<dyn Handler<K, V>>,
    /// Its own resync period, or `None`: the reflector's.
    resync: Option<Resync>,
    queue: Mutex<Queue<K, V>>,
    synced: AtomicBool,
}

struct Queue<K, V> {
    items: VecDeque<Item<K, V>>,
    /// No more items will come: deliver what is left, then complete.
    closed: bool,
    /// Removed: deliver nothing more.
    removed: bool,
    waker: Option<Waker>,
}

impl<K, V> Buffer<K, V> {
    /// Appends `items`; marks the buffer closed if `close`. Wakes its
    /// delivery.
    fn push(&self, items: impl IntoIterator<Item = Item<K, V>>, close: bool) {
        let waker = {
            let mut queue = self.queue.lock();
            if queue.removed {
                return;
            }
            queue.items.extend(items);
            queue.closed |= close;
            queue.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Marks the buffer removed and drops what it held (after unlocking).
    fn remove(&self) {
        let (items, waker) = {
            let mut queue = self.queue.lock();
            queue.removed = true;
            (std::mem::take(&mut queue.items), queue.waker.take())
        };
        drop(items);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The registry's state.
struct State<K, V> {
    next_id: u64,
    pending: Vec<Arc<Buffer<K, V>>>,
    active: Vec<Arc<Buffer<K, V>>>,
    /// The timers of the active handlers with their own resync period.
    resyncs: Vec<OwnResync<K, V>>,
    /// The handlers whose resync a relist in progress does (by id).
    due: Vec<u64>,
    closed: bool,
}

/// Which added handlers a notification goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Audience {
    /// A change: every handler.
    All,
    /// The reflector-wide periodic resync: the handlers without a resync
    /// period of their own.
    Resync,
    /// A relist's unchanged object: the handlers whose resync is due
    /// ([`Registry::mark_due`]).
    Due,
}

/// An active handler's own resync timer.
struct OwnResync<K, V> {
    buffer: Arc<Buffer<K, V>>,
    period: std::time::Duration,
    sleep: Sleep,
}

/// Every handler added while the reflector runs.
pub(crate) struct Registry<K, V> {
    state: Mutex<State<K, V>>,
    snapshot: SnapshotFn<K, V>,
    status: Arc<Status>,
    reporter: Arc<Reporter>,
    timer: SharedTimer,
}

impl<K: Clone, V> Registry<K, V> {
    pub(crate) fn new(
        snapshot: SnapshotFn<K, V>,
        status: Arc<Status>,
        reporter: Arc<Reporter>,
        timer: SharedTimer,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                next_id: 0,
                pending: Vec::new(),
                active: Vec::new(),
                resyncs: Vec::new(),
                due: Vec::new(),
                closed: false,
            }),
            snapshot,
            status,
            reporter,
            timer,
        }
    }

    /// Joins the pending handlers (the loop calls it between changes),
    /// starting the timers of those with their own resync period.
    pub(crate) fn join_pending(&self) {
        let mut state = self.state.lock();
        if state.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut state.pending);
        let (content, revision) = self.content();
        for buffer in pending {
            let adds = content.iter().map(|(key, object)| {
                Item::Notify(Notification::add(key.clone(), Arc::clone(object), revision))
            });
            buffer.push(adds.chain([Item::Synced]), false);
            if let Some(Resync::Every(period)) = buffer.resync {
                state.resyncs.push(OwnResync {
                    buffer: Arc::clone(&buffer),
                    period,
                    sleep: self.timer.sleep(period),
                });
            }
            state.active.push(buffer);
        }
    }

    /// Polls the handlers' own resync timers (the loop calls it between
    /// changes, with its context): each handler whose timer has fired gets
    /// one update per stored object, old and new the same, and a new timer.
    pub(crate) fn poll_resyncs(&self, cx: &mut Context<'_>) {
        let mut state = self.state.lock();
        let mut content = None;
        for own in &mut state.resyncs {
            while own.sleep.as_mut().poll(cx).is_ready() {
                let (content, revision) = content.get_or_insert_with(|| self.content());
                let updates = content.iter().map(|(key, object)| {
                    let (old, new) = (Arc::clone(object), Arc::clone(object));
                    Item::Notify(Notification::update(key.clone(), old, new, *revision))
                });
                own.buffer.push(updates, false);
                own.sleep = self.timer.sleep(own.period);
            }
        }
    }

    /// The store's content and the revision it is the source's content at.
    /// Called between two revisions (or once the loop has ended): the loop,
    /// the store's only writer, has published the revision of the last
    /// change it wrote and of every bookmark since, so the two agree.
    fn content(&self) -> (Vec<(K, Arc<V>)>, Revision) {
        let revision = self.status.read(|inner| inner.stats.last_revision);
        ((self.snapshot)(), revision)
    }

    /// Whether any added handler receives notifications now.
    pub(crate) fn has_active(&self) -> bool {
        !self.state.lock().active.is_empty()
    }

    /// Marks the active handlers whose resync is due, for a relist about to
    /// deliver: those with their own period whose timer has fired (polled
    /// with the loop's context; each gets a new timer), and, if
    /// `reflector_due` (the reflector's timer has fired), those without a
    /// period of their own. Returns whether any is marked.
    pub(crate) fn mark_due(&self, cx: &mut Context<'_>, reflector_due: bool) -> bool {
        let mut state = self.state.lock();
        let State {
            active,
            resyncs,
            due,
            ..
        } = &mut *state;
        due.clear();
        for own in resyncs.iter_mut() {
            if own.sleep.as_mut().poll(cx).is_ready() {
                own.sleep = self.timer.sleep(own.period);
                due.push(own.buffer.id);
            }
        }
        if reflector_due {
            let inheriting = active.iter().filter(|buffer| buffer.resync.is_none());
            due.extend(inheriting.map(|buffer| buffer.id));
        }
        !due.is_empty()
    }

    /// The relist has delivered: no handler is marked any more.
    pub(crate) fn clear_due(&self) {
        self.state.lock().due.clear();
    }

    /// Queues `notification` for the active handlers `audience` names.
    pub(crate) fn push(&self, notification: &Notification<K, V>, audience: Audience) {
        let state = self.state.lock();
        for buffer in &state.active {
            let wanted = match audience {
                Audience::All => true,
                Audience::Resync => buffer.resync.is_none(),
                Audience::Due => state.due.contains(&buffer.id),
            };
            if wanted {
                buffer.push([Item::Notify(notification.clone())], false);
            }
        }
    }

    /// The loop has ended: joins the pending handlers with the final
    /// content and closes every buffer.
    pub(crate) fn close(&self) {
        self.join_pending();
        let mut state = self.state.lock();
        state.closed = true;
        state.resyncs.clear();
        for buffer in std::mem::take(&mut state.active) {
            buffer.push([], true);
        }
    }

    fn add(&self, handler: Box<dyn Handler<K, V>>, resync: Option<Resync>) -> Arc<Buffer<K, V>> {
        let mut state = self.state.lock();
        let id = state.next_id;
        state.next_id += 1;
        let buffer = Arc::new(Buffer {
            id,
            handler,
            resync,
            queue: Mutex::new(Queue {
                items: VecDeque::new(),
                closed: false,
                removed: false,
                waker: None,
            }),
            synced: AtomicBool::new(false),
        });
        if state.closed {
            drop(state);
            let (content, revision) = self.content();
            let adds = content
                .into_iter()
                .map(|(key, object)| Item::Notify(Notification::add(key, object, revision)));
            buffer.push(adds.chain([Item::Synced]), true);
        } else {
            state.pending.push(Arc::clone(&buffer));
            drop(state);
            self.status.wake_loop();
        }
        buffer
    }
}

impl<K, V> Registry<K, V> {
    /// Removes the handler `id` (pending or active) and empties its
    /// buffer; its delivery then completes.
    fn remove(&self, id: u64) {
        let buffer = {
            let mut state = self.state.lock();
            state.resyncs.retain(|own| own.buffer.id != id);
            let State {
                pending, active, ..
            } = &mut *state;
            [pending, active].into_iter().find_map(|list| {
                let at = list.iter().position(|buffer| buffer.id == id)?;
                Some(list.remove(at))
            })
        };
        if let Some(buffer) = buffer {
            buffer.remove();
        }
    }
}

/// Adds and removes handlers while the reflector runs: client-go's
/// `SharedInformer::AddEventHandler` and `RemoveEventHandler`. Take it
/// with [`Reflector::handler_registry`](super::Reflector::handler_registry)
/// before [`run`](super::Reflector::run); clones share the registry.
///
/// Unlike the builder's handlers, which the loop calls itself, each added
/// handler has its own unbounded buffer, drained by its own
/// [`HandlerDelivery`] future (spawn it on any executor): a slow handler
/// delays only itself. It first receives one `on_add` per object in the
/// store when it joins, then every later change, in order: each object
/// once, with no gap and no repeat between the two. A relist's objects
/// whose revision did not change reach it only when its resync is due
/// (see [`add_with_resync`](Self::add_with_resync)).
///
/// Added after the reflector has ended (stopped, its future dropped, or
/// the reflector dropped unrun), a handler is accepted all the same: it
/// gets the final content, has synced, and its delivery completes, as a
/// handler added just before the end does; so the delivery completing is
/// the one end signal, whichever came first.
/// [`ReflectorHandle::is_finished`](super::ReflectorHandle::is_finished)
/// tells the two apart.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use larder::IndexedStore;
/// use larder::reflector::{MemorySource, Reflector};
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// let source = MemorySource::new();
/// source.put("a".to_string(), 1);
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(source.clone(), store).build().unwrap();
/// let (handle, registry) = (reflector.handle(), reflector.handler_registry());
/// let task = tokio::spawn(reflector.run());
/// handle.wait_until_synced().await.unwrap();
///
/// // A handler added to the running reflector gets the content first.
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let (registration, delivery) = registry.add_fn({
///     let seen = Arc::clone(&seen);
///     move |key: &String, _: &Arc<u32>| seen.lock().unwrap().push(key.clone())
/// });
/// let delivering = tokio::spawn(delivery);
/// let revision = source.put("b".to_string(), 2);
/// handle.wait_for_revision(revision).await.unwrap();
/// // `has_synced`: the handler has been given the content it joined with.
/// while !registration.has_synced() {
///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
/// }
///
/// registration.remove(); // its delivery drains nothing more and ends
/// delivering.await.unwrap();
/// handle.stop();
/// task.await.unwrap();
/// let seen = seen.lock().unwrap();
/// assert_eq!(seen[0], "a"); // the synthetic add; "b" may have come too
/// # });
/// ```
pub struct HandlerRegistry<K, V> {
    pub(crate) registry: Arc<Registry<K, V>>,
}

impl<K, V> Clone for HandlerRegistry<K, V> {
    fn clone(&self) -> Self {
        Self {
            registry: Arc::clone(&self.registry),
        }
    }
}

impl<K, V> HandlerRegistry<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    /// Adds `handler`; returns its registration (to remove it, or to ask
    /// whether it has synced) and its delivery, the future that calls it.
    /// Nothing is delivered until the delivery is polled; dropping the
    /// delivery removes the handler.
    ///
    /// The handler joins at the loop's next step between two revisions (at
    /// once if the reflector has ended: it then gets the final content and
    /// nothing more).
    ///
    /// # Examples
    ///
    /// See [`HandlerRegistry`].
    pub fn add(
        &self,
        handler: impl Handler<K, V>,
    ) -> (HandlerRegistration<K, V>, HandlerDelivery<K, V>) {
        self.added(Box::new(handler), None)
    }

    /// [`add`](Self::add) with the handler's own resync period in place of
    /// the reflector's (client-go's `AddEventHandlerWithResyncPeriod`):
    /// every `period` from when it joins, the handler alone gets one
    /// [`on_update`](Handler::on_update) per stored object, old and new the
    /// same, between two revisions. A relist that finds its period run out
    /// does that resync (the objects it found unchanged go to this handler
    /// as such syncs) and starts the period again. [`Resync::Never`] opts it
    /// out of the reflector's resync: it then gets a relist's changes
    /// alone.
    ///
    /// # Errors
    ///
    /// [`ReflectorBuildError::ZeroResyncPeriod`] for `Resync::Every(0)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use larder::IndexedStore;
    /// use larder::reflector::{Handler, MemorySource, Reflector, ReflectorBuildError, Resync};
    ///
    /// struct Retry;
    /// impl Handler<String, u32> for Retry {
    ///     fn on_update(&self, key: &String, old: &Arc<u32>, new: &Arc<u32>) {
    ///         if Arc::ptr_eq(old, new) {
    ///             println!("resync of {key}: reconcile it again");
    ///         }
    ///     }
    /// }
    ///
    /// let source = MemorySource::<String, u32>::new();
    /// let store = IndexedStore::new();
    /// let reflector = Reflector::builder(source, store).build().unwrap();
    /// let registry = reflector.handler_registry();
    /// let every_minute = Resync::Every(Duration::from_secs(60));
    /// let (_registration, _delivery) = registry.add_with_resync(Retry, every_minute).unwrap();
    /// let zero = registry.add_with_resync(Retry, Resync::Every(Duration::ZERO));
    /// assert_eq!(zero.unwrap_err(), ReflectorBuildError::ZeroResyncPeriod);
    /// ```
    #[allow(clippy::type_complexity)] // the pair `add` returns, in a `Result`
    pub fn add_with_resync(
        &self,
        handler: impl Handler<K, V>,
        resync: Resync,
    ) -> Result<(HandlerRegistration<K, V>, HandlerDelivery<K, V>), ReflectorBuildError> {
        if resync == Resync::Every(std::time::Duration::ZERO) {
            return Err(ReflectorBuildError::ZeroResyncPeriod);
        }
        Ok(self.added(Box::new(handler), Some(resync)))
    }

    fn added(
        &self,
        handler: Box<dyn Handler<K, V>>,
        resync: Option<Resync>,
    ) -> (HandlerRegistration<K, V>, HandlerDelivery<K, V>) {
        let buffer = self.registry.add(handler, resync);
        (
            HandlerRegistration {
                registry: Arc::clone(&self.registry),
                buffer: Arc::clone(&buffer),
            },
            HandlerDelivery {
                registry: Arc::clone(&self.registry),
                buffer,
            },
        )
    }

    /// [`add`](Self::add) with a closure for `on_add` only.
    ///
    /// # Examples
    ///
    /// See [`HandlerRegistry`].
    pub fn add_fn(
        &self,
        on_add: impl Fn(&K, &Arc<V>) + Send + Sync + 'static,
    ) -> (HandlerRegistration<K, V>, HandlerDelivery<K, V>) {
        struct OnAdd<F>(F);
        impl<K, V, F> Handler<K, V> for OnAdd<F>
        where
            F: Fn(&K, &Arc<V>) + Send + Sync + 'static,
        {
            fn on_add(&self, key: &K, new: &Arc<V>) {
                (self.0)(key, new);
            }
        }
        self.add(OnAdd(on_add))
    }
}

impl<K, V> fmt::Debug for HandlerRegistry<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.registry.state.lock();
        f.debug_struct("HandlerRegistry")
            .field("pending", &state.pending.len())
            .field("active", &state.active.len())
            .field("closed", &state.closed)
            .finish()
    }
}

/// One added handler (client-go's `ResourceEventHandlerRegistration`).
pub struct HandlerRegistration<K, V> {
    registry: Arc<Registry<K, V>>,
    buffer: Arc<Buffer<K, V>>,
}

impl<K, V> HandlerRegistration<K, V> {
    /// Whether the handler has been given the synthetic adds of the content
    /// the store held when it joined (client-go's `HasSynced`).
    ///
    /// # Examples
    ///
    /// See [`HandlerRegistry`].
    pub fn has_synced(&self) -> bool {
        // Acquire pairs with the Release store in the delivery: the
        // handler's calls before it happen before this returns true.
        self.buffer.synced.load(Ordering::Acquire)
    }

    /// Removes the handler: it gets no notification after this returns
    /// (one being delivered right now finishes), and its delivery
    /// completes.
    ///
    /// # Examples
    ///
    /// See [`HandlerRegistry`].
    pub fn remove(self) {
        self.registry.remove(self.buffer.id);
    }
}

impl<K, V> fmt::Debug for HandlerRegistration<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("id", &self.buffer.id)
            .finish_non_exhaustive()
    }
}

/// The future that calls one added handler: drains its buffer, one
/// notification at a time, with no lock held. Completes when the handler
/// is removed, or when the reflector has ended and the buffer is empty.
/// Dropping it removes the handler. A panic of the handler is caught,
/// counted in [`ReflectorStats::handler_panics`](super::ReflectorStats::handler_panics)
/// and reported to [`on_error`](super::ReflectorBuilder::on_error) (on the
/// task that polls the delivery) as
/// [`ReflectorError::HandlerPanicked`](super::ReflectorError::HandlerPanicked);
/// the handler gets its next notification as usual.
#[must_use = "the handler is called only while its delivery is polled"]
pub struct HandlerDelivery<K, V> {
    registry: Arc<Registry<K, V>>,
    buffer: Arc<Buffer<K, V>>,
}

impl<K: 'static, V: 'static> Future for HandlerDelivery<K, V> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let buffer = &self.buffer;
        for _ in 0..PER_POLL {
            let item = {
                let mut queue = buffer.queue.lock();
                match queue.items.pop_front() {
                    Some(item) => item,
                    None if queue.closed || queue.removed => return Poll::Ready(()),
                    None => {
                        if !queue
                            .waker
                            .as_ref()
                            .is_some_and(|w| w.will_wake(cx.waker()))
                        {
                            queue.waker = Some(cx.waker().clone());
                        }
                        return Poll::Pending;
                    }
                }
            };
            match item {
                Item::Synced => buffer.synced.store(true, Ordering::Release),
                Item::Notify(notification) => {
                    self.registry.reporter.call(&*buffer.handler, &notification);
                }
            }
        }
        // Let the executor run others; come back at once.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<K, V> Drop for HandlerDelivery<K, V> {
    fn drop(&mut self) {
        self.registry.remove(self.buffer.id);
        // Already gone from the lists (removed, or closed): drop what its
        // buffer still holds all the same.
        self.buffer.remove();
    }
}

impl<K, V> fmt::Debug for HandlerDelivery<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerDelivery")
            .field("id", &self.buffer.id)
            .finish_non_exhaustive()
    }
}
