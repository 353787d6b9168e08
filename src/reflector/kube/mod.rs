//! A Kubernetes resource as a reflector [`Source`] (needs the `kube`
//! feature).
//!
//! [`KubeSource`] lists a resource through kube's client page by page and
//! watches it from a resource version with bookmarks allowed. It maps the
//! API's answers onto the reflector's reactions:
//!
//! | the API server says                                  | the source returns                           |
//! |------------------------------------------------------|----------------------------------------------|
//! | a list (its pages)                                   | [`Listed`], at the list's `metadata.resourceVersion` |
//! | `ADDED`, `MODIFIED`                                  | [`WatchEvent::Put`](crate::reflector::WatchEvent::Put) |
//! | `DELETED`                                            | [`WatchEvent::Delete`](crate::reflector::WatchEvent::Delete) |
//! | `BOOKMARK`                                           | [`WatchEvent::Bookmark`](crate::reflector::WatchEvent::Bookmark) |
//! | an object that does not decode (or whose transform panics) | [`Listed::invalid`] / [`WatchEvent::Invalid`](crate::reflector::WatchEvent::Invalid), keyed `namespace/name` |
//! | `410 Gone`, as the HTTP status or as an `ERROR` event | [`SourceError::TooOld`] (relist)            |
//! | `410 Gone` for a list page's `continue` token        | one unpaged list, as client-go's pager does  |
//! | a resource version that is not a decimal integer     | [`SourceError::Connection`] carrying a [`ResourceVersionError`] |
//! | any other failure: a status, a broken or closed stream, a watch silent past its deadline | [`SourceError::Connection`] (retry) |
//!
//! Objects are stored under client-go's `MetaNamespaceKeyFunc` key
//! ([`meta_namespace_key`]). The source runs on kube's client, which needs a
//! tokio runtime (with its timer enabled); the rest of the reflector does
//! not.

// Files: this one (the source, its list, the error mapping), `builder.rs`
// (settings), `watch.rs` (the watch stream and its deadline), `decode.rs`
// (JSON to objects, resource versions, the transform), `keys.rs`
// (`namespace/name` keys), `index.rs` (ready index functions).
mod builder;
mod decode;
mod index;
mod keys;
mod watch;

use std::error::Error as StdError;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use ::kube::api::{ListParams, Request, WatchParams};
use ::kube::{Client, Resource};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::source::{Listed, Revision, Source, SourceError};
use decode::{RawObject, TransformFn, decoded, parse_resource_version};

pub use builder::{
    DEFAULT_KUBE_PAGE_SIZE, DEFAULT_KUBE_WATCH_GRACE, DEFAULT_KUBE_WATCH_TIMEOUT,
    KubeSourceBuildError, KubeSourceBuilder,
};
pub use decode::ResourceVersionError;
pub use index::{index_by_label, index_by_namespace, index_by_owner_uid, index_by_pod_node};
pub use keys::{meta_namespace_key, split_meta_namespace_key};
pub use watch::KubeWatch;

/// Mirrors a Kubernetes resource: a [`Source`] over a [`kube::Api`] whose
/// keys are `namespace/name` ([`meta_namespace_key`]) and whose objects
/// are `K`: a typed resource (`Pod`), a [`DynamicObject`](kube::api::DynamicObject),
/// or a [`PartialObjectMeta<K>`](kube::api::PartialObjectMeta) for a
/// metadata-only cache (the server then sends metadata alone).
///
/// # Resource versions
///
/// Kubernetes calls resource versions opaque strings; larder reads them as
/// the reflector's [`Revision`]s, unsigned decimal integers: what every API
/// server backed by etcd sends (etcd's revisions), and what Kubernetes
/// guarantees from 1.35 on. A value that does not parse fails the list or
/// the watch with a [`ResourceVersionError`] inside
/// [`SourceError::Connection`], never a panic.
///
/// So the `resourceVersion` of an object that a write returned is a
/// revision: [`ReflectorHandle::wait_for_revision`](crate::reflector::ReflectorHandle::wait_for_revision)
/// with it waits until the store holds that write (read-your-writes).
///
/// # Runtime
///
/// kube's client needs a tokio runtime with its timer enabled, and so does
/// the watch's deadline.
///
/// Cloning is cheap and shares the client.
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::{Api, Client};
/// use larder::IndexedStore;
/// use larder::reflector::{KubeSource, Reflector, index_by_namespace, index_by_pod_node};
///
/// let client = Client::try_default().await?;
/// let source = KubeSource::new(Api::<Pod>::all(client));
/// let pods = IndexedStore::<String, Arc<Pod>>::builder()
///     .index("namespace", index_by_namespace)
///     .index("node", index_by_pod_node)
///     .build()?;
/// let reflector = Reflector::builder(source, pods)
///     // An undecodable object's key is its store key: drop its old copy.
///     .parse_invalid_key(|key| (!key.is_empty()).then(|| key.to_owned()))
///     .on_error(|error| eprintln!("{error}"))
///     .build()?;
/// let pods = reflector.reader();
/// let handle = reflector.handle();
/// tokio::spawn(reflector.run());
/// handle.wait_until_synced().await?;
/// println!("pods on node-7: {:?}", pods.index_keys("node", "node-7")?);
/// # Ok(()) }
/// # let _ = demo;
/// ```
pub struct KubeSource<K> {
    client: Client,
    request: Arc<Request>,
    metadata_only: bool,
    label_selector: Option<String>,
    field_selector: Option<String>,
    page_size: u32,
    timeout_seconds: u32,
    watch_deadline: Duration,
    transform: Option<Arc<TransformFn<K>>>,
    _objects: PhantomData<fn() -> K>,
}

impl<K> Clone for KubeSource<K> {
    fn clone(&self) -> Self {
        KubeSource {
            client: self.client.clone(),
            request: Arc::clone(&self.request),
            metadata_only: self.metadata_only,
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            page_size: self.page_size,
            timeout_seconds: self.timeout_seconds,
            watch_deadline: self.watch_deadline,
            transform: self.transform.clone(),
            _objects: PhantomData,
        }
    }
}

impl<K> fmt::Debug for KubeSource<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeSource")
            .field("url", &self.request.url_path)
            .field("metadata_only", &self.metadata_only)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("page_size", &self.page_size)
            .field("timeout_seconds", &self.timeout_seconds)
            .field("watch_deadline", &self.watch_deadline)
            .field("transform", &self.transform.is_some())
            .finish_non_exhaustive()
    }
}

/// A failed request: what the source was doing and what kube's client
/// said (the error's [`source`](StdError::source) is kube's
/// [`kube::Error`]). Carried inside [`SourceError::Connection`].
#[derive(Debug)]
struct KubeRequestError {
    what: &'static str,
    error: ::kube::Error,
}

impl fmt::Display for KubeRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot {}: {}", self.what, self.error)
    }
}

impl StdError for KubeRequestError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.error)
    }
}

/// A failure of the source's own finding: an answer it cannot read, a
/// silent watch. Carried inside [`SourceError::Connection`].
#[derive(Debug)]
struct KubeSourceFailure(String);

impl fmt::Display for KubeSourceFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for KubeSourceFailure {}

/// Whether kube's client got a `410 Gone` (as a response's status, or as a
/// watch's `ERROR` event, which kube reports the same way).
fn is_gone(error: &::kube::Error) -> bool {
    matches!(error, ::kube::Error::Api(status) if status.code == 410)
}

/// `error` as the reflector reacts to it: `410 Gone` is a revision too old
/// to read from (`requested`), anything else a failed connection.
fn request_failed(what: &'static str, error: ::kube::Error, requested: Revision) -> SourceError {
    if is_gone(&error) {
        SourceError::TooOld {
            requested,
            compacted: None,
        }
    } else {
        SourceError::connection(KubeRequestError { what, error })
    }
}

/// One page of a list, every object decoded as `K` straight from the
/// page's text, as kube-runtime's watcher decodes it: the way a page is
/// read while all its objects decode (a list's cost is mostly this).
#[derive(Deserialize)]
#[serde(bound = "K: DeserializeOwned")]
struct TypedList<K> {
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(default)]
    items: Option<Vec<K>>,
}

/// One page of a list, its objects not yet decoded: read so when some
/// object of the page is not a `K`, to decode each on its own (one bad
/// object must not cost the page).
#[derive(Deserialize)]
struct RawList {
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(default)]
    items: Option<Vec<Value>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawListMeta {
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

/// Why one paged read of a list stopped.
enum ListFailure {
    /// A later page's `continue` token has expired (`410 Gone`).
    ContinueExpired,
    Failed(SourceError),
}

impl<K> KubeSource<K> {
    /// The resource's URL path, as kube's `Api` builds it (namespace
    /// included).
    pub fn url(&self) -> &str {
        &self.request.url_path
    }

    /// The client the source reads through (a clone shares its
    /// connections), for writes and other requests.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn list_params(&self, limit: Option<u32>, continue_token: Option<&str>) -> ListParams {
        let mut params = ListParams::default();
        if let Some(selector) = &self.label_selector {
            params = params.labels(selector);
        }
        if let Some(selector) = &self.field_selector {
            params = params.fields(selector);
        }
        if let Some(limit) = limit {
            params = params.limit(limit);
        }
        if let Some(token) = continue_token {
            params = params.continue_token(token);
        }
        params
    }

    pub(crate) fn watch_params(&self) -> WatchParams {
        let mut params = WatchParams::default().timeout(self.timeout_seconds);
        if let Some(selector) = &self.label_selector {
            params = params.labels(selector);
        }
        if let Some(selector) = &self.field_selector {
            params = params.fields(selector);
        }
        params
    }
}

impl<K: Resource + Clone + DeserializeOwned> KubeSource<K> {
    /// Reads the list, `limit` objects a page (every page when `None`: one
    /// request).
    async fn read_list(&self, limit: Option<u32>) -> Result<Listed<String, K>, ListFailure> {
        let mut items = Vec::new();
        let mut invalid = Vec::new();
        let mut revision: Option<Revision> = None;
        let mut continue_token: Option<String> = None;
        loop {
            let params = self.list_params(limit, continue_token.as_deref());
            let request = if self.metadata_only {
                self.request.list_metadata(&params)
            } else {
                self.request.list(&params)
            }
            .map_err(|error| {
                ListFailure::Failed(request_failed(
                    "build a list request",
                    ::kube::Error::BuildRequest(error),
                    0,
                ))
            })?;
            let text = match self.client.request_text(request).await {
                Ok(text) => text,
                Err(error) if continue_token.is_some() && is_gone(&error) => {
                    return Err(ListFailure::ContinueExpired);
                }
                Err(error) => {
                    return Err(ListFailure::Failed(request_failed(
                        "list",
                        error,
                        revision.unwrap_or(0),
                    )));
                }
            };
            let (metadata, typed, raw) = match serde_json::from_str::<TypedList<K>>(&text) {
                Ok(page) => (page.metadata, page.items.unwrap_or_default(), Vec::new()),
                Err(_) => {
                    let page: RawList = serde_json::from_str(&text).map_err(|error| {
                        ListFailure::Failed(SourceError::connection(KubeSourceFailure(format!(
                            "cannot read a list page: {error}"
                        ))))
                    })?;
                    (page.metadata, Vec::new(), page.items.unwrap_or_default())
                }
            };
            let pinned = match revision {
                Some(revision) => revision,
                None => {
                    let first =
                        parse_resource_version(metadata.resource_version.as_deref(), || {
                            "the list".to_owned()
                        })
                        .map_err(|error| ListFailure::Failed(SourceError::connection(error)))?;
                    revision = Some(first);
                    first
                }
            };
            // Each item carries its own version, the revision of its last
            // change (a relist tells unchanged objects by it); one that does
            // not parse is no error: the list's revision stands in (the
            // object then counts as changed).
            for object in typed {
                match decoded(object, pinned, self.transform.as_ref()) {
                    Ok(listed) => items.push(listed),
                    Err(bad) => invalid.push(bad),
                }
            }
            for value in raw {
                let raw = RawObject::new(value);
                let at = raw.revision().unwrap_or(pinned);
                match raw.decode(at, self.transform.as_ref()) {
                    Ok((key, object)) => items.push((key, object, at)),
                    Err(bad) => invalid.push(bad),
                }
            }
            match metadata.continue_token {
                Some(token) if !token.is_empty() => continue_token = Some(token),
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
}

impl<K> Source for KubeSource<K>
where
    K: Resource + Clone + DeserializeOwned + Send + Sync + 'static,
{
    type Key = String;
    type Object = K;
    type Watch = KubeWatch<K>;

    /// Lists the resource in pages of the configured size; every page
    /// continues the first page's snapshot, whose `resourceVersion` is the
    /// list's revision. If the snapshot expires before the last page (the
    /// server compacted its revision: `410 Gone` on a `continue` token),
    /// the source lists again in one unpaged request. Objects that do not
    /// decode are in [`Listed::invalid`], keyed `namespace/name`.
    async fn list(&self) -> Result<Listed<String, K>, SourceError> {
        match self.read_list(Some(self.page_size)).await {
            Ok(listed) => Ok(listed),
            Err(ListFailure::Failed(error)) => Err(error),
            Err(ListFailure::ContinueExpired) => match self.read_list(None).await {
                Ok(listed) => Ok(listed),
                Err(ListFailure::Failed(error)) => Err(error),
                // A server that pages an unpaged list anyway, then expires
                // its token: the reflector lists again after its backoff.
                Err(ListFailure::ContinueExpired) => Err(SourceError::TooOld {
                    requested: 0,
                    compacted: None,
                }),
            },
        }
    }

    /// Watches the resource from just after `from`, with bookmarks allowed.
    /// Resolves once the server has answered the request; a `410 Gone`
    /// answer is [`SourceError::TooOld`].
    async fn watch(&self, from: Revision) -> Result<KubeWatch<K>, SourceError> {
        watch::open(self, from).await
    }
}
