//! Heap bytes an object holds, and what each store and each index holds
//! beside it: the realistic pods of `kube_compare::pods` (100,000 by
//! default) in kube-runtime's reflector store (filled through its
//! `Writer`, as its reflector's initial list fills it) and in larder's
//! `IndexedStore` (filled as larder's reflector's list fills it), with no
//! index and with each of the namespace and node indexes on its own.
//!
//! ```text
//! cargo run --release -p kube-compare --example kube_heap            # 100,000 pods
//! cargo run -p kube-compare --example kube_heap -- 10000             # fewer
//! ```
//!
//! Bytes are those the process holds allocated, as asked of the allocator
//! (a counting global allocator, the `cap` crate's, around the system's):
//! the same on every run, whatever the build's optimisation; allocator
//! overhead not included. Each figure is the growth of that count over one
//! step, every temporary of the step freed:
//!
//! - **the objects**: the pods built, each in its `Arc` (both stores hold
//!   `Arc<Pod>`);
//! - **kube-runtime's copies**: kube-runtime's writer stores a clone of each
//!   object it is given (its reflector passes the watcher's object on
//!   downstream); measured apart, as the clones alone;
//! - **each store**: its growth when filled, minus the objects it holds
//!   (kube-runtime: minus its copies; larder: none, it stores the `Arc`s
//!   given): its map, keys and index entries, the bytes it holds beside
//!   the objects;
//! - **each index**: the store with that index alone, minus the store with
//!   none (the first index also moves the store to the layout indexes
//!   need: a slot per object), and the store with both minus the store
//!   with the other one.
//!
//! 100,000 pods hold about 2.4 GB here (the objects and kube-runtime's
//! copies): `-- 10000` is the quick run.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use kube_compare::pods::{PODS, pod};
use larder::reflector::{index_by_namespace, index_by_pod_node, meta_namespace_key};

/// Counts the bytes allocated.
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

/// The bytes allocated by `step`, once its temporaries are freed, and what
/// it returns (to keep, or drop uncounted).
fn measured<T>(step: impl FnOnce() -> T) -> (usize, T) {
    let before = ALLOCATOR.allocated();
    let kept = step();
    (ALLOCATOR.allocated() - before, kept)
}

/// larder's store of pods, with the indexes named (`namespace`, `node`).
type Larder = larder::IndexedStore<String, Arc<Pod>>;

/// larder's store holding `objects`, with the indexes named, filled as a
/// reflector's list fills it (one `replace_at_revision`).
fn larder_store(objects: &[Arc<Pod>], indexes: &[&str]) -> Larder {
    // 8 shards, the default on 2 cores, fixed so that the figures do not
    // follow the machine's cores.
    let mut builder = larder::IndexedStore::builder().shards(8);
    for &index in indexes {
        builder = match index {
            "namespace" => builder.index("namespace", index_by_namespace),
            "node" => builder.index("node", index_by_pod_node),
            other => unreachable!("no index {other}"),
        };
    }
    let store = builder.build().expect("distinct index names");
    let listed = objects
        .iter()
        .map(|object| (meta_namespace_key(&**object), Arc::clone(object)));
    store
        .replace_at_revision(listed, 1)
        .expect("infallible index functions");
    store
}

fn main() {
    let count = match std::env::args().nth(1) {
        None => PODS,
        Some(arg) => arg.parse().unwrap_or_else(|_| {
            eprintln!("usage: kube_heap [PODS]  (default {PODS})");
            std::process::exit(2);
        }),
    };
    let per = |bytes: usize| bytes as f64 / count as f64;

    // The objects, each in its Arc; the Vec holding them is not theirs.
    let (bytes, objects) = measured(|| (0..count).map(|i| Arc::new(pod(i, 0))).collect::<Vec<_>>());
    let objects_bytes = bytes - objects.capacity() * size_of::<Arc<Pod>>();

    // kube-runtime's writer clones each object it stores: the clones alone
    // first, then the store filled (clones included) minus them.
    let (copies_bytes, copies) = measured(|| {
        let copies: Vec<Arc<Pod>> = objects
            .iter()
            .map(|object| Arc::new((**object).clone()))
            .collect();
        copies
    });
    let copies_bytes = copies_bytes - copies.capacity() * size_of::<Arc<Pod>>();
    drop(copies);
    let (kube_bytes, writer) = measured(|| {
        let mut writer = Writer::<Pod>::default();
        writer.apply_watcher_event(&Event::Init);
        for object in &objects {
            writer.apply_watcher_event(&Event::InitApply((**object).clone()));
        }
        writer.apply_watcher_event(&Event::InitDone);
        writer
    });
    let kube_len = writer.as_reader().len();
    drop(writer);
    let kube_own = kube_bytes - copies_bytes;

    let mut larder = Vec::new();
    for indexes in [&[][..], &["namespace"], &["node"], &["namespace", "node"]] {
        let (bytes, store) = measured(|| larder_store(&objects, indexes));
        assert_eq!(store.len(), count);
        larder.push(bytes);
    }
    assert_eq!(kube_len, count);
    let [plain, namespace, node, both] = larder[..] else {
        unreachable!("four stores")
    };

    println!("Heap bytes, {count} pods (counting allocator; bytes asked of the allocator)\n");
    println!("| held | bytes | bytes / object |");
    println!("|---|---:|---:|");
    let row = |what: &str, bytes: usize| println!("| {what} | {bytes} | {:.1} |", per(bytes));
    row("the objects (`Arc<Pod>` and their heap)", objects_bytes);
    row("kube-runtime's copies of the objects", copies_bytes);
    row("kube-runtime `Store`, beside its copies", kube_own);
    row("larder `IndexedStore`, no index", plain);
    row(
        "larder namespace index (`index_by_namespace`)",
        namespace - plain,
    );
    row("larder node index (`index_by_pod_node`)", node - plain);
    row("larder both indexes", both - plain);
    row(
        "larder node index beside the namespace index",
        both - namespace,
    );
    row("larder namespace index beside the node index", both - node);
    println!(
        "\n`size_of::<Pod>()`: {} bytes (each object's `Arc` allocation holds it).",
        size_of::<Pod>()
    );
    println!(
        "\nlarder without index over kube-runtime's store: {:.2}",
        plain as f64 / kube_own as f64
    );
}
