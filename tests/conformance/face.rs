//! The one interface the conformance cases see: [`Face`], its [`Config`],
//! and its two implementations. Everything face-specific (which settings a
//! face supports, which builder call sets each one) is in this file, one
//! `supports` and one `build` per face.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use larder::{BuildError, CacheStats, LruCache, ManualClock, RemovalCause, TypedCache};

use crate::hasher::{Collide, TestState};

/// The policy axis of the matrix.
pub use larder::EvictionPolicy as Policy;

/// The cases' key and value types: `String` keys (every lookup borrows a
/// `&str`) and `u32` values (a weigher reads the weight from the value).
pub type Key = String;
pub type Value = u32;
/// What the removal listener heard.
pub type Event = (Key, Value, RemovalCause);
pub type Log = Arc<Mutex<Vec<Event>>>;
pub type Weigher = fn(&Key, &Value) -> u32;

/// The weigher of the weighted column: 0 to 15 by value (0 counts as 1).
pub fn weight_of(_key: &Key, value: &Value) -> u32 {
    value % 16
}

/// The weight the bound counts: at least 1.
pub fn counted_weight(value: Value) -> usize {
    weight_of(&String::new(), &value).max(1) as usize
}

/// The expiry column of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    Never,
    /// `time_to_live(TTL)`.
    Ttl,
    /// `time_to_idle(TTI)`.
    Tti,
}

/// Time to live of the `Ttl` column.
pub const TTL: Duration = Duration::from_secs(10);
/// Time to idle of the `Tti` column: 64 s, so that whole-second steps are
/// whole steps of the documented read resolution (tti / 64) and a read at
/// a new second is always recorded.
pub const TTI: Duration = Duration::from_secs(64);

/// One cell of the matrix: policy × weights × expiry × hashing (the face
/// is the type parameter).
#[derive(Debug, Clone, Copy)]
pub struct Axes {
    /// `None`: the face's default (no `policy` call).
    pub policy: Option<Policy>,
    pub weighted: bool,
    pub expiry: Expiry,
    /// Whether the keys' hashes collide (every promise holds either way).
    pub collide: Collide,
}

impl Axes {
    /// A configuration of this cell with room for `entries` entries of
    /// weight up to 15 (the capacity is an entry count without a weigher,
    /// a total weight with one).
    pub fn config(&self, entries: usize) -> Config {
        let capacity = if self.weighted { entries * 15 } else { entries };
        self.config_with_capacity(capacity)
    }

    /// A configuration of this cell with exactly this capacity.
    pub fn config_with_capacity(&self, capacity: usize) -> Config {
        Config {
            capacity: Some(capacity),
            policy: self.policy,
            weigher: self.weighted.then_some(weight_of as Weigher),
            time_to_live: (self.expiry == Expiry::Ttl).then_some(TTL),
            time_to_idle: (self.expiry == Expiry::Tti).then_some(TTI),
            clock: ManualClock::new(),
            listener: None,
            collide: self.collide,
        }
    }
}

/// Everything a case may ask of a face's builder.
#[derive(Clone)]
pub struct Config {
    /// The bound: entries, or total weight with a weigher.
    pub capacity: Option<usize>,
    pub policy: Option<Policy>,
    pub weigher: Option<Weigher>,
    pub time_to_live: Option<Duration>,
    pub time_to_idle: Option<Duration>,
    /// Always set: a face that reads time reads this one.
    pub clock: ManualClock,
    pub listener: Option<Log>,
    /// The hasher's collisions (`TestState::colliding`).
    pub collide: Collide,
}

impl Config {
    /// Adds a listener that records every removal; returns its log.
    pub fn listen(&mut self) -> Log {
        let log = Log::default();
        self.listener = Some(Arc::clone(&log));
        log
    }
}

/// The operations the cases run, with the same meaning on every face.
pub trait Face: Send + Sync + Sized {
    const NAME: &'static str;

    /// Whether `build` can honour every setting of `config` today (`matrix!`
    /// generates only such cells; `run` fails any other).
    fn supports(config: &Config) -> bool;

    /// Builds the face from `config` (which `supports` accepted).
    fn build(config: &Config) -> Self;

    /// Whether a write never evicts the entry it stores (unless that entry
    /// alone is heavier than the capacity).
    fn keeps_what_it_stores(config: &Config) -> bool;

    fn get(&self, key: &str) -> Option<Value>;
    fn get_with<R>(&self, key: &str, f: impl FnOnce(&Value) -> R) -> Option<R>;
    fn insert(&self, key: Key, value: Value) -> Option<Value>;
    fn remove(&self, key: &str) -> Option<Value>;
    fn contains_key(&self, key: &str) -> bool;
    fn len(&self) -> usize;
    fn clear(&self);
    fn to_vec(&self) -> Vec<(Key, Value)>;
    fn get_or_init(&self, key: &str, f: impl FnOnce() -> Value) -> Value;
    fn get_or_try_init<E: Send + Sync + 'static>(
        &self,
        key: &str,
        f: impl FnOnce() -> Result<Value, E>,
    ) -> Result<Value, Arc<E>>;
    fn stats(&self) -> CacheStats;
    fn resize(&self, capacity: usize) -> Result<(), BuildError>;
    fn purge_expired(&self) -> usize;
    fn check_invariants(&self);
}

/// A listener that appends to `log`.
fn recorder(log: &Log) -> impl Fn(Key, Value, RemovalCause) + Send + Sync + 'static {
    let log = Arc::clone(log);
    move |key, value, cause| log.lock().unwrap().push((key, value, cause))
}

// ---------------------------------------------------------------------------
// LruCache

pub type Lru = LruCache<Key, Value, TestState>;

impl Face for Lru {
    const NAME: &'static str = "LruCache";

    fn supports(config: &Config) -> bool {
        config.capacity.is_some()
    }

    fn build(config: &Config) -> Self {
        assert!(Self::supports(config));
        // One shard: the bound is then one budget for the whole cache, as
        // `TypedCache`'s is (with more shards each holds its share), so the
        // cases' model of the bound holds exactly.
        let mut builder = LruCache::builder()
            .capacity(config.capacity.unwrap())
            .shards(1)
            .hasher(TestState::colliding(config.collide));
        if let Some(policy) = config.policy {
            builder = builder.policy(policy);
        }
        if let Some(weigher) = config.weigher {
            builder = builder.weigher(weigher);
        }
        if let Some(ttl) = config.time_to_live {
            builder = builder.time_to_live(ttl);
        }
        if let Some(tti) = config.time_to_idle {
            builder = builder.time_to_idle(tti);
        }
        if let Some(log) = &config.listener {
            builder = builder.eviction_listener(recorder(log));
        }
        builder.clock(config.clock.clone()).build().unwrap()
    }

    fn keeps_what_it_stores(_config: &Config) -> bool {
        // Documented: a shard never evicts the entry it inserts.
        true
    }

    fn get(&self, key: &str) -> Option<Value> {
        LruCache::get(self, key)
    }
    fn get_with<R>(&self, key: &str, f: impl FnOnce(&Value) -> R) -> Option<R> {
        LruCache::get_with(self, key, f)
    }
    fn insert(&self, key: Key, value: Value) -> Option<Value> {
        LruCache::insert(self, key, value)
    }
    fn remove(&self, key: &str) -> Option<Value> {
        LruCache::remove(self, key)
    }
    fn contains_key(&self, key: &str) -> bool {
        LruCache::contains_key(self, key)
    }
    fn len(&self) -> usize {
        LruCache::len(self)
    }
    fn clear(&self) {
        LruCache::clear(self)
    }
    fn to_vec(&self) -> Vec<(Key, Value)> {
        LruCache::to_vec(self)
    }
    fn get_or_init(&self, key: &str, f: impl FnOnce() -> Value) -> Value {
        LruCache::get_or_init(self, key, f)
    }
    fn get_or_try_init<E: Send + Sync + 'static>(
        &self,
        key: &str,
        f: impl FnOnce() -> Result<Value, E>,
    ) -> Result<Value, Arc<E>> {
        LruCache::get_or_try_init(self, key, f)
    }
    fn stats(&self) -> CacheStats {
        LruCache::stats(self)
    }
    fn resize(&self, capacity: usize) -> Result<(), BuildError> {
        LruCache::resize(self, capacity)
    }
    fn purge_expired(&self) -> usize {
        LruCache::purge_expired(self)
    }
    fn check_invariants(&self) {
        LruCache::check_invariants(self)
    }
}

// ---------------------------------------------------------------------------
// TypedCache

pub type Typed = TypedCache<Key, Value, TestState>;

impl Face for Typed {
    const NAME: &'static str = "TypedCache";

    fn supports(_config: &Config) -> bool {
        // Every policy, weigher and expiry; bounded or not.
        true
    }

    fn build(config: &Config) -> Self {
        assert!(Self::supports(config));
        // 16 shards whatever the capacity (a small bounded cache gets fewer
        // by default), with keys spread over them: the cases' keys live in
        // different shards, and a write or an expired read sweeps only its
        // own.
        let mut builder = TypedCache::<Key, Value>::builder()
            .hasher(TestState::colliding(config.collide))
            .shards(16)
            .clock(config.clock.clone());
        if let Some(capacity) = config.capacity {
            builder = builder.capacity(capacity);
        }
        if let Some(policy) = config.policy {
            builder = builder.policy(policy);
        }
        if let Some(weigher) = config.weigher {
            builder = builder.weigher(weigher);
        }
        if let Some(ttl) = config.time_to_live {
            builder = builder.time_to_live(ttl);
        }
        if let Some(tti) = config.time_to_idle {
            builder = builder.time_to_idle(tti);
        }
        if let Some(log) = &config.listener {
            builder = builder.eviction_listener(recorder(log));
        }
        builder.build().unwrap()
    }

    fn keeps_what_it_stores(_config: &Config) -> bool {
        // Every policy: eviction never takes the entry just stored.
        true
    }

    fn get(&self, key: &str) -> Option<Value> {
        TypedCache::get(self, key)
    }
    fn get_with<R>(&self, key: &str, f: impl FnOnce(&Value) -> R) -> Option<R> {
        TypedCache::get_with(self, key, f)
    }
    fn insert(&self, key: Key, value: Value) -> Option<Value> {
        TypedCache::insert(self, key, value)
    }
    fn remove(&self, key: &str) -> Option<Value> {
        TypedCache::remove(self, key)
    }
    fn contains_key(&self, key: &str) -> bool {
        TypedCache::contains_key(self, key)
    }
    fn len(&self) -> usize {
        TypedCache::len(self)
    }
    fn clear(&self) {
        TypedCache::clear(self)
    }
    fn to_vec(&self) -> Vec<(Key, Value)> {
        TypedCache::to_vec(self)
    }
    fn get_or_init(&self, key: &str, f: impl FnOnce() -> Value) -> Value {
        TypedCache::get_or_init(self, key, f)
    }
    fn get_or_try_init<E: Send + Sync + 'static>(
        &self,
        key: &str,
        f: impl FnOnce() -> Result<Value, E>,
    ) -> Result<Value, Arc<E>> {
        TypedCache::get_or_try_init(self, key, f)
    }
    fn stats(&self) -> CacheStats {
        TypedCache::stats(self)
    }
    fn resize(&self, capacity: usize) -> Result<(), BuildError> {
        TypedCache::resize(self, capacity)
    }
    fn purge_expired(&self) -> usize {
        TypedCache::purge_expired(self)
    }
    fn check_invariants(&self) {
        TypedCache::check_invariants(self)
    }
}

/// Events in a fixed order (`RemovalCause` has no `Ord`).
pub fn sorted(mut events: Vec<Event>) -> Vec<Event> {
    events.sort_by_cached_key(|(k, v, c)| (k.clone(), *v, format!("{c:?}")));
    events
}
