//! Consistent reads from a reflector's store fed by an [`EtcdSource`]:
//! ask etcd for its current revision, wait until the store has applied it,
//! then read locally (what Kubernetes' API server does for its watch cache).

use std::error::Error as StdError;
use std::fmt;
use std::time::{Duration, Instant};

use super::EtcdSource;
use crate::reflector::{ReflectorHandle, Revision, SourceError, WaitError};

/// How long a consistent read waits for the watch to deliver the revision
/// on its own before it asks etcd for a progress notification.
const QUIET_WAIT: Duration = Duration::from_millis(10);

/// How often a consistent read asks again for a progress notification
/// while the store is behind, and how long it waits before it reads etcd's
/// revision again after a failed read.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Why [`EtcdSource::wait_consistent`] could not vouch for the store.
///
/// # Examples
///
/// ```
/// use larder::reflector::ConsistencyError;
///
/// let error = ConsistencyError::TimedOut { target: 42, reached: 40 };
/// assert_eq!(
///     error.to_string(),
///     "the cache reached revision 40, not 42, within the time limit"
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ConsistencyError {
    /// etcd's current revision could not be read within the limit: the
    /// last attempt's error (every member is tried on each attempt).
    Source(SourceError),
    /// The store did not reach `target` within the limit.
    TimedOut {
        /// etcd's revision when the read began.
        target: Revision,
        /// The store's revision when the limit passed.
        reached: Revision,
    },
    /// The reflector stopped before the store reached the revision.
    Stopped,
}

impl fmt::Display for ConsistencyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConsistencyError::Source(error) => {
                write!(f, "cannot read etcd's current revision: {error}")
            }
            ConsistencyError::TimedOut { target, reached } => write!(
                f,
                "the cache reached revision {reached}, not {target}, within the time limit"
            ),
            ConsistencyError::Stopped => f.write_str("the reflector stopped"),
        }
    }
}

impl StdError for ConsistencyError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            ConsistencyError::Source(error) => Some(error),
            _ => None,
        }
    }
}

impl<V> EtcdSource<V> {
    /// Waits until the store of the reflector behind `handle` (fed by this
    /// source or a clone of it) reflects every write etcd acknowledged
    /// before this call; read the store afterwards for a consistent answer
    /// (Kubernetes' consistent reads from cache).
    ///
    /// It reads etcd's current revision with one linearizable request
    /// ([`current_revision`](Self::current_revision), again every 100 ms
    /// while it fails, until `limit`), waits until the store has applied it, and if the watch stays quiet (the latest
    /// changes were outside the prefix) asks etcd for a progress
    /// notification, again every 100 ms until `limit`. Returns the revision
    /// the store has reached.
    ///
    /// The guarantee rests on etcd delivering a progress notification only
    /// after the events before it, which etcd guarantees from 3.4.25 and
    /// 3.5.8 on; older servers may send one early under load (the watch
    /// then ends with [`SourceError::TooOld`] and the reflector relists, but
    /// a read in between may be stale). See
    /// [`request_progress`](Self::request_progress).
    ///
    /// # Errors
    ///
    /// [`ConsistencyError::Source`] when etcd's revision cannot be read
    /// within `limit` (with the last failure),
    /// [`ConsistencyError::TimedOut`] when the store does not catch up
    /// within `limit`, [`ConsistencyError::Stopped`] when the reflector
    /// stops first.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(
    /// #     source: larder::reflector::EtcdSource<String>,
    /// #     handle: larder::reflector::ReflectorHandle,
    /// #     store: std::sync::Arc<larder::IndexedStore<String, std::sync::Arc<String>>>,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    ///
    /// let mut client = source.client().clone();
    /// client.put("/pods/web-1", "running", None).await?;
    /// source.wait_consistent(&handle, Duration::from_secs(5)).await?;
    /// assert_eq!(store.get("/pods/web-1").as_deref().map(String::as_str), Some("running"));
    /// # Ok(()) }
    /// # let _ = demo;
    /// ```
    pub async fn wait_consistent(
        &self,
        handle: &ReflectorHandle,
        limit: Duration,
    ) -> Result<Revision, ConsistencyError> {
        let deadline = Instant::now() + limit;
        let target = self.revision_within(deadline, limit).await?;
        let mut wait = QUIET_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match handle
                .wait_for_revision_timeout(target, wait.min(left))
                .await
            {
                Ok(()) => return Ok(handle.revision()),
                Err(WaitError::Stopped) => return Err(ConsistencyError::Stopped),
                Err(_) if left.is_zero() || Instant::now() >= deadline => {
                    return Err(ConsistencyError::TimedOut {
                        target,
                        reached: handle.revision(),
                    });
                }
                Err(_) => {
                    // The watch has not brought the store to `target` on its
                    // own: ask etcd to say how far the watch has come. A
                    // failed request (the watch is being reopened) is retried
                    // on the next round.
                    let _ = self.request_progress().await;
                    wait = PROGRESS_EVERY;
                }
            }
        }
    }

    /// etcd's current revision, read again after each failure until
    /// `deadline`.
    async fn revision_within(
        &self,
        deadline: Instant,
        limit: Duration,
    ) -> Result<Revision, ConsistencyError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let error = match tokio::time::timeout(left, self.current_revision()).await {
                Ok(Ok(revision)) => return Ok(revision),
                Ok(Err(error)) => error,
                Err(_) => SourceError::connection(format!(
                    "etcd: cannot read the current revision: no answer within the {limit:?} limit"
                )),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left <= PROGRESS_EVERY {
                return Err(ConsistencyError::Source(error));
            }
            tokio::time::sleep(PROGRESS_EVERY).await;
        }
    }
}
