//! The watch stream of a [`KubeSource`]: the API server's watch events
//! turned into [`WatchEvent`]s, one at a time.
//!
//! # Liveness
//!
//! A watch whose server hangs, or whose connection lost its peer without a
//! reset, stays open and silent: the stream alone cannot tell it from a
//! quiet resource. So the watch keeps a deadline: a watch that has heard
//! nothing from the server (no event, no bookmark, no error) for the whole
//! deadline ends with [`SourceError::Connection`], and the reflector
//! resumes from its last revision. The check runs only while the stream is
//! polled and has nothing to deliver: a slow reader never trips it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ::kube::api::WatchEvent as ApiEvent;
use futures_core::Stream;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::time::{Instant, Sleep};

use super::decode::{RawObject, TransformFn, parse_resource_version};
use super::{KubeSource, KubeSourceFailure, request_failed};
use crate::reflector::source::{Revision, SourceError, WatchEvent};

/// The API server's events, objects still raw JSON.
type ApiEvents = Pin<Box<dyn Stream<Item = Result<ApiEvent<Value>, ::kube::Error>> + Send>>;

/// Opens the watch of [`Source::watch`](crate::reflector::Source::watch).
pub(super) async fn open<K>(
    source: &KubeSource<K>,
    from: Revision,
) -> Result<KubeWatch<K>, SourceError> {
    let params = source.watch_params();
    let version = from.to_string();
    let request = if source.metadata_only {
        source.request.watch_metadata(&params, &version)
    } else {
        source.request.watch(&params, &version)
    }
    .map_err(|error| {
        request_failed(
            "build a watch request",
            ::kube::Error::BuildRequest(error),
            from,
        )
    })?;
    let events = source
        .client
        .request_events::<Value>(request)
        .await
        .map_err(|error| request_failed("open a watch", error, from))?;
    let events: ApiEvents = Box::pin(events);
    let heard = Instant::now();
    Ok(KubeWatch {
        events,
        transform: source.transform.clone(),
        delivered: from,
        ended: false,
        deadline: source.watch_deadline,
        heard,
        timer: Box::pin(tokio::time::sleep_until(heard + source.watch_deadline)),
    })
}

/// The changes of a [`KubeSource`]'s resource from the revision its watch
/// started at: puts, deletes, undecodable objects (with their keys) and
/// bookmarks, in revision order.
///
/// The stream ends with one `Err`: [`SourceError::TooOld`] for a
/// `410 Gone` `ERROR` event, [`SourceError::Connection`] for any other
/// `ERROR` event, a broken stream, a resource version that does not parse
/// (carrying a [`ResourceVersionError`](super::ResourceVersionError)) or a
/// watch silent past its deadline (see
/// [`KubeSourceBuilder::watch_deadline`](super::KubeSourceBuilder::watch_deadline));
/// or it ends with `None` when the server closes the watch (as it does at
/// the watch's timeout). It is `Unpin` and `Send`.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(source: larder::reflector::KubeSource<k8s_openapi::api::core::v1::Pod>) -> Result<(), Box<dyn std::error::Error>> {
/// use std::future::poll_fn;
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use larder::reflector::{Source, WatchEvent};
///
/// let listed = source.list().await?;
/// let mut watch = source.watch(listed.revision).await?;
/// while let Some(event) = poll_fn(|cx| Pin::new(&mut watch).poll_next(cx)).await {
///     match event? {
///         WatchEvent::Put { key, revision, .. } => println!("{revision}: {key} put"),
///         WatchEvent::Delete { key, revision } => println!("{revision}: {key} deleted"),
///         WatchEvent::Bookmark { revision } => println!("caught up with {revision}"),
///         WatchEvent::Invalid(bad) => eprintln!("{}: cannot decode {}", bad.revision, bad.key),
///     }
/// }
/// # Ok(()) }
/// # let _ = demo;
/// ```
pub struct KubeWatch<K> {
    events: ApiEvents,
    transform: Option<Arc<TransformFn<K>>>,
    /// The highest revision delivered so far: the watch's starting point,
    /// then every event's and bookmark's.
    delivered: Revision,
    /// The stream has delivered its final item.
    ended: bool,
    deadline: Duration,
    /// When the server was last heard from.
    heard: Instant,
    /// Fires at `heard + deadline` or earlier (it is moved only when it
    /// fires: most events cost one clock read).
    timer: Pin<Box<Sleep>>,
}

impl<K> fmt::Debug for KubeWatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeWatch")
            .field("delivered", &self.delivered)
            .field("ended", &self.ended)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl<K: DeserializeOwned> KubeWatch<K> {
    /// The reflector's event for one of the server's, `None` for a
    /// bookmark that brings nothing new.
    fn translate(
        &mut self,
        event: ApiEvent<Value>,
    ) -> Option<Result<WatchEvent<String, K>, SourceError>> {
        let (raw, deleted) = match event {
            ApiEvent::Added(object) | ApiEvent::Modified(object) => (RawObject::new(object), false),
            ApiEvent::Deleted(object) => (RawObject::new(object), true),
            ApiEvent::Bookmark(bookmark) => {
                let revision =
                    match parse_resource_version(Some(&bookmark.metadata.resource_version), || {
                        "a bookmark".to_owned()
                    }) {
                        Ok(revision) => revision,
                        Err(error) => return Some(self.end(SourceError::connection(error))),
                    };
                if revision <= self.delivered {
                    return None;
                }
                self.delivered = revision;
                return Some(Ok(WatchEvent::Bookmark { revision }));
            }
            ApiEvent::Error(status) => {
                let error =
                    request_failed("keep watching", ::kube::Error::Api(status), self.delivered);
                return Some(self.end(error));
            }
        };
        let revision = match raw.revision() {
            Ok(revision) => revision,
            Err(error) => return Some(self.end(SourceError::connection(error))),
        };
        self.delivered = self.delivered.max(revision);
        if deleted {
            return Some(Ok(WatchEvent::Delete {
                key: raw.key,
                revision,
            }));
        }
        Some(Ok(match raw.decode(revision, self.transform.as_ref()) {
            Ok((key, object)) => WatchEvent::Put {
                key,
                object,
                revision,
            },
            Err(invalid) => WatchEvent::Invalid(invalid),
        }))
    }

    fn end<T>(&mut self, error: SourceError) -> Result<T, SourceError> {
        self.ended = true;
        Err(error)
    }

    /// `Ready` once the server has been silent for the whole deadline.
    fn poll_silent(&mut self, cx: &mut Context<'_>) -> Poll<SourceError> {
        while self.timer.as_mut().poll(cx).is_ready() {
            let silent_until = self.heard + self.deadline;
            if Instant::now() >= silent_until {
                return Poll::Ready(SourceError::connection(KubeSourceFailure(format!(
                    "the watch heard nothing from the API server (no event, no bookmark) \
                     within {:?}: given up as dead",
                    self.deadline
                ))));
            }
            self.timer.as_mut().reset(silent_until);
        }
        Poll::Pending
    }
}

impl<K: DeserializeOwned> Stream for KubeWatch<K> {
    type Item = Result<WatchEvent<String, K>, SourceError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            match this.events.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    this.heard = Instant::now();
                    if let Some(item) = this.translate(event) {
                        return Poll::Ready(Some(item));
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    let error = request_failed("keep watching", error, this.delivered);
                    return Poll::Ready(Some(this.end(error)));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => {
                    return match this.poll_silent(cx) {
                        Poll::Ready(error) => Poll::Ready(Some(this.end(error))),
                        Poll::Pending => Poll::Pending,
                    };
                }
            }
        }
    }
}
