//! [`ControllerBuilder`]: a controller's workers, queue and watches.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use super::error::ReconcileError;
use super::handle::{ControllerHandle, Stop};
use super::run::Controller;
use super::stats::Counters;
use super::watch::{AddFn, Enqueue, MapToKeys};
use super::worker::{BoxFuture, ErrorFn, ReadFn, ReconcileFn, Workers};
use crate::reflector::{HandlerRegistry, ReflectorHandle};
use crate::sync::Arc;
use crate::{BuildError, Clock, RateLimiter, WorkQueueBuilder};

/// The number of workers unless [`ControllerBuilder::workers`] sets it.
pub const DEFAULT_WORKERS: usize = 4;

/// A secondary watch, waiting for the queue: adds its handler, returns its
/// delivery.
type WatchFn<K> = Box<dyn FnOnce(AddFn<K>) -> BoxFuture<()> + Send>;

/// Builds a [`Controller`]; from [`Controller::builder`].
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use larder::controller::{Action, Controller};
/// use larder::reflector::{MemorySource, Reflector};
/// use larder::{BuildError, ExponentialBackoff, IndexedStore};
///
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
/// let reconcile = |_key: String, _object| async { Ok::<_, String>(Action::done()) };
/// let controller = Controller::builder(reflector, reconcile)
///     .workers(8)
///     .rate_limiter(ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(60)))
///     .on_error(|key, error| eprintln!("{key}: {error}"))
///     .build()
///     .unwrap();
/// assert!(!controller.handle().is_shutting_down());
///
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
/// let zero = Controller::builder(reflector, reconcile).workers(0).build();
/// assert!(matches!(zero.unwrap_err(), BuildError::ZeroWorkers));
/// ```
pub struct ControllerBuilder<K, O, E, H = ahash::RandomState> {
    pub(crate) run_reflector: Box<dyn FnOnce() -> BoxFuture<()> + Send>,
    pub(crate) reflector: ReflectorHandle,
    pub(crate) registry: HandlerRegistry<K, O>,
    pub(crate) read: ReadFn<K, O>,
    pub(crate) reconcile: ReconcileFn<K, O, E>,
    pub(crate) workers: usize,
    pub(crate) on_error: Option<ErrorFn<K, E>>,
    pub(crate) watches: Vec<WatchFn<K>>,
    pub(crate) queue: WorkQueueBuilder<K, H>,
}

impl<K, O, E, H> ControllerBuilder<K, O, E, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    O: Send + Sync + 'static,
    E: Send + 'static,
{
    /// How many reconciles may run at once ([`DEFAULT_WORKERS`] unless
    /// set; kube-runtime's `concurrency`). They run concurrently on the
    /// task that polls the run future, never two for one key.
    ///
    /// # Examples
    ///
    /// See [`ControllerBuilder`].
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// The retry delay of a failed reconcile, per key: the work queue's
    /// [`rate_limiter`](WorkQueueBuilder::rate_limiter). Unless set,
    /// client-go's controller default, [`MaxOf::controller_default`](crate::MaxOf::controller_default):
    /// per-key exponential backoff from 5 ms to 1000 s, and no more than
    /// 10 retries a second overall (bursts of 100), whichever is later.
    ///
    /// # Examples
    ///
    /// See [`ControllerBuilder`].
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<K> + 'static) -> Self {
        self.queue = self.queue.rate_limiter(limiter);
        self
    }

    /// The clock of retry delays and [`Action::requeue`](super::Action::requeue)
    /// delays: the work queue's [`clock`](WorkQueueBuilder::clock), a
    /// [`SystemClock`](crate::SystemClock) unless set. Tests pass a
    /// [`ManualClock`](crate::ManualClock) (a waiting worker sees a key
    /// fall due within 100 ms of moving it).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use larder::controller::{Action, Controller};
    /// use larder::reflector::{MemorySource, Reflector};
    /// use larder::{IndexedStore, ManualClock};
    ///
    /// let store = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
    /// let controller = Controller::builder(reflector, |_key: String, _object| async {
    ///     Ok::<_, String>(Action::done())
    /// })
    /// .clock(ManualClock::new())
    /// .build()
    /// .unwrap();
    /// assert_eq!(controller.handle().stats().reconciled, 0);
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.queue = self.queue.clock(clock);
        self
    }

    /// The work queue's hasher of keys (ahash's `RandomState` unless set).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use std::sync::Arc;
    /// use larder::controller::{Action, Controller};
    /// use larder::reflector::{MemorySource, Reflector};
    /// use larder::IndexedStore;
    ///
    /// let store = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
    /// let controller = Controller::builder(reflector, |_key: String, _object| async {
    ///     Ok::<_, String>(Action::done())
    /// })
    /// .hasher(RandomState::new())
    /// .build()
    /// .unwrap();
    /// assert!(!controller.handle().is_finished());
    /// ```
    pub fn hasher<T>(self, hasher: T) -> ControllerBuilder<K, O, E, T> {
        ControllerBuilder {
            run_reflector: self.run_reflector,
            reflector: self.reflector,
            registry: self.registry,
            read: self.read,
            reconcile: self.reconcile,
            workers: self.workers,
            on_error: self.on_error,
            watches: self.watches,
            queue: self.queue.hasher(hasher),
        }
    }

    /// Called with the key and the error of every failed or panicking
    /// reconcile, after the key is queued again, rate limited (client-go's
    /// `HandleError`; compare kube-runtime's `error_policy`). It only
    /// observes: the retry delay is the rate limiter's, per key, so that no
    /// error can bypass the backoff. A reconcile that wants another delay
    /// for an error handles it and returns `Ok(Action::requeue(delay))`;
    /// one that gives up on a key returns `Ok(Action::done())`
    /// ([`ControllerHandle::num_requeues`] counts the failures). Runs on
    /// the worker's task with no lock held; a panic is caught.
    ///
    /// # Examples
    ///
    /// See [`ControllerBuilder`].
    pub fn on_error(mut self, f: impl Fn(&K, &ReconcileError<E>) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Box::new(f));
        self
    }

    /// A secondary watch (kube-runtime's `owns` and `watches`): every
    /// change of an object of another reflector, through its
    /// [`HandlerRegistry`], queues the keys `map` gives for it, such as
    /// its owner's. An update maps the old object as well as the new, so
    /// an object that changed owner reconciles both. The other reflector
    /// is run by its owner (it may serve several controllers, as
    /// client-go's shared informers do); this controller's handler is
    /// removed when it stops. A panic of `map` is reported to that
    /// reflector's `on_error`, as any handler's.
    ///
    /// With the `kube` feature, `owner_keys` is a ready `map` through owner
    /// references.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use larder::controller::{Action, Controller};
    /// use larder::reflector::{MemorySource, Reflector};
    /// use larder::IndexedStore;
    ///
    /// // Deployments by name; replica sets name their owner in their value.
    /// let deployments = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), deployments).build().unwrap();
    /// let replica_sets = IndexedStore::<String, Arc<String>>::new();
    /// let owned = Reflector::builder(MemorySource::new(), replica_sets).build().unwrap();
    /// let controller = Controller::builder(reflector, |_key: String, _object| async {
    ///     Ok::<_, String>(Action::done())
    /// })
    /// .watches(owned.handler_registry(), |_key: &String, owner: &String| [owner.clone()])
    /// .build()
    /// .unwrap();
    /// assert!(!controller.handle().has_synced());
    /// ```
    pub fn watches<K2, O2, F, I>(mut self, registry: HandlerRegistry<K2, O2>, map: F) -> Self
    where
        K2: Clone + Send + Sync + 'static,
        O2: Send + Sync + 'static,
        F: Fn(&K2, &O2) -> I + Send + Sync + 'static,
        I: IntoIterator<Item = K>,
    {
        self.watches.push(Box::new(move |add| {
            let handler = MapToKeys {
                add,
                map,
                _watched: PhantomData,
            };
            let (_registration, delivery) = registry.add(handler);
            Box::pin(delivery)
        }));
        self
    }
}

impl<K, O, E, H> ControllerBuilder<K, O, E, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    O: Send + Sync + 'static,
    E: Send + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    /// Builds the controller: its queue, and its handlers on the
    /// reflectors (they receive nothing until the run future is polled).
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroWorkers`] for `workers(0)`.
    ///
    /// # Examples
    ///
    /// See [`ControllerBuilder`].
    pub fn build(self) -> Result<Controller<K, O, E, H>, BuildError> {
        if self.workers == 0 {
            return Err(BuildError::ZeroWorkers);
        }
        let queue = Arc::new(self.queue.build()?);
        let (registration, delivery) = self.registry.add(Enqueue(Arc::clone(&queue)));
        let mut deliveries: Vec<BoxFuture<()>> = vec![Box::pin(delivery)];
        let add: AddFn<K> = {
            let queue = Arc::clone(&queue);
            Arc::new(move |key| queue.add(key))
        };
        for watch in self.watches {
            deliveries.push(watch(Arc::clone(&add)));
        }
        let stop = Arc::new(Stop::default());
        let counters = Arc::new(Counters::default());
        let workers = Arc::new(Workers {
            queue: Arc::clone(&queue),
            read: self.read,
            reconcile: self.reconcile,
            on_error: self.on_error,
            counters: Arc::clone(&counters),
            stop: Arc::clone(&stop),
        });
        let handle = ControllerHandle {
            queue,
            stop,
            counters,
            reflector: self.reflector,
            synced: Arc::new(move || registration.has_synced()),
        };
        Ok(Controller {
            run_reflector: self.run_reflector,
            deliveries,
            workers,
            count: self.workers,
            handle,
        })
    }
}

/// Wraps `reconcile` so that its future is boxed.
pub(crate) fn boxed<K, O, E, R, F>(reconcile: R) -> ReconcileFn<K, O, E>
where
    R: Fn(K, Option<Arc<O>>) -> F + Send + Sync + 'static,
    F: Future<Output = Result<super::Action, E>> + Send + 'static,
{
    Box::new(move |key, object| Box::pin(reconcile(key, object)))
}

impl<K, O, E, H> fmt::Debug for ControllerBuilder<K, O, E, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("workers", &self.workers)
            .field("watches", &self.watches.len())
            .field("on_error", &self.on_error.is_some())
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}
