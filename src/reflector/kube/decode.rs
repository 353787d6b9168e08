//! From the API server's JSON to what a reflector stores: resource versions
//! read as revisions, each object decoded on its own (an object that does
//! not decode is reported with its key, the rest go on), keys, and the
//! user's transform.

use std::error::Error as StdError;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use ::kube::Resource;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::keys::key_of;
use crate::reflector::source::{InvalidObject, Revision};

/// The transform, type-erased.
pub(crate) type TransformFn<K> = dyn Fn(K) -> K + Send + Sync;

/// A resource version that larder cannot read as a revision, carried inside
/// [`SourceError::Connection`](crate::reflector::SourceError::Connection)
/// (find it with `downcast_ref`).
///
/// Kubernetes calls resource versions opaque strings. larder reads them as
/// unsigned decimal integers that grow with every change: what every API
/// server backed by etcd sends (etcd's revisions), and what Kubernetes
/// guarantees from 1.35 on (resource versions comparable as integers). A
/// server that sends anything else (an aggregated API server with versions
/// of its own) cannot be mirrored: the list or watch that met the value
/// fails with this error, and the reflector retries with backoff, reporting
/// it each time.
///
/// # Examples
///
/// ```
/// use larder::reflector::ResourceVersionError;
///
/// let error = ResourceVersionError::new("the list", "v2-abc");
/// assert_eq!(error.value(), "v2-abc");
/// assert!(error.to_string().contains("\"v2-abc\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceVersionError {
    what: String,
    value: String,
}

impl ResourceVersionError {
    /// The error for `value`, met in `what` (such as "the list" or
    /// "the object prod/web").
    pub fn new(what: impl Into<String>, value: impl Into<String>) -> Self {
        ResourceVersionError {
            what: what.into(),
            value: value.into(),
        }
    }

    /// The resource version as the server sent it (empty when it sent
    /// none).
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for ResourceVersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the API server sent resourceVersion {:?} for {}: larder reads resource versions as \
             unsigned decimal integers (etcd revisions, as Kubernetes guarantees from 1.35 on), \
             so it cannot mirror this resource",
            self.value, self.what
        )
    }
}

impl StdError for ResourceVersionError {}

/// Reads a resource version as a revision.
pub(crate) fn parse_resource_version(
    value: Option<&str>,
    what: impl FnOnce() -> String,
) -> Result<Revision, ResourceVersionError> {
    match value {
        Some(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => text
            .parse::<Revision>()
            .map_err(|_| ResourceVersionError::new(what(), text)),
        other => Err(ResourceVersionError::new(what(), other.unwrap_or_default())),
    }
}

/// An object as the server sent it, before decoding: its key and resource
/// version read from its raw metadata.
pub(crate) struct RawObject {
    pub(crate) key: String,
    value: Value,
}

impl RawObject {
    pub(crate) fn new(value: Value) -> Self {
        let metadata = value.get("metadata");
        let field = |name: &str| {
            metadata
                .and_then(|metadata| metadata.get(name))
                .and_then(Value::as_str)
        };
        let key = key_of(field("namespace"), field("name").unwrap_or(""));
        RawObject { key, value }
    }

    /// The object's `metadata.resourceVersion`, as sent.
    pub(crate) fn resource_version(&self) -> Option<&str> {
        self.value
            .get("metadata")
            .and_then(|metadata| metadata.get("resourceVersion"))
            .and_then(Value::as_str)
    }

    /// The object's revision, or the error naming the object.
    pub(crate) fn revision(&self) -> Result<Revision, ResourceVersionError> {
        parse_resource_version(self.resource_version(), || {
            format!("the object {:?}", self.key)
        })
    }

    /// Decodes the object as `K` and applies `transform`; an object that
    /// does not decode, or whose transform panics, is reported with its key
    /// and `revision`.
    pub(crate) fn decode<K: DeserializeOwned>(
        self,
        revision: Revision,
        transform: Option<&Arc<TransformFn<K>>>,
    ) -> Result<(String, K), InvalidObject> {
        let RawObject { key, value } = self;
        match serde_json::from_value::<K>(value) {
            Ok(object) => transformed(key, object, revision, transform),
            Err(error) => Err(InvalidObject {
                key,
                revision,
                reason: format!("does not decode: {error}"),
            }),
        }
    }
}

/// A listed object already decoded as `K` (the whole page decoded at
/// once), keyed and versioned by its metadata, read before `transform`:
/// its revision is its own resource version, or `list` (the list's) where
/// that does not parse (the object then counts as changed on a relist).
/// An object whose transform panics is reported with its key.
///
/// What is stored is a clone of the decoded (and transformed) object, as
/// kube-runtime's store keeps one: decoding from text cannot know an
/// array's length beforehand, so each `Vec` of the decoded object
/// (containers, ports, environment, conditions...) grows by doubling and
/// keeps spare capacity, about a sixth more memory for a typical pod; a
/// clone's capacities are exact.
pub(crate) fn decoded<K: Resource + Clone>(
    object: K,
    list: Revision,
    transform: Option<&Arc<TransformFn<K>>>,
) -> Result<(String, K, Revision), InvalidObject> {
    let meta = object.meta();
    let key = key_of(
        meta.namespace.as_deref(),
        meta.name.as_deref().unwrap_or(""),
    );
    let revision =
        parse_resource_version(meta.resource_version.as_deref(), String::new).unwrap_or(list);
    let (key, object) = transformed(key, object, revision, transform)?;
    Ok((key, object.clone(), revision))
}

/// Applies `transform` to a decoded object; a panic costs this object,
/// not the list or the watch: it is reported like an undecodable one.
fn transformed<K>(
    key: String,
    object: K,
    revision: Revision,
    transform: Option<&Arc<TransformFn<K>>>,
) -> Result<(String, K), InvalidObject> {
    let Some(transform) = transform else {
        return Ok((key, object));
    };
    match catch_unwind(AssertUnwindSafe(|| transform(object))) {
        Ok(object) => Ok((key, object)),
        Err(panic) => Err(InvalidObject {
            key,
            revision,
            reason: format!("the transform panicked: {}", panic_message(&*panic)),
        }),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    if let Some(message) = panic.downcast_ref::<&str>() {
        message
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message
    } else {
        "(not a string)"
    }
}

#[cfg(test)]
mod tests {
    use super::{RawObject, parse_resource_version};

    #[test]
    fn resource_versions_are_unsigned_decimal_integers() {
        let what = || "the list".to_owned();
        assert_eq!(parse_resource_version(Some("42"), what), Ok(42));
        for bad in ["", "-1", "+1", "1.5", "abc", " 1", "18446744073709551616"] {
            let error = parse_resource_version(Some(bad), what).unwrap_err();
            assert_eq!(error.value(), bad);
        }
        assert_eq!(parse_resource_version(None, what).unwrap_err().value(), "");
    }

    #[test]
    fn raw_objects_are_keyed_like_meta_namespace_key() {
        let raw = RawObject::new(serde_json::json!({
            "metadata": {"namespace": "ns", "name": "a", "resourceVersion": "7"}
        }));
        assert_eq!(raw.key, "ns/a");
        assert_eq!(raw.revision(), Ok(7));
        let raw = RawObject::new(serde_json::json!({"metadata": {"name": "node-1"}}));
        assert_eq!(raw.key, "node-1");
        assert!(raw.revision().is_err());
        let raw = RawObject::new(serde_json::json!("not an object"));
        assert_eq!(raw.key, "");
    }
}
