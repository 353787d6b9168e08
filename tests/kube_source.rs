//! `KubeSource` through kube's client against the Kubernetes list/watch
//! test server (tests/common/kube_server/), which keeps its objects in a
//! real etcd (tests/common/etcd.rs).

#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/kube_server/mod.rs"]
mod kube_server;

use std::time::Duration;

use etcd_server::{EtcdOptions, EtcdServer, bounded, connect};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube_server::KubeServer;
use larder::reflector::{KubeSource, Source};

const LIMIT: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke() {
    let etcd = EtcdServer::start_with(EtcdOptions {
        progress_interval: Duration::from_millis(250),
    });
    bounded("smoke", LIMIT, async {
        let server = KubeServer::start(connect(&etcd).await, "/k").await;
        let pods: Api<Pod> = Api::namespaced(server.client(), "ns");
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("a".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        pods.create(&PostParams::default(), &pod).await.unwrap();
        let source = KubeSource::new(Api::<Pod>::all(server.client()));
        let listed = source.list().await.unwrap();
        println!(
            "{:?}",
            listed.items.iter().map(|(k, _)| k).collect::<Vec<_>>()
        );
        assert_eq!(listed.items.len(), 1);
    })
    .await;
}
