//! A property test of `KubeSource` against `MemorySource`: one random
//! sequence of changes (creates, updates, deletes, malformed objects) and
//! faults (broken and expired watches, compactions) is applied to the
//! Kubernetes test server (through kube's client, objects in a real etcd)
//! and to an in-memory source, each mirrored by a reflector. Whenever both
//! have caught up, their stores must be equal, and equal to a plain map
//! of what was written.
//!
//! Needs the `kube` and `etcd` features and an `etcd` binary. Each case
//! runs over real HTTP and etcd (about a second): 16 cases, so that CI
//! stays within its budget; `PROPTEST_CASES` raises it.

#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/kube_objects.rs"]
mod kube_objects;
#[path = "common/kube_server/mod.rs"]
mod kube_server;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use etcd_server::{EtcdOptions, EtcdServer, connect};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kube_objects::{BOOKMARK_INTERVAL, config_map};
use kube_server::KubeServer;
use larder::IndexedStore;
use larder::reflector::{
    Backoff, KubeSource, MemorySource, Reflector, ReflectorHandle, Source, StoreReader,
    meta_namespace_key,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// A bound on one catch-up: bookmarks come every 250 ms.
const CATCH_UP: Duration = Duration::from_secs(15);

#[derive(Debug, Clone)]
enum Op {
    /// Create or replace `ns{0}/c{1}` with data `v: {2}`.
    Put(u8, u8, u8),
    Delete(u8, u8),
    /// Store an object that does not decode under `ns{0}/c{1}`.
    Malformed(u8, u8),
    DropWatches,
    ExpireWatches,
    Compact,
    /// Wait until both reflectors have caught up, then compare.
    CatchUp,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..2, 0u8..4, any::<u8>()).prop_map(|(n, c, v)| Op::Put(n, c, v)),
        3 => (0u8..2, 0u8..4).prop_map(|(n, c)| Op::Delete(n, c)),
        1 => (0u8..2, 0u8..4).prop_map(|(n, c)| Op::Malformed(n, c)),
        1 => Just(Op::DropWatches),
        1 => Just(Op::ExpireWatches),
        1 => Just(Op::Compact),
        2 => Just(Op::CatchUp),
    ]
}

type Configs = StoreReader<String, ConfigMap>;

fn mirror<S>(source: S) -> (Configs, ReflectorHandle)
where
    S: Source<Key = String, Object = ConfigMap>,
{
    let store = IndexedStore::new();
    let reflector = Reflector::builder(source, store)
        .parse_invalid_key(|key| (!key.is_empty()).then(|| key.to_owned()))
        .backoff(Backoff::new(
            Duration::from_millis(5),
            Duration::from_millis(100),
        ))
        .build()
        .unwrap();
    let store = reflector.reader();
    let handle = reflector.handle();
    tokio::spawn(reflector.run());
    (store, handle)
}

/// A store as `key -> data.v`.
fn contents(store: &Configs) -> BTreeMap<String, String> {
    store
        .to_vec()
        .into_iter()
        .map(|(key, config)| {
            let value = config
                .data
                .as_ref()
                .and_then(|data| data.get("v"))
                .cloned()
                .unwrap_or_default();
            (key, value)
        })
        .collect()
}

/// Both sources and what was written to them.
struct Case {
    server: KubeServer,
    memory: MemorySource<String, ConfigMap>,
    kube_store: Configs,
    kube_handle: ReflectorHandle,
    memory_store: Configs,
    memory_handle: ReflectorHandle,
    /// Keys the server holds (valid or malformed).
    present: BTreeSet<(String, String)>,
    /// What a mirror must hold: the valid objects.
    model: BTreeMap<String, String>,
}

impl Case {
    async fn start(etcd: etcd_client::Client, prefix: &str) -> Self {
        let server = KubeServer::start(etcd, prefix).await;
        let memory = MemorySource::new();
        let (kube_store, kube_handle) =
            mirror(KubeSource::new(Api::<ConfigMap>::all(server.client())));
        let (memory_store, memory_handle) = mirror(memory.clone());
        Case {
            server,
            memory,
            kube_store,
            kube_handle,
            memory_store,
            memory_handle,
            present: BTreeSet::new(),
            model: BTreeMap::new(),
        }
    }

    async fn apply(&mut self, op: &Op) {
        match *op {
            Op::Put(n, c, v) => {
                let (namespace, name) = (format!("ns{n}"), format!("c{c}"));
                let config = config_map(&namespace, &name, &v.to_string());
                let api: Api<ConfigMap> = Api::namespaced(self.server.client(), &namespace);
                if self.present.contains(&(namespace.clone(), name.clone())) {
                    api.replace(&name, &PostParams::default(), &config)
                        .await
                        .unwrap();
                } else {
                    api.create(&PostParams::default(), &config).await.unwrap();
                }
                self.present.insert((namespace, name));
                self.model
                    .insert(meta_namespace_key(&config), v.to_string());
                self.memory.put(meta_namespace_key(&config), config);
            }
            Op::Delete(n, c) => {
                let (namespace, name) = (format!("ns{n}"), format!("c{c}"));
                let key = format!("{namespace}/{name}");
                if !self.present.remove(&(namespace.clone(), name.clone())) {
                    return;
                }
                if self.model.remove(&key).is_some() {
                    let api: Api<ConfigMap> = Api::namespaced(self.server.client(), &namespace);
                    api.delete(&name, &DeleteParams::default()).await.unwrap();
                } else {
                    self.server
                        .delete_raw("configmaps", Some(&namespace), &name)
                        .await;
                }
                self.memory.delete(&key);
            }
            Op::Malformed(n, c) => {
                let (namespace, name) = (format!("ns{n}"), format!("c{c}"));
                let text = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{namespace}"}},"data":"not a map"}}"#
                );
                self.server
                    .put_raw("configmaps", Some(&namespace), &name, &text)
                    .await;
                let key = format!("{namespace}/{name}");
                self.present.insert((namespace, name));
                self.model.remove(&key);
                self.memory.put_invalid(key, "data is not a map");
            }
            Op::DropWatches => {
                self.server.drop_watches();
                self.memory.drop_watches();
            }
            Op::ExpireWatches => {
                self.server.expire_watches();
                self.memory.expire_watches();
            }
            Op::Compact => {
                self.server.compact().await;
                self.memory.compact(self.memory.revision());
            }
            Op::CatchUp => self.catch_up_and_compare().await,
        }
    }

    async fn catch_up_and_compare(&self) {
        let (kube, memory) = (self.server.revision().await, self.memory.revision());
        self.kube_handle
            .wait_for_revision_timeout(kube, CATCH_UP)
            .await
            .unwrap_or_else(|error| panic!("the kube reflector at {kube}: {error}"));
        self.memory_handle
            .wait_for_revision_timeout(memory, CATCH_UP)
            .await
            .unwrap_or_else(|error| panic!("the memory reflector at {memory}: {error}"));
        let from_kube = contents(&self.kube_store);
        assert_eq!(
            from_kube,
            contents(&self.memory_store),
            "the two mirrors differ"
        );
        assert_eq!(
            from_kube, self.model,
            "the mirrors differ from what was written"
        );
    }

    fn stop(&self) {
        self.kube_handle.stop();
        self.memory_handle.stop();
    }
}

#[test]
fn kube_source_and_memory_source_give_the_same_store() {
    let _watchdog = watchdog::arm(Duration::from_secs(600));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let etcd = EtcdServer::start_with(EtcdOptions {
        progress_interval: BOOKMARK_INTERVAL,
    });
    let client = runtime.block_on(connect(&etcd));
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(16);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let next_case = std::sync::atomic::AtomicU32::new(0);
    let result = runner.run(&prop::collection::vec(op(), 1..30), |ops| {
        let case = next_case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prefix = format!("/case{case}");
        runtime.block_on(async {
            let mut case = Case::start(client.clone(), &prefix).await;
            for op in &ops {
                case.apply(op).await;
            }
            case.catch_up_and_compare().await;
            case.stop();
        });
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}
