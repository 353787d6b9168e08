//! Misuse 03: a synchronized map mixed with another map for related data,
//! or values mutated behind the index's back.
//!
//! Go original: a `sync.Map` of objects next to a plain (or second
//! `sync.Map`) index of the same objects. Each write updates the two maps
//! one after the other, so a reader in between sees a torn view: an object
//! listed under a namespace it has left, or stored but missing from its
//! index. The Rust form is two `DashMap`s. The second form: the store hands
//! out shared mutable objects (`Arc<Mutex<Pod>>`) and a caller mutates one;
//! the index, computed at insert time, now lies.
//!
//! `IndexedStore` keeps objects and indexes in one state updated in one
//! critical section, and hands out clones of what it holds: a plain `Pod`
//! handed out is the caller's own copy, and a stored `Arc<Pod>` derefs to
//! `&Pod` only, so changing a pod means inserting a new one, which
//! re-indexes it. The one way left to break the index is to store a shared
//! handle with interior mutability (`Arc<Mutex<Pod>>`) that the index
//! function reads: the example shows that too.
//!
//! Run with `cargo run --example misuse_03_torn_views`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex, mpsc};
use std::thread;

use dashmap::{DashMap, DashSet};
use larder::IndexedStore;

/// A pod: the object of an informer cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// The pod's namespace, the indexed field.
    pub namespace: String,
    /// Anything else.
    pub image: String,
}

fn pod(namespace: &str) -> Pod {
    Pod {
        namespace: namespace.to_owned(),
        image: "web:1.0".to_owned(),
    }
}

/// What each variant showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Two DashMaps, reader forced between the two steps of a move: pods
    /// listed under a namespace they are not in.
    pub broken_listed_wrongly: usize,
    /// ... and pods stored in a namespace whose index does not list them.
    pub broken_missing_from_index: usize,
    /// IndexedStore: `by_index` results checked while a writer moved the
    /// pod back and forth.
    pub fixed_reads: usize,
    /// IndexedStore: of those, results holding a pod of another namespace.
    pub fixed_torn_reads: usize,
    /// Interior mutability (`IndexedStore<_, Arc<Mutex<Pod>>>`, mutated
    /// through the handle): pods the index lists under a namespace they left.
    pub broken_mutated_stale: usize,
    /// `Arc<Pod>` replaced with `insert`: stale index entries.
    pub fixed_replaced_stale: usize,
}

/// BROKEN: objects and index in two maps; the reader runs between the
/// writer's two steps (forced with channels).
fn broken_two_maps() -> (usize, usize) {
    let objects: DashMap<String, Pod> = DashMap::new();
    let by_namespace: DashMap<String, DashSet<String>> = DashMap::new();
    objects.insert("web-1".into(), pod("staging"));
    by_namespace
        .entry("staging".into())
        .or_default()
        .insert("web-1".into());

    let (paused_tx, paused_rx) = mpsc::channel();
    let (resume_tx, resume_rx) = mpsc::channel::<()>();
    let (objects, by_namespace) = (&objects, &by_namespace);
    thread::scope(|s| {
        s.spawn(move || {
            // Move web-1 to prod: step 1, the object.
            objects.insert("web-1".into(), pod("prod"));
            paused_tx.send(()).expect("reader waits");
            resume_rx.recv().expect("reader resumes us");
            // Step 2, the index.
            if let Some(keys) = by_namespace.get("staging") {
                keys.remove("web-1");
            }
            by_namespace
                .entry("prod".into())
                .or_default()
                .insert("web-1".into());
        });
        paused_rx.recv().expect("writer pauses");
        // The reader: which pods does the index list, and are they there?
        let mut listed_wrongly = 0;
        for namespace in ["staging", "prod"] {
            let listed: Vec<String> = by_namespace
                .get(namespace)
                .map(|keys| keys.iter().map(|k| k.clone()).collect())
                .unwrap_or_default();
            listed_wrongly += listed
                .iter()
                .filter(|key| {
                    objects
                        .get(key.as_str())
                        .is_some_and(|p| p.namespace != namespace)
                })
                .count();
        }
        let missing = objects
            .iter()
            .filter(|entry| {
                !by_namespace
                    .get(&entry.value().namespace)
                    .is_some_and(|keys| keys.contains(entry.key()))
            })
            .count();
        resume_tx.send(()).expect("writer waits");
        (listed_wrongly, missing)
    })
}

fn pod_store<V: Clone + 'static>(
    namespace_of: impl Fn(&V) -> String + Send + Sync + 'static,
) -> IndexedStore<String, V> {
    IndexedStore::builder()
        .index("namespace", move |v: &V| [namespace_of(v)])
        .build()
        .expect("valid indexes")
}

/// LARDER: one writer moves the pod back and forth while this thread checks
/// that every `by_index` result agrees with the objects it returns.
fn fixed_store(moves: usize) -> (usize, usize) {
    let store = pod_store(|p: &Pod| p.namespace.clone());
    store
        .insert("web-1".into(), pod("staging"))
        .expect("indexed");
    let (done_tx, done_rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| {
            for i in 0..moves {
                let namespace = if i % 2 == 0 { "prod" } else { "staging" };
                store
                    .insert("web-1".into(), pod(namespace))
                    .expect("indexed");
            }
            done_tx.send(()).expect("reader waits");
        });
        let (mut reads, mut torn) = (0, 0);
        loop {
            let finished = done_rx.try_recv().is_ok();
            for namespace in ["staging", "prod"] {
                let pods = store.by_index("namespace", namespace).expect("known index");
                reads += 1;
                torn += pods.iter().filter(|p| p.namespace != namespace).count();
            }
            if finished {
                return (reads, torn);
            }
        }
    })
}

/// BROKEN: a shared `Mutex` as the stored value, mutated through the
/// handle the store hands out (a clone of the same `Arc`).
fn broken_interior_mutation() -> usize {
    let store = pod_store(|p: &Arc<Mutex<Pod>>| p.lock().expect("not poisoned").namespace.clone());
    store
        .insert("web-1".into(), Arc::new(Mutex::new(pod("staging"))))
        .expect("indexed");
    let handle = store.get("web-1").expect("present");
    handle.lock().expect("not poisoned").namespace = "prod".into(); // behind the index's back
    store
        .by_index("namespace", "staging")
        .expect("known index")
        .iter()
        .filter(|p| p.lock().expect("not poisoned").namespace != "staging")
        .count()
}

/// LARDER: `Arc<Pod>` is read-only; a change is a new pod, re-indexed.
fn fixed_replace() -> usize {
    let store = pod_store(|p: &Arc<Pod>| p.namespace.clone());
    store
        .insert("web-1".into(), Arc::new(pod("staging")))
        .expect("indexed");
    let current = store.get("web-1").expect("present");
    // `current.namespace = "prod".into();` does not compile: `Arc<Pod>`
    // derefs to `&Pod`.
    let moved = Pod {
        namespace: "prod".into(),
        ..Pod::clone(&current)
    };
    store
        .insert("web-1".into(), Arc::new(moved))
        .expect("indexed");
    store
        .by_index("namespace", "staging")
        .expect("known index")
        .iter()
        .filter(|p| p.namespace != "staging")
        .count()
        + usize::from(store.index_keys("namespace", "prod").expect("known") != ["web-1"])
}

/// Runs every variant.
pub fn run() -> Outcome {
    let (broken_listed_wrongly, broken_missing_from_index) = broken_two_maps();
    let (fixed_reads, fixed_torn_reads) = fixed_store(2_000);
    Outcome {
        broken_listed_wrongly,
        broken_missing_from_index,
        fixed_reads,
        fixed_torn_reads,
        broken_mutated_stale: broken_interior_mutation(),
        fixed_replaced_stale: fixed_replace(),
    }
}

fn main() {
    common::header(
        3,
        "a synchronized view mixed with another, or values mutated behind the index",
    );
    let outcome = run();
    common::broken(format!(
        "DashMap of pods + DashMap index, reader between the two steps of a move: {} pod listed under the wrong namespace, {} pod missing from its namespace's index",
        outcome.broken_listed_wrongly, outcome.broken_missing_from_index
    ));
    common::fixed(format!(
        "IndexedStore, 2000 moves racing the reader: {} of {} by_index results torn (loom proves none can be)",
        outcome.fixed_torn_reads, outcome.fixed_reads
    ));
    common::broken(format!(
        "Arc<Mutex<Pod>> in the store, namespace changed through the handle: index lists {} pod under a namespace it left",
        outcome.broken_mutated_stale
    ));
    common::fixed(format!(
        "Arc<Pod> cannot be mutated; the changed pod was inserted (re-indexed): {} stale index entries",
        outcome.fixed_replaced_stale
    ));
}
