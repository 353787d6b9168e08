//! Ready index functions for stores of Kubernetes objects: by namespace, by
//! a label's value, by owner and by a pod's node. Each has the shape
//! [`IndexedStoreBuilder::index`](crate::IndexedStoreBuilder::index) takes
//! for a reflector's store (objects held as `Arc<K>`), whatever source fills
//! it.

use std::sync::Arc;

use ::kube::Resource;
use k8s_openapi::api::core::v1::Pod;

/// Indexes an object by its namespace (client-go's
/// `MetaNamespaceIndexFunc`); a cluster-scoped object has no entry.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ObjectMeta;
/// use larder::IndexedStore;
/// use larder::reflector::index_by_namespace;
///
/// let store = IndexedStore::<String, Arc<ConfigMap>>::builder()
///     .index("namespace", index_by_namespace)
///     .build()
///     .unwrap();
/// let config = ConfigMap {
///     metadata: ObjectMeta {
///         namespace: Some("prod".into()),
///         name: Some("settings".into()),
///         ..ObjectMeta::default()
///     },
///     ..ConfigMap::default()
/// };
/// store.insert("prod/settings".to_string(), Arc::new(config)).unwrap();
/// assert_eq!(store.index_keys("namespace", "prod").unwrap(), ["prod/settings"]);
/// ```
pub fn index_by_namespace<K: Resource>(object: &Arc<K>) -> Option<String> {
    object
        .meta()
        .namespace
        .as_ref()
        .filter(|namespace| !namespace.is_empty())
        .cloned()
}

/// An index function over the value of the label `label`: an object
/// without that label has no entry.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::api::ObjectMeta;
/// use larder::IndexedStore;
/// use larder::reflector::index_by_label;
///
/// let store = IndexedStore::<String, Arc<Pod>>::builder()
///     .index("app", index_by_label("app.kubernetes.io/name"))
///     .build()
///     .unwrap();
/// let pod = Pod {
///     metadata: ObjectMeta {
///         namespace: Some("prod".into()),
///         name: Some("web-1".into()),
///         labels: Some([("app.kubernetes.io/name".to_string(), "web".to_string())].into()),
///         ..ObjectMeta::default()
///     },
///     ..Pod::default()
/// };
/// store.insert("prod/web-1".to_string(), Arc::new(pod)).unwrap();
/// assert_eq!(store.index_keys("app", "web").unwrap(), ["prod/web-1"]);
/// ```
pub fn index_by_label<K: Resource>(
    label: impl Into<String>,
) -> impl Fn(&Arc<K>) -> Option<String> + Send + Sync + 'static {
    let label = label.into();
    move |object: &Arc<K>| {
        object
            .meta()
            .labels
            .as_ref()
            .and_then(|labels| labels.get(&label))
            .cloned()
    }
}

/// Indexes an object by the UID of each of its owners
/// (`metadata.ownerReferences[*].uid`): the objects a controller owns,
/// found from the owner's UID without a scan.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use kube::api::ObjectMeta;
/// use larder::IndexedStore;
/// use larder::reflector::index_by_owner_uid;
///
/// let store = IndexedStore::<String, Arc<Pod>>::builder()
///     .index("owner", index_by_owner_uid)
///     .build()
///     .unwrap();
/// let owner = OwnerReference {
///     api_version: "apps/v1".into(),
///     kind: "ReplicaSet".into(),
///     name: "web-5d8f".into(),
///     uid: "6f1c0a52-9d7e-4b4e-a0d2-0c8f3e4b5a61".into(),
///     ..OwnerReference::default()
/// };
/// let pod = Pod {
///     metadata: ObjectMeta {
///         namespace: Some("prod".into()),
///         name: Some("web-5d8f-x2k9p".into()),
///         owner_references: Some(vec![owner]),
///         ..ObjectMeta::default()
///     },
///     ..Pod::default()
/// };
/// store.insert("prod/web-5d8f-x2k9p".to_string(), Arc::new(pod)).unwrap();
/// assert_eq!(
///     store.index_keys("owner", "6f1c0a52-9d7e-4b4e-a0d2-0c8f3e4b5a61").unwrap(),
///     ["prod/web-5d8f-x2k9p"]
/// );
/// ```
pub fn index_by_owner_uid<K: Resource>(object: &Arc<K>) -> Vec<String> {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .map(|owner| owner.uid.clone())
        .collect()
}

/// Indexes a pod by the node it is scheduled to (`spec.nodeName`); a pod
/// not yet scheduled has no entry.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::{Pod, PodSpec};
/// use kube::api::ObjectMeta;
/// use larder::IndexedStore;
/// use larder::reflector::index_by_pod_node;
///
/// let store = IndexedStore::<String, Arc<Pod>>::builder()
///     .index("node", index_by_pod_node)
///     .build()
///     .unwrap();
/// let pod = Pod {
///     metadata: ObjectMeta {
///         namespace: Some("prod".into()),
///         name: Some("web-1".into()),
///         ..ObjectMeta::default()
///     },
///     spec: Some(PodSpec { node_name: Some("node-7".into()), ..PodSpec::default() }),
///     ..Pod::default()
/// };
/// store.insert("prod/web-1".to_string(), Arc::new(pod)).unwrap();
/// assert_eq!(store.index_keys("node", "node-7").unwrap(), ["prod/web-1"]);
/// ```
pub fn index_by_pod_node(pod: &Arc<Pod>) -> Option<String> {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.node_name.as_ref())
        .filter(|node| !node.is_empty())
        .cloned()
}
