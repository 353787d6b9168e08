//! Making an [`EtcdSource`]: from a cluster's endpoints with safe connection
//! settings ([`EtcdSource::connect`]), or from a client the caller built
//! ([`EtcdSource::builder`]); then the source's own settings.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

use super::members::Members;
use super::{DecodeFn, EtcdSource, prefix_range};

/// The default number of keys a list reads per request.
pub const DEFAULT_PAGE_SIZE: u32 = 1_000;

/// The default limit on one list page, a watch's creation or a revision
/// read, on one member.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The default time after which a watch that delivered neither an event
/// nor a progress notification is given up as dead (see
/// [`EtcdSourceBuilder::watch_deadline`]).
///
/// Three times etcd's default election timeout (1 s): a live member
/// answers a progress request within milliseconds, and etcd's own
/// heartbeat would have called a member this slow dead twice over. A
/// false alarm costs one watch resumed on another member, not a relist.
pub const DEFAULT_WATCH_DEADLINE: Duration = Duration::from_secs(3);

/// The connection settings [`EtcdSource::connect`] uses for each member:
/// a 2 s connect timeout, an HTTP/2 keep-alive ping every 2 s (also on an
/// idle connection) that gives a member 2 s to answer, and
/// `require_leader`, so that a member cut off from its cluster's leader
/// ends its watches instead of serving them stale.
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let options = larder::reflector::etcd_connect_options();
/// let client = etcd_client::Client::connect(["http://127.0.0.1:2379"], Some(options)).await?;
/// # drop(client); Ok(()) }
/// # let _ = demo;
/// ```
pub fn etcd_connect_options() -> ConnectOptions {
    ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2))
        .with_keep_alive_while_idle(true)
        .with_require_leader(true)
}

/// Configures an [`EtcdSource`]; made by [`EtcdSource::connect`] or
/// [`EtcdSource::builder`].
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use larder::reflector::EtcdSource;
///
/// let endpoints = ["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"];
/// let source = EtcdSource::connect(endpoints, "/config/", |bytes: &[u8]| {
///     std::str::from_utf8(bytes).map_err(|e| e.to_string())?.parse::<u64>().map_err(|e| e.to_string())
/// })
/// .await?
/// .page_size(200)
/// .request_timeout(Duration::from_secs(5))
/// .watch_deadline(Duration::from_secs(5))
/// .build()?;
/// # drop(source); Ok(()) }
/// # let _ = demo;
/// ```
pub struct EtcdSourceBuilder<V> {
    members: Members,
    prefix: String,
    decode: Arc<DecodeFn<V>>,
    page_size: u32,
    request_timeout: Duration,
    watch_deadline: Duration,
}

impl<V> fmt::Debug for EtcdSourceBuilder<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdSourceBuilder")
            .field("members", &self.members)
            .field("prefix", &self.prefix)
            .field("page_size", &self.page_size)
            .field("request_timeout", &self.request_timeout)
            .field("watch_deadline", &self.watch_deadline)
            .finish_non_exhaustive()
    }
}

/// Why [`EtcdSourceBuilder::build`] refused its configuration.
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use larder::reflector::{EtcdSourceBuildError, EtcdSource};
///
/// let client = etcd_client::Client::connect(["http://127.0.0.1:2379"], None).await?;
/// let err = EtcdSource::builder(client, "/pods/", |b: &[u8]| Ok::<_, String>(b.to_vec()))
///     .page_size(0)
///     .build()
///     .unwrap_err();
/// assert_eq!(err, EtcdSourceBuildError::ZeroPageSize);
/// # Ok(()) }
/// # let _ = demo;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EtcdSourceBuildError {
    /// `page_size(0)`: a list must read at least one key per request.
    ZeroPageSize,
    /// `request_timeout(Duration::ZERO)`: every request would time out.
    ZeroRequestTimeout,
    /// `watch_deadline(Duration::ZERO)`: every watch would be dead at once.
    ZeroWatchDeadline,
}

impl fmt::Display for EtcdSourceBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtcdSourceBuildError::ZeroPageSize => {
                f.write_str("the list page size must be at least 1")
            }
            EtcdSourceBuildError::ZeroRequestTimeout => {
                f.write_str("the request timeout must be longer than zero")
            }
            EtcdSourceBuildError::ZeroWatchDeadline => {
                f.write_str("the watch deadline must be longer than zero")
            }
        }
    }
}

impl StdError for EtcdSourceBuildError {}

impl<V: 'static> EtcdSource<V> {
    /// Starts configuring a source for the etcd cluster at `endpoints`
    /// (every member's client URL), mirroring every key starting with
    /// `prefix` and decoding each value with `decode` (see
    /// [`builder`](Self::builder) for both).
    ///
    /// Each member gets its own connection with
    /// [`etcd_connect_options`]. Every request goes to the member that last
    /// answered; one that fails or does not answer within the request
    /// timeout is tried on the next member at once, and the watch moves
    /// to the next member when its member fails or hangs (see
    /// [`EtcdSourceBuilder::watch_deadline`]).
    ///
    /// # Errors
    ///
    /// etcd-client's error for an endpoint that is not a URL, or no
    /// endpoint. Nothing is sent yet: an unreachable member is not an
    /// error here.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use larder::reflector::EtcdSource;
    ///
    /// let endpoints = ["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"];
    /// let source = EtcdSource::connect(endpoints, "/pods/", |bytes: &[u8]| {
    ///     std::str::from_utf8(bytes).map(str::to_owned)
    /// })
    /// .await?
    /// .build()?;
    /// # drop(source); Ok(()) }
    /// # let _ = demo;
    /// ```
    pub async fn connect<F, E>(
        endpoints: impl IntoIterator<Item = impl AsRef<str>>,
        prefix: impl Into<String>,
        decode: F,
    ) -> Result<EtcdSourceBuilder<V>, etcd_client::Error>
    where
        F: Fn(&[u8]) -> Result<V, E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        let members = Members::connect(endpoints, etcd_connect_options()).await?;
        Ok(EtcdSourceBuilder::new(members, prefix.into(), decode))
    }

    /// Starts configuring a source that reads through `client`, mirroring
    /// every key starting with `prefix` (an empty prefix mirrors the whole
    /// keyspace), decoding each value with `decode`. A value `decode`
    /// rejects is reported with its key (in
    /// [`Listed::invalid`](crate::reflector::Listed::invalid) or as
    /// [`WatchEvent::Invalid`](crate::reflector::WatchEvent::Invalid)),
    /// never dropped silently.
    ///
    /// `decode` runs on the task polling the list or the watch, outside
    /// every lock.
    ///
    /// The source cannot choose a member of `client`'s cluster: a failed
    /// request fails (the reflector retries it after a backoff). For a
    /// cluster, [`connect`](Self::connect) fails over at once.
    ///
    /// # Examples
    ///
    /// See [`EtcdSource`].
    pub fn builder<F, E>(
        client: Client,
        prefix: impl Into<String>,
        decode: F,
    ) -> EtcdSourceBuilder<V>
    where
        F: Fn(&[u8]) -> Result<V, E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        EtcdSourceBuilder::new(Members::one(client), prefix.into(), decode)
    }
}

impl<V: 'static> EtcdSourceBuilder<V> {
    fn new<F, E>(members: Members, prefix: String, decode: F) -> Self
    where
        F: Fn(&[u8]) -> Result<V, E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        EtcdSourceBuilder {
            members,
            prefix,
            decode: Arc::new(move |bytes: &[u8]| decode(bytes).map_err(|e| e.to_string())),
            page_size: DEFAULT_PAGE_SIZE,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            watch_deadline: DEFAULT_WATCH_DEADLINE,
        }
    }
}

impl<V> EtcdSourceBuilder<V> {
    /// How many keys one list request reads (default
    /// [`DEFAULT_PAGE_SIZE`]). Every page after the first is read at the
    /// first page's revision, so the list is one consistent snapshot
    /// however many pages it takes.
    pub fn page_size(mut self, keys: u32) -> Self {
        self.page_size = keys;
        self
    }

    /// The limit on one list page, a watch's creation and a revision read
    /// on one member (default [`DEFAULT_REQUEST_TIMEOUT`]); past it the
    /// request goes to the next member, and when every member has failed
    /// it fails with [`SourceError::Connection`](crate::reflector::SourceError::Connection).
    /// An open watch is bounded by [`watch_deadline`](Self::watch_deadline)
    /// instead.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long an open watch may go without an event or a progress
    /// notification before it is given up as dead (default
    /// [`DEFAULT_WATCH_DEADLINE`]): its stream then ends with
    /// [`SourceError::Connection`](crate::reflector::SourceError::Connection)
    /// and the next watch, from the last revision, goes to another member.
    /// A watch quiet for a third of the deadline asks its member for a
    /// progress notification, and again every third, so a live member on
    /// a quiet prefix keeps it alive; this needs no server setting.
    pub fn watch_deadline(mut self, deadline: Duration) -> Self {
        self.watch_deadline = deadline;
        self
    }

    /// Builds the source.
    ///
    /// # Errors
    ///
    /// [`EtcdSourceBuildError`] for a zero page size, request timeout or
    /// watch deadline.
    pub fn build(self) -> Result<EtcdSource<V>, EtcdSourceBuildError> {
        if self.page_size == 0 {
            return Err(EtcdSourceBuildError::ZeroPageSize);
        }
        if self.request_timeout.is_zero() {
            return Err(EtcdSourceBuildError::ZeroRequestTimeout);
        }
        if self.watch_deadline.is_zero() {
            return Err(EtcdSourceBuildError::ZeroWatchDeadline);
        }
        let (range_start, range_end) = prefix_range(self.prefix.as_bytes());
        Ok(EtcdSource {
            members: Arc::new(self.members),
            prefix: self.prefix,
            range_start,
            range_end,
            decode: self.decode,
            page_size: self.page_size,
            request_timeout: self.request_timeout,
            watch_deadline: self.watch_deadline,
            progress: Arc::new(tokio::sync::Mutex::new(None)),
        })
    }
}
