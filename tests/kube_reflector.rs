//! A reflector over `KubeSource`, through kube's real client against the
//! Kubernetes list/watch test server (tests/common/kube_server/, objects in
//! a real etcd): what each fault makes the reflector do, the watch
//! deadline's bound, and the keys and index functions a Kubernetes user
//! expects.
//!
//! Needs the `kube` and `etcd` features and an `etcd` binary.

#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/kube_objects.rs"]
mod kube_objects;
#[path = "common/kube_server/mod.rs"]
mod kube_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_server::bounded;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};
use kube_objects::{Fixture, config_map, pod, pod_with, revision_of};
use larder::IndexedStore;
use larder::reflector::{
    Backoff, KubeSource, MemorySource, Reflector, ReflectorHandle, StoreReader, index_by_label,
    index_by_namespace, index_by_owner_uid, index_by_pod_node, meta_namespace_key,
    split_meta_namespace_key,
};

/// Far above a test's usual running time (seconds), far below a stalled run.
const LIMIT: Duration = Duration::from_secs(90);

/// A bound on a wait that should end in well under a second.
const WAIT: Duration = Duration::from_secs(10);

/// A running reflector over pods, with the four ready indexes.
struct Running {
    pods: StoreReader<String, Pod>,
    handle: ReflectorHandle,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Running {
    fn errors(&self) -> Vec<String> {
        self.errors.lock().unwrap().clone()
    }

    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.pods.to_vec().into_iter().map(|(key, _)| key).collect();
        keys.sort();
        keys
    }

    /// Waits until some reported error contains `text`.
    async fn wait_for_error(&self, text: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.errors().iter().any(|error| error.contains(text)) {
            assert!(
                Instant::now() < deadline,
                "no error saying {text:?} within {WAIT:?}: {:?}",
                self.errors()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn pod_store() -> IndexedStore<String, Arc<Pod>> {
    IndexedStore::builder()
        .index("namespace", index_by_namespace)
        .index("app", index_by_label("app"))
        .index("owner", index_by_owner_uid)
        .index("node", index_by_pod_node)
        .build()
        .unwrap()
}

fn run(source: KubeSource<Pod>, backoff: Backoff) -> Running {
    let pods = pod_store();
    let errors = Arc::new(Mutex::new(Vec::new()));
    let reported = Arc::clone(&errors);
    let reflector = Reflector::builder(source, pods)
        .parse_invalid_key(|key| (!key.is_empty()).then(|| key.to_owned()))
        .on_error(move |error| reported.lock().unwrap().push(error.to_string()))
        .backoff(backoff)
        .build()
        .unwrap();
    let pods = reflector.reader();
    let handle = reflector.handle();
    tokio::spawn(reflector.run());
    Running {
        pods,
        handle,
        errors,
    }
}

fn fast_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(20), Duration::from_millis(200))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reflector_mirrors_pods_into_the_ready_indexes() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "the_reflector_mirrors_pods_into_the_ready_indexes",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "shop");
            let owner_uid = "6f1c0a52-9d7e-4b4e-a0d2-0c8f3e4b5a61";
            let mut owned = pod_with("shop", "web-1", &[("app", "web")], Some("node-7"));
            owned.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "web".into(),
                uid: owner_uid.into(),
                ..OwnerReference::default()
            }]);
            pods.create(&PostParams::default(), &owned).await.unwrap();
            let running = run(
                KubeSource::new(Api::<Pod>::all(server.client())),
                fast_backoff(),
            );
            running
                .handle
                .wait_until_synced_timeout(WAIT)
                .await
                .unwrap();
            // Changes after the list arrive through the watch.
            let other = Api::<Pod>::namespaced(server.client(), "ops");
            let db = other
                .create(
                    &PostParams::default(),
                    &pod_with("ops", "db", &[("app", "db")], None),
                )
                .await
                .unwrap();
            running
                .handle
                .wait_for_revision_timeout(revision_of(&db), WAIT)
                .await
                .unwrap();

            let index = |name: &str, value: &str| running.pods.index_keys(name, value).unwrap();
            assert_eq!(index("namespace", "shop"), ["shop/web-1"]);
            assert_eq!(index("namespace", "ops"), ["ops/db"]);
            assert_eq!(index("app", "web"), ["shop/web-1"]);
            assert_eq!(index("owner", owner_uid), ["shop/web-1"]);
            assert_eq!(index("node", "node-7"), ["shop/web-1"]);
            assert!(
                index("node", "").is_empty(),
                "an unscheduled pod is not indexed by node"
            );
            let stored = running.pods.get("ops/db").unwrap();
            assert_eq!(meta_namespace_key(&*stored), "ops/db");
            assert_eq!(
                split_meta_namespace_key("ops/db"),
                Some((Some("ops"), "db"))
            );

            other.delete("db", &DeleteParams::default()).await.unwrap();
            let revision = server.revision().await;
            running
                .handle
                .wait_for_revision_timeout(revision, WAIT)
                .await
                .unwrap();
            assert!(index("namespace", "ops").is_empty());
            assert_eq!(running.keys(), ["shop/web-1"]);
            running.handle.stop();
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_functions_serve_any_source() {
    let source = MemorySource::<String, Pod>::new();
    let pod = pod_with("shop", "web-1", &[("app", "web")], Some("node-7"));
    source.put(meta_namespace_key(&pod), pod);
    let pods = pod_store();
    let reflector = Reflector::builder(source, pods).build().unwrap();
    let pods = reflector.reader();
    let handle = reflector.handle();
    tokio::spawn(reflector.run());
    handle.wait_until_synced_timeout(WAIT).await.unwrap();
    assert_eq!(pods.index_keys("node", "node-7").unwrap(), ["shop/web-1"]);
    assert_eq!(pods.index_keys("app", "web").unwrap(), ["shop/web-1"]);
    handle.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_move_the_revision_and_change_nothing_else() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "bookmarks_move_the_revision_and_change_nothing_else",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            for name in ["a", "b"] {
                pods.create(&PostParams::default(), &pod("ns", name))
                    .await
                    .unwrap();
            }
            let running = run(
                KubeSource::new(Api::<Pod>::all(server.client())),
                fast_backoff(),
            );
            running
                .handle
                .wait_until_synced_timeout(WAIT)
                .await
                .unwrap();
            let applied = running.handle.stats().events_applied;
            // Writes to config maps only: the pod watch is quiet, and learns
            // the new revision from bookmarks alone.
            let configs: Api<ConfigMap> = Api::namespaced(server.client(), "ns");
            let mut last = 0;
            for i in 0..3 {
                let config = configs
                    .create(
                        &PostParams::default(),
                        &config_map("ns", &format!("c{i}"), "x"),
                    )
                    .await
                    .unwrap();
                last = revision_of(&config);
            }
            running
                .handle
                .wait_for_revision_timeout(last, WAIT)
                .await
                .unwrap();
            let stats = running.handle.stats();
            assert!(stats.last_revision >= last);
            assert_eq!(stats.events_applied, applied, "a bookmark is not a change");
            assert_eq!(
                running.keys(),
                ["ns/a", "ns/b"],
                "a bookmark stores nothing"
            );
            assert_eq!(stats.relists, 0);
            assert!(running.errors().is_empty(), "{:?}", running.errors());
            running.handle.stop();
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_410_mid_watch_makes_the_reflector_relist() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded("a_410_mid_watch_makes_the_reflector_relist", LIMIT, async {
        let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
        pods.create(&PostParams::default(), &pod("ns", "a"))
            .await
            .unwrap();
        let running = run(
            KubeSource::new(Api::<Pod>::all(server.client())),
            fast_backoff(),
        );
        running
            .handle
            .wait_until_synced_timeout(WAIT)
            .await
            .unwrap();
        server.wait_for_watches(1).await;
        server.expire_watches();
        let b = pods
            .create(&PostParams::default(), &pod("ns", "b"))
            .await
            .unwrap();
        running
            .handle
            .wait_for_revision_timeout(revision_of(&b), WAIT)
            .await
            .unwrap();
        // The relist may still be on its way when the watch delivered `b`.
        let deadline = Instant::now() + WAIT;
        while running.handle.stats().relists == 0 {
            assert!(
                Instant::now() < deadline,
                "a 410 ERROR event must make the reflector relist: {:?}",
                running.handle.stats()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        running
            .handle
            .wait_for_revision_timeout(revision_of(&b), WAIT)
            .await
            .unwrap();
        assert_eq!(running.keys(), ["ns/a", "ns/b"]);
        running.handle.stop();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_revision_makes_the_reflector_relist() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "a_compacted_revision_makes_the_reflector_relist",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            pods.create(&PostParams::default(), &pod("ns", "a"))
                .await
                .unwrap();
            // One second between a broken watch and its resumption: time for
            // the writes and the compaction below.
            let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(1)).jitter(0.0);
            let running = run(KubeSource::new(Api::<Pod>::all(server.client())), backoff);
            running
                .handle
                .wait_until_synced_timeout(WAIT)
                .await
                .unwrap();
            server.wait_for_watches(1).await;
            server.drop_watches();
            pods.create(&PostParams::default(), &pod("ns", "b"))
                .await
                .unwrap();
            pods.delete("a", &DeleteParams::default()).await.unwrap();
            let compacted = server.compact().await;
            // The resumed watch starts at a compacted revision: 410, relist.
            running
                .handle
                .wait_for_revision_timeout(compacted, WAIT)
                .await
                .unwrap();
            assert_eq!(running.keys(), ["ns/b"], "the relist dropped `a`");
            let stats = running.handle.stats();
            assert!(stats.relists >= 1, "{stats:?}");
            assert!(
                running
                    .errors()
                    .iter()
                    .any(|error| error.contains("too old")),
                "{:?}",
                running.errors()
            );
            running.handle.stop();
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_resumes_without_relisting() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "a_dropped_connection_resumes_without_relisting",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            let running = run(
                KubeSource::new(Api::<Pod>::all(server.client())),
                fast_backoff(),
            );
            running
                .handle
                .wait_until_synced_timeout(WAIT)
                .await
                .unwrap();
            for round in 0..3 {
                server.wait_for_watches(1).await;
                server.drop_watches();
                let created = pods
                    .create(&PostParams::default(), &pod("ns", &format!("p{round}")))
                    .await
                    .unwrap();
                running
                    .handle
                    .wait_for_revision_timeout(revision_of(&created), WAIT)
                    .await
                    .unwrap();
            }
            assert_eq!(running.keys(), ["ns/p0", "ns/p1", "ns/p2"]);
            let stats = running.handle.stats();
            assert!(stats.watch_restarts >= 3, "{stats:?}");
            assert_eq!(
                stats.relists, 0,
                "a broken connection resumes the watch: {stats:?}"
            );
            running.handle.stop();
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_watch_is_given_up_within_its_deadline() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "a_silent_watch_is_given_up_within_its_deadline",
        LIMIT,
        async {
            let deadline = Duration::from_secs(2);
            let source = KubeSource::builder(Api::<Pod>::all(server.client()))
                .watch_deadline(deadline)
                .build()
                .unwrap();
            let running = run(source, fast_backoff());
            running
                .handle
                .wait_until_synced_timeout(WAIT)
                .await
                .unwrap();
            // A quiet watch that still gets bookmarks is alive: it outlives
            // its deadline.
            tokio::time::sleep(deadline + deadline / 2).await;
            assert_eq!(
                running.handle.stats().watch_restarts,
                0,
                "{:?}",
                running.errors()
            );

            server.wait_for_watches(1).await;
            assert_eq!(server.silence_watches(), 1);
            let silenced = Instant::now();
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            let created = pods
                .create(&PostParams::default(), &pod("ns", "a"))
                .await
                .unwrap();
            // The bound: the deadline (counted from the last bookmark, at most
            // one bookmark interval before the silence), the backoff (at most
            // 200 ms here), a new watch request; 3 s of slack on a loaded
            // machine.
            let bound = deadline + Duration::from_secs(3);
            running
                .handle
                .wait_for_revision_timeout(revision_of(&created), bound)
                .await
                .unwrap_or_else(|error| panic!("not resumed within {bound:?}: {error}"));
            let waited = silenced.elapsed();
            assert!(
                waited >= deadline - Duration::from_millis(300),
                "given up early: {waited:?}"
            );
            running.wait_for_error("heard nothing").await;
            let stats = running.handle.stats();
            assert!(stats.watch_restarts >= 1, "{stats:?}");
            assert_eq!(stats.relists, 0, "resumed, not relisted: {stats:?}");
            running.handle.stop();
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unparsable_resource_version_is_reported_until_the_server_is_fixed() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded(
        "an_unparsable_resource_version_is_reported_until_the_server_is_fixed",
        LIMIT,
        async {
            let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
            pods.create(&PostParams::default(), &pod("ns", "a"))
                .await
                .unwrap();
            server.faults().opaque_versions_in_lists(true);
            let running = run(
                KubeSource::new(Api::<Pod>::all(server.client())),
                fast_backoff(),
            );
            running.wait_for_error("unsigned decimal integers").await;
            assert!(!running.handle.has_synced(), "no list is applied");
            server.faults().opaque_versions_in_lists(false);
            running
                .handle
                .wait_until_synced_timeout(WAIT)
                .await
                .unwrap();

            // In the watch: the event is reported, never applied, until the
            // server sends integers again.
            server.faults().opaque_versions_in_watches(true);
            let b = pods
                .create(&PostParams::default(), &pod("ns", "b"))
                .await
                .unwrap();
            running.wait_for_error("\"ns/b\"").await;
            assert_eq!(running.keys(), ["ns/a"]);
            server.faults().opaque_versions_in_watches(false);
            running
                .handle
                .wait_for_revision_timeout(revision_of(&b), WAIT)
                .await
                .unwrap();
            assert_eq!(running.keys(), ["ns/a", "ns/b"]);
            running.handle.stop();
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_object_drops_its_old_copy() {
    let fixture = Fixture::start().await;
    let server = &fixture.server;
    bounded("a_malformed_object_drops_its_old_copy", LIMIT, async {
        let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
        for name in ["a", "b"] {
            pods.create(&PostParams::default(), &pod("ns", name)).await.unwrap();
        }
        let running = run(KubeSource::new(Api::<Pod>::all(server.client())), fast_backoff());
        running.handle.wait_until_synced_timeout(WAIT).await.unwrap();
        let malformed = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns"},"spec":{"containers":7}}"#;
        let revision = server.put_raw("pods", Some("ns"), "a", malformed).await;
        running.handle.wait_for_revision_timeout(revision, WAIT).await.unwrap();
        assert_eq!(running.keys(), ["ns/b"], "the store never serves what the server no longer holds");
        let stats = running.handle.stats();
        assert_eq!(stats.invalid_objects, 1, "{stats:?}");
        assert_eq!(stats.relists, 0, "the key was named: no relist");
        running.wait_for_error("\"ns/a\"").await;
        // Fixed by its writer, it comes back.
        let fixed = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns","labels":{"fixed":"yes"}}}"#;
        let revision = server.put_raw("pods", Some("ns"), "a", fixed).await;
        running.handle.wait_for_revision_timeout(revision, WAIT).await.unwrap();
        assert_eq!(running.keys(), ["ns/a", "ns/b"]);
        assert_eq!(running.pods.get("ns/a").unwrap().labels()["fixed"], "yes");
        running.handle.stop();
    })
    .await;
}
