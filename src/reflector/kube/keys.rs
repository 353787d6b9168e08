//! The key a Kubernetes object is stored under: client-go's
//! `MetaNamespaceKeyFunc` (`namespace/name`, or `name` for a cluster-scoped
//! object), and its inverse.

use ::kube::Resource;

/// The key client-go's `MetaNamespaceKeyFunc` gives `object`:
/// `namespace/name`, or `name` alone for a cluster-scoped object (no
/// namespace, or an empty one). [`KubeSource`](super::KubeSource) stores
/// every object under this key, so a lookup by the key a Go controller
/// would use finds it.
///
/// An object without a name (one that is still to be created with
/// `generateName`) has the key of an empty name: `namespace/`, or the
/// empty string.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
/// use kube::api::ObjectMeta;
/// use larder::reflector::meta_namespace_key;
///
/// let config = ConfigMap {
///     metadata: ObjectMeta {
///         namespace: Some("prod".into()),
///         name: Some("settings".into()),
///         ..ObjectMeta::default()
///     },
///     ..ConfigMap::default()
/// };
/// assert_eq!(meta_namespace_key(&config), "prod/settings");
///
/// let namespace = Namespace {
///     metadata: ObjectMeta { name: Some("prod".into()), ..ObjectMeta::default() },
///     ..Namespace::default()
/// };
/// assert_eq!(meta_namespace_key(&namespace), "prod");
/// ```
pub fn meta_namespace_key<K: Resource>(object: &K) -> String {
    let meta = object.meta();
    key_of(
        meta.namespace.as_deref(),
        meta.name.as_deref().unwrap_or(""),
    )
}

/// `namespace/name`, or `name` where the namespace is absent or empty.
pub(crate) fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) if !namespace.is_empty() => {
            let mut key = String::with_capacity(namespace.len() + 1 + name.len());
            key.push_str(namespace);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => name.to_owned(),
    }
}

/// Splits a key made by [`meta_namespace_key`] into its namespace (`None`
/// for a cluster-scoped object) and name (client-go's
/// `SplitMetaNamespaceKey`). `None` for a string no object has as its key:
/// one with more than one `/` (Kubernetes names and namespaces never hold
/// one).
///
/// # Examples
///
/// ```
/// use larder::reflector::split_meta_namespace_key;
///
/// assert_eq!(split_meta_namespace_key("prod/settings"), Some((Some("prod"), "settings")));
/// assert_eq!(split_meta_namespace_key("prod"), Some((None, "prod")));
/// assert_eq!(split_meta_namespace_key("a/b/c"), None);
/// ```
pub fn split_meta_namespace_key(key: &str) -> Option<(Option<&str>, &str)> {
    match key.split_once('/') {
        None => Some((None, key)),
        Some((_, name)) if name.contains('/') => None,
        Some((namespace, name)) => Some((Some(namespace), name)),
    }
}

#[cfg(test)]
mod tests {
    use super::{key_of, split_meta_namespace_key};

    #[test]
    fn keys_round_trip_through_split() {
        for (namespace, name) in [(Some("ns"), "a"), (None, "node-1"), (Some("ns"), "")] {
            let key = key_of(namespace, name);
            assert_eq!(split_meta_namespace_key(&key), Some((namespace, name)));
        }
        // An empty namespace is no namespace, as in client-go.
        assert_eq!(key_of(Some(""), "a"), "a");
    }
}
