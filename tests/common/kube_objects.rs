//! What the kube tests share: a test server over a fresh etcd, objects to
//! write, and bounded reads of a watch. Declared beside `etcd_server`
//! (common/etcd.rs) and `kube_server` (common/kube_server/) in each test.

#![allow(dead_code)]

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodSpec};
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};
use larder::reflector::{KubeWatch, Revision, SourceError, WatchEvent};
use serde::de::DeserializeOwned;

use crate::etcd_server::{EtcdOptions, EtcdServer, connect};
use crate::kube_server::KubeServer;

/// etcd's progress notification interval for these tests: the test
/// server's bookmarks come this often on a quiet watch.
pub const BOOKMARK_INTERVAL: Duration = Duration::from_millis(250);

/// A fresh etcd and a test server over it. The server is first, so it is
/// dropped (its watches ended) before etcd is killed.
pub struct Fixture {
    pub server: KubeServer,
    pub etcd: EtcdServer,
}

impl Fixture {
    pub async fn start() -> Self {
        let etcd = EtcdServer::start_with(EtcdOptions {
            progress_interval: BOOKMARK_INTERVAL,
        });
        let server = KubeServer::start(connect(&etcd).await, "/registry").await;
        Fixture { server, etcd }
    }
}

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: namespace.map(str::to_owned),
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

/// A pod with no spec.
pub fn pod(namespace: &str, name: &str) -> Pod {
    Pod {
        metadata: meta(Some(namespace), name),
        ..Pod::default()
    }
}

/// A pod with labels and, when `node` is set, scheduled to that node.
pub fn pod_with(namespace: &str, name: &str, labels: &[(&str, &str)], node: Option<&str>) -> Pod {
    let mut pod = pod(namespace, name);
    pod.metadata.labels = Some(
        labels
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect(),
    );
    if let Some(node) = node {
        pod.spec = Some(PodSpec {
            node_name: Some(node.to_owned()),
            ..PodSpec::default()
        });
    }
    pod
}

/// A config map holding `value` under `v`.
pub fn config_map(namespace: &str, name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(Some(namespace), name),
        data: Some([("v".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// The revision the server gave an object it returned.
pub fn revision_of<K: Resource>(object: &K) -> Revision {
    object
        .resource_version()
        .expect("a resource version")
        .parse()
        .expect("a decimal resource version")
}

/// The watch's next item, failing the test after 10 s of nothing.
pub async fn next<K: DeserializeOwned>(
    watch: &mut KubeWatch<K>,
) -> Option<Result<WatchEvent<String, K>, SourceError>> {
    tokio::time::timeout(
        Duration::from_secs(10),
        poll_fn(|cx| Pin::new(&mut *watch).poll_next(cx)),
    )
    .await
    .expect("the watch delivered nothing within 10 s")
}

/// The watch's next item that is not a bookmark.
pub async fn next_change<K: DeserializeOwned>(
    watch: &mut KubeWatch<K>,
) -> Option<Result<WatchEvent<String, K>, SourceError>> {
    loop {
        match next(watch).await {
            Some(Ok(WatchEvent::Bookmark { .. })) => continue,
            other => return other,
        }
    }
}

/// The watch's next change, which must be an event.
pub async fn next_event<K: DeserializeOwned + std::fmt::Debug>(
    watch: &mut KubeWatch<K>,
) -> WatchEvent<String, K> {
    match next_change(watch).await {
        Some(Ok(event)) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}
