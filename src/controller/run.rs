//! [`Controller`] and its run future: the reflector, the handlers'
//! deliveries and the workers, polled together on one task.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::builder::{ControllerBuilder, DEFAULT_WORKERS, boxed};
use super::handle::ControllerHandle;
use super::worker::{BoxFuture, ReadFn, Workers};
use crate::WorkQueue;
use crate::reflector::{Reflector, Source};
use crate::sync::Arc;

/// A controller (client-go's controller loop, kube-runtime's
/// `Controller`): runs a [`Reflector`], queues the key of each object that
/// changed, and has its workers reconcile each key with the object's
/// current state. Built with [`Controller::builder`], run with
/// [`run`](Self::run), stopped with [`ControllerHandle::shut_down`].
///
/// The guarantees, the work queue's:
///
/// - **Every change is reconciled**: a key is reconciled after the last
///   change of its object, reading the object as the store holds it then
///   (`None` once deleted); changes that come while it waits are one
///   reconcile.
/// - **One reconcile per key at a time**: a key that changes during its
///   reconcile is reconciled again after it.
/// - **Failures back off per key**: a reconcile that fails or panics is
///   retried after its key's rate-limited delay; a success clears the
///   key's failures. A panic is caught: the other keys and the workers go
///   on.
/// - **Graceful shutdown**: see [`ControllerHandle::shut_down`].
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use larder::IndexedStore;
/// use larder::controller::{Action, Controller};
/// use larder::reflector::{MemorySource, Reflector};
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// let source = MemorySource::new();
/// source.put("web".to_string(), 3u32);
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(source.clone(), store).build().unwrap();
/// let (seen, tx) = {
///     let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
///     (rx, tx)
/// };
/// let controller = Controller::builder(reflector, move |key: String, replicas: Option<Arc<u32>>| {
///     let tx = tx.clone();
///     async move {
///         tx.send((key, replicas.map(|r| *r))).unwrap();
///         Ok::<_, String>(Action::done())
///     }
/// })
/// .build()
/// .unwrap();
/// let handle = controller.handle();
/// let running = tokio::spawn(controller.run());
///
/// let mut seen = seen;
/// assert_eq!(seen.recv().await, Some(("web".to_string(), Some(3))));
/// source.delete(&"web".to_string());
/// assert_eq!(seen.recv().await, Some(("web".to_string(), None)));
///
/// handle.shut_down();
/// running.await.unwrap();
/// assert!(handle.is_finished());
/// assert_eq!(handle.stats().reconciled, 2);
/// # });
/// ```
pub struct Controller<K, O, E, H = ahash::RandomState> {
    pub(crate) run_reflector: Box<dyn FnOnce() -> BoxFuture<()> + Send>,
    pub(crate) deliveries: Vec<BoxFuture<()>>,
    pub(crate) workers: Arc<Workers<K, O, E, H>>,
    pub(crate) count: usize,
    pub(crate) handle: ControllerHandle<K, H>,
}

impl<K, O, E> Controller<K, O, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    O: Send + Sync + 'static,
    E: Send + 'static,
{
    /// A builder for a controller that runs `reflector` and calls
    /// `reconcile(key, object)` for each key that changed, with the
    /// object the store holds when the reconcile starts (`None` if it was
    /// deleted). The reconcile returns an [`Action`](super::Action) on
    /// success; an `Err` is retried after the key's backoff.
    ///
    /// # Examples
    ///
    /// See [`Controller`] and [`ControllerBuilder`].
    pub fn builder<Src, S, R, F>(
        reflector: Reflector<Src, S>,
        reconcile: R,
    ) -> ControllerBuilder<K, O, E>
    where
        Src: Source<Key = K, Object = O>,
        S: BuildHasher + Send + Sync + 'static,
        R: Fn(K, Option<Arc<O>>) -> F + Send + Sync + 'static,
        F: Future<Output = Result<super::Action, E>> + Send + 'static,
    {
        // The one place the controller reads the store: every reconcile's
        // object comes through `read`.
        let store = reflector.reader();
        let read: ReadFn<K, O> = Box::new(move |key| store.get(key));
        ControllerBuilder {
            reflector: reflector.handle(),
            registry: reflector.handler_registry(),
            run_reflector: Box::new(move || Box::pin(reflector.run())),
            read,
            reconcile: boxed(reconcile),
            workers: DEFAULT_WORKERS,
            on_error: None,
            watches: Vec::new(),
            queue: WorkQueue::builder(),
        }
    }
}

impl<K, O, E, H> Controller<K, O, E, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    O: Send + Sync + 'static,
    E: Send + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    /// A handle to stop the controller, read its statistics and queue keys
    /// by hand; take it before [`run`](Self::run) consumes the controller.
    ///
    /// # Examples
    ///
    /// See [`Controller`].
    pub fn handle(&self) -> ControllerHandle<K, H> {
        self.handle.clone()
    }

    /// The controller, as a future for any executor: runs the reflector,
    /// the handlers' deliveries and the workers, all on the task that
    /// polls it, until [`ControllerHandle::shut_down`] (or the reflector
    /// stopping) and the end of the reconciles in flight; then completes.
    /// Dropping the future stops everything at once (the reconciles in
    /// flight are dropped).
    ///
    /// Each wake of the task polls every part (the reflector, one delivery
    /// per watch, one future per worker): cheap for tens of workers; a
    /// worker yields to the executor after each reconcile.
    ///
    /// # Examples
    ///
    /// See [`Controller`].
    pub fn run(self) -> impl Future<Output = ()> + Send {
        let workers = (0..self.count)
            .map(|_| Box::pin(Arc::clone(&self.workers).work()) as BoxFuture<()>)
            .collect();
        Running {
            reflector: Some((self.run_reflector)()),
            deliveries: self.deliveries,
            workers,
            handle: self.handle,
        }
    }
}

/// The run future: polls every part with the task's waker, and drops the
/// handlers' deliveries at the stop (their handlers are removed).
struct Running<K, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    reflector: Option<BoxFuture<()>>,
    deliveries: Vec<BoxFuture<()>>,
    workers: Vec<BoxFuture<()>>,
    handle: ControllerHandle<K, H>,
}

impl<K, H> Future for Running<K, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        this.handle.stop.register(cx.waker());
        if let Some(reflector) = &mut this.reflector
            && reflector.as_mut().poll(cx).is_ready()
        {
            // Stopped by `shut_down`, or by its own handle: no change will
            // come any more, so the controller stops too.
            this.reflector = None;
            this.handle.shut_down();
        }
        if this.handle.stop.is_requested() {
            this.deliveries.clear();
        }
        this.deliveries
            .retain_mut(|delivery| delivery.as_mut().poll(cx).is_pending());
        this.workers
            .retain_mut(|worker| worker.as_mut().poll(cx).is_pending());
        if this.reflector.is_none() && this.deliveries.is_empty() && this.workers.is_empty() {
            this.handle.stop.finish();
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl<K, H> Drop for Running<K, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    fn drop(&mut self) {
        // Dropped before the end: stop the queue and the reflector, then
        // drop every part (the reconciles in flight with them).
        self.handle.shut_down();
        self.workers.clear();
        self.deliveries.clear();
        self.reflector = None;
        self.handle.stop.finish();
    }
}

impl<K, O, E, H> fmt::Debug for Controller<K, O, E, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("workers", &self.count)
            .field("deliveries", &self.deliveries.len())
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}
