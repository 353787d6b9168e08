//! `IndexedStore` against `RwLock<HashMap>` (the kube-rs store's design) and
//! `DashMap`, over 10,000 pod-shaped objects in 100 namespaces (the pods of
//! `benches/common/indexed.rs`): a get, an insert that replaces an object,
//! every object of one namespace, one watch event, and a relist (`replace`)
//! of 10,000 pods into an empty store.
//!
//! larder keeps a namespace and a label index (as an informer does) unless
//! a row says "no index"; the peers keep none, so their `by_index` is a
//! scan, and `kube_rs_index_fns` calls the two index functions on each
//! event without storing their values: the floor of any store that
//! maintains these indexes.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use dashmap::DashMap;
use gungraun::{library_benchmark, library_benchmark_group};
use parking_lot::RwLock;

use crate::common::indexed::events::{Event, KubeRsPlusIndexFunctions, WatchFixture};
use crate::common::indexed::{Pod, labels_of, namespace_of, pod};
use crate::inputs::{OPS, drawn, hasher, rng, scattered};

/// Objects in every store.
const PODS: usize = 10_000;

type Map = HashMap<String, Arc<Pod>, ahash::RandomState>;

/// One store under test.
trait Store: Sized {
    fn build(listed: &[(String, Arc<Pod>)]) -> Self;
    fn get(&self, key: &str) -> Option<Arc<Pod>>;
    fn put(&self, key: String, pod: Arc<Pod>);
    fn delete(&self, key: &str);
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>>;
}

/// larder's store, with the informer's two indexes (a namespace and a
/// label index) when `INDEXED`, with none otherwise, in `SHARDS` shards.
struct Larder<const INDEXED: bool, const SHARDS: usize = 4>(
    larder::IndexedStore<String, Arc<Pod>, ahash::RandomState>,
);

/// larder's store with the informer's two indexes, in 4 shards (a fixed
/// count, so that the counts are the same on every machine; the
/// `larder_N_shards` rows of `by_index` show what each shard adds: the
/// default is 8 on a 2-core machine, 32 on 8 cores).
type Indexed = Larder<true>;

/// larder's store with no index.
type Plain = Larder<false>;

/// The kube-rs design: one `RwLock` over a map.
struct Locked(RwLock<Map>);

/// [`Locked`], calling both index functions on every object it stores and
/// keeping their values as larder does (sorted, shared strings), then
/// dropping them.
struct LockedIndexFns(Locked);

/// A `DashMap`.
struct Dash(DashMap<String, Arc<Pod>, ahash::RandomState>);

impl<const INDEXED: bool, const SHARDS: usize> Store for Larder<INDEXED, SHARDS> {
    fn build(listed: &[(String, Arc<Pod>)]) -> Self {
        // A fixed shard count (the default follows the machine's cores), so
        // that the counts are the same on every machine.
        let mut builder = larder::IndexedStore::builder()
            .shards(SHARDS)
            .hasher(hasher());
        if INDEXED {
            builder = builder
                .index("namespace", |pod: &Arc<Pod>| namespace_of(pod))
                .index("label", |pod: &Arc<Pod>| labels_of(pod));
        }
        let store = builder.build().expect("distinct index names");
        for (key, pod) in listed {
            store
                .insert(key.clone(), Arc::clone(pod))
                .expect("infallible");
        }
        Self(store)
    }
    #[inline]
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.0.get(key)
    }
    #[inline]
    fn put(&self, key: String, pod: Arc<Pod>) {
        black_box(self.0.insert(key, pod).expect("infallible"));
    }
    #[inline]
    fn delete(&self, key: &str) {
        black_box(self.0.remove(key));
    }
    #[inline]
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.0
            .by_index("namespace", namespace)
            .expect("the namespace index (the by_index rows use Larder<true>)")
    }
}

impl Store for Locked {
    fn build(listed: &[(String, Arc<Pod>)]) -> Self {
        let mut map = Map::with_hasher(hasher());
        map.extend(listed.iter().cloned());
        Self(RwLock::new(map))
    }
    #[inline]
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.0.read().get(key).cloned()
    }
    #[inline]
    fn put(&self, key: String, pod: Arc<Pod>) {
        black_box(self.0.write().insert(key, pod));
    }
    #[inline]
    fn delete(&self, key: &str) {
        black_box(self.0.write().remove(key));
    }
    #[inline]
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.0
            .read()
            .values()
            .filter(|pod| pod.namespace == namespace)
            .cloned()
            .collect()
    }
}

impl Store for LockedIndexFns {
    fn build(listed: &[(String, Arc<Pod>)]) -> Self {
        Self(Locked::build(listed))
    }
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.0.get(key)
    }
    #[inline]
    fn put(&self, key: String, pod: Arc<Pod>) {
        black_box(KubeRsPlusIndexFunctions::values(&pod));
        self.0.put(key, pod);
    }
    #[inline]
    fn delete(&self, key: &str) {
        self.0.delete(key);
    }
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.0.in_namespace(namespace)
    }
}

impl Store for Dash {
    fn build(listed: &[(String, Arc<Pod>)]) -> Self {
        let map = DashMap::with_hasher(hasher());
        for (key, pod) in listed {
            map.insert(key.clone(), Arc::clone(pod));
        }
        Self(map)
    }
    #[inline]
    fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.0.get(key).map(|pod| Arc::clone(&pod))
    }
    #[inline]
    fn put(&self, key: String, pod: Arc<Pod>) {
        black_box(self.0.insert(key, pod));
    }
    #[inline]
    fn delete(&self, key: &str) {
        black_box(self.0.remove(key));
    }
    #[inline]
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.0
            .iter()
            .filter(|entry| entry.value().namespace == namespace)
            .map(|entry| Arc::clone(entry.value()))
            .collect()
    }
}

/// The listed pods, keyed `namespace/name`.
fn listed() -> Vec<(String, Arc<Pod>)> {
    (0..PODS)
        .map(|i| {
            let p = pod(i, 0);
            (format!("{}/{}", p.namespace, p.name), Arc::new(p))
        })
        .collect()
}

/// [`OPS`] indexes of listed pods, drawn uniformly.
fn picks(stream: u64) -> Vec<usize> {
    use rand::Rng;
    let mut rng = rng(stream);
    (0..OPS).map(|_| rng.random_range(0..PODS)).collect()
}

/// A store and the keys of [`OPS`] gets.
fn gets<S: Store>() -> (S, Vec<String>) {
    let listed = listed();
    let keys = picks(1).into_iter().map(|i| listed[i].0.clone()).collect();
    (S::build(&listed), keys)
}

#[library_benchmark]
#[bench::larder(setup = gets::<Indexed>)]
#[bench::rwlock_hashmap(setup = gets::<Locked>)]
#[bench::dashmap(setup = gets::<Dash>)]
fn get<S: Store>((store, keys): (S, Vec<String>)) -> S {
    for key in &keys {
        black_box(store.get(key));
    }
    store
}

/// A store and [`OPS`] replacements: a listed key (owned, as a decoded
/// watch event's is) and the other version of its pod, whose labels differ
/// (a `version`/`revision` label changes value).
fn puts<S: Store>() -> (S, Vec<(String, Arc<Pod>)>) {
    let listed = listed();
    let puts = picks(2)
        .into_iter()
        .map(|i| (listed[i].0.clone(), Arc::new(pod(i, 1))))
        .collect();
    (S::build(&listed), puts)
}

#[library_benchmark]
#[bench::larder(setup = puts::<Indexed>)]
#[bench::larder_no_index(setup = puts::<Plain>)]
#[bench::rwlock_hashmap(setup = puts::<Locked>)]
#[bench::dashmap(setup = puts::<Dash>)]
fn insert<S: Store>((store, puts): (S, Vec<(String, Arc<Pod>)>)) -> S {
    for (key, pod) in puts {
        store.put(key, pod);
    }
    store
}

/// Namespaces listed by each `by_index` row (`scripts/instructions.py`
/// reads it here): fewer than [`OPS`], as each of the peers' reads scans
/// every object.
pub const NAMESPACE_READS: usize = 100;

/// A store and [`NAMESPACE_READS`] namespaces to list (100 objects each).
fn namespaces<S: Store>() -> (S, Vec<String>) {
    let listed = listed();
    let namespaces = picks(3)
        .into_iter()
        .take(NAMESPACE_READS)
        .map(|i| listed[i].1.namespace.clone())
        .collect();
    (S::build(&listed), namespaces)
}

#[library_benchmark]
#[bench::larder(setup = namespaces::<Indexed>)]
#[bench::larder_8_shards(setup = namespaces::<Larder<true, 8>>)]
#[bench::larder_16_shards(setup = namespaces::<Larder<true, 16>>)]
#[bench::larder_32_shards(setup = namespaces::<Larder<true, 32>>)]
#[bench::rwlock_hashmap_scan(setup = namespaces::<Locked>)]
#[bench::dashmap_scan(setup = namespaces::<Dash>)]
fn by_index<S: Store>((store, namespaces): (S, Vec<String>)) -> S {
    for namespace in &namespaces {
        black_box(store.in_namespace(namespace));
    }
    store
}

/// A store holding a watch fixture's listed pods and the fixture's first
/// [`OPS`] events (updates, a fifth of them changing a label, deletes and
/// re-adds, as `benches/common/indexed/events.rs` makes them).
fn events<S: Store>() -> (S, Vec<Event>) {
    let fixture = WatchFixture::new(PODS, OPS);
    let listed: Vec<(String, Arc<Pod>)> = fixture
        .listed
        .into_iter()
        .map(|(key, pod)| (key, Arc::new(pod)))
        .collect();
    let events = fixture.events.into_iter().take(OPS).collect();
    (S::build(&listed), events)
}

#[library_benchmark]
#[bench::larder(setup = events::<Indexed>)]
#[bench::larder_no_index(setup = events::<Plain>)]
#[bench::rwlock_hashmap(setup = events::<Locked>)]
#[bench::kube_rs_index_fns(setup = events::<LockedIndexFns>)]
#[bench::dashmap(setup = events::<Dash>)]
fn watch_event<S: Store>((store, events): (S, Vec<Event>)) -> S {
    for event in events {
        match event {
            Event::Put(key, pod) => store.put(key, pod),
            Event::Delete(key) => store.delete(&key),
        }
    }
    store
}

/// Events per write in the `watch_burst` rows: a burst as a reflector
/// applies it when its watch stream already holds that many.
const BURST: usize = 64;

/// larder's store with the informer's two indexes, the fixture's watch
/// events, and how many to apply per write. A store that applies bursts
/// has applied one before (here: `PER_WRITE` of its objects put again, as
/// they are): its first transaction allocates the buffers that the later
/// ones reuse, a cost paid once in the store's life, not per burst.
fn bursts<const PER_WRITE: usize>() -> (Indexed, Vec<Event>, usize) {
    let (store, events) = events::<Indexed>();
    if PER_WRITE > 1 {
        let again: Vec<(String, Arc<Pod>)> = store.0.to_vec().into_iter().take(PER_WRITE).collect();
        store
            .0
            .transaction(|tx| {
                for (key, pod) in again {
                    tx.insert(key, pod)?;
                }
                Ok::<_, larder::IndexError>(())
            })
            .expect("infallible index functions");
    }
    (store, events, PER_WRITE)
}

// The events of `watch_event` applied `BURST` at a time, each burst as one
// `transaction` (the write a reflector's burst makes: every touched shard
// locked once; the reflector's `apply_burst` adds the revision store),
// against one write per event (`larder_one_by_one`: the `watch_event
// larder` row's writes).
#[library_benchmark]
#[bench::larder(setup = bursts::<BURST>)]
#[bench::larder_one_by_one(setup = bursts::<1>)]
fn watch_burst((store, events, per_write): (Indexed, Vec<Event>, usize)) -> Indexed {
    let mut events = events.into_iter().peekable();
    while events.peek().is_some() {
        if per_write == 1 {
            match events.next() {
                Some(Event::Put(key, pod)) => store.put(key, pod),
                Some(Event::Delete(key)) => store.delete(&key),
                None => {}
            }
            continue;
        }
        store
            .0
            .transaction(|tx| {
                for event in events.by_ref().take(per_write) {
                    match event {
                        Event::Put(key, pod) => tx.insert(key, pod)?,
                        Event::Delete(key) => tx.remove(key.as_str()),
                    }
                }
                Ok::<_, larder::IndexError>(())
            })
            .expect("infallible index functions");
    }
    store
}

/// Operations of the `replace` rows (`scripts/instructions.py` reads it
/// here): fewer than [`OPS`], as each relists a hundred objects.
pub const RELISTS: usize = 100;

/// Pods in the relist of the `replace` rows: a hundred per operation, so
/// that a row's instructions per op are those of a hundred objects.
const RELISTED: usize = 100 * RELISTS;

/// A store that takes a whole list at once (an informer's relist).
trait Relist: Store {
    /// An empty store.
    fn empty() -> Self;
    /// Replaces the whole content with `listed`.
    fn relist(&self, listed: Vec<(String, Pod)>);
}

impl Relist for Indexed {
    fn empty() -> Self {
        Self::build(&[])
    }
    fn relist(&self, listed: Vec<(String, Pod)>) {
        self.0
            .replace(listed.into_iter().map(|(key, pod)| (key, Arc::new(pod))))
            .expect("infallible index functions");
    }
}

impl Relist for Locked {
    fn empty() -> Self {
        Self::build(&[])
    }
    /// Builds the new map with no lock held and swaps it in, as the kube-rs
    /// store does.
    fn relist(&self, listed: Vec<(String, Pod)>) {
        let mut fresh = Map::with_hasher(hasher());
        fresh.extend(listed.into_iter().map(|(key, pod)| (key, Arc::new(pod))));
        drop(std::mem::replace(&mut *self.0.write(), fresh));
    }
}

impl Relist for LockedIndexFns {
    fn empty() -> Self {
        Self(Locked::empty())
    }
    /// [`Locked`]'s relist after calling both index functions on every pod
    /// (their values kept as larder keeps them, then dropped): the floor of
    /// a relist into any store that maintains these indexes.
    fn relist(&self, listed: Vec<(String, Pod)>) {
        for (_, pod) in &listed {
            black_box(KubeRsPlusIndexFunctions::values(pod));
        }
        self.0.relist(listed);
    }
}

/// An empty store and [`RELISTED`] pods to relist into it.
fn relists<S: Relist>() -> (S, Vec<(String, Pod)>) {
    let listed = (0..RELISTED)
        .map(|i| {
            let p = pod(i, 0);
            (format!("{}/{}", p.namespace, p.name), p)
        })
        .collect();
    (S::empty(), listed)
}

#[library_benchmark]
#[bench::larder(setup = relists::<Indexed>)]
#[bench::rwlock_hashmap(setup = relists::<Locked>)]
#[bench::kube_rs_index_fns(setup = relists::<LockedIndexFns>)]
fn replace<S: Relist>((store, listed): (S, Vec<(String, Pod)>)) -> S {
    store.relist(listed);
    store
}

/// `u64` keys and objects in the `u64_*` rows: a store with no index used
/// as a plain map (the showdown's `u64 map` mixes), and its peers.
trait U64Map {
    fn filled(keys: &[u64]) -> Self;
    fn insert(&self, key: u64, value: u64);
    fn remove(&self, key: u64);
}

/// Keys in the maps of the `u64_*` rows; the writes draw from twice as
/// many, so half of them find their key.
const U64_KEYS: usize = 10_000;

impl U64Map for larder::IndexedStore<u64, u64, ahash::RandomState> {
    fn filled(keys: &[u64]) -> Self {
        let store = larder::IndexedStore::builder()
            .shards(4)
            .hasher(hasher())
            .build()
            .expect("no index");
        for &key in keys {
            store.insert(key, key).expect("no index");
        }
        store
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        black_box(larder::IndexedStore::insert(self, key, value).expect("no index"));
    }
    #[inline]
    fn remove(&self, key: u64) {
        black_box(larder::IndexedStore::remove(self, &key));
    }
}

impl U64Map for parking_lot::Mutex<HashMap<u64, u64, ahash::RandomState>> {
    fn filled(keys: &[u64]) -> Self {
        let mut map = HashMap::with_hasher(hasher());
        map.extend(keys.iter().map(|&key| (key, key)));
        Self::new(map)
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        black_box(self.lock().insert(key, value));
    }
    #[inline]
    fn remove(&self, key: u64) {
        black_box(self.lock().remove(&key));
    }
}

impl U64Map for DashMap<u64, u64, ahash::RandomState> {
    fn filled(keys: &[u64]) -> Self {
        let map = DashMap::with_hasher(hasher());
        for &key in keys {
            map.insert(key, key);
        }
        map
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        black_box(DashMap::insert(self, key, value));
    }
    #[inline]
    fn remove(&self, key: u64) {
        black_box(DashMap::remove(self, &key));
    }
}

type U64Larder = larder::IndexedStore<u64, u64, ahash::RandomState>;
type U64Mutex = parking_lot::Mutex<HashMap<u64, u64, ahash::RandomState>>;
type U64Dash = DashMap<u64, u64, ahash::RandomState>;

/// A map holding [`U64_KEYS`] keys and [`OPS`] keys drawn from twice as
/// many (half of them stored).
fn u64_writes<M: U64Map>() -> (M, Vec<u64>) {
    let map = M::filled(&scattered(U64_KEYS, 4));
    (map, drawn(&scattered(2 * U64_KEYS, 5), 6))
}

#[library_benchmark]
#[bench::larder_no_index(setup = u64_writes::<U64Larder>)]
#[bench::mutex_hashmap(setup = u64_writes::<U64Mutex>)]
#[bench::dashmap(setup = u64_writes::<U64Dash>)]
fn u64_insert<M: U64Map>((map, keys): (M, Vec<u64>)) -> M {
    for key in keys {
        map.insert(key, key);
    }
    map
}

#[library_benchmark]
#[bench::larder_no_index(setup = u64_writes::<U64Larder>)]
#[bench::mutex_hashmap(setup = u64_writes::<U64Mutex>)]
#[bench::dashmap(setup = u64_writes::<U64Dash>)]
fn u64_remove<M: U64Map>((map, keys): (M, Vec<u64>)) -> M {
    for key in keys {
        map.remove(key);
    }
    map
}

library_benchmark_group!(name = indexed; benchmarks = get, insert, by_index, watch_event, watch_burst, replace, u64_insert, u64_remove);
