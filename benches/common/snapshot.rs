//! Snapshot family: readers loading a 128-byte configuration while one
//! writer publishes a new one every millisecond.

use std::sync::Arc;
use std::time::Duration;

use super::{Background, Contender};

/// The value under test: a 128-byte configuration struct.
#[derive(Clone, Debug)]
pub struct Config {
    /// A field readers use.
    pub generation: u64,
    /// Padding up to 128 bytes, as a real config struct would carry.
    pub payload: [u64; 15],
}

impl Config {
    /// The configuration of generation `generation`.
    pub fn new(generation: u64) -> Self {
        Self {
            generation,
            payload: [generation; 15],
        }
    }
}

/// How often the background writer publishes.
pub const WRITE_PERIOD: Duration = Duration::from_millis(1);

/// Reader thread counts measured by default.
pub const THREADS: &[usize] = &[1, 2, 4];

macro_rules! contender {
    ($ty:ident, $name:expr, $store:ty, $init:expr, |$s:ident, $g:ident| $publish:expr, |$r:ident| $read:expr) => {
        /// A contender of the snapshot family.
        pub struct $ty(Arc<$store>);
        impl $ty {
            /// A fresh contender holding generation 0.
            pub fn new() -> Self {
                Self(Arc::new($init))
            }
        }
        impl Contender for $ty {
            fn name(&self) -> String {
                $name.to_string()
            }
            fn start(&self) -> Option<Background> {
                let $s = Arc::clone(&self.0);
                let mut $g = 0u64;
                Some(Background::every(WRITE_PERIOD, move || {
                    $g += 1;
                    $publish;
                }))
            }
            fn run(&self, _thread: usize, _threads: usize, ops: u64) -> u64 {
                let $r = &*self.0;
                let mut sum = 0u64;
                for _ in 0..ops {
                    sum = sum.wrapping_add($read);
                }
                sum
            }
        }
    };
}

contender!(
    LarderLoad,
    "larder Snapshot::load",
    larder::Snapshot<Config>,
    larder::Snapshot::new(Config::new(0)),
    |s, g| {
        s.store(Config::new(g));
    },
    |r| r.load().generation
);

contender!(
    ArcSwapLoad,
    "ArcSwap::load",
    arc_swap::ArcSwap<Config>,
    arc_swap::ArcSwap::from_pointee(Config::new(0)),
    |s, g| s.store(Arc::new(Config::new(g))),
    |r| r.load().generation
);

contender!(
    ParkingLotRwLock,
    "parking_lot::RwLock<Arc<T>>",
    parking_lot::RwLock<Arc<Config>>,
    parking_lot::RwLock::new(Arc::new(Config::new(0))),
    |s, g| {
        *s.write() = Arc::new(Config::new(g));
    },
    |r| r.read().generation
);

contender!(
    StdRwLock,
    "std::sync::RwLock<Arc<T>>",
    std::sync::RwLock<Arc<Config>>,
    std::sync::RwLock::new(Arc::new(Config::new(0))),
    |s, g| {
        *s.write().unwrap() = Arc::new(Config::new(g));
    },
    |r| r.read().unwrap().generation
);

contender!(
    StdMutex,
    "std::sync::Mutex<Arc<T>>",
    std::sync::Mutex<Arc<Config>>,
    std::sync::Mutex::new(Arc::new(Config::new(0))),
    |s, g| {
        *s.lock().unwrap() = Arc::new(Config::new(g));
    },
    |r| r.lock().unwrap().generation
);

/// larder's per-thread cached reader.
pub struct LarderCached(Arc<larder::Snapshot<Config>>);

impl LarderCached {
    /// A fresh contender holding generation 0.
    pub fn new() -> Self {
        Self(Arc::new(larder::Snapshot::new(Config::new(0))))
    }
}

impl Contender for LarderCached {
    fn name(&self) -> String {
        "larder CachedReader::load".to_string()
    }
    fn start(&self) -> Option<Background> {
        let s = Arc::clone(&self.0);
        let mut g = 0;
        Some(Background::every(WRITE_PERIOD, move || {
            g += 1;
            s.store(Config::new(g));
        }))
    }
    fn run(&self, _thread: usize, _threads: usize, ops: u64) -> u64 {
        let mut reader = self.0.cached_reader();
        let mut sum = 0u64;
        for _ in 0..ops {
            sum = sum.wrapping_add(reader.load().generation);
        }
        sum
    }
}

/// arc-swap's own `Cache`, the reference for the cached reader.
pub struct ArcSwapCache(Arc<arc_swap::ArcSwap<Config>>);

impl ArcSwapCache {
    /// A fresh contender holding generation 0.
    pub fn new() -> Self {
        Self(Arc::new(arc_swap::ArcSwap::from_pointee(Config::new(0))))
    }
}

impl Contender for ArcSwapCache {
    fn name(&self) -> String {
        "arc_swap::Cache::load".to_string()
    }
    fn start(&self) -> Option<Background> {
        let s = Arc::clone(&self.0);
        let mut g = 0;
        Some(Background::every(WRITE_PERIOD, move || {
            g += 1;
            s.store(Arc::new(Config::new(g)));
        }))
    }
    fn run(&self, _thread: usize, _threads: usize, ops: u64) -> u64 {
        let mut cache = arc_swap::Cache::new(&*self.0);
        let mut sum = 0u64;
        for _ in 0..ops {
            sum = sum.wrapping_add(cache.load().generation);
        }
        sum
    }
}

/// The family's workloads: plain loads against locks and `ArcSwap::load`,
/// and cached per-thread readers against arc-swap's `Cache`.
pub fn workloads(_size: super::Size) -> Vec<super::Workload> {
    vec![
        super::Workload {
            family: "snapshot",
            name: "load under 1ms writer".to_string(),
            contenders: vec![
                Box::new(LarderLoad::new()),
                Box::new(ArcSwapLoad::new()),
                Box::new(ParkingLotRwLock::new()),
                Box::new(StdRwLock::new()),
                Box::new(StdMutex::new()),
            ],
            threads: THREADS.to_vec(),
        },
        super::Workload {
            family: "snapshot",
            name: "cached reader under 1ms writer".to_string(),
            contenders: vec![
                Box::new(LarderCached::new()),
                Box::new(ArcSwapCache::new()),
                Box::new(ArcSwapLoad::new()),
            ],
            threads: THREADS.to_vec(),
        },
    ]
}
