//! The store as a plain concurrent map: `u64 -> u64`, no index, 64K
//! scrambled keys drawn uniformly, under the mixes of get / insert / remove
//! 98/1/1, 90/5/5, 50/25/25 and 10/45/45, plain and
//! [`read_mostly`](larder::IndexedStoreBuilder::read_mostly), against
//! `parking_lot::Mutex<HashMap>`, `DashMap` and `scc::HashMap` (all with
//! ahash). Every map starts with every key present; an insert writes a key
//! whether or not it is there, a remove takes it out, so about half the
//! keys are present once the writes have run a while.
//!
//! These rows show what a write costs the store when it has no index to
//! maintain, and whether writers on different cores run in parallel.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use dashmap::DashMap;
use larder::IndexedStore;
use parking_lot::Mutex;

use crate::common::{Contender, Rng, Size, Workload};

/// A map driven by the mixes.
pub trait U64Map: Send + Sync + 'static {
    /// The row's name.
    const NAME: &'static str;
    fn empty() -> Self;
    fn get(&self, key: u64) -> Option<u64>;
    fn insert(&self, key: u64, value: u64);
    fn remove(&self, key: u64);
}

impl U64Map for IndexedStore<u64, u64> {
    const NAME: &'static str = "larder IndexedStore (no index)";
    fn empty() -> Self {
        IndexedStore::new()
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.get_with(&key, |value| *value)
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        IndexedStore::insert(self, key, value).expect("no index");
    }
    #[inline]
    fn remove(&self, key: u64) {
        IndexedStore::remove(self, &key);
    }
}

/// The store built `read_mostly` (striped shard locks).
pub struct ReadMostly(IndexedStore<u64, u64>);

impl U64Map for ReadMostly {
    const NAME: &'static str = "larder IndexedStore (no index, read_mostly)";
    fn empty() -> Self {
        Self(
            IndexedStore::builder()
                .read_mostly(true)
                .build()
                .expect("no capacity to reserve"),
        )
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        U64Map::get(&self.0, key)
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        U64Map::insert(&self.0, key, value);
    }
    #[inline]
    fn remove(&self, key: u64) {
        U64Map::remove(&self.0, key);
    }
}

impl U64Map for Mutex<HashMap<u64, u64, ahash::RandomState>> {
    const NAME: &'static str = "parking_lot::Mutex<HashMap>";
    fn empty() -> Self {
        Mutex::new(HashMap::with_hasher(ahash::RandomState::new()))
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.lock().get(&key).copied()
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        self.lock().insert(key, value);
    }
    #[inline]
    fn remove(&self, key: u64) {
        self.lock().remove(&key);
    }
}

impl U64Map for DashMap<u64, u64, ahash::RandomState> {
    const NAME: &'static str = "DashMap";
    fn empty() -> Self {
        DashMap::with_hasher(ahash::RandomState::new())
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        DashMap::get(self, &key).map(|value| *value)
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        DashMap::insert(self, key, value);
    }
    #[inline]
    fn remove(&self, key: u64) {
        DashMap::remove(self, &key);
    }
}

impl U64Map for scc::HashMap<u64, u64, ahash::RandomState> {
    const NAME: &'static str = "scc::HashMap";
    fn empty() -> Self {
        scc::HashMap::with_hasher(ahash::RandomState::new())
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.read_sync(&key, |_, value| *value)
    }
    #[inline]
    fn insert(&self, key: u64, value: u64) {
        self.upsert_sync(key, value);
    }
    #[inline]
    fn remove(&self, key: u64) {
        self.remove_sync(&key);
    }
}

/// Percentages of get, insert and remove.
#[derive(Clone, Copy, Debug)]
pub struct MapMix {
    pub get: u64,
    pub insert: u64,
}

/// The mixes, by name (get/insert/remove).
pub const MAP_MIXES: [(&str, MapMix); 4] = [
    ("98/1/1", MapMix { get: 98, insert: 1 }),
    ("90/5/5", MapMix { get: 90, insert: 5 }),
    (
        "50/25/25",
        MapMix {
            get: 50,
            insert: 25,
        },
    ),
    (
        "10/45/45",
        MapMix {
            get: 10,
            insert: 45,
        },
    ),
];

/// `n` distinct keys in a scattered order (a bijection of `0..2^64`).
pub fn scrambled_keys(n: usize) -> Vec<u64> {
    (0..n as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555)
        .collect()
}

/// One map shared by the workloads of the mixes, filled on first use.
struct Shared<M> {
    keys: Arc<Vec<u64>>,
    map: OnceLock<M>,
}

impl<M: U64Map> Shared<M> {
    fn map(&self) -> &M {
        self.map.get_or_init(|| {
            let map = M::empty();
            for &key in self.keys.iter() {
                map.insert(key, key);
            }
            map
        })
    }
}

struct MapContender<M> {
    shared: Arc<Shared<M>>,
    mix: MapMix,
}

impl<M: U64Map> Contender for MapContender<M> {
    fn name(&self) -> String {
        M::NAME.to_string()
    }
    fn run(&self, thread: usize, threads: usize, ops: u64) -> u64 {
        let map = self.shared.map();
        let keys = &self.shared.keys;
        let n = keys.len() as u64;
        let mut rng = Rng::new((thread as u64 + 1) * 104_729 + threads as u64);
        let MapMix { get, insert } = self.mix;
        let mut sum = 0u64;
        for _ in 0..ops {
            let roll = rng.below(100);
            let key = keys[rng.below(n) as usize];
            if roll < get {
                sum = sum.wrapping_add(map.get(key).unwrap_or(1));
            } else if roll < get + insert {
                map.insert(key, roll);
                sum = sum.wrapping_add(2);
            } else {
                map.remove(key);
                sum = sum.wrapping_add(3);
            }
        }
        sum
    }
}

fn contender<M: U64Map>(shared: &Arc<Shared<M>>, mix: MapMix) -> Box<dyn Contender> {
    Box::new(MapContender {
        shared: Arc::clone(shared),
        mix,
    })
}

fn shared<M: U64Map>(keys: &Arc<Vec<u64>>) -> Arc<Shared<M>> {
    Arc::new(Shared {
        keys: Arc::clone(keys),
        map: OnceLock::new(),
    })
}

/// The mixes' workloads, at 1 and 2 threads.
pub fn workloads(size: Size) -> Vec<Workload> {
    let (n, label) = match size {
        Size::Full => (65_536, "64K"),
        Size::Quick => (4_096, "4K"),
    };
    let keys = Arc::new(scrambled_keys(n));
    let larder = shared::<IndexedStore<u64, u64>>(&keys);
    let read_mostly = shared::<ReadMostly>(&keys);
    let mutex = shared::<Mutex<HashMap<u64, u64, ahash::RandomState>>>(&keys);
    let dash = shared::<DashMap<u64, u64, ahash::RandomState>>(&keys);
    let scc = shared::<scc::HashMap<u64, u64, ahash::RandomState>>(&keys);
    MAP_MIXES
        .iter()
        .map(|&(name, mix)| Workload {
            family: "indexed",
            name: format!("u64 map {name} {label}"),
            contenders: vec![
                contender(&larder, mix),
                contender(&read_mostly, mix),
                contender(&mutex, mix),
                contender(&dash, mix),
                contender(&scc, mix),
            ],
            threads: vec![1, 2],
        })
        .collect()
}
