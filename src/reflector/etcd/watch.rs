//! The watch stream of an [`EtcdSource`](super::EtcdSource): etcd's watch
//! responses turned into [`WatchEvent`]s, one event at a time.
//!
//! # Liveness
//!
//! A member that stops answering (a hung process, a stalled disk, a network
//! that drops packets) leaves its watch stream open and silent: the stream
//! alone cannot tell a quiet prefix from a dead member. So the watch keeps
//! a deadline: whenever it has heard nothing (no event, no progress
//! notification) for a third of the deadline it asks its member for a
//! progress notification (etcd answers at once, whatever its
//! `--experimental-watch-progress-notify-interval`), and again every third;
//! a watch that has heard nothing for the whole deadline ends with
//! [`SourceError::Connection`] and marks its member failed, so the next
//! watch goes to another member. The check runs only while the stream is
//! polled and has nothing to deliver: a slow reader never trips it.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use etcd_client::{EventType, WatchResponse, WatchResponseStream};
use futures_core::Stream;
use tokio::time::{Instant, Sleep};

use super::members::Members;
use super::{DecodeFn, EtcdRequestError, Requests, decode_pair};
use crate::reflector::source::{Revision, SourceError, WatchEvent};

/// A progress request on its way to the member.
type Asking = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A watch's deadline: when it last heard from its member, its timer, and
/// the member to mark failed when the deadline passes.
pub(super) struct Liveness {
    deadline: Duration,
    /// A third of the deadline: how long the watch stays quiet before it
    /// asks for progress, and how often it asks again.
    every: Duration,
    heard: Instant,
    timer: Pin<Box<Sleep>>,
    requests: Requests,
    asking: Option<Asking>,
    members: Arc<Members>,
    member: usize,
}

impl Liveness {
    pub(super) fn new(
        deadline: Duration,
        requests: Requests,
        members: Arc<Members>,
        member: usize,
    ) -> Self {
        let every = deadline / 3;
        let heard = Instant::now();
        Liveness {
            deadline,
            every,
            heard,
            timer: Box::pin(tokio::time::sleep_until(heard + every)),
            requests,
            asking: None,
            members,
            member,
        }
    }

    /// The member answered: the deadline starts again (the timer is moved
    /// only when it fires: most responses cost one clock read).
    fn heard(&mut self) {
        self.heard = Instant::now();
    }

    /// Drives the progress request and the timer. `Ready` once the deadline
    /// has passed without a word from the member (which is then marked
    /// failed).
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<SourceError> {
        if let Some(asking) = self.asking.as_mut() {
            if asking.as_mut().poll(cx).is_ready() {
                self.asking = None;
            }
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let quiet = now.saturating_duration_since(self.heard);
            if quiet >= self.deadline {
                self.members.failed(self.member);
                return Poll::Ready(SourceError::connection(EtcdRequestError {
                    what: "keep watching",
                    member: self.members.name(self.member).to_owned(),
                    detail: format!(
                        "no event and no progress notification within {:?}: the member is \
                         presumed hung",
                        self.deadline
                    ),
                }));
            }
            let next = if quiet < self.every {
                self.heard + self.every
            } else {
                if self.asking.is_none() {
                    let requests = Arc::clone(&self.requests);
                    let mut asking: Asking = Box::pin(async move {
                        // A failed request shows as silence: the deadline
                        // decides.
                        let _ = requests.lock().await.request_progress().await;
                    });
                    if asking.as_mut().poll(cx).is_pending() {
                        self.asking = Some(asking);
                    }
                }
                (now + self.every).min(self.heard + self.deadline)
            };
            self.timer.as_mut().reset(next);
        }
        Poll::Pending
    }
}

/// The changes under an [`EtcdSource`](super::EtcdSource)'s prefix, from the
/// revision its watch started at: puts, deletes, undecodable values (with
/// their keys) and progress notifications as bookmarks, in revision order.
///
/// The stream ends with one `Err`: [`SourceError::TooOld`] when etcd
/// compacted the revisions it still had to deliver,
/// [`SourceError::ProgressAheadOfEvent`] when etcd sent a progress
/// notification ahead of an event (older etcd releases can; see
/// [`EtcdSource::request_progress`](super::EtcdSource::request_progress)),
/// and [`SourceError::Connection`] when the stream broke, etcd cancelled
/// the watch for another reason, or the member stayed silent past the
/// watch deadline (see
/// [`EtcdSourceBuilder::watch_deadline`](super::EtcdSourceBuilder::watch_deadline)).
/// It is `Unpin` and `Send`.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(source: larder::reflector::EtcdSource<String>) -> Result<(), Box<dyn std::error::Error>> {
/// use std::future::poll_fn;
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use larder::reflector::{Source, WatchEvent};
///
/// let listed = source.list().await?;
/// let mut watch = source.watch(listed.revision).await?;
/// while let Some(event) = poll_fn(|cx| Pin::new(&mut watch).poll_next(cx)).await {
///     match event? {
///         WatchEvent::Put { key, object, revision } => println!("{revision}: {key} = {object}"),
///         WatchEvent::Delete { key, revision } => println!("{revision}: {key} deleted"),
///         WatchEvent::Bookmark { revision } => println!("caught up with {revision}"),
///         WatchEvent::Invalid(bad) => eprintln!("{}: cannot decode {}", bad.revision, bad.key),
///     }
/// }
/// # Ok(()) }
/// # let _ = demo;
/// ```
pub struct EtcdWatch<V> {
    responses: WatchResponseStream,
    decode: Arc<DecodeFn<V>>,
    /// Events decoded from etcd's latest response, not yet taken.
    pending: VecDeque<Result<WatchEvent<String, V>, SourceError>>,
    /// The highest revision delivered (or queued) so far: the watch's
    /// starting point, then every event's and bookmark's.
    delivered: Revision,
    /// The highest revision a bookmark claimed: no later event may be older.
    bookmarked: Revision,
    /// The stream has queued its final `Err`.
    ended: bool,
    liveness: Liveness,
}

// Nothing in the stream is ever pinned in place (objects sit in a queue and
// move out by value), so it is `Unpin` whatever `V` is.
impl<V> Unpin for EtcdWatch<V> {}

impl<V> fmt::Debug for EtcdWatch<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdWatch")
            .field("delivered", &self.delivered)
            .field("bookmarked", &self.bookmarked)
            .field("pending", &self.pending.len())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<V> EtcdWatch<V> {
    pub(super) fn new(
        responses: WatchResponseStream,
        decode: Arc<DecodeFn<V>>,
        from: Revision,
        liveness: Liveness,
    ) -> Self {
        EtcdWatch {
            responses,
            decode,
            pending: VecDeque::new(),
            delivered: from,
            bookmarked: 0,
            ended: false,
            liveness,
        }
    }

    /// Waits for etcd's answer to the create request: `Ok` once the watch
    /// exists, the stream's final error if etcd refused it.
    pub(super) async fn await_created(&mut self) -> Result<(), SourceError> {
        loop {
            let response = match self.responses.message().await {
                Ok(Some(response)) => response,
                Ok(None) => return Err(self.closed()),
                Err(error) => return Err(self.broken(&error)),
            };
            let created = response.created();
            self.absorb(&response);
            if self.ended {
                return match self.pending.pop_back() {
                    Some(Err(error)) => Err(error),
                    _ => Err(self.closed()),
                };
            }
            if created || !self.pending.is_empty() {
                return Ok(());
            }
        }
    }

    /// Turns one watch response into queued events.
    fn absorb(&mut self, response: &WatchResponse) {
        if response.canceled() || response.compact_revision() > 0 {
            let error = if response.compact_revision() > 0 {
                SourceError::TooOld {
                    requested: self.delivered,
                    compacted: Revision::try_from(response.compact_revision()).ok(),
                }
            } else {
                SourceError::connection(EtcdRequestError {
                    what: "keep watching",
                    member: self.member_name(),
                    detail: format!("etcd cancelled the watch: {}", response.cancel_reason()),
                })
            };
            self.end(error);
            return;
        }
        if response.events().is_empty() {
            // The create answer's header is etcd's revision, not the
            // watch's: a watch catching up from an old revision has not
            // delivered it yet. Every other empty response is a progress
            // notification: the watch has sent everything up to its header.
            if response.created() {
                return;
            }
            let Some(revision) = response
                .header()
                .and_then(|header| Revision::try_from(header.revision()).ok())
            else {
                return;
            };
            if revision > self.delivered {
                self.delivered = revision;
                self.bookmarked = revision;
                self.pending
                    .push_back(Ok(WatchEvent::Bookmark { revision }));
            }
            return;
        }
        for event in response.events() {
            let Some(pair) = event.kv() else { continue };
            let revision = Revision::try_from(pair.mod_revision()).unwrap_or(0);
            if revision <= self.bookmarked {
                // etcd promised (by a progress notification) that nothing
                // at or below `bookmarked` was left to send: a reader that
                // trusted it has skipped this event. Relisting repairs it.
                self.end(SourceError::ProgressAheadOfEvent {
                    bookmarked: self.bookmarked,
                    event: revision,
                });
                return;
            }
            self.delivered = self.delivered.max(revision);
            let item = match event.event_type() {
                EventType::Put => {
                    match decode_pair(&*self.decode, pair.key(), pair.value(), revision) {
                        Ok((key, object)) => WatchEvent::Put {
                            key,
                            object,
                            revision,
                        },
                        Err(invalid) => WatchEvent::Invalid(invalid),
                    }
                }
                EventType::Delete => match std::str::from_utf8(pair.key()) {
                    Ok(key) => WatchEvent::Delete {
                        key: key.to_owned(),
                        revision,
                    },
                    Err(error) => WatchEvent::Invalid(crate::reflector::InvalidObject {
                        key: String::from_utf8_lossy(pair.key()).into_owned(),
                        revision,
                        reason: format!("the key is not UTF-8: {error}"),
                    }),
                },
            };
            self.pending.push_back(Ok(item));
        }
    }

    fn end(&mut self, error: SourceError) {
        self.pending.push_back(Err(error));
        self.ended = true;
    }

    fn member_name(&self) -> String {
        self.liveness.members.name(self.liveness.member).to_owned()
    }

    /// The member closed the stream: it is marked failed.
    fn closed(&self) -> SourceError {
        self.liveness.members.failed(self.liveness.member);
        SourceError::connection(EtcdRequestError {
            what: "keep watching",
            member: self.member_name(),
            detail: "etcd closed the watch stream".to_owned(),
        })
    }

    /// The stream broke: its member is marked failed.
    fn broken(&self, error: &etcd_client::Error) -> SourceError {
        self.liveness.members.failed(self.liveness.member);
        SourceError::connection(EtcdRequestError {
            what: "keep watching",
            member: self.member_name(),
            detail: error.to_string(),
        })
    }
}

impl<V> Stream for EtcdWatch<V> {
    type Item = Result<WatchEvent<String, V>, SourceError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.pending.pop_front() {
                return Poll::Ready(Some(item));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.responses).poll_next(cx) {
                Poll::Ready(Some(Ok(response))) => {
                    this.liveness.heard();
                    this.absorb(&response);
                }
                Poll::Ready(Some(Err(error))) => {
                    let error = this.broken(&error);
                    this.end(error);
                }
                Poll::Ready(None) => {
                    let error = this.closed();
                    this.end(error);
                }
                Poll::Pending => match this.liveness.poll_expired(cx) {
                    Poll::Ready(error) => this.end(error),
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}
