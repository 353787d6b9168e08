//! A Kubernetes list/watch test server: a test fixture, not part of the
//! library, and not a Kubernetes API server.
//!
//! No Kubernetes API server can be installed where larder's tests run, so
//! this server speaks the part of the API's wire protocol that a reflector
//! and a controller use, for three kinds of the core group (`pods` and
//! `configmaps`, namespaced; `nodes`, cluster-scoped), over plain HTTP/1.1
//! on a loopback port, so that the tests run kube's real client over real
//! HTTP:
//!
//! - lists: JSON lists with `metadata.resourceVersion` and `continue`
//!   (`limit` pages, each continuing the first page's snapshot; an expired
//!   `continue` token is `410 Gone`), label and field selectors, and the
//!   metadata-only form (`Accept: ...;as=PartialObjectMetadataList`);
//! - watches (`?watch=true`): chunked streams of `ADDED`, `MODIFIED`,
//!   `DELETED`, `BOOKMARK` and `ERROR` events from a resource version,
//!   `timeoutSeconds`, `allowWatchBookmarks`;
//! - get, create, replace, JSON merge patch and delete, on objects and on
//!   their `status` subresource, with `409 Conflict` for a stale
//!   `resourceVersion`.
//!
//! It keeps its objects in etcd as the API server does: a resource version
//! is etcd's modification revision, a list's version is the revision it
//! was read at, a watch is an etcd watch from the version after, and a
//! version etcd has compacted is `410 Gone`. So revisions and compaction
//! are real, not simulated. Faults a test injects on top: broken, silent
//! and expired watches, a watch refused with `410`, a `continue` token
//! that expires between two pages, resource versions that are not
//! integers, and malformed objects written straight into etcd.
//!
//! What it leaves out: authentication, admission and validation (any JSON
//! object is stored), server-side apply and strategic merge patches,
//! `resourceVersionMatch`, list reads at an older version, streaming lists
//! (`sendInitialEvents`), protobuf, and a watch cache (every request reads
//! etcd).

#![allow(dead_code)]

mod http;
mod selector;
mod storage;
mod watch;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch as signal};
use tokio::task::JoinSet;

use storage::{KINDS, Storage, metadata_mut};

/// What a test can do to the open watches.
#[derive(Debug, Clone, Copy)]
enum Control {
    /// Break the connection mid-response.
    Drop,
    /// End the response cleanly (as a server does at the watch's timeout).
    Close,
    /// Send nothing more, keep the connection open.
    Silence,
    /// Send an `ERROR` event with a `410` status, then end.
    Expire,
    /// Send an `ERROR` event with a `500` status, then end.
    Fail,
}

/// One-shot and standing faults, set by a test.
#[derive(Debug, Default)]
pub struct Faults {
    gone_next_watch: AtomicBool,
    compact_after_page: AtomicBool,
    opaque_in_lists: AtomicBool,
    opaque_in_watches: AtomicBool,
}

impl Faults {
    /// The next watch request is answered `410 Gone` (the HTTP status).
    pub fn refuse_next_watch_with_gone(&self) {
        self.gone_next_watch.store(true, Ordering::SeqCst);
    }

    fn take_gone_next_watch(&self) -> bool {
        self.gone_next_watch.swap(false, Ordering::SeqCst)
    }

    /// After the next list page that has a `continue` token, the server
    /// compacts etcd past that page's revision: the token expires before
    /// the client asks for the next page.
    pub fn compact_after_next_page(&self) {
        self.compact_after_page.store(true, Ordering::SeqCst);
    }

    fn take_compact_after_page(&self) -> bool {
        self.compact_after_page.swap(false, Ordering::SeqCst)
    }

    /// Lists (their version and their objects') carry resource versions
    /// that are not integers (`opaque-<hex>`), as an aggregated API server
    /// may send.
    pub fn opaque_versions_in_lists(&self, on: bool) {
        self.opaque_in_lists.store(on, Ordering::SeqCst);
    }

    /// Watch events and bookmarks carry resource versions that are not
    /// integers.
    pub fn opaque_versions_in_watches(&self, on: bool) {
        self.opaque_in_watches.store(on, Ordering::SeqCst);
    }
}

/// What every request handler shares.
pub struct State {
    storage: Storage,
    faults: Faults,
    watches: Mutex<HashMap<u64, mpsc::UnboundedSender<Control>>>,
    next_id: AtomicU64,
    requests: Mutex<Vec<String>>,
    shutdown: signal::Receiver<bool>,
}

/// A resource version as a client sends it back: decimal, or the opaque
/// form this server hands out under a fault.
fn parse_version(text: &str) -> Option<i64> {
    match text.strip_prefix("opaque-") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

impl State {
    fn log(&self, line: String) {
        self.requests.lock().unwrap().push(line);
    }

    fn next_suffix(&self) -> String {
        format!("{:05x}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// `revision` as this server writes resource versions in a list or
    /// (`in_watch`) a watch.
    fn version(&self, revision: i64, in_watch: bool) -> String {
        let opaque = if in_watch {
            &self.faults.opaque_in_watches
        } else {
            &self.faults.opaque_in_lists
        };
        if opaque.load(Ordering::SeqCst) {
            format!("opaque-{revision:x}")
        } else {
            revision.to_string()
        }
    }

    /// A stored object as the API sends it: its resource version set, or
    /// only its metadata (`PartialObjectMetadata`). A value that is not a
    /// JSON object (a malformed one) is sent as it is.
    fn render(
        &self,
        mut object: Value,
        revision: i64,
        metadata_only: bool,
        in_watch: bool,
    ) -> Value {
        let version = self.version(revision, in_watch);
        let Some(metadata) = metadata_mut(&mut object) else {
            return object;
        };
        metadata.insert("resourceVersion".into(), Value::String(version));
        if metadata_only {
            return json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object["metadata"].take(),
            });
        }
        object
    }

    fn register(&self) -> (u64, mpsc::UnboundedReceiver<Control>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        self.watches.lock().unwrap().insert(id, sender);
        (id, receiver)
    }

    fn unregister(&self, id: u64) {
        self.watches.lock().unwrap().remove(&id);
    }

    /// Sends `control` to every open watch; how many there were.
    fn control_all(&self, control: Control) -> usize {
        let watches = self.watches.lock().unwrap();
        for sender in watches.values() {
            let _ = sender.send(control);
        }
        watches.len()
    }
}

/// The running server; stopped (its connections and watches ended) when
/// dropped.
pub struct KubeServer {
    state: Arc<State>,
    address: SocketAddr,
    shutdown: signal::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl KubeServer {
    /// Starts a server on a free loopback port, keeping its objects in
    /// `etcd` under `prefix` (servers with different prefixes share one
    /// etcd without seeing each other's objects; their revisions are
    /// etcd's, shared).
    pub async fn start(etcd: etcd_client::Client, prefix: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let address = listener.local_addr().expect("a bound address");
        let (shutdown, receiver) = signal::channel(false);
        let state = Arc::new(State {
            storage: Storage::new(etcd, prefix),
            faults: Faults::default(),
            watches: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            requests: Mutex::new(Vec::new()),
            shutdown: receiver,
        });
        let serving = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            // Dropped with this task: every connection ends with it.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = Arc::clone(&serving);
                connections.spawn(async move {
                    let service = service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move {
                            Ok::<_, std::convert::Infallible>(http::handle(state, request).await)
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        KubeServer {
            state,
            address,
            shutdown,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A kube client for this server (plain HTTP, no credentials).
    pub fn client(&self) -> kube::Client {
        let uri = self.url().parse().expect("a valid URL");
        kube::Client::try_from(kube::Config::new(uri)).expect("a kube client")
    }

    /// The faults a test can set.
    pub fn faults(&self) -> &Faults {
        &self.state.faults
    }

    /// etcd's current revision.
    pub async fn revision(&self) -> u64 {
        self.state
            .storage
            .revision()
            .await
            .expect("read etcd's revision") as u64
    }

    /// Compacts etcd's history past its current revision: every resource
    /// version handed out so far is gone (`410`) for watches and continue
    /// tokens. The compaction revision.
    pub async fn compact(&self) -> u64 {
        self.state.storage.compact().await.expect("compact etcd") as u64
    }

    /// Writes `text` as the stored form of the object `name` of the kind
    /// served at `plural` (in `namespace`), with no check: a malformed
    /// object. Its revision.
    pub async fn put_raw(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
        text: &str,
    ) -> u64 {
        let kind = KINDS
            .iter()
            .copied()
            .find(|kind| kind.plural == plural)
            .expect("a served kind");
        let key = self.state.storage.key(kind, namespace, name);
        self.state
            .storage
            .put_raw(&key, text)
            .await
            .expect("write etcd") as u64
    }

    /// Deletes the stored object `name` of the kind served at `plural`
    /// (in `namespace`) with no check (a malformed object too, which a
    /// client's delete could not decode the answer of). The revision of
    /// the deletion.
    pub async fn delete_raw(&self, plural: &str, namespace: Option<&str>, name: &str) -> u64 {
        let kind = KINDS
            .iter()
            .copied()
            .find(|kind| kind.plural == plural)
            .expect("a served kind");
        let key = self.state.storage.key(kind, namespace, name);
        let (revision, _) = self
            .state
            .storage
            .delete(&key)
            .await
            .expect("delete from etcd");
        revision as u64
    }

    /// How many watches are open now.
    pub fn open_watches(&self) -> usize {
        self.state.watches.lock().unwrap().len()
    }

    /// Waits (at most 20 s) until at least `count` watches are open.
    pub async fn wait_for_watches(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while self.open_watches() < count {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{count} watches were not open within 20 s (open: {})",
                self.open_watches()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Breaks every open watch's connection mid-response; how many.
    pub fn drop_watches(&self) -> usize {
        self.state.control_all(Control::Drop)
    }

    /// Ends every open watch cleanly, as a server does at a watch's
    /// timeout; how many.
    pub fn close_watches(&self) -> usize {
        self.state.control_all(Control::Close)
    }

    /// Makes every open watch silent (no event, no bookmark, the
    /// connection kept open); how many. Watches opened later are not.
    pub fn silence_watches(&self) -> usize {
        self.state.control_all(Control::Silence)
    }

    /// Ends every open watch with an `ERROR` event holding a `410 Gone`
    /// status; how many.
    pub fn expire_watches(&self) -> usize {
        self.state.control_all(Control::Expire)
    }

    /// Ends every open watch with an `ERROR` event holding a `500`
    /// status; how many.
    pub fn fail_watches(&self) -> usize {
        self.state.control_all(Control::Fail)
    }

    /// Every request served so far, as `METHOD path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().clone()
    }
}

impl Drop for KubeServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.accept.abort();
    }
}
