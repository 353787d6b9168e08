//! One worker (client-go's `processNextWorkItem`): take a key, read its
//! object's current state from the store, reconcile with panics caught,
//! and settle the key on the queue by the outcome.

use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::action::Action;
use super::error::ReconcileError;
use super::handle::Stop;
use super::stats::Counters;
use crate::WorkQueue;
use crate::reflector::panic_message;
use crate::sync::Arc;

/// A boxed future that can move between threads.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
/// The reconcile, its future boxed.
pub(crate) type ReconcileFn<K, O, E> =
    Box<dyn Fn(K, Option<Arc<O>>) -> BoxFuture<Result<Action, E>> + Send + Sync>;
/// Reads a key's object from the store.
pub(crate) type ReadFn<K, O> = Box<dyn Fn(&K) -> Option<Arc<O>> + Send + Sync>;
/// The `on_error` callback.
pub(crate) type ErrorFn<K, E> = Box<dyn Fn(&K, &ReconcileError<E>) + Send + Sync>;

/// What every worker of one controller shares.
pub(crate) struct Workers<K, O, E, H> {
    pub(crate) queue: Arc<WorkQueue<K, H>>,
    /// The one place the store is read.
    pub(crate) read: ReadFn<K, O>,
    pub(crate) reconcile: ReconcileFn<K, O, E>,
    pub(crate) on_error: Option<ErrorFn<K, E>>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) stop: Arc<Stop>,
}

impl<K, O, E, H> Workers<K, O, E, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    O: Send + Sync + 'static,
    E: Send + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    /// One worker: runs until the queue is shut down and empty.
    pub(crate) async fn work(self: Arc<Self>) {
        while let Some(key) = self.queue.get_async().await {
            if self.stop.is_requested() {
                Counters::bump(&self.counters.skipped_at_shut_down);
                self.queue.done(&key);
                continue;
            }
            let object = (self.read)(&key);
            let outcome = self.reconcile_caught(key.clone(), object).await;
            self.settle(&key, outcome);
            // Let the executor run others between two reconciles: a key
            // requeued at once with a reconcile that never waits would
            // otherwise keep this task busy for ever.
            YieldNow(false).await;
        }
    }

    /// Calls the reconcile and awaits its future, a panic of either caught
    /// (and of the future's drop: a panicking future is dropped at once).
    async fn reconcile_caught(
        &self,
        key: K,
        object: Option<Arc<O>>,
    ) -> Result<Action, ReconcileError<E>> {
        let future = catch_unwind(AssertUnwindSafe(|| (self.reconcile)(key, object)))
            .map_err(|payload| panicked(&*payload))?;
        CatchPanic(Some(future)).await
    }

    /// Done: forget the key's failures, requeue it if asked. Failed or
    /// panicked: retry it after its rate limiter's delay. Then `done`, and
    /// the error to `on_error` (its panic caught) with the key released.
    fn settle(&self, key: &K, outcome: Result<Action, ReconcileError<E>>) {
        let error = match outcome {
            Ok(action) => {
                Counters::bump(&self.counters.reconciled);
                self.queue.forget(key);
                if let Some(after) = action.requeue_after() {
                    Counters::bump(&self.counters.requeued);
                    self.queue.add_after(key.clone(), after);
                }
                None
            }
            Err(error) => {
                let counter = match error {
                    ReconcileError::Failed(_) => &self.counters.failed,
                    ReconcileError::Panicked { .. } => &self.counters.panicked,
                };
                Counters::bump(counter);
                self.queue.add_rate_limited(key.clone());
                Some(error)
            }
        };
        self.queue.done(key);
        if let (Some(error), Some(on_error)) = (error, &self.on_error) {
            let _ = catch_unwind(AssertUnwindSafe(|| on_error(key, &error)));
        }
    }
}

fn panicked<E>(payload: &(dyn std::any::Any + Send)) -> ReconcileError<E> {
    ReconcileError::Panicked {
        message: panic_message(payload),
    }
}

/// Pending once (waking its task at once), then ready.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A reconcile's future with its panics caught: a panic while polling
/// ends it with [`ReconcileError::Panicked`].
struct CatchPanic<E>(Option<BoxFuture<Result<Action, E>>>);

impl<E> Future for CatchPanic<E> {
    type Output = Result<Action, ReconcileError<E>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(future) = self.0.as_mut() else {
            return Poll::Pending;
        };
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(result.map_err(ReconcileError::Failed)),
            Err(payload) => {
                let error = panicked(&*payload);
                let future = self.0.take();
                let _ = catch_unwind(AssertUnwindSafe(|| drop(future)));
                Poll::Ready(Err(error))
            }
        }
    }
}
