//! [`Action`]: what a successful reconcile asks for next.

use std::time::Duration;

/// What a successful reconcile asks for (kube-runtime's `Action`): nothing
/// more until the object changes ([`done`](Self::done)), or another
/// reconcile of the key after a delay ([`requeue`](Self::requeue)), for
/// state the reflector does not watch (an external system, a deadline).
/// Either way the key's recorded failures are cleared (the work queue's
/// `forget`): its next failure backs off from the first delay again.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use larder::controller::Action;
///
/// assert_eq!(Action::done().requeue_after(), None);
/// let later = Action::requeue(Duration::from_secs(30));
/// assert_eq!(later.requeue_after(), Some(Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Nothing more: the key is reconciled again when its object (or a
    /// watched object that maps to it) changes.
    ///
    /// # Examples
    ///
    /// See [`Action`].
    pub const fn done() -> Self {
        Self {
            requeue_after: None,
        }
    }

    /// Reconcile the key again once `after` has passed on the controller's
    /// clock (the work queue's `add_after`; a change before then reconciles
    /// it sooner, and the delayed reconcile still comes). A zero `after`
    /// queues it at once.
    ///
    /// # Examples
    ///
    /// See [`Action`].
    pub const fn requeue(after: Duration) -> Self {
        Self {
            requeue_after: Some(after),
        }
    }

    /// The delay [`requeue`](Self::requeue) asked for, `None` for
    /// [`done`](Self::done).
    ///
    /// # Examples
    ///
    /// See [`Action`].
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}
