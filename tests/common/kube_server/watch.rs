//! Watches, as the API server serves them: an etcd watch of the collection's
//! key range from `resourceVersion + 1`, each etcd event turned into one
//! JSON line of a chunked response (`ADDED`, `MODIFIED`, `DELETED`, with
//! selectors applied to the old and the new object as the API does),
//! etcd's progress notifications into `BOOKMARK`s (when the client allows
//! them: one per notification, a repeated revision too), a compacted
//! revision into an `ERROR` event with a `410` status.
//!
//! Bookmarks come from etcd's periodic progress notifications (the etcd
//! flag `--experimental-watch-progress-notify-interval`), which etcd sends
//! through the watch's own event channel and only once the watch has
//! caught up: a bookmark never overtakes an event. (Progress *requests*
//! are not used: etcd before 3.4.25 and 3.5.8 answers them ahead of events
//! still in flight.)

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{Event, EventType, WatchOptions, WatchResponseStream};
use http_body_util::BodyExt;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::http::{Call, ChannelBody, ResponseBody, status_object, status_response};
use super::selector::Selector;
use super::storage::{Kind, decode, prefix_range};
use super::{Control, State};

/// The server's default `timeoutSeconds`, when the request names none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

type Lines = mpsc::Sender<Result<Bytes, io::Error>>;

/// What one watch's pump needs.
struct Pump {
    state: Arc<State>,
    lines: Lines,
    responses: WatchResponseStream,
    /// The etcd watch's request half: dropping it would end the etcd
    /// stream, so the pump keeps it.
    _requests: etcd_client::WatchRequestSender,
    control: mpsc::UnboundedReceiver<Control>,
    id: u64,
    kind: Kind,
    selector: Selector,
    bookmarks: bool,
    metadata_only: bool,
    /// Every change up to this revision has been sent.
    sent: i64,
    ends: Instant,
}

/// Removes a watch from the open ones when its pump ends.
struct Registered {
    state: Arc<State>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.state.unregister(self.id);
    }
}

fn line(kind: &str, object: Value) -> Bytes {
    let mut text = json!({ "type": kind, "object": object }).to_string();
    text.push('\n');
    Bytes::from(text)
}

fn gone(sent: i64, compacted: i64) -> Bytes {
    line(
        "ERROR",
        status_object(
            410,
            "Expired",
            &format!("too old resource version: {} ({compacted})", sent + 1),
        ),
    )
}

/// Serves a watch request: `200` and a chunked body of events, or an error
/// status.
pub async fn serve(state: Arc<State>, call: Call) -> Response<ResponseBody> {
    let selector = match call.selector() {
        Ok(selector) => selector,
        Err(error) => return status_response(400, "BadRequest", &error),
    };
    if state.faults.take_gone_next_watch() {
        return status_response(
            410,
            "Expired",
            "too old resource version (refused by the test server's fault)",
        );
    }
    let collection = state
        .storage
        .collection(call.kind, call.namespace.as_deref());
    // `resourceVersion` unset or "0": the current objects as `ADDED`
    // events first, then the changes after them.
    let mut initial = Vec::new();
    let from = match call.param("resourceVersion").unwrap_or("") {
        "" | "0" => match state.storage.page(&collection, None, None, None).await {
            Ok(page) => {
                initial = page.objects;
                page.revision
            }
            Err(error) => return status_response(500, "InternalError", &format!("{error:?}")),
        },
        text => match super::parse_version(text) {
            Some(revision) => revision,
            None => return status_response(400, "BadRequest", "invalid resourceVersion"),
        },
    };
    let timeout = call
        .param("timeoutSeconds")
        .and_then(|seconds| seconds.parse::<u64>().ok())
        .filter(|&seconds| seconds > 0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let (start, end) = prefix_range(&collection);
    let options = WatchOptions::new()
        .with_range(end)
        .with_start_revision(from + 1)
        .with_prev_key()
        .with_progress_notify();
    let stream = match state
        .storage
        .etcd
        .watch_client()
        .watch(start, Some(options))
        .await
    {
        Ok(stream) => stream,
        Err(error) => return status_response(500, "InternalError", &error.to_string()),
    };
    let (requests, mut responses) = stream.split();
    // etcd's first answer: the watch exists (a compacted start revision
    // then cancels it, which the pump reports).
    match responses.message().await {
        Ok(Some(response)) if response.created() => {}
        Ok(other) => {
            return status_response(500, "InternalError", &format!("etcd answered {other:?}"));
        }
        Err(error) => return status_response(500, "InternalError", &error.to_string()),
    }
    let (lines, body) = mpsc::channel(1024);
    for (revision, object) in initial {
        if selector.matches(&object) {
            let object = state.render(object, revision, call.metadata_only, true);
            let _ = lines.try_send(Ok(line("ADDED", object)));
        }
    }
    let (id, control) = state.register();
    let pump = Pump {
        state: Arc::clone(&state),
        lines,
        responses,
        _requests: requests,
        control,
        id,
        kind: call.kind,
        selector,
        bookmarks: call.param("allowWatchBookmarks") == Some("true"),
        metadata_only: call.metadata_only,
        sent: from,
        ends: Instant::now() + timeout,
    };
    tokio::spawn(pump.run());
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(ChannelBody(body).boxed())
        .expect("a valid response")
}

impl Pump {
    async fn send(&self, chunk: Bytes) -> bool {
        self.lines.send(Ok(chunk)).await.is_ok()
    }

    async fn run(mut self) {
        let _registered = Registered {
            state: Arc::clone(&self.state),
            id: self.id,
        };
        let mut shutdown = self.state.shutdown.clone();
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(self.ends) => return,
                _ = self.lines.closed() => return,
                _ = shutdown.changed() => return,
                control = self.control.recv() => match control {
                    None => return,
                    Some(Control::Drop) => {
                        // The connection breaks mid-response.
                        let _ = self.lines.send(Err(io::Error::other("dropped by a test"))).await;
                        return;
                    }
                    Some(Control::Close) => return,
                    Some(Control::Expire) => {
                        let _ = self.send(gone(self.sent, self.sent)).await;
                        return;
                    }
                    Some(Control::Fail) => {
                        let status = status_object(500, "InternalError", "failed by a test");
                        let _ = self.send(line("ERROR", status)).await;
                        return;
                    }
                    Some(Control::Silence) => {
                        // A hung server: the connection stays open, nothing
                        // more is sent, not even bookmarks.
                        tokio::select! {
                            _ = self.lines.closed() => {}
                            _ = shutdown.changed() => {}
                        }
                        return;
                    }
                },
                response = self.responses.message() => match response {
                    Ok(Some(response)) => {
                        if response.canceled() || response.compact_revision() > 0 {
                            let _ = self.send(gone(self.sent, response.compact_revision())).await;
                            return;
                        }
                        if response.events().is_empty() {
                            let revision = response.header().map_or(0, |h| h.revision());
                            // Every progress notification is a bookmark,
                            // a repeated revision too: periodic bookmarks
                            // are how a client tells a quiet watch from a
                            // dead one.
                            if !response.created() && self.bookmarks && revision >= self.sent {
                                self.sent = revision;
                                if !self.send(self.bookmark(revision)).await {
                                    return;
                                }
                            }
                            continue;
                        }
                        for event in response.events() {
                            if let Some(chunk) = self.translate(event) {
                                if !self.send(chunk).await {
                                    return;
                                }
                            }
                        }
                        if let Some(last) = response.events().last().and_then(Event::kv) {
                            self.sent = self.sent.max(last.mod_revision());
                        }
                    }
                    Ok(None) | Err(_) => {
                        let _ = self.lines.send(Err(io::Error::other("etcd ended the watch"))).await;
                        return;
                    }
                },
            }
        }
    }

    fn bookmark(&self, revision: i64) -> Bytes {
        line(
            "BOOKMARK",
            json!({
                "kind": self.kind.kind,
                "apiVersion": "v1",
                "metadata": { "resourceVersion": self.state.version(revision, true) },
            }),
        )
    }

    /// One etcd event as the API reports it to this watch's selector.
    fn translate(&self, event: &Event) -> Option<Bytes> {
        let pair = event.kv()?;
        let revision = pair.mod_revision();
        let old = event.prev_kv().map(|prev| decode(prev).1);
        let old_matches = old
            .as_ref()
            .is_some_and(|object| self.selector.matches(object));
        let (kind, object) = match event.event_type() {
            EventType::Put => {
                let new = decode(pair).1;
                match (self.selector.matches(&new), old_matches) {
                    (true, true) => ("MODIFIED", new),
                    (true, false) => ("ADDED", new),
                    // It no longer matches: gone from this watch's view.
                    (false, true) => ("DELETED", new),
                    (false, false) => return None,
                }
            }
            EventType::Delete => {
                let old = old.unwrap_or_else(|| self.named_by_key(pair.key()));
                if !self.selector.matches(&old) {
                    return None;
                }
                ("DELETED", old)
            }
        };
        let object = self
            .state
            .render(object, revision, self.metadata_only, true);
        Some(line(kind, object))
    }

    /// An object naming only what its key says (a deletion etcd sent
    /// without the old value).
    fn named_by_key(&self, key: &[u8]) -> Value {
        let key = String::from_utf8_lossy(key);
        let mut parts = key.rsplit('/');
        let name = parts.next().unwrap_or("");
        let mut metadata = json!({ "name": name });
        if self.kind.namespaced {
            metadata["namespace"] = Value::String(parts.next().unwrap_or("").to_owned());
        }
        json!({ "kind": self.kind.kind, "apiVersion": "v1", "metadata": metadata })
    }
}
