//! The Kubernetes list/watch test server (tests/common/kube_server/) itself:
//! its writes answer kube's client as an API server does (versions,
//! conflicts, status subresource, merge patches), so that the tests built
//! on it test the source, not the fixture.
//!
//! Needs the `kube` and `etcd` features and an `etcd` binary.

#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/kube_objects.rs"]
mod kube_objects;
#[path = "common/kube_server/mod.rs"]
mod kube_server;

use std::time::Duration;

use etcd_server::bounded;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use kube_objects::{Fixture, pod, revision_of};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(90);

/// The HTTP status of a failed kube request.
fn status_code<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> u16 {
    match result {
        Err(kube::Error::Api(status)) => status.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_answer_as_an_api_server_does() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded("writes_answer_as_an_api_server_does", LIMIT, async {
        let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
        let created = pods
            .create(&PostParams::default(), &pod("ns", "a"))
            .await
            .unwrap();
        assert_eq!(revision_of(&created), server.revision().await);
        assert!(created.uid().is_some(), "the server gives a uid");
        assert_eq!(created.namespace().as_deref(), Some("ns"));
        assert_eq!(
            status_code(pods.create(&PostParams::default(), &pod("ns", "a")).await),
            409,
            "AlreadyExists"
        );

        // A replace at the current version succeeds; at an old one, 409.
        let mut labeled = created.clone();
        labeled.labels_mut().insert("app".into(), "web".into());
        let replaced = pods
            .replace("a", &PostParams::default(), &labeled)
            .await
            .unwrap();
        assert!(revision_of(&replaced) > revision_of(&created));
        assert_eq!(replaced.uid(), created.uid(), "identity is kept");
        assert_eq!(
            status_code(pods.replace("a", &PostParams::default(), &labeled).await),
            409,
            "a stale resourceVersion is a Conflict"
        );

        // Merge patches; the status subresource changes the status only.
        let patch = json!({ "metadata": { "labels": { "tier": "front" } } });
        let patched = pods
            .patch("a", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        assert_eq!(patched.labels()["app"], "web");
        assert_eq!(patched.labels()["tier"], "front");
        let status = json!({
            "metadata": { "labels": { "ignored": "yes" } },
            "status": { "phase": "Running" },
        });
        let with_status = pods
            .patch_status("a", &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
        assert_eq!(
            with_status.status.as_ref().unwrap().phase.as_deref(),
            Some("Running")
        );
        assert!(!with_status.labels().contains_key("ignored"));
        let mut replacing = pods.get("a").await.unwrap();
        replacing.status = Some(PodStatus {
            phase: Some("Succeeded".into()),
            ..PodStatus::default()
        });
        let replaced = pods
            .replace_status("a", &PostParams::default(), &replacing)
            .await
            .unwrap();
        assert_eq!(replaced.status.unwrap().phase.as_deref(), Some("Succeeded"));

        // generateName, get, delete.
        let generated = Pod {
            metadata: ObjectMeta {
                generate_name: Some("web-".into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        let generated = pods
            .create(&PostParams::default(), &generated)
            .await
            .unwrap();
        assert!(generated.name_any().starts_with("web-"));
        assert_eq!(
            pods.get(&generated.name_any()).await.unwrap().uid(),
            generated.uid()
        );
        pods.delete("a", &DeleteParams::default()).await.unwrap();
        assert_eq!(status_code(pods.get("a").await), 404);
        assert_eq!(
            status_code(pods.delete("a", &DeleteParams::default()).await),
            404
        );
    })
    .await;
}
