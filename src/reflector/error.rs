//! What a reflector reports while it runs, and why building or waiting on
//! one can fail.

use std::error::Error as StdError;
use std::fmt;

use super::source::{InvalidObject, Revision, SourceError};
use crate::IndexError;

/// Something that went wrong while a reflector ran. None of these stops
/// it: each is reported to the [`on_error`](super::ReflectorBuilder::on_error)
/// callback (and counted in [`ReflectorStats`](super::ReflectorStats)), and
/// the loop goes on as the variant says.
///
/// # Examples
///
/// ```
/// use larder::reflector::{ReflectorError, SourceError};
///
/// let error = ReflectorError::Watch(SourceError::connection("reset by peer"));
/// assert_eq!(error.to_string(), "watch failed: source connection failed: reset by peer");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ReflectorError {
    /// A list failed; the reflector lists again after a backoff.
    List(SourceError),
    /// A watch failed or ended: a connection error resumes the watch from
    /// the last applied revision after a backoff; a too-old revision makes
    /// the reflector relist.
    Watch(SourceError),
    /// The source could not decode an object: the reflector dropped the
    /// key's old object (the cache never serves content the source no
    /// longer holds).
    InvalidObject(InvalidObject),
    /// An index function of the store failed on an object of the change at
    /// `revision`: the object is left out and the key's old object dropped.
    Rejected {
        /// The revision of the rejected change.
        revision: Revision,
        /// The index function's error.
        error: IndexError,
    },
    /// A handler panicked. The panic was caught; the other handlers still
    /// got the notification and the loop went on.
    HandlerPanicked {
        /// Which callback: `"on_add"`, `"on_update"` or `"on_delete"`.
        callback: &'static str,
        /// The panic's message, when it was a string.
        message: String,
    },
}

impl fmt::Display for ReflectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::List(error) => write!(f, "list failed: {error}"),
            Self::Watch(error) => write!(f, "watch failed: {error}"),
            Self::InvalidObject(invalid) => write!(
                f,
                "undecodable object {:?} at revision {}: {}",
                invalid.key, invalid.revision, invalid.reason
            ),
            Self::Rejected { revision, error } => {
                write!(
                    f,
                    "object of revision {revision} rejected by the store: {error}"
                )
            }
            Self::HandlerPanicked { callback, message } => {
                write!(f, "handler {callback} panicked: {message}")
            }
        }
    }
}

impl StdError for ReflectorError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::List(error) | Self::Watch(error) => Some(error),
            Self::Rejected { error, .. } => Some(error),
            Self::InvalidObject(_) | Self::HandlerPanicked { .. } => None,
        }
    }
}

/// Why [`ReflectorBuilder::build`](super::ReflectorBuilder::build) refused
/// its settings.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use larder::IndexedStore;
/// use larder::reflector::{Backoff, MemorySource, Reflector, ReflectorBuildError};
///
/// let source = MemorySource::<String, u32>::new();
/// let store = IndexedStore::new();
/// let error = Reflector::builder(source, store)
///     .backoff(Backoff::new(Duration::from_secs(5), Duration::from_secs(1)))
///     .build()
///     .unwrap_err();
/// assert!(matches!(error, ReflectorBuildError::Backoff(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReflectorBuildError {
    /// The backoff's settings are inconsistent (the reason says how).
    Backoff(&'static str),
    /// A resync period of zero.
    ZeroResyncPeriod,
}

impl fmt::Display for ReflectorBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Backoff(reason) => write!(f, "invalid backoff: {reason}"),
            Self::ZeroResyncPeriod => f.write_str("the resync period must not be zero"),
        }
    }
}

impl StdError for ReflectorBuildError {}

/// Why waiting on a reflector ended without its condition.
///
/// # Examples
///
/// ```
/// use larder::reflector::WaitError;
///
/// assert_eq!(WaitError::TimedOut.to_string(), "timed out");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitError {
    /// The reflector stopped (or its future was dropped) first.
    Stopped,
    /// The time limit passed first.
    TimedOut,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped => f.write_str("the reflector stopped"),
            Self::TimedOut => f.write_str("timed out"),
        }
    }
}

impl StdError for WaitError {}
