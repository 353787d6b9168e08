//! [`owner_keys`]: a secondary watch's map through owner references
//! (kube-runtime's `owns`).

use std::any::TypeId;

use ::kube::Resource;
use ::kube::core::ClusterResourceScope;

/// A map for [`ControllerBuilder::watches`](super::ControllerBuilder::watches)
/// over a reflector of `Child` objects, for a controller of `Owner`
/// objects (kube-runtime's `owns`): the keys (as
/// [`meta_namespace_key`](crate::reflector::meta_namespace_key) makes
/// them) of the owners an object's owner references name with `Owner`'s
/// kind and `apiVersion`. A namespaced owner is in its child's namespace
/// (Kubernetes allows no other); a cluster-scoped owner's key is its name.
///
/// An owner reference names its owner's uid too: a store indexed with
/// [`index_by_owner_uid`](crate::reflector::index_by_owner_uid) finds the
/// children of an owner the other way round.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// use k8s_openapi::api::core::v1::{Node, Pod};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use kube::api::ObjectMeta;
/// use larder::controller::owner_keys;
///
/// fn owned_by(api_version: &str, kind: &str, name: &str) -> ObjectMeta {
///     ObjectMeta {
///         namespace: Some("prod".into()),
///         owner_references: Some(vec![OwnerReference {
///             api_version: api_version.into(),
///             kind: kind.into(),
///             name: name.into(),
///             ..OwnerReference::default()
///         }]),
///         ..ObjectMeta::default()
///     }
/// }
///
/// let map = owner_keys::<Deployment, ReplicaSet>();
/// let metadata = owned_by("apps/v1", "Deployment", "web");
/// let replica_set = ReplicaSet { metadata, ..ReplicaSet::default() };
/// assert_eq!(map(&"prod/web-5d9c".to_string(), &replica_set), ["prod/web"]);
/// let metadata = owned_by("apps/v1", "StatefulSet", "db");
/// let replica_set = ReplicaSet { metadata, ..ReplicaSet::default() };
/// assert!(map(&"prod/db-0".to_string(), &replica_set).is_empty());
///
/// // A cluster-scoped owner: a static pod's mirror is owned by its node.
/// let map = owner_keys::<Node, Pod>();
/// let pod = Pod { metadata: owned_by("v1", "Node", "node-1"), ..Pod::default() };
/// assert_eq!(map(&"prod/etcd-node-1".to_string(), &pod), ["node-1"]);
/// ```
pub fn owner_keys<Owner, Child>() -> impl Fn(&String, &Child) -> Vec<String> + Send + Sync + 'static
where
    Owner: Resource<DynamicType = ()>,
    Owner::Scope: 'static,
    Child: Resource,
{
    let kind = Owner::kind(&()).into_owned();
    let api_version = Owner::api_version(&()).into_owned();
    let cluster_scoped = TypeId::of::<Owner::Scope>() == TypeId::of::<ClusterResourceScope>();
    move |_key: &String, child: &Child| {
        let meta = child.meta();
        let namespace = match meta.namespace.as_deref() {
            Some(namespace) if !cluster_scoped && !namespace.is_empty() => Some(namespace),
            _ => None,
        };
        meta.owner_references
            .iter()
            .flatten()
            .filter(|owner| owner.kind == kind && owner.api_version == api_version)
            // `meta_namespace_key`'s form: `namespace/name`, or `name`.
            .map(|owner| match namespace {
                Some(namespace) => format!("{namespace}/{}", owner.name),
                None => owner.name.clone(),
            })
            .collect()
    }
}
