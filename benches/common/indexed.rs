//! Indexed family: `IndexedStore` against the three designs an informer
//! cache is otherwise built on, with objects shaped like Kubernetes pods.
//!
//! Contenders (each keeps a namespace index and a label index, except (a)):
//!
//! - **larder `IndexedStore`**: one state behind a `ShardedLock`.
//! - **(a) kube-rs design**: `parking_lot::RwLock<AHashMap<String, Arc<Pod>>>`;
//!   "pods of namespace X" is a filtered scan of every object.
//! - **(b) client-go design**: one `parking_lot::RwLock` over the map and
//!   `HashMap<value, HashSet<key>>` indexes; index functions run under the
//!   write lock, the old object's values are recomputed on update.
//! - **(c) naive `DashMap`**: a `DashMap` of objects plus a
//!   `DashMap<value, DashSet<key>>` per index, updated one after the other.
//!   Not atomic: `by_index` can return an object that no longer has the
//!   value, miss one that has it, or list a key whose object is gone (it then
//!   looks the key up and finds nothing). Its `extra()` counts the
//!   `by_index` answers it noticed to be wrong (stale or missing objects;
//!   it cannot notice the objects it missed).
//!
//! Objects: pods in 100 namespaces with 3-5 labels and about 500 bytes each,
//! under keys `namespace/name`. Every pod has two versions that differ in
//! one label, so an update moves it between two label buckets.
//!
//! Workloads, at 10K and 100K pods (`Size::Quick`: 2K), 1, 2 and 4 threads:
//!
//! - `get-only`: 100% `get`, isolating how reads scale (no writer at all).
//! - `get-heavy`: 98% `get`, 1% update, 1% delete+insert.
//! - `index-heavy`: 80% `by_index(namespace)` (one namespace of 100: about
//!   1% of the pods, collected as `Arc`s), 18% `get`, 1% update, 1%
//!   delete+insert.
//! - `write-heavy`: 20% `get`, 50% update, 30% delete+insert.
//!
//! A delete+insert removes a pod and puts the same key back, so the key set
//! stays (nearly) full and gets almost always hit. The three workloads of
//! one size share each contender's store, built lazily the first time the
//! contender is started.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use ahash::{AHashMap, AHashSet};
use dashmap::{DashMap, DashSet};

use super::{Background, Contender, Rng, Size, Workload};

pub mod events;
pub mod mixes;
pub mod visit;

/// Thread counts measured.
pub const THREADS: &[usize] = &[1, 2, 4];

/// Number of namespaces the pods are spread over.
pub const NAMESPACES: usize = 100;

/// A pod-shaped object of about 500 bytes.
#[derive(Clone, Debug)]
pub struct Pod {
    /// The pod's name, unique within its namespace.
    pub name: String,
    /// The namespace, one of [`NAMESPACES`].
    pub namespace: String,
    /// 3 to 5 `(key, value)` labels.
    pub labels: Vec<(String, String)>,
    /// The node it runs on.
    pub node: String,
    /// Spec-like payload bringing the object to about 500 bytes.
    pub spec: String,
    /// Which of its two versions this is.
    pub generation: u64,
}

/// The namespace index function.
pub fn namespace_of(pod: &Pod) -> [String; 1] {
    [pod.namespace.clone()]
}

/// The label index function: every `key=value` pair.
pub fn labels_of(pod: &Pod) -> Vec<String> {
    pod.labels.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// Builds pod `i` of `n`, version `generation` (0 or 1).
pub fn pod(i: usize, generation: u64) -> Pod {
    let namespace = format!("namespace-{:02}", i % NAMESPACES);
    let mut labels = vec![
        ("app".to_string(), format!("app-{}", (i / NAMESPACES) % 50)),
        (
            "tier".to_string(),
            ["web", "api", "db", "cache"][i % 4].to_string(),
        ),
        (
            "env".to_string(),
            ["prod", "staging", "dev"][i % 3].to_string(),
        ),
    ];
    if i % 2 == 0 {
        labels.push(("version".to_string(), format!("v{generation}")));
    } else {
        labels.push(("revision".to_string(), format!("r{generation}")));
    }
    if i % 3 == 0 {
        labels.push(("team".to_string(), format!("team-{}", i % 20)));
    }
    Pod {
        name: format!("pod-{i:06}"),
        namespace,
        labels,
        node: format!("node-{:03}", i % 300),
        spec: "x".repeat(300),
        generation,
    }
}

/// The pods of one size, shared by every contender of that size.
pub struct Fixture {
    /// `namespace/name` of pod `i`.
    pub keys: Vec<String>,
    /// The two versions of pod `i`.
    pub pods: Vec<[Arc<Pod>; 2]>,
    /// The namespace names.
    pub namespaces: Vec<String>,
}

impl Fixture {
    /// `n` pods, each in two versions.
    pub fn new(n: usize) -> Self {
        let pods: Vec<[Arc<Pod>; 2]> = (0..n)
            .map(|i| [Arc::new(pod(i, 0)), Arc::new(pod(i, 1))])
            .collect();
        let keys = pods
            .iter()
            .map(|p| format!("{}/{}", p[0].namespace, p[0].name))
            .collect();
        let namespaces = (0..NAMESPACES)
            .map(|n| format!("namespace-{n:02}"))
            .collect();
        Self {
            keys,
            pods,
            namespaces,
        }
    }
}

/// One pod store under test, one operation at a time.
pub trait PodStore: Send + Sync + 'static {
    /// Name shown in reports.
    const NAME: &'static str;
    /// An empty store.
    fn empty() -> Self;
    /// The pod under `key`.
    fn get(&self, key: &str) -> Option<Arc<Pod>>;
    /// Every pod of `namespace`.
    fn by_namespace(&self, namespace: &str) -> Vec<Arc<Pod>>;
    /// Adds or replaces the pod under `key`, updating the indexes.
    fn upsert(&self, key: &str, pod: &Arc<Pod>);
    /// Removes the pod under `key`.
    fn remove(&self, key: &str);
    /// Wrong `by_index` answers noticed (only the naive design has any).
    fn anomalies(&self) -> u64 {
        0
    }
    /// Resets [`anomalies`](PodStore::anomalies).
    fn reset(&self) {}
}

// ---------------------------------------------------------------------------
// larder

/// larder's store with a namespace and a label index, holding the
/// fixture's `Arc<Pod>`s as the other designs do (the same `Arc` is stored
/// and handed out).
pub type Larder = larder::IndexedStore<String, Arc<Pod>>;

impl PodStore for Larder {
    const NAME: &'static str = "larder IndexedStore";
    fn empty() -> Self {
        larder::IndexedStore::builder()
            .index("namespace", |pod: &Arc<Pod>| namespace_of(pod))
            .index("label", |pod: &Arc<Pod>| labels_of(pod))
            .build()
            .expect("distinct index names")
    }
    #[inline]
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        larder::IndexedStore::get(self, key)
    }
    fn by_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.by_index("namespace", namespace).expect("index exists")
    }
    fn upsert(&self, key: &str, pod: &Arc<Pod>) {
        self.insert(key.to_string(), Arc::clone(pod))
            .expect("infallible index functions");
    }
    fn remove(&self, key: &str) {
        larder::IndexedStore::remove(self, key);
    }
}

// ---------------------------------------------------------------------------
// (a) kube-rs: one RwLock over a map, lookups by namespace scan

/// (a) The kube-rs `reflector::Store` design: no indexes.
pub struct KubeRs(parking_lot::RwLock<AHashMap<String, Arc<Pod>>>);

impl PodStore for KubeRs {
    const NAME: &'static str = "(a) kube-rs RwLock<AHashMap> + scan";
    fn empty() -> Self {
        Self(parking_lot::RwLock::new(AHashMap::new()))
    }
    #[inline]
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.0.read().get(key).cloned()
    }
    fn by_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.0
            .read()
            .values()
            .filter(|pod| pod.namespace == namespace)
            .cloned()
            .collect()
    }
    fn upsert(&self, key: &str, pod: &Arc<Pod>) {
        let old = self.0.write().insert(key.to_string(), Arc::clone(pod));
        drop(old);
    }
    fn remove(&self, key: &str) {
        let old = self.0.write().remove(key);
        drop(old);
    }
}

// ---------------------------------------------------------------------------
// (b) client-go: one RwLock over the map and the indexes

type IndexFn = fn(&Pod) -> Vec<String>;

struct ClientGoState {
    items: AHashMap<String, Arc<Pod>>,
    /// index name -> value -> keys (client-go `Indices`).
    indices: Vec<AHashMap<String, AHashSet<String>>>,
}

/// (b) client-go's `threadSafeMap`: one `RWMutex` over items and indices.
pub struct ClientGo {
    state: parking_lot::RwLock<ClientGoState>,
    indexers: [(&'static str, IndexFn); 2],
}

impl ClientGo {
    /// client-go `updateIndices`: under the write lock, recompute the old
    /// object's values, remove the key from them, add it to the new ones,
    /// deleting emptied buckets (the kubernetes#84959 fix).
    fn update_indices(
        &self,
        state: &mut ClientGoState,
        old: Option<&Pod>,
        new: Option<&Pod>,
        key: &str,
    ) {
        for (position, (_, index_fn)) in self.indexers.iter().enumerate() {
            let old_values = old.map(index_fn).unwrap_or_default();
            let new_values = new.map(index_fn).unwrap_or_default();
            if old_values == new_values {
                continue;
            }
            let index = &mut state.indices[position];
            for value in &old_values {
                if let Some(set) = index.get_mut(value) {
                    set.remove(key);
                    if set.is_empty() {
                        index.remove(value);
                    }
                }
            }
            for value in new_values {
                index.entry(value).or_default().insert(key.to_string());
            }
        }
    }
}

impl PodStore for ClientGo {
    const NAME: &'static str = "(b) client-go RwLock<map + indexes>";
    fn empty() -> Self {
        Self {
            state: parking_lot::RwLock::new(ClientGoState {
                items: AHashMap::new(),
                indices: vec![AHashMap::new(), AHashMap::new()],
            }),
            indexers: [
                ("namespace", |p| namespace_of(p).to_vec()),
                ("label", labels_of),
            ],
        }
    }
    #[inline]
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.state.read().items.get(key).cloned()
    }
    fn by_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        let state = self.state.read();
        match state.indices[0].get(namespace) {
            Some(keys) => keys.iter().map(|k| Arc::clone(&state.items[k])).collect(),
            None => Vec::new(),
        }
    }
    fn upsert(&self, key: &str, pod: &Arc<Pod>) {
        let mut state = self.state.write();
        let old = state.items.insert(key.to_string(), Arc::clone(pod));
        self.update_indices(&mut state, old.as_deref(), Some(pod), key);
        drop(state);
        drop(old);
    }
    fn remove(&self, key: &str) {
        let mut state = self.state.write();
        let old = state.items.remove(key);
        if old.is_some() {
            self.update_indices(&mut state, old.as_deref(), None, key);
        }
        drop(state);
        drop(old);
    }
}

// ---------------------------------------------------------------------------
// (c) naive: a DashMap of objects and a DashMap per index, not atomic

/// (c) A `DashMap` of objects plus a `DashMap<value, DashSet<key>>` per
/// index, updated in separate steps.
pub struct NaiveDashMap {
    objects: DashMap<String, Arc<Pod>, ahash::RandomState>,
    indexes: [DashMap<String, DashSet<String, ahash::RandomState>, ahash::RandomState>; 2],
    anomalies: AtomicU64,
}

impl NaiveDashMap {
    fn values(pod: &Pod) -> [Vec<String>; 2] {
        [namespace_of(pod).to_vec(), labels_of(pod)]
    }
    fn unindex(&self, key: &str, values: &[Vec<String>; 2]) {
        for (index, values) in self.indexes.iter().zip(values) {
            for value in values {
                if let Some(set) = index.get(value) {
                    set.remove(key);
                }
                index.remove_if(value, |_, set| set.is_empty());
            }
        }
    }
}

impl PodStore for NaiveDashMap {
    const NAME: &'static str = "(c) DashMap + DashMap per index (not atomic)";
    fn empty() -> Self {
        Self {
            objects: DashMap::with_hasher(ahash::RandomState::new()),
            indexes: [
                DashMap::with_hasher(ahash::RandomState::new()),
                DashMap::with_hasher(ahash::RandomState::new()),
            ],
            anomalies: AtomicU64::new(0),
        }
    }
    #[inline]
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.objects.get(key).map(|pod| Arc::clone(&pod))
    }
    fn by_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        let keys: Vec<String> = match self.indexes[0].get(namespace) {
            Some(set) => set.iter().map(|k| k.clone()).collect(),
            None => return Vec::new(),
        };
        let mut pods = Vec::with_capacity(keys.len());
        let mut wrong = 0;
        for key in keys {
            match self.objects.get(&key) {
                Some(pod) if pod.namespace == namespace => pods.push(Arc::clone(&pod)),
                _ => wrong += 1,
            }
        }
        if wrong > 0 {
            // Relaxed: a statistic read after the threads are joined.
            self.anomalies.fetch_add(1, Ordering::Relaxed);
        }
        pods
    }
    fn upsert(&self, key: &str, pod: &Arc<Pod>) {
        let new = Self::values(pod);
        let old = self.objects.insert(key.to_string(), Arc::clone(pod));
        // Between the insert above and the index updates below, readers see
        // the new object under the old values (or not at all if new).
        if let Some(old) = &old {
            self.unindex(key, &Self::values(old));
        }
        for (index, values) in self.indexes.iter().zip(new) {
            for value in values {
                index
                    .entry(value)
                    .or_insert_with(|| DashSet::with_hasher(ahash::RandomState::new()))
                    .insert(key.to_string());
            }
        }
    }
    fn remove(&self, key: &str) {
        if let Some((_, old)) = self.objects.remove(key) {
            self.unindex(key, &Self::values(&old));
        }
    }
    fn anomalies(&self) -> u64 {
        // Relaxed: read after the measurement's threads are joined.
        self.anomalies.load(Ordering::Relaxed)
    }
    fn reset(&self) {
        // Relaxed: no measurement is running.
        self.anomalies.store(0, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------------------
// The workload driver

/// Percentages of each operation (they add up to 100).
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    /// `get` of a random pod.
    pub get: u64,
    /// `by_index(namespace)` of a random namespace.
    pub by_index: u64,
    /// Replace a random pod by its other version.
    pub update: u64,
    /// Remove a random pod and put it back (counted as one operation).
    pub delete_insert: u64,
}

/// The workloads' mixes, by name.
pub const MIXES: [(&str, Mix); 4] = [
    (
        "get-only",
        Mix {
            get: 100,
            by_index: 0,
            update: 0,
            delete_insert: 0,
        },
    ),
    (
        "get-heavy",
        Mix {
            get: 98,
            by_index: 0,
            update: 1,
            delete_insert: 1,
        },
    ),
    (
        "index-heavy",
        Mix {
            get: 18,
            by_index: 80,
            update: 1,
            delete_insert: 1,
        },
    ),
    (
        "write-heavy",
        Mix {
            get: 20,
            by_index: 0,
            update: 50,
            delete_insert: 30,
        },
    ),
];

/// A store shared by the workloads of one size, built on first use.
struct Shared<P> {
    fixture: Arc<OnceLock<Fixture>>,
    n: usize,
    store: OnceLock<P>,
}

impl<P: PodStore> Shared<P> {
    fn fixture(&self) -> &Fixture {
        self.fixture.get_or_init(|| Fixture::new(self.n))
    }
    fn store(&self) -> &P {
        self.store.get_or_init(|| {
            let store = P::empty();
            for (key, versions) in self.fixture().keys.iter().zip(&self.fixture().pods) {
                store.upsert(key, &versions[0]);
            }
            store
        })
    }
}

/// One contender: a store design driven with one mix.
pub struct PodContender<P> {
    shared: Arc<Shared<P>>,
    mix: Mix,
}

impl<P: PodStore> Contender for PodContender<P> {
    fn name(&self) -> String {
        P::NAME.to_string()
    }
    fn start(&self) -> Option<Background> {
        self.shared.store().reset();
        None
    }
    fn run(&self, thread: usize, threads: usize, ops: u64) -> u64 {
        let fixture = self.shared.fixture();
        let store = self.shared.store();
        let n = fixture.keys.len() as u64;
        let mut rng = Rng::new((thread as u64 + 1) * 7919 + threads as u64);
        let Mix {
            get,
            by_index,
            update,
            ..
        } = self.mix;
        let mut sum = 0u64;
        for _ in 0..ops {
            let roll = rng.below(100);
            let i = rng.below(n) as usize;
            let key = &fixture.keys[i];
            if roll < get {
                if let Some(pod) = store.get(key) {
                    sum = sum.wrapping_add(pod.generation + 1);
                }
            } else if roll < get + by_index {
                let ns = &fixture.namespaces[i % NAMESPACES];
                sum = sum.wrapping_add(store.by_namespace(ns).len() as u64);
            } else if roll < get + by_index + update {
                let version = rng.below(2) as usize;
                store.upsert(key, &fixture.pods[i][version]);
                sum = sum.wrapping_add(1);
            } else {
                store.remove(key);
                store.upsert(key, &fixture.pods[i][0]);
                sum = sum.wrapping_add(2);
            }
        }
        sum
    }
    fn extra(&self) -> Option<(String, f64)> {
        let anomalies = self.shared.store.get()?.anomalies();
        (anomalies > 0).then(|| ("wrong by_index answers".to_string(), anomalies as f64))
    }
}

fn contender<P: PodStore>(shared: &Arc<Shared<P>>, mix: Mix) -> Box<dyn Contender> {
    Box::new(PodContender {
        shared: Arc::clone(shared),
        mix,
    })
}

fn shared<P: PodStore>(fixture: &Arc<OnceLock<Fixture>>, n: usize) -> Arc<Shared<P>> {
    Arc::new(Shared {
        fixture: Arc::clone(fixture),
        n,
        store: OnceLock::new(),
    })
}

/// The family's workloads: every mix at every size of `size`.
pub fn workloads(size: Size) -> Vec<Workload> {
    let sizes: &[(usize, &str)] = match size {
        Size::Full => &[(10_000, "10K"), (100_000, "100K")],
        Size::Quick => &[(2_000, "2K")],
    };
    let mut out = mixes::workloads(size);
    for &(n, label) in sizes {
        let fixture = Arc::new(OnceLock::new());
        let larder = shared::<Larder>(&fixture, n);
        let kube = shared::<KubeRs>(&fixture, n);
        let client_go = shared::<ClientGo>(&fixture, n);
        let naive = shared::<NaiveDashMap>(&fixture, n);
        for (name, mix) in MIXES {
            out.push(Workload {
                family: "indexed",
                name: format!("{name} {label}"),
                contenders: vec![
                    contender(&larder, mix),
                    contender(&kube, mix),
                    contender(&client_go, mix),
                    contender(&naive, mix),
                ],
                threads: THREADS.to_vec(),
            });
        }
    }
    out
}

/// The size sweep's workload: `get-only` over `n` pods.
pub fn sweep(n: usize) -> Vec<Workload> {
    let fixture = Arc::new(OnceLock::new());
    let (name, mix) = MIXES[0];
    vec![Workload {
        family: "indexed",
        name: format!("{name} {n}"),
        contenders: vec![
            contender(&shared::<Larder>(&fixture, n), mix),
            contender(&shared::<KubeRs>(&fixture, n), mix),
            contender(&shared::<ClientGo>(&fixture, n), mix),
            contender(&shared::<NaiveDashMap>(&fixture, n), mix),
        ],
        threads: THREADS.to_vec(),
    }]
}
