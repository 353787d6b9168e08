//! The `kube` group: larder's Kubernetes store beside kube-runtime's
//! reflector store (`Store`/`Writer`), on the same pods
//! (`kube_compare::pods`: [`STORED`] of them over 1,000 nodes and 100
//! namespaces; those no event touches carry only the fields the rows
//! read, see [`listed`]).
//!
//! - `apply_event`: [`OPS`] watch events (updates of stored pods to their
//!   next generation, deletes, re-adds of the deleted pods) applied to a
//!   store that holds every pod, the way each reflector applies one:
//!   kube-runtime's `Writer::apply_watcher_event` (which clones the event's
//!   object into its store), and larder's reflector's store write for a
//!   decoded event (the object moved into an `Arc`, the key of
//!   `meta_namespace_key`, `insert_at_revision` or `remove_at_revision`
//!   called as the reflector calls them), with no index and with a
//!   namespace and a node index; `index_fns` only calls those two index
//!   functions on each put's object: what the indexes cost at the least.
//! - `pods_on_node`: [`LOOKUPS`] reads of the pods of one node (a hundred
//!   each): larder's node index (`by_index`, what `StoreReader::by_index`
//!   calls) against kube-runtime's `Store::state()` filtered by
//!   `spec.nodeName`, and its `Store::state_filter`.
//!
//! Setups (building the pods and filling the stores) and the drop of what
//! a benchmark returns are not counted: an event's own object, which
//! kube-runtime's reflector passes on downstream and larder's source drops
//! after decoding, is returned uncounted on both sides.

use std::hint::black_box;
use std::sync::Arc;

use ::kube::runtime::reflector::store::Writer;
use ::kube::runtime::watcher::Event;
use gungraun::{library_benchmark, library_benchmark_group};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_compare::pods::{NODES, PODS, namespace, node, pod};
use larder::reflector::{index_by_namespace, index_by_pod_node, meta_namespace_key};

/// Watch events per `apply_event` benchmark: its counts are divided by it
/// (`scripts/instructions.py` reads it here).
pub const OPS: usize = 1_000;

/// Node reads per `pods_on_node` benchmark: its counts are divided by it
/// (`scripts/instructions.py` reads it here). Fewer than [`OPS`]: each of
/// kube-runtime's reads visits every stored pod.
pub const LOOKUPS: usize = 10;

/// Pods in every store: the full comparison's.
const STORED: usize = PODS;

/// The revision of the stores' initial list; the events come after it.
const LISTED_AT: u64 = 10 * PODS as u64;

/// larder's store of pods, with a fixed-seed hasher.
type Larder = larder::IndexedStore<String, Arc<Pod>, ahash::RandomState>;

/// A watch event as both reflectors receive it, decoded: an object put
/// (added or modified) or deleted, at a revision.
pub struct Change {
    /// Whether the object was deleted.
    deleted: bool,
    /// The object (for a delete: as last seen).
    object: Pod,
    /// Its revision (larder's source reads it from the resource version
    /// while decoding, as kube's watcher decodes the object).
    revision: u64,
}

/// The stored pod touched by event `j`: [`OPS`] distinct pods scattered
/// over the store (48,271 is prime to [`STORED`]).
fn touched(j: usize) -> usize {
    (j * 48_271 + 11) % STORED
}

/// Pods put again in a store's setup, before the measured events (see
/// [`larder_store`]).
const PUT_AGAIN: usize = 200;

/// Pod `i` as the stores list it. The pods the events or a setup touch
/// ([`touched`]) are the full pods of `kube_compare::pods`; the others
/// carry only what the rows read of them: name, namespace, node (and the
/// UID and resource version kube-runtime's key copies). Building and
/// copying 100,000 full pods under callgrind cost a benchmark up to 3
/// CPU-minutes of setup; these fill the stores to the same size (each
/// still a `Pod`, its struct and a few strings) for much less.
fn listed(i: usize, full: &[bool]) -> Pod {
    if full[i] {
        return pod(i, 0);
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("listed-pod-{i:06}")),
            namespace: Some(namespace(i)),
            uid: Some(format!("00000000-0000-4000-a000-{i:012}")),
            resource_version: Some((1_000 + i).to_string()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node(i)),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// Which stored pods are full ([`listed`]): those an event or a setup's
/// put touches.
fn full_pods() -> Vec<bool> {
    let mut full = vec![false; STORED];
    for j in 0..OPS + PUT_AGAIN {
        full[touched(j)] = true;
    }
    full
}

/// [`OPS`] events: of every ten, eight updates of a stored pod to its next
/// generation, one delete, and the re-add of the pod just deleted.
fn changes() -> Vec<Change> {
    (0..OPS)
        .map(|j| {
            let revision = LISTED_AT + 1 + j as u64;
            let (deleted, object) = match j % 10 {
                8 => (true, pod(touched(j), 0)),
                9 => (false, pod(touched(j - 1), 1)),
                _ => (false, pod(touched(j), 1)),
            };
            Change {
                deleted,
                object,
                revision,
            }
        })
        .collect()
}

/// The fixed-seed hasher of larder's stores, so that probe sequences, and
/// so the counts, are the same on every run (kube-runtime's map seeds its
/// own from the OS).
fn hasher() -> ahash::RandomState {
    ahash::RandomState::with_seeds(0x5eed_0001, 0x5eed_0002, 0x5eed_0003, 0x5eed_0004)
}

/// larder's store holding every pod, with the namespace and node indexes
/// when `INDEXED`, filled as a reflector's list fills it.
fn larder_store<const INDEXED: bool>() -> Larder {
    // 8 shards, the default on the 2-core reference machine, fixed so that
    // the counts do not follow the machine's cores.
    let mut builder = larder::IndexedStore::builder().shards(8).hasher(hasher());
    if INDEXED {
        builder = builder
            .index("namespace", index_by_namespace)
            .index("node", index_by_pod_node);
    }
    let store = builder.build().expect("distinct index names");
    let full = full_pods();
    let listed = (0..STORED).map(|i| {
        let pod = listed(i, &full);
        (meta_namespace_key(&pod), Arc::new(pod))
    });
    store
        .replace_at_revision(listed, LISTED_AT - 1)
        .expect("infallible index functions");
    // A store a reflector keeps has applied watch events before: the
    // first write at a revision moves a shard of a store without index
    // from its inline layout to slots, once in the store's life (a pass
    // over the shard's objects). Pods put again, as they are, until every
    // shard has moved ([`PUT_AGAIN`] keys reach all 8 shards); the
    // measured events then cost what every later one does.
    for i in 0..PUT_AGAIN {
        let key = meta_namespace_key(&pod(touched(OPS + i), 0));
        let object = store.get(&key).expect("a listed pod");
        store
            .insert_at_revision(key, object, LISTED_AT)
            .expect("infallible index functions");
    }
    store
}

/// kube-runtime's writer holding every pod, filled as its reflector's
/// initial list fills it (`Init`, an `InitApply` a pod, `InitDone`).
fn kube_writer() -> Writer<Pod> {
    let mut writer = Writer::default();
    writer.apply_watcher_event(&Event::Init);
    let full = full_pods();
    for i in 0..STORED {
        writer.apply_watcher_event(&Event::InitApply(listed(i, &full)));
    }
    writer.apply_watcher_event(&Event::InitDone);
    writer
}

/// A store that applies watch events.
trait Applies: Sized {
    /// The store holding every pod, and the events in the form it takes.
    fn setup() -> Self;
    /// Applies every event; returns what must not be dropped in the count.
    fn apply(self) -> Self;
}

/// kube-runtime's writer and its events.
struct KubeRuntime(Writer<Pod>, Vec<Event<Pod>>);

impl Applies for KubeRuntime {
    fn setup() -> Self {
        let events = changes()
            .into_iter()
            .map(|change| match change.deleted {
                true => Event::Delete(change.object),
                false => Event::Apply(change.object),
            })
            .collect();
        Self(kube_writer(), events)
    }
    fn apply(mut self) -> Self {
        for event in &self.1 {
            self.0.apply_watcher_event(black_box(event));
        }
        self
    }
}

/// larder's store and its events, with the two indexes when `INDEXED`.
/// The pods a delete names are kept, uncounted, as [`KubeRuntime`]'s events
/// are.
struct LarderStore<const INDEXED: bool>(Larder, Vec<Change>, Vec<Pod>);

impl<const INDEXED: bool> Applies for LarderStore<INDEXED> {
    fn setup() -> Self {
        Self(
            larder_store::<INDEXED>(),
            changes(),
            Vec::with_capacity(OPS),
        )
    }
    fn apply(mut self) -> Self {
        let Self(store, changes, deleted) = &mut self;
        for change in std::mem::take(changes) {
            let Change {
                deleted: is_delete,
                object,
                revision,
            } = black_box(change);
            // The key the source gives every event (`meta_namespace_key`),
            // then the store write of the reflector's `apply_event`: the
            // object moved into an `Arc`, the key and the `Arc` cloned into
            // the write (the reflector keeps both for its handlers).
            let key = meta_namespace_key(&object);
            if is_delete {
                black_box(store.remove_at_revision(key.as_str(), revision));
                deleted.push(object);
            } else {
                let object = Arc::new(object);
                black_box(
                    store
                        .insert_at_revision(key.clone(), Arc::clone(&object), revision)
                        .expect("infallible index functions"),
                );
                black_box(object);
            }
            black_box(key);
        }
        self
    }
}

/// The two index functions alone, called on each put's object (built in
/// the setup); their values kept, uncounted, as a store keeps them.
struct IndexFns(Vec<Arc<Pod>>, Vec<(Option<String>, Option<String>)>);

impl Applies for IndexFns {
    fn setup() -> Self {
        let puts = changes()
            .into_iter()
            .filter(|change| !change.deleted)
            .map(|change| Arc::new(change.object))
            .collect();
        Self(puts, Vec::with_capacity(OPS))
    }
    fn apply(mut self) -> Self {
        for object in &self.0 {
            let object = black_box(object);
            let values = (index_by_namespace(object), index_by_pod_node(object));
            self.1.push(black_box(values));
        }
        self
    }
}

#[library_benchmark]
#[bench::larder_no_index(setup = LarderStore::<false>::setup)]
#[bench::larder_namespace_node(setup = LarderStore::<true>::setup)]
#[bench::index_fns(setup = IndexFns::setup)]
#[bench::kube_runtime(setup = KubeRuntime::setup)]
fn apply_event<A: Applies>(store: A) -> A {
    store.apply()
}

/// The nodes of the [`LOOKUPS`] reads: scattered, each a hundred pods.
fn nodes() -> Vec<String> {
    (0..LOOKUPS).map(|j| node((j * 7 + 3) % NODES)).collect()
}

/// A store read for "the pods on node X".
trait ReadsNode: Sized {
    fn setup() -> (Self, Vec<String>);
    fn pods_on(&self, node: &str) -> Vec<Arc<Pod>>;
}

impl ReadsNode for Larder {
    fn setup() -> (Self, Vec<String>) {
        (larder_store::<true>(), nodes())
    }
    #[inline]
    fn pods_on(&self, node: &str) -> Vec<Arc<Pod>> {
        self.by_index("node", node).expect("the node index")
    }
}

/// `spec.nodeName` of a pod.
fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// kube-runtime's store read through `Store::state()`, then filtered.
struct KubeState(::kube::runtime::reflector::Store<Pod>);

impl ReadsNode for KubeState {
    fn setup() -> (Self, Vec<String>) {
        let writer = kube_writer();
        (Self(writer.as_reader()), nodes())
    }
    #[inline]
    fn pods_on(&self, node: &str) -> Vec<Arc<Pod>> {
        self.0
            .state()
            .into_iter()
            .filter(|pod| node_of(pod) == Some(node))
            .collect()
    }
}

/// kube-runtime's store read through `Store::state_filter` (the filter
/// runs under its lock; only the matches are cloned).
struct KubeStateFilter(KubeState);

impl ReadsNode for KubeStateFilter {
    fn setup() -> (Self, Vec<String>) {
        let (store, nodes) = KubeState::setup();
        (Self(store), nodes)
    }
    #[inline]
    fn pods_on(&self, node: &str) -> Vec<Arc<Pod>> {
        self.0.0.state_filter(|pod| node_of(pod) == Some(node))
    }
}

#[library_benchmark]
#[bench::larder(setup = <Larder as ReadsNode>::setup)]
#[bench::kube_runtime_state(setup = KubeState::setup)]
#[bench::kube_runtime_state_filter(setup = KubeStateFilter::setup)]
fn pods_on_node<R: ReadsNode>((store, nodes): (R, Vec<String>)) -> R {
    for node in &nodes {
        let pods = store.pods_on(black_box(node));
        assert_eq!(pods.len(), STORED / NODES);
        black_box(pods);
    }
    store
}

library_benchmark_group!(name = kube; benchmarks = apply_event, pods_on_node);
