//! Seeding the test server: pods written straight into etcd, in the
//! server's key layout (`<prefix>/pods/<namespace>/<name>`) and stored
//! form (the object's JSON without `metadata.resourceVersion`, which the
//! server sets from etcd's revision when it serves the object), in batched
//! transactions. The server then lists them as it lists pods created
//! through it; creating 100,000 pods one request at a time would take
//! minutes.

use etcd_client::{Client, Txn, TxnOp};
use futures::stream::{self, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube_compare::pods::pod;

/// Puts per transaction: etcd's default `--max-txn-ops`.
const BATCH: usize = 128;
/// Transactions in flight at once.
const IN_FLIGHT: usize = 4;

/// The etcd key of pod `object` under the server prefix `prefix` (as the
/// server's storage forms it: the prefix without its trailing slash).
fn key(prefix: &str, object: &Pod) -> String {
    let metadata = &object.metadata;
    format!(
        "{}/pods/{}/{}",
        prefix.trim_end_matches('/'),
        metadata.namespace.as_deref().expect("a namespaced pod"),
        metadata.name.as_deref().expect("a named pod"),
    )
}

/// Pod `i` as the server stores it under `prefix`, `(key, JSON)`: its
/// creation time set, its resource version left to etcd.
fn stored(prefix: &str, i: usize) -> (String, String) {
    let mut object = pod(i, 0);
    object.metadata.resource_version = None;
    object.metadata.creation_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2025-01-01T00:00:00Z".parse().expect("a valid time"),
        ));
    let value = serde_json::to_string(&object).expect("a pod serializes");
    (key(prefix, &object), value)
}

/// Writes pods `0..count` under `prefix`; the bytes written (values only).
pub async fn seed(etcd: &Client, prefix: &str, count: usize) -> Result<u64, etcd_client::Error> {
    let batches = (0..count).step_by(BATCH).map(|first| {
        let mut kv = etcd.kv_client();
        async move {
            let mut bytes = 0;
            let puts: Vec<TxnOp> = (first..(first + BATCH).min(count))
                .map(|i| {
                    let (key, value) = stored(prefix, i);
                    bytes += value.len() as u64;
                    TxnOp::put(key, value, None)
                })
                .collect();
            kv.txn(Txn::new().and_then(puts)).await?;
            Ok::<_, etcd_client::Error>(bytes)
        }
    });
    stream::iter(batches)
        .buffer_unordered(IN_FLIGHT)
        .try_fold(0, |total, bytes| async move { Ok(total + bytes) })
        .await
}

/// Deletes everything under `prefix` (the seeded pods of a run against an
/// etcd that outlives it).
pub async fn clear(etcd: &Client, prefix: &str) -> Result<(), etcd_client::Error> {
    let options = etcd_client::DeleteOptions::new().with_prefix();
    etcd.kv_client().delete(prefix, Some(options)).await?;
    Ok(())
}
