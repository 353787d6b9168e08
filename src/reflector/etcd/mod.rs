//! An etcd key prefix as a reflector [`Source`] (needs the `etcd` feature).
//!
//! [`EtcdSource`] lists a prefix at one revision (page by page, every page
//! pinned to the first page's revision) and watches it from a revision, with
//! etcd's progress notifications delivered as
//! [`Bookmark`](crate::reflector::WatchEvent::Bookmark)s. It maps etcd's failures onto the
//! reflector's two reactions:
//!
//! | etcd says                                   | the source returns                         |
//! |---------------------------------------------|--------------------------------------------|
//! | `ErrCompacted` on a list page or a watch    | [`SourceError::TooOld`] (relist)           |
//! | a progress notification, then an older event | [`SourceError::ProgressAheadOfEvent`] (relist) |
//! | a transport error, a closed stream, a timeout, a silent watch | [`SourceError::Connection`] (retry) |
//! | a value the decode function rejects         | [`Listed::invalid`] / [`WatchEvent::Invalid`](crate::reflector::WatchEvent::Invalid), with the key |
//!
//! Keys are the full etcd keys: the prefix is **not** stripped. A key that is
//! not UTF-8 cannot be a `String` key; it is reported as invalid (its key
//! lossily decoded) like an undecodable value.
//!
//! Made with [`EtcdSource::connect`] from a cluster's endpoints, it keeps
//! one connection per member and fails over at once: every request goes to
//! the member that last answered, then to the next (members.rs). An open
//! watch that delivers neither events nor progress notifications within its
//! deadline is given up and resumed on another member (watch.rs).
//!
//! The source runs on etcd-client, which needs a tokio runtime (with its
//! timer enabled).

// Files: this one (the Source implementation: list pages, revision reads,
// error mapping), `builder.rs` (connect / builder and settings),
// `members.rs` (one connection per member, failover order), `watch.rs`
// (the watch stream and its deadline), `consistent.rs` (consistent reads).
mod builder;
mod consistent;
mod members;
mod watch;

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, GetOptions, WatchOptions, WatchRequestSender};

use super::source::{InvalidObject, Listed, Revision, Source, SourceError};
use members::Members;

pub use builder::{
    DEFAULT_PAGE_SIZE, DEFAULT_REQUEST_TIMEOUT, DEFAULT_WATCH_DEADLINE, EtcdSourceBuildError,
    EtcdSourceBuilder, etcd_connect_options,
};
pub use consistent::ConsistencyError;
pub use watch::EtcdWatch;

/// The decode function, type-erased: the error is already rendered.
pub(crate) type DecodeFn<V> = dyn Fn(&[u8]) -> Result<V, String> + Send + Sync;

/// The request half of one watch stream, shared by the watch (its own
/// progress requests) and the source ([`EtcdSource::request_progress`]).
pub(crate) type Requests = Arc<tokio::sync::Mutex<WatchRequestSender>>;

/// The watch whose progress [`EtcdSource::request_progress`] asks for: the
/// latest one.
type ProgressSlot = Arc<tokio::sync::Mutex<Option<Requests>>>;

/// Mirrors the keys under one etcd prefix: a [`Source`] whose keys are the
/// full etcd keys (prefix kept) and whose objects come from a user decode
/// function.
///
/// Cloning is cheap and shares the connections, the member preference and
/// the progress-request handle (see [`request_progress`](Self::request_progress)).
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use larder::reflector::{EtcdSource, Source};
///
/// let endpoints = ["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"];
/// let source = EtcdSource::connect(endpoints, "/pods/", |bytes: &[u8]| {
///     std::str::from_utf8(bytes).map(str::to_owned)
/// })
/// .await?
/// .page_size(500)
/// .build()?;
/// let listed = source.list().await?;
/// for (key, value, revision) in &listed.items {
///     assert!(key.starts_with("/pods/"));
///     println!("{key} = {value} (last changed at revision {revision})");
/// }
/// for bad in &listed.invalid {
///     eprintln!("cannot decode {}: {}", bad.key, bad.reason);
/// }
/// # Ok(()) }
/// # let _ = demo;
/// ```
pub struct EtcdSource<V> {
    members: Arc<Members>,
    prefix: String,
    range_start: Vec<u8>,
    range_end: Vec<u8>,
    decode: Arc<DecodeFn<V>>,
    page_size: u32,
    request_timeout: Duration,
    watch_deadline: Duration,
    progress: ProgressSlot,
}

impl<V> Clone for EtcdSource<V> {
    fn clone(&self) -> Self {
        EtcdSource {
            members: Arc::clone(&self.members),
            prefix: self.prefix.clone(),
            range_start: self.range_start.clone(),
            range_end: self.range_end.clone(),
            decode: Arc::clone(&self.decode),
            page_size: self.page_size,
            request_timeout: self.request_timeout,
            watch_deadline: self.watch_deadline,
            progress: Arc::clone(&self.progress),
        }
    }
}

impl<V> fmt::Debug for EtcdSource<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdSource")
            .field("members", &self.members)
            .field("prefix", &self.prefix)
            .field("page_size", &self.page_size)
            .field("request_timeout", &self.request_timeout)
            .field("watch_deadline", &self.watch_deadline)
            .finish_non_exhaustive()
    }
}

/// The `[start, end)` key range of every key starting with `prefix`
/// (etcd's `clientv3.GetPrefixRangeEnd`).
fn prefix_range(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    if prefix.is_empty() {
        // etcd's "every key": from "\0" to the end.
        return (vec![0], vec![0]);
    }
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return (prefix.to_vec(), end);
        }
    }
    // The prefix is all 0xff bytes: every key from it to the end.
    (prefix.to_vec(), vec![0])
}

/// Whether etcd refused a request because its revision is compacted.
fn is_compacted(error: &etcd_client::Error) -> bool {
    match error {
        // etcd's `ErrCompacted` (gRPC `OutOfRange`); its text is part of
        // etcd's API (`rpctypes.ErrGRPCCompacted`).
        etcd_client::Error::GRpcStatus(status) => status
            .message()
            .contains("required revision has been compacted"),
        _ => false,
    }
}

impl<V> EtcdSource<V> {
    /// The prefix this source mirrors.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The etcd client of the member this source asks first (a clone
    /// shares its connection), for writes and other requests.
    pub fn client(&self) -> &Client {
        self.members.client(self.members.preferred())
    }

    /// Runs `request` under the request timeout, mapping a timeout and every
    /// etcd error but compaction to [`SourceError::Connection`] naming
    /// `member`.
    async fn timed<T>(
        &self,
        what: &'static str,
        member: usize,
        request: impl Future<Output = Result<T, etcd_client::Error>>,
        compacted_at: Revision,
    ) -> Result<T, SourceError> {
        let failed = |detail: String| {
            SourceError::connection(EtcdRequestError {
                what,
                member: self.members.name(member).to_owned(),
                detail,
            })
        };
        match tokio::time::timeout(self.request_timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) if is_compacted(&error) => Err(SourceError::TooOld {
                requested: compacted_at,
                compacted: None,
            }),
            Ok(Err(error)) => Err(failed(error.to_string())),
            Err(_) => Err(failed(format!(
                "no answer within {:?}",
                self.request_timeout
            ))),
        }
    }

    /// Runs `call` on the preferred member, then on each next member while
    /// they fail (not for a compacted revision: every member would say
    /// so). Returns the first answer, or the last member's error.
    async fn on_any_member<T, F, Fut>(
        &self,
        what: &'static str,
        compacted_at: Revision,
        mut call: F,
    ) -> Result<T, SourceError>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let first = self.members.preferred();
        let mut last = None;
        for attempt in 0..self.members.len() {
            let member = (first + attempt) % self.members.len();
            let client = self.members.client(member).clone();
            match self.timed(what, member, call(client), compacted_at).await {
                Err(error) if !error.needs_relist() => {
                    self.members.failed(member);
                    last = Some(error);
                }
                done => return done,
            }
        }
        Err(last.expect("a source has at least one member"))
    }

    /// etcd's current revision, read with one linearizable (quorum) request:
    /// every write acknowledged before this call has a revision at most the
    /// one returned. The revision is etcd's, over the whole keyspace, not
    /// only this prefix.
    ///
    /// # Errors
    ///
    /// [`SourceError::Connection`] when no member answers within the
    /// request timeout (each member is tried once).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(source: larder::reflector::EtcdSource<String>) -> Result<(), Box<dyn std::error::Error>> {
    /// let now = source.current_revision().await?;
    /// println!("etcd is at revision {now}");
    /// # Ok(()) }
    /// # let _ = demo;
    /// ```
    pub async fn current_revision(&self) -> Result<Revision, SourceError> {
        // One key, no value, at most one result: the cheapest linearizable
        // read there is; its header carries the store's revision.
        let options = GetOptions::new().with_keys_only().with_limit(1);
        let response = self
            .on_any_member("read the current revision", 0, |client| {
                let (key, options) = (self.range_start.clone(), options.clone());
                async move { client.kv_client().get(key, Some(options)).await }
            })
            .await?;
        header_revision(response.header())
    }

    /// Asks etcd for a progress notification on the latest watch this source
    /// opened: etcd answers with a [`WatchEvent::Bookmark`](crate::reflector::WatchEvent::Bookmark) at its current
    /// revision once the watch has delivered every earlier event. Useful when
    /// the prefix is quiet but the reader must know it is caught up.
    ///
    /// etcd before 3.4.25 and 3.5.8 may send that notification ahead of
    /// events still in flight; the watch stream detects the reversal and
    /// ends with [`SourceError::ProgressAheadOfEvent`] (the reflector
    /// relists), but a read that trusted the bookmark in between could
    /// have been stale.
    ///
    /// # Errors
    ///
    /// [`SourceError::Connection`] when no watch is open or its stream is
    /// closed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(source: larder::reflector::EtcdSource<String>) -> Result<(), Box<dyn std::error::Error>> {
    /// // A reflector is watching through `source` (or a clone of it).
    /// source.request_progress().await?;
    /// # Ok(()) }
    /// # let _ = demo;
    /// ```
    pub async fn request_progress(&self) -> Result<(), SourceError> {
        let failed = |detail: String| {
            SourceError::connection(EtcdRequestError {
                what: "request a progress notification",
                member: "etcd".to_owned(),
                detail,
            })
        };
        let Some(requests) = self.progress.lock().await.clone() else {
            return Err(failed("no watch is open".to_owned()));
        };
        let mut sender = requests.lock().await;
        match tokio::time::timeout(self.request_timeout, sender.request_progress()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(failed(error.to_string())),
            Err(_) => Err(failed(format!(
                "no answer within {:?}",
                self.request_timeout
            ))),
        }
    }

    fn decode_pair(
        &self,
        key: &[u8],
        value: &[u8],
        revision: Revision,
    ) -> Result<(String, V), InvalidObject> {
        decode_pair(&*self.decode, key, value, revision)
    }
}

/// Decodes one key-value pair, or says why it cannot.
pub(crate) fn decode_pair<V>(
    decode: &DecodeFn<V>,
    key: &[u8],
    value: &[u8],
    revision: Revision,
) -> Result<(String, V), InvalidObject> {
    let key = match std::str::from_utf8(key) {
        Ok(key) => key.to_owned(),
        Err(error) => {
            return Err(InvalidObject {
                key: String::from_utf8_lossy(key).into_owned(),
                revision,
                reason: format!("the key is not UTF-8: {error}"),
            });
        }
    };
    match decode(value) {
        Ok(object) => Ok((key, object)),
        Err(reason) => Err(InvalidObject {
            key,
            revision,
            reason,
        }),
    }
}

/// The revision in a response's header (etcd always sends one).
fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<Revision, SourceError> {
    match header {
        Some(header) if header.revision() >= 0 => Ok(header.revision() as Revision),
        _ => Err(SourceError::connection(EtcdRequestError {
            what: "read a response header",
            member: "etcd".to_owned(),
            detail: "etcd sent no revision".to_owned(),
        })),
    }
}

/// A revision as etcd's signed wire type.
fn wire(revision: Revision) -> i64 {
    i64::try_from(revision).unwrap_or(i64::MAX)
}

/// A failed etcd request: what the source was doing, the member it asked
/// and what etcd (or the timeout) said. Carried inside
/// [`SourceError::Connection`].
#[derive(Debug)]
struct EtcdRequestError {
    what: &'static str,
    /// The member's endpoint, or "etcd" when the source cannot name it.
    member: String,
    detail: String,
}

impl fmt::Display for EtcdRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: cannot {}: {}", self.member, self.what, self.detail)
    }
}

impl StdError for EtcdRequestError {}

impl<V: Send + Sync + 'static> Source for EtcdSource<V> {
    type Key = String;
    type Object = V;
    type Watch = EtcdWatch<V>;

    /// Lists the prefix at one revision: the first page is read at etcd's
    /// current revision (linearizable), every later page at that same
    /// revision, so the result is one snapshot. If etcd compacts past that
    /// revision before the last page, the list fails with
    /// [`SourceError::TooOld`] and should be retried.
    async fn list(&self) -> Result<Listed<String, V>, SourceError> {
        let mut items = Vec::new();
        let mut invalid = Vec::new();
        let mut start = self.range_start.clone();
        let mut revision: Option<Revision> = None;
        loop {
            let mut options = GetOptions::new()
                .with_range(self.range_end.clone())
                .with_limit(i64::from(self.page_size));
            if let Some(revision) = revision {
                options = options.with_revision(wire(revision));
            }
            let response = self
                .on_any_member("list the prefix", revision.unwrap_or(0), |client| {
                    let (key, options) = (start.clone(), options.clone());
                    async move { client.kv_client().get(key, Some(options)).await }
                })
                .await?;
            let pinned = match revision {
                Some(revision) => revision,
                None => {
                    let first = header_revision(response.header())?;
                    revision = Some(first);
                    first
                }
            };
            for pair in response.kvs() {
                let at = Revision::try_from(pair.mod_revision()).unwrap_or(pinned);
                match self.decode_pair(pair.key(), pair.value(), at) {
                    Ok((key, object)) => items.push((key, object, at)),
                    Err(bad) => invalid.push(bad),
                }
            }
            match response.kvs().last() {
                Some(last) if response.more() => {
                    // The next page starts just after the last key read.
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => {
                    return Ok(Listed {
                        items,
                        revision: pinned,
                        invalid,
                    });
                }
            }
        }
    }

    /// Watches the prefix from just after `from`, asking etcd for progress
    /// notifications (delivered as bookmarks). Resolves once etcd has
    /// created the watch, so a change made after this resolves is
    /// delivered. A compacted `from` ends the stream with
    /// [`SourceError::TooOld`] as its first item (etcd creates the watch,
    /// then cancels it with its compaction revision).
    async fn watch(&self, from: Revision) -> Result<EtcdWatch<V>, SourceError> {
        let first = self.members.preferred();
        let mut last = None;
        for attempt in 0..self.members.len() {
            let member = (first + attempt) % self.members.len();
            match self.watch_on(member, from).await {
                Err(error) if !error.needs_relist() => {
                    self.members.failed(member);
                    last = Some(error);
                }
                done => return done,
            }
        }
        Err(last.expect("a source has at least one member"))
    }

    /// No: etcd before 3.4.25 and 3.5.8 can send a progress notification
    /// ahead of events, and one source may reach members of different
    /// releases. A broken watch is resumed after the last change, so a
    /// change such a notification skipped still arrives (and the reflector
    /// relists); on a prefix quiet for longer than etcd keeps its history,
    /// that resume finds its revision compacted and relists.
    fn bookmarks_cover_every_change(&self) -> bool {
        false
    }
}

impl<V: Send + Sync + 'static> EtcdSource<V> {
    /// Opens the watch of [`Source::watch`] on one member.
    async fn watch_on(&self, member: usize, from: Revision) -> Result<EtcdWatch<V>, SourceError> {
        let mut client = self.members.client(member).watch_client();
        let options = WatchOptions::new()
            .with_range(self.range_end.clone())
            .with_start_revision(wire(from.saturating_add(1)))
            .with_progress_notify();
        let stream = self
            .timed(
                "open a watch",
                member,
                client.watch(self.range_start.clone(), Some(options)),
                from,
            )
            .await?;
        let (sender, responses) = stream.split();
        let requests: Requests = Arc::new(tokio::sync::Mutex::new(sender));
        let mut watch = EtcdWatch::new(
            responses,
            Arc::clone(&self.decode),
            from,
            watch::Liveness::new(
                self.watch_deadline,
                Arc::clone(&requests),
                Arc::clone(&self.members),
                member,
            ),
        );
        // The first answer says whether etcd created the watch or refused
        // its revision as compacted.
        match tokio::time::timeout(self.request_timeout, watch.await_created()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(error),
            Err(_) => {
                return Err(SourceError::connection(EtcdRequestError {
                    what: "open a watch",
                    member: self.members.name(member).to_owned(),
                    detail: format!("not created within {:?}", self.request_timeout),
                }));
            }
        }
        *self.progress.lock().await = Some(requests);
        Ok(watch)
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_range;

    #[test]
    fn prefix_ranges_follow_etcd() {
        assert_eq!(prefix_range(b"/a/"), (b"/a/".to_vec(), b"/a0".to_vec()));
        assert_eq!(prefix_range(b"a\xff"), (b"a\xff".to_vec(), b"b".to_vec()));
        assert_eq!(prefix_range(b"\xff\xff"), (b"\xff\xff".to_vec(), vec![0]));
        assert_eq!(prefix_range(b""), (vec![0], vec![0]));
    }
}
