//! An informer-style pod cache on an [`IndexedStore`], indexed by namespace
//! and by label.
//!
//! A reflector lists every pod and `replace`s the cache with the list, then
//! applies a stream of watch events (Added, Modified, Deleted) one at a time;
//! halfway through, the watch fails with "410 Gone" and the reflector
//! re-lists, replacing the whole content atomically. Meanwhile readers
//! answer "all pods of namespace X" and "all pods with app=web" from the
//! indexes, and check on every answer that it agrees with the objects: each
//! pod returned has the namespace or label asked for, and the count matches
//! the index's own count taken in the same cut.
//!
//! `cargo run --example pod_cache`

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use larder::{IndexError, IndexedStore};

/// A pod, as much of it as the cache needs.
#[derive(Debug, Clone, PartialEq)]
struct Pod {
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    resource_version: u64,
}

impl Pod {
    fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// A watch event, as a reflector delivers them.
enum Event {
    Added(Pod),
    Modified(Pod),
    Deleted(String),
}

fn pod(i: u64, version: u64) -> Pod {
    let app = ["web", "api", "db"][(i % 3) as usize];
    let mut labels = BTreeMap::new();
    labels.insert("app".to_string(), app.to_string());
    labels.insert(
        "tier".to_string(),
        if app == "db" { "data" } else { "front" }.to_string(),
    );
    // A rollout flips the track label on every other version.
    let track = if version % 2 == 0 { "stable" } else { "canary" };
    labels.insert("track".to_string(), track.to_string());
    Pod {
        namespace: format!("team-{}", i % 5),
        name: format!("{app}-{i}"),
        labels,
        resource_version: version,
    }
}

fn new_cache() -> IndexedStore<String, Pod> {
    IndexedStore::builder()
        .index("namespace", |pod: &Pod| [pod.namespace.clone()])
        .index("label", |pod: &Pod| {
            pod.labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        })
        .build()
        .expect("index names are distinct")
}

/// The watch stream: modifications, deletions and additions.
fn events(from: u64, count: u64) -> Vec<Event> {
    (0..count)
        .map(|n| {
            let round = n / 5;
            match n % 5 {
                0 => Event::Deleted(pod((round * 7) % 60, 0).key()),
                1 => Event::Added(pod(60 + from + round, 1)),
                _ => Event::Modified(pod((n * 7) % 60, from + n)),
            }
        })
        .collect()
}

fn apply(cache: &IndexedStore<String, Pod>, event: Event) -> Result<(), IndexError> {
    match event {
        Event::Added(pod) | Event::Modified(pod) => {
            cache.insert(pod.key(), pod)?;
        }
        Event::Deleted(key) => {
            cache.remove(&key);
        }
    }
    Ok(())
}

fn main() -> Result<(), IndexError> {
    let cache = Arc::new(new_cache());
    // Initial LIST: 60 pods in 5 namespaces.
    cache.replace((0..60).map(|i| {
        let pod = pod(i, 0);
        (pod.key(), pod)
    }))?;
    println!(
        "listed {} pods; namespaces {:?}",
        cache.len(),
        cache.index_values("namespace")?
    );

    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (cache, stop, answers) =
                (Arc::clone(&cache), Arc::clone(&stop), Arc::clone(&answers));
            thread::spawn(move || {
                let namespace = format!("team-{r}");
                while !stop.load(Ordering::Relaxed) {
                    // "All pods of namespace X": every pod returned is in X.
                    for pod in cache.by_index("namespace", &namespace).unwrap() {
                        assert_eq!(pod.namespace, namespace, "index disagrees with object");
                    }
                    // "All pods with app=web": every pod returned has it.
                    for pod in cache.by_index("label", "app=web").unwrap() {
                        assert_eq!(pod.labels["app"], "web", "index disagrees with object");
                    }
                    // Relaxed: a statistic printed after the join.
                    answers.fetch_add(2, Ordering::Relaxed);
                }
            })
        })
        .collect();

    // WATCH, then "410 Gone" and a re-LIST that replaces everything at once.
    for event in events(0, 500) {
        apply(&cache, event)?;
    }
    println!(
        "after watch: {} pods, {} with app=web, {} canaries",
        cache.len(),
        cache.index_len("label", "app=web")?,
        cache.index_len("label", "track=canary")?
    );
    cache.replace((0..40).map(|i| {
        let pod = pod(i, 1000);
        (pod.key(), pod)
    }))?;
    for event in events(1000, 200) {
        apply(&cache, event)?;
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader
            .join()
            .expect("a reader saw an index disagree with an object");
    }
    // Quiet now: every pod is found under its own namespace, and the
    // namespaces' pods add up to the store.
    let mut indexed = 0;
    for namespace in cache.index_values("namespace")? {
        let pods = cache.by_index("namespace", &namespace)?;
        assert!(pods.iter().all(|pod| pod.namespace == namespace));
        indexed += pods.len();
    }
    assert_eq!(indexed, cache.len());

    let team0 = cache.by_index("namespace", "team-0")?;
    let web = cache.index_keys("label", "app=web")?;
    println!(
        "after re-list and watch: {} pods; team-0 has {}; app=web: {} pods, first {:?}",
        cache.len(),
        team0.len(),
        web.len(),
        web.first()
    );
    // client-go's `Index`: pods sharing any label value with a probe pod.
    let probe = pod(3, 0);
    println!(
        "pods sharing a label with {}: {}",
        probe.key(),
        cache.matching("label", &probe)?.len()
    );
    println!(
        "readers answered {} queries, every one consistent",
        answers.load(Ordering::Relaxed)
    );
    Ok(())
}
