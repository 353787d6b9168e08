//! The test server's objects, kept in etcd as the API server keeps them: one
//! key per object (`<prefix>/<resource>/<namespace>/<name>`, or
//! `<prefix>/<resource>/<name>` for a cluster-scoped kind), its JSON as the
//! value, its resource version etcd's modification revision. Writes are
//! etcd transactions that compare revisions, so a stale update fails as
//! it does on a real server (`409 Conflict`).

use std::sync::atomic::{AtomicU64, Ordering};

use etcd_client::{Client, Compare, CompareOp, GetOptions, KeyValue, Txn, TxnOp};
use serde_json::{Map, Value};

/// A resource the server serves: its URL name, kind and scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub plural: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
}

/// Pods and config maps (namespaced) and nodes (cluster-scoped), all in
/// the core group (`/api/v1`).
pub const KINDS: [Kind; 3] = [
    Kind {
        plural: "pods",
        kind: "Pod",
        namespaced: true,
    },
    Kind {
        plural: "configmaps",
        kind: "ConfigMap",
        namespaced: true,
    },
    Kind {
        plural: "nodes",
        kind: "Node",
        namespaced: false,
    },
];

/// Why a storage operation failed, as the API reports it.
#[derive(Debug)]
pub enum StoreError {
    NotFound,
    AlreadyExists,
    Conflict,
    /// etcd compacted the revision a read asked for.
    Compacted,
    Etcd(String),
}

impl From<etcd_client::Error> for StoreError {
    fn from(error: etcd_client::Error) -> Self {
        let text = error.to_string();
        if text.contains("required revision has been compacted") {
            StoreError::Compacted
        } else {
            StoreError::Etcd(text)
        }
    }
}

/// One page of a collection read at a revision.
pub struct Page {
    /// `(revision, object)` of each key in the page, in key order.
    pub objects: Vec<(i64, Value)>,
    /// The revision the page was read at.
    pub revision: i64,
    /// The key the next page starts at, when there is one.
    pub next: Option<Vec<u8>>,
}

/// The objects of the server, in etcd.
pub struct Storage {
    pub etcd: Client,
    pub prefix: String,
    uids: AtomicU64,
}

/// `[start, end)`: every key starting with `prefix`.
pub fn prefix_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = prefix.as_bytes().to_vec();
    let mut end = start.clone();
    let last = end.pop().expect("a non-empty prefix");
    end.push(last + 1);
    (start, end)
}

/// `value`'s JSON with `metadata` made an object (created when missing).
pub fn metadata_mut(value: &mut Value) -> Option<&mut Map<String, Value>> {
    let object = value.as_object_mut()?;
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    metadata.as_object_mut()
}

impl Storage {
    pub fn new(etcd: Client, prefix: &str) -> Self {
        Storage {
            etcd,
            prefix: prefix.trim_end_matches('/').to_owned(),
            uids: AtomicU64::new(1),
        }
    }

    /// The key prefix of a collection: every object of `kind`, or of `kind`
    /// in `namespace`.
    pub fn collection(&self, kind: Kind, namespace: Option<&str>) -> String {
        match namespace {
            Some(namespace) => format!("{}/{}/{}/", self.prefix, kind.plural, namespace),
            None => format!("{}/{}/", self.prefix, kind.plural),
        }
    }

    /// The key of one object.
    pub fn key(&self, kind: Kind, namespace: Option<&str>, name: &str) -> String {
        format!("{}{}", self.collection(kind, namespace), name)
    }

    /// etcd's current revision (a linearizable read).
    pub async fn revision(&self) -> Result<i64, StoreError> {
        let response = self
            .etcd
            .kv_client()
            .get(
                self.prefix.clone(),
                Some(GetOptions::new().with_keys_only().with_limit(1)),
            )
            .await?;
        Ok(response.header().map_or(0, |header| header.revision()))
    }

    /// A page of up to `limit` objects (every one when `None`) of the
    /// collection `collection`, starting at `start`, at `revision` (the
    /// current one when `None`).
    pub async fn page(
        &self,
        collection: &str,
        start: Option<Vec<u8>>,
        revision: Option<i64>,
        limit: Option<u32>,
    ) -> Result<Page, StoreError> {
        let (first, end) = prefix_range(collection);
        let mut options = GetOptions::new().with_range(end);
        if let Some(revision) = revision {
            options = options.with_revision(revision);
        }
        if let Some(limit) = limit {
            options = options.with_limit(i64::from(limit));
        }
        let response = self
            .etcd
            .kv_client()
            .get(start.unwrap_or(first), Some(options))
            .await?;
        let revision = revision.unwrap_or_else(|| response.header().map_or(0, |h| h.revision()));
        let objects = response.kvs().iter().map(decode).collect();
        let next = match response.kvs().last() {
            Some(last) if response.more() => {
                let mut next = last.key().to_vec();
                next.push(0);
                Some(next)
            }
            _ => None,
        };
        Ok(Page {
            objects,
            revision,
            next,
        })
    }

    /// One object and its revision.
    pub async fn get(&self, key: &str) -> Result<(i64, Value), StoreError> {
        let response = self.etcd.kv_client().get(key, None).await?;
        response
            .kvs()
            .first()
            .map(decode)
            .ok_or(StoreError::NotFound)
    }

    /// Creates `object` under `key`; its revision.
    pub async fn create(&self, key: &str, mut object: Value) -> Result<(i64, Value), StoreError> {
        if let Some(metadata) = metadata_mut(&mut object) {
            let uid = self.uids.fetch_add(1, Ordering::Relaxed);
            metadata.insert(
                "uid".into(),
                Value::String(format!("00000000-0000-4000-8000-{uid:012x}")),
            );
            metadata.insert(
                "creationTimestamp".into(),
                Value::String("2025-01-01T00:00:00Z".into()),
            );
            metadata.remove("resourceVersion");
        }
        let txn = Txn::new()
            .when([Compare::version(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, object.to_string(), None)]);
        let response = self.etcd.kv_client().txn(txn).await?;
        if !response.succeeded() {
            return Err(StoreError::AlreadyExists);
        }
        Ok((response.header().map_or(0, |h| h.revision()), object))
    }

    /// Replaces the object under `key` with `object`, if its revision is
    /// still `expected` (any revision when `None`); its new revision.
    pub async fn update(
        &self,
        key: &str,
        mut object: Value,
        expected: Option<i64>,
    ) -> Result<(i64, Value), StoreError> {
        if let Some(metadata) = metadata_mut(&mut object) {
            metadata.remove("resourceVersion");
        }
        let compare = match expected {
            Some(revision) => Compare::mod_revision(key, CompareOp::Equal, revision),
            None => Compare::version(key, CompareOp::Greater, 0),
        };
        let txn = Txn::new()
            .when([compare])
            .and_then([TxnOp::put(key, object.to_string(), None)]);
        let response = self.etcd.kv_client().txn(txn).await?;
        if response.succeeded() {
            return Ok((response.header().map_or(0, |h| h.revision()), object));
        }
        match self.get(key).await {
            Err(StoreError::NotFound) => Err(StoreError::NotFound),
            _ => Err(StoreError::Conflict),
        }
    }

    /// Deletes the object under `key`: the object as it was, and the
    /// revision of the deletion.
    pub async fn delete(&self, key: &str) -> Result<(i64, Value), StoreError> {
        loop {
            let (revision, object) = self.get(key).await?;
            let txn = Txn::new()
                .when([Compare::mod_revision(key, CompareOp::Equal, revision)])
                .and_then([TxnOp::delete(key, None)]);
            let response = self.etcd.kv_client().txn(txn).await?;
            if response.succeeded() {
                return Ok((response.header().map_or(0, |h| h.revision()), object));
            }
        }
    }

    /// Writes `value` under `key` as it is, with no check (a malformed
    /// object, as a buggy writer or a storage migration leaves one); its
    /// revision.
    pub async fn put_raw(&self, key: &str, value: &str) -> Result<i64, StoreError> {
        let response = self.etcd.kv_client().put(key, value, None).await?;
        Ok(response.header().map_or(0, |h| h.revision()))
    }

    /// Compacts etcd's history up to its current revision (after one write
    /// outside every collection, so that the latest read revision is gone
    /// too); the compaction revision.
    pub async fn compact(&self) -> Result<i64, StoreError> {
        let revision = self
            .put_raw(&format!("{}-compaction", self.prefix), "x")
            .await?;
        self.etcd.kv_client().compact(revision, None).await?;
        Ok(revision)
    }
}

/// An etcd key-value as `(revision, object)`; a value that is not JSON
/// becomes a JSON string holding its text (served as it is: a malformed
/// object).
pub fn decode(pair: &KeyValue) -> (i64, Value) {
    let value = serde_json::from_slice(pair.value())
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(pair.value()).into_owned()));
    (pair.mod_revision(), value)
}
