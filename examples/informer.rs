//! An informer: a pod cache kept in step with its source of truth by a
//! [`Reflector`], indexed by namespace and by label, with handlers printing
//! every change, surviving injected faults and a forced relist.
//!
//! The source is the crate's in-memory [`MemorySource`]; a real program
//! would implement [`Source`](larder::reflector::Source) over etcd or a
//! Kubernetes API server. The reflector runs as a task on tokio here, but
//! it names no runtime: any executor can run it.
//!
//! `cargo run --example informer --features reflector`

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use larder::IndexedStore;
use larder::reflector::{Backoff, MemorySource, Reflector};

/// A pod, as much of it as the cache needs.
#[derive(Debug, Clone, PartialEq)]
struct Pod {
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    phase: &'static str,
}

fn pod(namespace: &str, name: &str, app: &str, phase: &'static str) -> (String, Pod) {
    let labels = BTreeMap::from([("app".to_string(), app.to_string())]);
    let pod = Pod {
        namespace: namespace.into(),
        name: name.into(),
        labels,
        phase,
    };
    (format!("{namespace}/{name}"), pod)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let source = MemorySource::new();
    for (key, pod) in [
        pod("default", "web-1", "web", "Running"),
        pod("default", "web-2", "web", "Running"),
        pod("default", "db-1", "db", "Running"),
        pod("prod", "web-1", "web", "Pending"),
    ] {
        source.put(key, pod);
    }

    let pods: IndexedStore<String, Arc<Pod>> = IndexedStore::builder()
        .index("namespace", |pod: &Arc<Pod>| [pod.namespace.clone()])
        .index("label", |pod: &Arc<Pod>| {
            pod.labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        })
        .build()
        .expect("valid indexes");

    let reflector = Reflector::builder(source.clone(), pods)
        .on_add(|key, pod| println!("  + {key} ({})", pod.phase))
        .on_update(|key, old, new| {
            if old.phase != new.phase {
                println!("  ~ {key}: {} -> {}", old.phase, new.phase);
            } else {
                println!("  ~ {key}");
            }
        })
        .on_delete(|key, _| println!("  - {key}"))
        .on_error(|error| println!("  ! {error}"))
        .backoff(Backoff::new(
            Duration::from_millis(5),
            Duration::from_millis(100),
        ))
        .build()
        .expect("valid settings");
    let pods = reflector.reader();
    let handle = reflector.handle();
    let task = tokio::spawn(reflector.run());

    println!("initial list:");
    handle.wait_until_synced().await.expect("synced");
    println!(
        "namespace default: {:?}",
        pods.index_keys("namespace", "default").unwrap()
    );

    println!("watch, with the stream dropped mid-way:");
    let (key, mut web) = pod("prod", "web-1", "web", "Running");
    source.put(key.clone(), web.clone());
    source.break_watches_after(1); // the next event is the stream's last
    let (db_key, _) = pod("default", "db-1", "db", "Running");
    source.delete(&db_key);
    let (key2, web3) = pod("prod", "web-3", "web", "Pending");
    let revision = source.put(key2, web3);
    handle
        .wait_for_revision_timeout(revision, Duration::from_secs(10))
        .await
        .expect("caught up after the reconnect");

    println!("forced relist: watches fail while the source changes, then history is compacted:");
    source.fail_watches(usize::MAX);
    source.drop_watches();
    web.phase = "Succeeded";
    source.put(key, web);
    let (gone, _) = pod("default", "web-2", "web", "Running");
    source.delete(&gone);
    let (new_key, new_pod) = pod("staging", "api-1", "api", "Running");
    source.put(new_key, new_pod);
    source.compact(source.revision());
    source.fail_watches(0);
    handle
        .wait_for_revision_timeout(source.revision(), Duration::from_secs(10))
        .await
        .expect("caught up after the relist");

    println!("after the relist:");
    for value in pods.index_values("label").unwrap() {
        println!(
            "  label {value}: {:?}",
            pods.index_keys("label", &value).unwrap()
        );
    }
    let mut cached: Vec<(String, Pod)> = pods
        .to_vec()
        .into_iter()
        .map(|(k, v)| (k, (*v).clone()))
        .collect();
    cached.sort_by(|a, b| a.0.cmp(&b.0));
    let mut truth = source.to_vec();
    truth.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(cached, truth, "the cache equals the source");
    let stats = handle.stats();
    println!(
        "stats: {} lists ({} relists), {} watch restarts, {} events, revision {}",
        stats.lists, stats.relists, stats.watch_restarts, stats.events_applied, stats.last_revision
    );
    assert_eq!(stats.relists, 1);

    handle.stop();
    task.await.expect("the reflector stopped cleanly");
}
