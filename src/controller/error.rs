//! [`ReconcileError`]: a reconcile that did not succeed.

use std::error::Error;
use std::fmt;

/// A reconcile that did not succeed, as the builder's
/// [`on_error`](super::ControllerBuilder::on_error) receives it with its
/// key. Either way the key is retried after its rate limiter's delay (the
/// work queue's `add_rate_limited`), so its failures back off per key.
///
/// # Examples
///
/// ```
/// use larder::controller::ReconcileError;
///
/// let failed: ReconcileError<String> = ReconcileError::Failed("timed out".to_owned());
/// assert_eq!(failed.to_string(), "reconcile failed: timed out");
/// let panicked: ReconcileError<String> = ReconcileError::Panicked {
///     message: "index out of bounds".to_owned(),
/// };
/// assert!(panicked.to_string().contains("panicked"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconcileError<E> {
    /// The reconcile returned `Err`.
    Failed(E),
    /// The reconcile panicked (calling it, or polling its future): the
    /// panic was caught, and the other keys and workers go on.
    Panicked {
        /// The panic's message (its payload when a string).
        message: String,
    },
}

impl<E: fmt::Display> fmt::Display for ReconcileError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed(error) => write!(f, "reconcile failed: {error}"),
            Self::Panicked { message } => write!(f, "reconcile panicked: {message}"),
        }
    }
}

impl<E: Error + 'static> Error for ReconcileError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Failed(error) => Some(error),
            Self::Panicked { .. } => None,
        }
    }
}
