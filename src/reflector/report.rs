//! Where a reflector's errors go: the `on_error` callback, and the count
//! of handler panics. The loop and every [`HandlerDelivery`](super::HandlerDelivery)
//! share one [`Reporter`], so a panic is counted and reported the same way
//! whichever task called the handler.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::ReflectorError;
use super::handler::{Handler, Notification};
use super::status::Status;
use crate::sync::Arc;

pub(crate) type ErrorFn = Box<dyn Fn(&ReflectorError) + Send + Sync>;

/// The `on_error` callback and the statistics a panic is counted in.
pub(crate) struct Reporter {
    on_error: Option<ErrorFn>,
    status: Arc<Status>,
}

impl Reporter {
    pub(crate) fn new(on_error: Option<ErrorFn>, status: Arc<Status>) -> Self {
        Self { on_error, status }
    }

    /// Hands `error` to `on_error`, if any. A panic of the callback is
    /// caught: it must not end the loop or a delivery either.
    pub(crate) fn report(&self, error: ReflectorError) {
        if let Some(on_error) = &self.on_error {
            let _ = catch_unwind(AssertUnwindSafe(|| on_error(&error)));
        }
    }

    /// Calls `handler` with `notification`; a panic is caught, counted in
    /// [`ReflectorStats::handler_panics`](super::ReflectorStats::handler_panics)
    /// and reported as [`ReflectorError::HandlerPanicked`]. The one path for
    /// every handler, the builder's and the registry's alike.
    pub(crate) fn call<K: 'static, V: 'static>(
        &self,
        handler: &dyn Handler<K, V>,
        notification: &Notification<K, V>,
    ) {
        if let Err(panic) = notification.call(handler) {
            self.status.update(|inner| inner.stats.handler_panics += 1);
            self.report(panic);
        }
    }
}
