//! Making a [`KubeSource`]: the defaults ([`KubeSource::new`]) or a builder
//! for selectors, paging, the watch's timeouts and the transform.

use std::error::Error as StdError;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use ::kube::api::{Api, Request};
use ::kube::{Client, Resource};

use super::KubeSource;
use super::decode::TransformFn;

/// The default number of objects a list asks for per page (client-go's
/// and kube-runtime's).
pub const DEFAULT_KUBE_PAGE_SIZE: u32 = 500;

/// The default time after which the API server ends a watch by itself
/// (`timeoutSeconds`; kube-runtime's value). The reflector then resumes
/// from its last revision: a new request, not a relist.
pub const DEFAULT_KUBE_WATCH_TIMEOUT: Duration = Duration::from_secs(290);

/// How much longer than the watch timeout a watch may stay silent, by
/// default, before the source gives it up (see
/// [`KubeSourceBuilder::watch_deadline`]).
pub const DEFAULT_KUBE_WATCH_GRACE: Duration = Duration::from_secs(10);

/// Configures a [`KubeSource`]; made by [`KubeSource::builder`].
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::{Api, Client, ResourceExt};
/// use larder::reflector::KubeSource;
///
/// let client = Client::try_default().await?;
/// let source = KubeSource::builder(Api::<Pod>::all(client))
///     .label_selector("app.kubernetes.io/part-of=shop")
///     .field_selector("status.phase=Running")
///     .page_size(200)
///     .watch_timeout(Duration::from_secs(120))
///     // Managed fields are most of a pod's bytes and no controller reads them.
///     .transform(|mut pod: Pod| {
///         pod.managed_fields_mut().clear();
///         pod
///     })
///     .build()?;
/// # drop(source); Ok(()) }
/// # let _ = demo;
/// ```
pub struct KubeSourceBuilder<K> {
    client: Client,
    url: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    page_size: u32,
    watch_timeout: Duration,
    watch_deadline: Option<Duration>,
    transform: Option<Arc<TransformFn<K>>>,
}

impl<K> fmt::Debug for KubeSourceBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeSourceBuilder")
            .field("url", &self.url)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("page_size", &self.page_size)
            .field("watch_timeout", &self.watch_timeout)
            .field("watch_deadline", &self.watch_deadline)
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

/// Why [`KubeSourceBuilder::build`] refused its configuration.
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::{Api, Client};
/// use larder::reflector::{KubeSource, KubeSourceBuildError};
///
/// let api = Api::<Pod>::all(Client::try_default().await?);
/// let error = KubeSource::builder(api).page_size(0).build().unwrap_err();
/// assert_eq!(error, KubeSourceBuildError::ZeroPageSize);
/// # Ok(()) }
/// # let _ = demo;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KubeSourceBuildError {
    /// `page_size(0)`: a list page must hold at least one object.
    ZeroPageSize,
    /// A watch timeout under one second: the API server counts it in whole
    /// seconds, and zero would mean its own default.
    WatchTimeoutUnderASecond,
    /// `watch_deadline(Duration::ZERO)`: every watch would be dead at once.
    ZeroWatchDeadline,
}

impl fmt::Display for KubeSourceBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KubeSourceBuildError::ZeroPageSize => {
                f.write_str("the list page size must be at least 1")
            }
            KubeSourceBuildError::WatchTimeoutUnderASecond => {
                f.write_str("the watch timeout must be at least one second")
            }
            KubeSourceBuildError::ZeroWatchDeadline => {
                f.write_str("the watch deadline must be longer than zero")
            }
        }
    }
}

impl StdError for KubeSourceBuildError {}

impl<K: Resource> KubeSource<K> {
    /// A source that lists and watches every object `api` reaches (one
    /// namespace or all, as `api` was made), with the defaults: pages of
    /// [`DEFAULT_KUBE_PAGE_SIZE`] objects, watches that the server ends
    /// after [`DEFAULT_KUBE_WATCH_TIMEOUT`], no selector, no transform.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::{Api, Client};
    /// use larder::reflector::KubeSource;
    ///
    /// let client = Client::try_default().await?;
    /// let source = KubeSource::new(Api::<ConfigMap>::namespaced(client, "prod"));
    /// # drop(source); Ok(()) }
    /// # let _ = demo;
    /// ```
    pub fn new(api: Api<K>) -> Self {
        Self::builder(api)
            .build()
            .expect("the default settings are valid")
    }

    /// Starts configuring a source over `api` (see [`KubeSourceBuilder`]).
    ///
    /// # Examples
    ///
    /// See [`KubeSourceBuilder`].
    pub fn builder(api: Api<K>) -> KubeSourceBuilder<K> {
        KubeSourceBuilder {
            url: api.resource_url().to_owned(),
            client: api.into_client(),
            label_selector: None,
            field_selector: None,
            page_size: DEFAULT_KUBE_PAGE_SIZE,
            watch_timeout: DEFAULT_KUBE_WATCH_TIMEOUT,
            watch_deadline: None,
            transform: None,
        }
    }
}

impl<K: Resource> KubeSourceBuilder<K> {
    /// Mirrors only the objects whose labels match `selector` (Kubernetes'
    /// `labelSelector`, such as `app=web,tier!=cache`). An object whose
    /// labels stop matching leaves the store, as a deletion.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Mirrors only the objects whose fields match `selector` (Kubernetes'
    /// `fieldSelector`, such as `spec.nodeName=node-7`; which fields a
    /// resource supports is the API server's to say).
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// How many objects one list request asks for (default
    /// [`DEFAULT_KUBE_PAGE_SIZE`]; the server may send fewer). Every page
    /// after the first continues the first page's snapshot. When a page's
    /// `continue` token has expired (the server compacted the snapshot's
    /// revision, `410 Gone`), the source lists again in one unpaged
    /// request, as client-go's pager does, so a list always ends with one
    /// consistent snapshot.
    pub fn page_size(mut self, objects: u32) -> Self {
        self.page_size = objects;
        self
    }

    /// How long the API server keeps a watch open before ending it
    /// (`timeoutSeconds`, default [`DEFAULT_KUBE_WATCH_TIMEOUT`], in whole
    /// seconds, rounded up). The reflector then resumes from its last
    /// revision.
    pub fn watch_timeout(mut self, timeout: Duration) -> Self {
        self.watch_timeout = timeout;
        self
    }

    /// How long an open watch may go without a line from the server (an
    /// event, a bookmark or an error) before the source gives it up: the
    /// stream then ends with
    /// [`SourceError::Connection`](crate::reflector::SourceError::Connection)
    /// and the reflector resumes from its last revision after its backoff.
    /// A silent watch is a hung server or a connection that lost its peer
    /// without a reset. The bound this gives: a change made while the
    /// watch is silent reaches the store at most the deadline (counted
    /// from the server's last line), plus the reflector's backoff (100 ms
    /// after a first failure, by default), plus one watch request, after
    /// the server went silent.
    ///
    /// The default is the watch timeout plus [`DEFAULT_KUBE_WATCH_GRACE`]:
    /// a server ends every watch at its timeout, so one still open and
    /// silent past it is dead, and a live watch on a quiet resource is never
    /// given up. A shorter deadline finds a dead connection sooner, but an
    /// API server that sends no periodic bookmarks (one without its watch
    /// cache) leaves a quiet watch silent: giving it up costs a new watch
    /// request, and a relist when its revision has left the server's
    /// history meanwhile.
    pub fn watch_deadline(mut self, deadline: Duration) -> Self {
        self.watch_deadline = Some(deadline);
        self
    }

    /// Applies `transform` to every object before it is stored, in lists
    /// and watches (client-go's `SetTransform`), on the task that polls the
    /// list or the watch, outside every lock. Use it to drop what the
    /// program never reads (`metadata.managedFields`, large annotations):
    /// what the store holds is the user's choice. The object's key is taken
    /// before the transform, so a transform cannot move an object.
    ///
    /// A transform that panics costs that object only: it is reported as
    /// undecodable ([`InvalidObject`](crate::reflector::InvalidObject),
    /// with the panic's message) and the list or watch goes on.
    pub fn transform(mut self, transform: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// Builds the source.
    ///
    /// # Errors
    ///
    /// [`KubeSourceBuildError`] for a zero page size, a watch timeout under
    /// one second or a zero watch deadline.
    pub fn build(self) -> Result<KubeSource<K>, KubeSourceBuildError> {
        if self.page_size == 0 {
            return Err(KubeSourceBuildError::ZeroPageSize);
        }
        if self.watch_timeout < Duration::from_secs(1) {
            return Err(KubeSourceBuildError::WatchTimeoutUnderASecond);
        }
        if self.watch_deadline == Some(Duration::ZERO) {
            return Err(KubeSourceBuildError::ZeroWatchDeadline);
        }
        let timeout_seconds = u32::try_from(
            self.watch_timeout.as_secs() + u64::from(self.watch_timeout.subsec_nanos() > 0),
        )
        .unwrap_or(u32::MAX);
        let watch_deadline = self
            .watch_deadline
            .unwrap_or_else(|| self.watch_timeout.saturating_add(DEFAULT_KUBE_WATCH_GRACE));
        Ok(KubeSource {
            request: Arc::new(Request::new(self.url)),
            client: self.client,
            metadata_only: K::metadata_api(),
            label_selector: self.label_selector,
            field_selector: self.field_selector,
            page_size: self.page_size,
            timeout_seconds,
            watch_deadline,
            transform: self.transform,
            _objects: PhantomData,
        })
    }
}
