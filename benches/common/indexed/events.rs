//! Watch events and initial loads: what an informer does to its store.
//!
//! Contenders, each fed the same objects:
//!
//! - **larder `IndexedStore`, 2 indexes**: namespace and labels (every
//!   `key=value` pair, 3 to 5 per pod), as an informer keeps them.
//! - **kube-rs design**: `parking_lot::RwLock<AHashMap<String, Arc<Pod>>>`,
//!   no indexes (kube-rs `reflector::Store`); the baseline.
//! - **larder `IndexedStore`, no indexes**: what the store costs before
//!   any index maintenance.
//!
//! Workloads over [`PODS`] pods:
//!
//! - **watch events**: a stream of [`Event`]s as a watch delivers them
//!   (see [`WatchFixture::new`]: mostly updates, about a fifth of which
//!   change a label, plus deletes and re-adds), each applied as one write.
//!   The stream leaves the store as it found it, so it is applied over and
//!   over. Keys and objects arrive owned, as a decoded event's do; building
//!   them is not timed.
//! - **initial load**: every pod listed, loaded into an empty store with one
//!   `replace` (the kube-rs design builds an `AHashMap` and swaps it in; the
//!   bare `AHashMap` build is reported too). Dropping the filled store is not
//!   timed.
//!
//! [`interleaved`] measures the contenders round-robin in one run and prints
//! the ratios: on a machine whose speed drifts, ratios of runs taken
//! minutes apart mean little.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ahash::AHashMap;

use super::super::Rng;
use super::{Pod, labels_of, namespace_of, pod};

/// The number of pods in the store.
pub const PODS: usize = 100_000;

/// Events in one pass of the watch stream (before the closing events that
/// put the store back as it was).
pub const EVENTS: usize = 100_000;

/// Events copied out of the fixture and applied per timed chunk.
pub const CHUNK: usize = 1_000;

/// One watch event, as a reflector applies it.
#[derive(Clone)]
pub enum Event {
    /// An object added or modified: its key and the new object.
    Put(String, Arc<Pod>),
    /// An object deleted.
    Delete(String),
}

/// The initial list and a watch stream over it.
pub struct WatchFixture {
    /// Every pod as listed: `(namespace/name, pod)`.
    pub listed: Vec<(String, Pod)>,
    /// The watch stream; applied to a store holding `listed`, it leaves the
    /// store holding `listed` again (same keys, same index values).
    pub events: Vec<Event>,
    /// Counts of the stream's kinds of event, for the report.
    pub mix: EventMix,
}

/// How many events of each kind a stream holds.
#[derive(Clone, Copy, Debug, Default)]
pub struct EventMix {
    /// Updates that change no index value (status, spec, annotations).
    pub plain_updates: usize,
    /// Updates that change one label value.
    pub label_updates: usize,
    /// Deletes.
    pub deletes: usize,
    /// Re-adds of deleted keys.
    pub adds: usize,
}

/// Pod `i` in label variant `variant` (0 or 1: they differ in one label),
/// at revision `revision` (its payload differs from every other revision).
fn version(i: usize, variant: u64, revision: u64) -> Pod {
    let mut p = pod(i, variant);
    p.generation = revision;
    p
}

/// A change scheduled to undo an earlier one, so the stream closes.
enum Undo {
    /// Put pod `i` back in label variant 0.
    Relabel(usize),
    /// Add pod `i` back.
    Readd(usize),
}

impl WatchFixture {
    /// `pods` pods and a stream of about `events` events: each step picks a
    /// random pod and updates it (72%), updates it changing a label (10%,
    /// the label changes back 1,000 events later), or deletes it (5%, it is
    /// added back 1,000 events later); the remaining 13% are those changes
    /// back. Every event carries a new revision of the object. Pending
    /// changes back close the stream.
    pub fn new(pods: usize, events: usize) -> Self {
        const DELAY: usize = 1_000;
        let listed: Vec<(String, Pod)> = (0..pods)
            .map(|i| {
                let p = version(i, 0, 0);
                (format!("{}/{}", p.namespace, p.name), p)
            })
            .collect();
        let keys: Vec<&String> = listed.iter().map(|(k, _)| k).collect();
        // Per pod: present, label variant, and whether a change back is due.
        let mut present = vec![true; pods];
        let mut variant = vec![0u64; pods];
        let mut pending = vec![false; pods];
        let mut undo: VecDeque<(usize, Undo)> = VecDeque::new();
        let mut out = Vec::with_capacity(events + events / 5);
        let mut mix = EventMix::default();
        let mut rng = Rng::new(0x5EED);
        let mut revision = 1;
        let mut put = |out: &mut Vec<Event>, i: usize, v: u64| {
            revision += 1;
            out.push(Event::Put(
                keys[i].clone(),
                Arc::new(version(i, v, revision)),
            ));
        };
        let mut step = 0;
        while step < events || !undo.is_empty() {
            let due = undo
                .front()
                .is_some_and(|&(at, _)| at <= step || step >= events);
            if due {
                let (_, change) = undo.pop_front().expect("front checked");
                match change {
                    Undo::Relabel(i) => {
                        variant[i] = 0;
                        put(&mut out, i, 0);
                        mix.label_updates += 1;
                        pending[i] = false;
                    }
                    Undo::Readd(i) => {
                        present[i] = true;
                        put(&mut out, i, variant[i]);
                        mix.adds += 1;
                        pending[i] = false;
                    }
                }
                step += 1;
                continue;
            }
            let i = rng.below(pods as u64) as usize;
            if !present[i] {
                continue;
            }
            let roll = rng.below(100);
            if roll < 5 && !pending[i] {
                present[i] = false;
                pending[i] = true;
                out.push(Event::Delete(keys[i].clone()));
                mix.deletes += 1;
                undo.push_back((step + DELAY, Undo::Readd(i)));
            } else if roll < 15 && !pending[i] {
                variant[i] = 1;
                pending[i] = true;
                put(&mut out, i, 1);
                mix.label_updates += 1;
                undo.push_back((step + DELAY, Undo::Relabel(i)));
            } else {
                put(&mut out, i, variant[i]);
                mix.plain_updates += 1;
            }
            step += 1;
        }
        Self {
            listed,
            events: out,
            mix,
        }
    }

    /// The shared fixture of [`PODS`] pods and [`EVENTS`] events.
    pub fn get() -> &'static Self {
        static FIXTURE: OnceLock<WatchFixture> = OnceLock::new();
        FIXTURE.get_or_init(|| Self::new(PODS, EVENTS))
    }
}

/// A store an informer fills: from a list, then from watch events.
pub trait InformerStore: Send + Sync + 'static {
    /// Name shown in reports.
    const NAME: &'static str;
    /// An empty store.
    fn empty() -> Self;
    /// Loads `listed` into the (empty) store at once.
    fn load(&self, listed: Vec<(String, Pod)>);
    /// Applies one watch event.
    fn apply(&self, event: Event);
}

/// larder's store with a namespace and a label index.
pub type Indexed = super::Larder;

impl InformerStore for Indexed {
    const NAME: &'static str = "larder IndexedStore, 2 indexes";
    fn empty() -> Self {
        larder::IndexedStore::builder()
            .index("namespace", |pod: &Arc<Pod>| namespace_of(pod))
            .index("label", |pod: &Arc<Pod>| labels_of(pod))
            .build()
            .expect("distinct index names")
    }
    fn load(&self, listed: Vec<(String, Pod)>) {
        self.replace(listed.into_iter().map(|(k, p)| (k, Arc::new(p))))
            .expect("infallible index functions");
    }
    #[inline]
    fn apply(&self, event: Event) {
        match event {
            Event::Put(key, pod) => drop(self.insert(key, pod).expect("infallible")),
            Event::Delete(key) => drop(self.remove(&key)),
        }
    }
}

/// larder's store with no index.
pub struct Unindexed(larder::IndexedStore<String, Arc<Pod>>);

impl InformerStore for Unindexed {
    const NAME: &'static str = "larder IndexedStore, no index";
    fn empty() -> Self {
        Self(larder::IndexedStore::new())
    }
    fn load(&self, listed: Vec<(String, Pod)>) {
        self.0
            .replace(listed.into_iter().map(|(k, p)| (k, Arc::new(p))))
            .expect("no index functions");
    }
    #[inline]
    fn apply(&self, event: Event) {
        match event {
            Event::Put(key, pod) => drop(self.0.insert(key, pod).expect("infallible")),
            Event::Delete(key) => drop(self.0.remove(&key)),
        }
    }
}

/// The kube-rs `reflector::Store` design: one `RwLock` over an `AHashMap`.
pub struct KubeRs(parking_lot::RwLock<AHashMap<String, Arc<Pod>>>);

impl InformerStore for KubeRs {
    const NAME: &'static str = "kube-rs RwLock<AHashMap>, no index";
    fn empty() -> Self {
        Self(parking_lot::RwLock::new(AHashMap::new()))
    }
    fn load(&self, listed: Vec<(String, Pod)>) {
        let fresh: AHashMap<String, Arc<Pod>> =
            listed.into_iter().map(|(k, p)| (k, Arc::new(p))).collect();
        let old = std::mem::replace(&mut *self.0.write(), fresh);
        drop(old);
    }
    #[inline]
    fn apply(&self, event: Event) {
        match event {
            Event::Put(key, pod) => drop(self.0.write().insert(key, pod)),
            Event::Delete(key) => drop(self.0.write().remove(&key)),
        }
    }
}

/// The kube-rs design that also calls the two index functions on every
/// object and keeps their values as larder does (sorted `Arc<str>`s), then
/// throws them away: the floor of any store that maintains these indexes.
pub struct KubeRsPlusIndexFunctions(KubeRs);

impl KubeRsPlusIndexFunctions {
    /// The two index functions' values for `pod`, kept as larder keeps them
    /// (sorted, deduplicated shared strings).
    pub fn values(pod: &Pod) -> [Vec<Arc<str>>; 2] {
        let namespace = namespace_of(pod).into_iter().map(Arc::from).collect();
        let mut labels: Vec<Arc<str>> = labels_of(pod).into_iter().map(Arc::from).collect();
        labels.sort_unstable();
        labels.dedup();
        [namespace, labels]
    }
}

impl InformerStore for KubeRsPlusIndexFunctions {
    const NAME: &'static str = "kube-rs + index function calls";
    fn empty() -> Self {
        Self(KubeRs::empty())
    }
    fn load(&self, listed: Vec<(String, Pod)>) {
        for (_, pod) in &listed {
            std::hint::black_box(Self::values(pod));
        }
        self.0.load(listed);
    }
    #[inline]
    fn apply(&self, event: Event) {
        if let Event::Put(_, pod) = &event {
            std::hint::black_box(Self::values(pod));
        }
        self.0.apply(event);
    }
}

/// One contender fed watch events: its store (loaded with the fixture's
/// list on first use) and where in the stream it is.
pub struct Watched<S> {
    store: OnceLock<S>,
    next: Mutex<usize>,
}

impl<S: InformerStore> Watched<S> {
    /// A contender whose store is built on first use.
    pub fn new() -> Self {
        Self {
            store: OnceLock::new(),
            next: Mutex::new(0),
        }
    }

    fn store(&self) -> &S {
        self.store.get_or_init(|| {
            let store = S::empty();
            store.load(WatchFixture::get().listed.clone());
            store
        })
    }

    /// Applies the next `n` events of the stream (wrapping around) and
    /// returns the time taken. Events are copied out of the fixture (not
    /// timed) and applied in chunks of [`CHUNK`], as a watch stream
    /// delivers them a few at a time: one copied batch of the whole stream
    /// would make every contender pay for a 3 MB buffer's cache misses and
    /// its free (which makes glibc consolidate the small chunks freed before
    /// it) inside the timed loop.
    pub fn apply(&self, n: usize) -> Duration {
        let store = self.store();
        let events = &WatchFixture::get().events;
        let mut next = self.next.lock().expect("not poisoned");
        let mut elapsed = Duration::ZERO;
        let mut batch: Vec<Event> = Vec::with_capacity(CHUNK.min(n));
        let mut left = n;
        while left > 0 {
            let take = CHUNK.min(left);
            batch.extend((0..take).map(|k| events[(*next + k) % events.len()].clone()));
            *next = (*next + take) % events.len();
            left -= take;
            let start = Instant::now();
            for event in batch.drain(..) {
                store.apply(event);
            }
            elapsed += start.elapsed();
        }
        elapsed
    }
}

impl<S: InformerStore> Default for Watched<S> {
    fn default() -> Self {
        Self::new()
    }
}

/// Loads the fixture's list into an empty `S` and returns the time taken
/// (copying the list and dropping the store are not timed).
pub fn load_time<S: InformerStore>() -> Duration {
    let listed = WatchFixture::get().listed.clone();
    let store = S::empty();
    let start = Instant::now();
    store.load(listed);
    let elapsed = start.elapsed();
    drop(store);
    elapsed
}

/// Builds a bare `AHashMap<String, Arc<Pod>>` of the fixture's list and
/// returns the time taken (copying the list and dropping the map are not
/// timed).
pub fn hashmap_build_time() -> Duration {
    let listed = WatchFixture::get().listed.clone();
    let start = Instant::now();
    let map: AHashMap<String, Arc<Pod>> =
        listed.into_iter().map(|(k, p)| (k, Arc::new(p))).collect();
    let elapsed = start.elapsed();
    drop(std::hint::black_box(map));
    elapsed
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    }
}

/// Measures the contenders round-robin for `rounds` rounds (the order
/// rotates each round) and prints, per contender, the median time per event
/// and per load, and the medians of the per-round ratios to the kube-rs
/// design and to the bare `AHashMap` build.
pub fn interleaved(rounds: usize) {
    let fixture = WatchFixture::get();
    let n = fixture.events.len();
    println!(
        "interleaved: {PODS} pods, {n} events per pass ({:?}), {rounds} rounds",
        fixture.mix
    );
    let indexed = Watched::<Indexed>::new();
    let unindexed = Watched::<Unindexed>::new();
    let kube = Watched::<KubeRs>::new();
    let floor = Watched::<KubeRsPlusIndexFunctions>::new();
    // Build the stores and warm them with one pass each, untimed.
    indexed.apply(n);
    unindexed.apply(n);
    kube.apply(n);
    floor.apply(n);
    // Per contender: times, and ratios to the baseline (index 1) per round.
    const APPLY: usize = 4;
    const LOAD: usize = 5;
    let mut apply: [Vec<f64>; APPLY] = Default::default();
    let mut apply_ratio: [Vec<f64>; APPLY] = Default::default();
    let mut load: [Vec<f64>; LOAD] = Default::default();
    let mut load_ratio: [Vec<f64>; LOAD] = Default::default();
    let per_event = |d: Duration| d.as_secs_f64() * 1e9 / n as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for round in 0..rounds {
        let mut a = [0.0; APPLY];
        for k in 0..APPLY {
            let which = (round + k) % APPLY;
            a[which] = per_event(match which {
                0 => indexed.apply(n),
                1 => kube.apply(n),
                2 => unindexed.apply(n),
                _ => floor.apply(n),
            });
        }
        let mut l = [0.0; LOAD];
        for k in 0..LOAD {
            let which = (round + k) % LOAD;
            l[which] = ms(match which {
                0 => load_time::<Indexed>(),
                1 => hashmap_build_time(),
                2 => load_time::<KubeRs>(),
                3 => load_time::<Unindexed>(),
                _ => load_time::<KubeRsPlusIndexFunctions>(),
            });
        }
        for k in 0..APPLY {
            apply[k].push(a[k]);
            apply_ratio[k].push(a[k] / a[1]);
        }
        for k in 0..LOAD {
            load[k].push(l[k]);
            load_ratio[k].push(l[k] / l[1]);
        }
    }
    println!("watch events: median ns/event, median of the rounds' ratios to kube-rs");
    let names = [
        Indexed::NAME,
        KubeRs::NAME,
        Unindexed::NAME,
        KubeRsPlusIndexFunctions::NAME,
    ];
    for k in 0..APPLY {
        println!(
            "  {:<46} {:>8.1} ns  {:.2}x",
            names[k],
            median(apply[k].clone()),
            median(apply_ratio[k].clone())
        );
    }
    println!("initial load of {PODS}: median ms, median of the rounds' ratios to the bare build");
    let names = [
        "larder IndexedStore::replace, 2 indexes",
        "bare AHashMap build",
        "kube-rs: build AHashMap, swap under the lock",
        "larder IndexedStore::replace, no index",
        "kube-rs + index function calls",
    ];
    for k in 0..LOAD {
        println!(
            "  {:<46} {:>8.1} ms  {:.2}x",
            names[k],
            median(load[k].clone()),
            median(load_ratio[k].clone())
        );
    }
}

/// Loads the list into an empty indexed store `passes` times, and nothing
/// else: a target for a profiler.
pub fn profile_load(passes: usize) {
    for _ in 0..passes {
        std::hint::black_box(load_time::<Indexed>());
    }
}

/// Applies the watch stream to larder's indexed store `passes` times, and
/// nothing else: a target for a profiler.
pub fn profile_events(passes: usize) {
    let indexed = Watched::<Indexed>::new();
    let n = WatchFixture::get().events.len();
    for _ in 0..passes {
        std::hint::black_box(indexed.apply(n));
    }
}
