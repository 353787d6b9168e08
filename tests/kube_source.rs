//! `KubeSource` through kube's real client, over HTTP, against the
//! Kubernetes list/watch test server (tests/common/kube_server/), which
//! keeps its objects in a real etcd (tests/common/etcd.rs): every mapping
//! from the API's answers to the reflector's events and errors.
//!
//! Needs the `kube` and `etcd` features and an `etcd` binary.

#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/kube_objects.rs"]
mod kube_objects;
#[path = "common/kube_server/mod.rs"]
mod kube_server;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_server::bounded;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ObjectMeta, PartialObjectMeta, PostParams,
};
use kube::{Api, ResourceExt};
use kube_objects::{
    Fixture, config_map, next, next_change, next_event, pod, pod_with, revision_of,
};
use larder::reflector::{
    KubeSource, KubeSourceBuildError, ResourceVersionError, Revision, Source, SourceError,
    WatchEvent,
};

/// Far above a test's usual running time (seconds), far below a stalled run.
const LIMIT: Duration = Duration::from_secs(90);

fn keys<V>(items: &[(String, V, Revision)]) -> Vec<&str> {
    items.iter().map(|(key, _, _)| key.as_str()).collect()
}

/// The `ResourceVersionError` inside a connection error, if that is what
/// it carries.
fn resource_version_error(error: &SourceError) -> Option<&ResourceVersionError> {
    match error {
        SourceError::Connection(inner) => inner.downcast_ref::<ResourceVersionError>(),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_reads_pages_of_one_snapshot_keyed_by_namespace_and_name() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "list_reads_pages_of_one_snapshot_keyed_by_namespace_and_name",
        LIMIT,
        async {
            let client = server.client();
            let mut expected = Vec::new();
            for (namespace, count) in [("a", 9), ("b", 6)] {
                let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
                for i in 0..count {
                    let name = format!("p{i}");
                    pods.create(&PostParams::default(), &pod(namespace, &name))
                        .await
                        .unwrap();
                    expected.push(format!("{namespace}/{name}"));
                }
            }
            let before = server.revision().await;
            // While the list decodes its first page, a writer adds a pod that
            // sorts into the last page: a list that follows its continue
            // tokens reads one snapshot and does not see it.
            let late_writer = client.clone();
            let wrote = Arc::new(Mutex::new(None::<u64>));
            let wrote_in_transform = Arc::clone(&wrote);
            let source = KubeSource::builder(Api::<Pod>::all(client.clone()))
                .page_size(4)
                .transform(move |pod: Pod| {
                    let mut slot = wrote_in_transform.lock().unwrap();
                    if slot.is_none() {
                        let client = late_writer.clone();
                        // The transform is synchronous: the write runs on a
                        // runtime of its own.
                        let revision = std::thread::spawn(move || {
                            tokio::runtime::Builder::new_current_thread()
                                .enable_all()
                                .build()
                                .unwrap()
                                .block_on(async {
                                    let pods: Api<Pod> = Api::namespaced(client, "b");
                                    let late = pods
                                        .create(&PostParams::default(), &pod_late())
                                        .await
                                        .unwrap();
                                    revision_of(&late)
                                })
                        })
                        .join()
                        .unwrap();
                        *slot = Some(revision);
                    }
                    pod
                })
                .build()
                .unwrap();
            let listed = source.list().await.unwrap();
            let late = wrote.lock().unwrap().expect("the transform wrote");
            assert!(listed.invalid.is_empty(), "{:?}", listed.invalid);
            assert_eq!(
                keys(&listed.items),
                expected,
                "every pod of the snapshot, keyed ns/name"
            );
            // Each item carries its own resourceVersion (its last change,
            // etcd's mod_revision), at or below the list's.
            for (key, pod, revision) in &listed.items {
                let own = pod.resource_version().expect("a resourceVersion");
                assert_eq!(own, revision.to_string(), "{key}");
                assert!(*revision <= listed.revision, "{key}");
            }
            assert_eq!(
                listed.revision, before,
                "the list's version is its first page's revision"
            );
            assert!(late > listed.revision);
            let pages = server
                .requests()
                .iter()
                .filter(|line| line.starts_with("GET /api/v1/pods?") && line.contains("limit=4"))
                .count();
            assert_eq!(pages, 4, "15 pods in pages of 4: {:?}", server.requests());

            // A cluster-scoped object's key is its name.
            let nodes: Api<Node> = Api::all(client.clone());
            let node = Node {
                metadata: ObjectMeta {
                    name: Some("node-1".into()),
                    ..ObjectMeta::default()
                },
                ..Node::default()
            };
            nodes.create(&PostParams::default(), &node).await.unwrap();
            let listed = KubeSource::new(nodes).list().await.unwrap();
            assert_eq!(keys(&listed.items), ["node-1"]);
        },
    )
    .await;
}

fn pod_late() -> Pod {
    pod("b", "zz-late")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_continue_token_falls_back_to_one_unpaged_list() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "an_expired_continue_token_falls_back_to_one_unpaged_list",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            for i in 0..10 {
                pods.create(&PostParams::default(), &pod("ns", &format!("p{i}")))
                    .await
                    .unwrap();
            }
            let first_page_revision = server.revision().await;
            // The server compacts etcd right after the first page: its
            // continue token names a revision that is gone (410 Expired).
            server.faults().compact_after_next_page();
            let source = KubeSource::builder(Api::<Pod>::all(server.client()))
                .page_size(3)
                .build()
                .unwrap();
            let listed = source
                .list()
                .await
                .expect("the list falls back, it does not fail");
            assert_eq!(listed.items.len(), 10);
            assert!(
                listed.revision > first_page_revision,
                "the fallback list is a new snapshot, after the compaction"
            );
            let lists: Vec<String> = server
                .requests()
                .into_iter()
                .filter(|line| line.starts_with("GET /api/v1/pods"))
                .collect();
            assert_eq!(lists.len(), 3, "{lists:?}");
            assert!(lists[0].contains("limit=3") && !lists[0].contains("continue="));
            assert!(
                lists[1].contains("continue="),
                "the expired page: {lists:?}"
            );
            assert!(
                !lists[2].contains("limit="),
                "then one unpaged list: {lists:?}"
            );
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_maps_added_modified_deleted_and_bookmarks() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "watch_maps_added_modified_deleted_and_bookmarks",
        LIMIT,
        async {
            let client = server.client();
            let pods: Api<Pod> = Api::namespaced(client.clone(), "ns");
            let source = KubeSource::new(Api::<Pod>::all(client.clone()));
            let listed = source.list().await.unwrap();
            let mut watch = source.watch(listed.revision).await.unwrap();

            let created = pods
                .create(&PostParams::default(), &pod("ns", "a"))
                .await
                .unwrap();
            match next_event(&mut watch).await {
                WatchEvent::Put {
                    key,
                    object,
                    revision,
                } => {
                    assert_eq!((key.as_str(), revision), ("ns/a", revision_of(&created)));
                    assert_eq!(object.name_any(), "a");
                }
                other => panic!("ADDED must be a put, got {other:?}"),
            }
            let mut changed = created.clone();
            changed.labels_mut().insert("tier".into(), "front".into());
            let replaced = pods
                .replace("a", &PostParams::default(), &changed)
                .await
                .unwrap();
            match next_event(&mut watch).await {
                WatchEvent::Put {
                    key,
                    object,
                    revision,
                } => {
                    assert_eq!((key.as_str(), revision), ("ns/a", revision_of(&replaced)));
                    assert_eq!(object.labels()["tier"], "front");
                }
                other => panic!("MODIFIED must be a put, got {other:?}"),
            }
            pods.delete("a", &DeleteParams::default()).await.unwrap();
            let deleted_at = server.revision().await;
            assert_eq!(
                next_event(&mut watch).await,
                WatchEvent::Delete {
                    key: "ns/a".into(),
                    revision: deleted_at
                },
                "DELETED is a delete at the deletion's revision"
            );

            // A write to another resource moves etcd's revision: the quiet pod
            // watch learns it from a bookmark, and nothing else.
            let configs: Api<ConfigMap> = Api::namespaced(client, "ns");
            let config = configs
                .create(&PostParams::default(), &config_map("ns", "c", "1"))
                .await
                .unwrap();
            loop {
                match next(&mut watch).await {
                    Some(Ok(WatchEvent::Bookmark { revision }))
                        if revision >= revision_of(&config) =>
                    {
                        break;
                    }
                    Some(Ok(WatchEvent::Bookmark { .. })) => continue,
                    other => panic!("a quiet watch sends bookmarks only, got {other:?}"),
                }
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_status_on_a_watch_request_is_too_old() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "a_gone_status_on_a_watch_request_is_too_old",
        LIMIT,
        async {
            let source = KubeSource::new(Api::<Pod>::all(server.client()));
            let listed = source.list().await.unwrap();
            server.faults().refuse_next_watch_with_gone();
            match source.watch(listed.revision).await {
                Err(SourceError::TooOld { requested, .. }) => {
                    assert_eq!(requested, listed.revision)
                }
                other => panic!("an HTTP 410 must be TooOld, got {other:?}"),
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_error_event_mid_watch_is_too_old() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded("a_gone_error_event_mid_watch_is_too_old", LIMIT, async {
        let source = KubeSource::new(Api::<Pod>::all(server.client()));
        let listed = source.list().await.unwrap();
        let mut watch = source.watch(listed.revision).await.unwrap();
        server.wait_for_watches(1).await;
        assert_eq!(server.expire_watches(), 1);
        match next_change(&mut watch).await {
            Some(Err(SourceError::TooOld { .. })) => {}
            other => panic!("an ERROR event with 410 must be TooOld, got {other:?}"),
        }
        assert!(
            next(&mut watch).await.is_none(),
            "the stream ends after its error"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_a_compacted_revision_is_too_old() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "a_watch_from_a_compacted_revision_is_too_old",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            let source = KubeSource::new(Api::<Pod>::all(server.client()));
            let listed = source.list().await.unwrap();
            pods.create(&PostParams::default(), &pod("ns", "a"))
                .await
                .unwrap();
            server.compact().await;
            // The server accepts the watch, then etcd refuses its revision:
            // an ERROR event with 410, as an API server sends it.
            let mut watch = source.watch(listed.revision).await.unwrap();
            match next(&mut watch).await {
                Some(Err(error)) => assert!(error.is_too_old(), "{error}"),
                other => panic!("a compacted revision must be TooOld, got {other:?}"),
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_watch_failures_are_connection_errors() {
    let Fixture {
        server,
        etcd: _etcd,
    } = Fixture::start().await;
    bounded(
        "other_watch_failures_are_connection_errors",
        LIMIT,
        async move {
            let source = KubeSource::new(Api::<Pod>::all(server.client()));
            let listed = source.list().await.unwrap();

            let mut watch = source.watch(listed.revision).await.unwrap();
            server.wait_for_watches(1).await;
            server.fail_watches();
            match next_change(&mut watch).await {
                Some(Err(SourceError::Connection(error))) => {
                    assert!(error.to_string().contains("500"), "{error}");
                }
                other => {
                    panic!("an ERROR event with 500 must be a connection error, got {other:?}")
                }
            }

            // A connection broken mid-response: the stream ends (the reflector
            // reads that as a dropped connection and resumes).
            let mut watch = source.watch(listed.revision).await.unwrap();
            server.wait_for_watches(1).await;
            server.drop_watches();
            match next_change(&mut watch).await {
                None | Some(Err(SourceError::Connection(_))) => {}
                other => panic!("a broken connection must end the watch, got {other:?}"),
            }

            // The server gone: opening a watch is a connection error.
            let port = server.url();
            drop(server);
            match source.watch(listed.revision).await {
                Err(SourceError::Connection(error)) => {
                    assert!(
                        error.source().is_some(),
                        "kube's error is kept as the source"
                    );
                }
                other => panic!("an unreachable {port} must be a connection error, got {other:?}"),
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_objects_are_reported_with_their_keys() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded("malformed_objects_are_reported_with_their_keys", LIMIT, async {
        let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
        pods.create(&PostParams::default(), &pod("ns", "good")).await.unwrap();
        // `containers` must be a list: this pod does not decode.
        let malformed = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad","namespace":"ns"},"spec":{"containers":"not a list"}}"#;
        server.put_raw("pods", Some("ns"), "bad", malformed).await;
        let source = KubeSource::new(Api::<Pod>::all(server.client()));
        let listed = source.list().await.unwrap();
        assert_eq!(keys(&listed.items), ["ns/good"]);
        assert_eq!(listed.invalid.len(), 1, "{:?}", listed.invalid);
        assert_eq!(listed.invalid[0].key, "ns/bad");
        assert!(listed.invalid[0].reason.contains("does not decode"), "{:?}", listed.invalid);

        let mut watch = source.watch(listed.revision).await.unwrap();
        let revision = server.put_raw("pods", Some("ns"), "bad", malformed).await;
        match next_event(&mut watch).await {
            WatchEvent::Invalid(invalid) => {
                assert_eq!((invalid.key.as_str(), invalid.revision), ("ns/bad", revision));
            }
            other => panic!("an undecodable object must be Invalid, got {other:?}"),
        }
        // The stream goes on.
        pods.create(&PostParams::default(), &pod("ns", "after")).await.unwrap();
        assert!(matches!(next_event(&mut watch).await, WatchEvent::Put { key, .. } if key == "ns/after"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_resource_versions_are_clear_errors() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "unparsable_resource_versions_are_clear_errors",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            let source = KubeSource::new(Api::<Pod>::all(server.client()));

            server.faults().opaque_versions_in_lists(true);
            let error = source.list().await.expect_err("an opaque list version");
            let parse = resource_version_error(&error).unwrap_or_else(|| panic!("{error:?}"));
            assert!(parse.value().starts_with("opaque-"), "{parse}");
            assert!(
                error.to_string().contains("unsigned decimal integers"),
                "{error}"
            );
            server.faults().opaque_versions_in_lists(false);

            let listed = source.list().await.unwrap();
            let mut watch = source.watch(listed.revision).await.unwrap();
            server.faults().opaque_versions_in_watches(true);
            pods.create(&PostParams::default(), &pod("ns", "a"))
                .await
                .unwrap();
            match next(&mut watch).await {
                Some(Err(error)) => {
                    let parse =
                        resource_version_error(&error).unwrap_or_else(|| panic!("{error:?}"));
                    assert!(
                        parse.to_string().contains("\"ns/a\""),
                        "names the object: {parse}"
                    );
                }
                other => panic!("an opaque event version must be an error, got {other:?}"),
            }
            assert!(
                next(&mut watch).await.is_none(),
                "the stream ends after its error"
            );

            // A bookmark's version too (a watch from the current revision
            // has nothing else to send).
            let revision = server.revision().await;
            let mut watch = source.watch(revision).await.unwrap();
            match next(&mut watch).await {
                Some(Err(error)) => {
                    let parse =
                        resource_version_error(&error).unwrap_or_else(|| panic!("{error:?}"));
                    assert!(parse.to_string().contains("bookmark"), "{parse}");
                }
                other => panic!("an opaque bookmark version must be an error, got {other:?}"),
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_filter_lists_and_watches() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded("selectors_filter_lists_and_watches", LIMIT, async {
        let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
        let web = pods
            .create(&PostParams::default(), &pod_with("ns", "web", &[("app", "web")], Some("n1")))
            .await
            .unwrap();
        let db = pods
            .create(&PostParams::default(), &pod_with("ns", "db", &[("app", "db")], Some("n2")))
            .await
            .unwrap();
        let by_label = KubeSource::builder(Api::<Pod>::all(server.client()))
            .label_selector("app=web")
            .build()
            .unwrap();
        let by_field = KubeSource::builder(Api::<Pod>::all(server.client()))
            .field_selector("spec.nodeName=n2")
            .build()
            .unwrap();
        let listed = by_label.list().await.unwrap();
        assert_eq!(keys(&listed.items), ["ns/web"]);
        assert_eq!(keys(&by_field.list().await.unwrap().items), ["ns/db"]);

        let mut watch = by_label.watch(listed.revision).await.unwrap();
        // `web` leaves the selection: a delete; `db` enters it: a put.
        let mut moved = web.clone();
        moved.labels_mut().insert("app".into(), "db".into());
        pods.replace("web", &PostParams::default(), &moved).await.unwrap();
        assert!(matches!(
            next_event(&mut watch).await,
            WatchEvent::Delete { key, .. } if key == "ns/web"
        ));
        let mut joined = db.clone();
        joined.labels_mut().insert("app".into(), "web".into());
        pods.replace("db", &PostParams::default(), &joined).await.unwrap();
        assert!(matches!(
            next_event(&mut watch).await,
            WatchEvent::Put { key, .. } if key == "ns/db"
        ));
        let requests = server.requests();
        assert!(
            requests.iter().any(|line| line.contains("watch=true") && line.contains("labelSelector=app%3Dweb")),
            "the watch carries the selector: {requests:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transform_runs_before_storing_and_a_panic_costs_one_object() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "the_transform_runs_before_storing_and_a_panic_costs_one_object",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            for name in ["a", "boom", "c"] {
                let mut pod = pod("ns", name);
                pod.annotations_mut()
                    .insert("big".into(), "x".repeat(1_000));
                pods.create(&PostParams::default(), &pod).await.unwrap();
            }
            let source = KubeSource::builder(Api::<Pod>::all(server.client()))
                .transform(|mut pod: Pod| {
                    assert_ne!(pod.name_any(), "boom", "a transform that panics");
                    pod.annotations_mut().remove("big");
                    pod
                })
                .build()
                .unwrap();
            let listed = source.list().await.unwrap();
            assert_eq!(keys(&listed.items), ["ns/a", "ns/c"]);
            assert!(
                listed
                    .items
                    .iter()
                    .all(|(_, pod, _)| pod.annotations().is_empty())
            );
            assert_eq!(listed.invalid.len(), 1);
            assert_eq!(listed.invalid[0].key, "ns/boom");
            assert!(
                listed.invalid[0].reason.contains("transform panicked"),
                "{:?}",
                listed.invalid
            );

            let mut watch = source.watch(listed.revision).await.unwrap();
            let mut pod = pod("ns", "d");
            pod.annotations_mut()
                .insert("big".into(), "x".repeat(1_000));
            pods.create(&PostParams::default(), &pod).await.unwrap();
            match next_event(&mut watch).await {
                WatchEvent::Put { key, object, .. } => {
                    assert_eq!(key, "ns/d");
                    assert!(
                        object.annotations().is_empty(),
                        "transformed in the watch too"
                    );
                }
                other => panic!("expected a put, got {other:?}"),
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_and_dynamic_objects_are_sources_too() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "metadata_only_and_dynamic_objects_are_sources_too",
        LIMIT,
        async {
            let configs: Api<ConfigMap> = Api::namespaced(server.client(), "ns");
            configs
                .create(&PostParams::default(), &config_map("ns", "a", "1"))
                .await
                .unwrap();

            let metadata =
                KubeSource::new(Api::<PartialObjectMeta<ConfigMap>>::all(server.client()));
            let listed = metadata.list().await.unwrap();
            assert_eq!(keys(&listed.items), ["ns/a"]);
            let kind = listed.items[0]
                .1
                .types
                .as_ref()
                .map(|types| types.kind.clone());
            assert_eq!(
                kind.as_deref(),
                Some("PartialObjectMetadata"),
                "the server sent metadata only"
            );
            let mut watch = metadata.watch(listed.revision).await.unwrap();
            configs
                .create(&PostParams::default(), &config_map("ns", "b", "2"))
                .await
                .unwrap();
            match next_event(&mut watch).await {
                WatchEvent::Put { key, object, .. } => {
                    assert_eq!(key, "ns/b");
                    assert_eq!(
                        object.types.map(|types| types.kind).as_deref(),
                        Some("PartialObjectMetadata")
                    );
                }
                other => panic!("expected a put, got {other:?}"),
            }

            let resource = ApiResource::erase::<ConfigMap>(&());
            let dynamic =
                KubeSource::new(Api::<DynamicObject>::all_with(server.client(), &resource));
            let listed = dynamic.list().await.unwrap();
            assert_eq!(keys(&listed.items), ["ns/a", "ns/b"]);
            assert_eq!(listed.items[1].1.data["data"]["v"], "2");
        },
    )
    .await;
}

#[tokio::test]
async fn builders_refuse_settings_that_cannot_work() {
    // No request is sent: any address will do.
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let builder = || KubeSource::builder(Api::<Pod>::all(client.clone()));
    assert_eq!(
        builder().page_size(0).build().unwrap_err(),
        KubeSourceBuildError::ZeroPageSize
    );
    assert_eq!(
        builder()
            .watch_timeout(Duration::from_millis(500))
            .build()
            .unwrap_err(),
        KubeSourceBuildError::WatchTimeoutUnderASecond
    );
    assert_eq!(
        builder()
            .watch_deadline(Duration::ZERO)
            .build()
            .unwrap_err(),
        KubeSourceBuildError::ZeroWatchDeadline
    );
    let source = builder()
        .watch_timeout(Duration::from_millis(1_500))
        .build()
        .unwrap();
    let debug = format!("{source:?}");
    assert!(debug.contains("timeout_seconds: 2"), "rounded up: {debug}");
    assert!(
        debug.contains("watch_deadline: 11.5s"),
        "timeout plus the grace: {debug}"
    );
    assert_eq!(source.url(), "/api/v1/pods");
}
