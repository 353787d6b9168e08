//! The reference model the cases check a face against: which entries are
//! live (with their times), which expired and are not yet released, the
//! bound, the counters, and what the listener must hear.
//!
//! The model does not choose eviction victims (policies differ): it learns
//! them from the listener and checks that each was live with that value,
//! that the bound holds after every operation, and that no eviction was
//! needless (the entries left plus the last one evicted would not fit).

use std::collections::BTreeMap;
use std::time::Duration;

use larder::RemovalCause;

use crate::face::{Config, Event, Face, Key, Log, Value, counted_weight, sorted};

/// A live entry: its value, when it was stored and when last read.
#[derive(Debug, Clone, Copy)]
struct Held {
    value: Value,
    created: Duration,
    accessed: Duration,
}

/// The counters the model predicts (`CacheStats` minus `len`/`capacity`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub hits: u64,
    pub misses: u64,
    pub inserts: u64,
    pub evictions: u64,
    pub inits: u64,
    pub init_failures: u64,
}

pub struct Model {
    live: BTreeMap<Key, Held>,
    /// Expired, not yet heard as `Expired` (still counted by `len`).
    dead: Vec<(Key, Value)>,
    now: Duration,
    ttl: Option<Duration>,
    tti: Option<Duration>,
    pub capacity: usize,
    weighted: bool,
    pub counts: Counts,
    /// `Replaced`, `Removed` and `Cleared` events the current operation must
    /// produce (eviction and expiry are checked against the state instead).
    expected: Vec<Event>,
    /// The entry the current operation stored: where the face keeps what
    /// it stores, it may be evicted only if it alone is heavier than the
    /// capacity.
    stored: Option<(Key, Value)>,
    keeps_stored: bool,
}

/// What one operation released on its own.
#[derive(Debug, Default)]
pub struct Settled {
    /// Values evicted, in the listener's order.
    pub evicted: Vec<Value>,
    pub expired: usize,
    expired_weight: usize,
}

impl Model {
    pub fn new<F: Face>(config: &Config) -> Self {
        Self {
            live: BTreeMap::new(),
            dead: Vec::new(),
            now: Duration::ZERO,
            ttl: config.time_to_live,
            tti: config.time_to_idle,
            capacity: config.capacity.expect("the model needs a bound"),
            weighted: config.weigher.is_some(),
            counts: Counts::default(),
            expected: Vec::new(),
            stored: None,
            keeps_stored: F::keeps_what_it_stores(config),
        }
    }

    fn weight(&self, value: Value) -> usize {
        if self.weighted {
            counted_weight(value)
        } else {
            1
        }
    }

    /// The weight `len` and the bound count: live and not yet released.
    pub fn held_weight(&self) -> usize {
        let live: usize = self.live.values().map(|h| self.weight(h.value)).sum();
        let dead: usize = self.dead.iter().map(|(_, v)| self.weight(*v)).sum();
        live + dead
    }

    pub fn held_len(&self) -> usize {
        self.live.len() + self.dead.len()
    }

    pub fn live_entries(&self) -> Vec<(Key, Value)> {
        self.live
            .iter()
            .map(|(k, h)| (k.clone(), h.value))
            .collect()
    }

    pub fn peek(&self, key: &str) -> Option<Value> {
        self.live.get(key).map(|h| h.value)
    }

    /// A counted read (`get`, `get_with`, the hit of a loading call).
    pub fn read(&mut self, key: &str) -> Option<Value> {
        let now = self.now;
        match self.live.get_mut(key) {
            Some(held) => {
                held.accessed = now;
                self.counts.hits += 1;
                Some(held.value)
            }
            None => {
                self.counts.misses += 1;
                None
            }
        }
    }

    /// Stores a value (an insert or a completed init); returns the live
    /// value it replaced.
    pub fn store(&mut self, key: &str, value: Value) -> Option<Value> {
        self.counts.inserts += 1;
        let now = self.now;
        let held = Held {
            value,
            created: now,
            accessed: now,
        };
        self.stored = Some((key.to_owned(), value));
        let old = self.live.insert(key.to_owned(), held).map(|h| h.value);
        if let Some(old) = old {
            self.expected
                .push((key.to_owned(), old, RemovalCause::Replaced));
        }
        old
    }

    /// `get_or_init(key, || value)`: the value returned.
    pub fn get_or_init(&mut self, key: &str, value: Value) -> Value {
        match self.read(key) {
            Some(found) => found,
            None => {
                self.counts.inits += 1;
                self.store(key, value);
                value
            }
        }
    }

    /// `get_or_try_init` with a failing init: the value if live.
    pub fn get_or_fail(&mut self, key: &str) -> Option<Value> {
        let found = self.read(key);
        if found.is_none() {
            self.counts.inits += 1;
            self.counts.init_failures += 1;
        }
        found
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let old = self.live.remove(key).map(|h| h.value);
        if let Some(old) = old {
            self.expected
                .push((key.to_owned(), old, RemovalCause::Removed));
        }
        old
    }

    pub fn clear(&mut self) {
        for (key, held) in std::mem::take(&mut self.live) {
            self.expected.push((key, held.value, RemovalCause::Cleared));
        }
    }

    pub fn resize(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// Moves the clock; entries whose deadline is now or past expire.
    pub fn advance(&mut self, by: Duration) {
        self.now += by;
        let now = self.now;
        let (ttl, tti) = (self.ttl, self.tti);
        let expired: Vec<Key> = self
            .live
            .iter()
            .filter(|(_, h)| {
                ttl.is_some_and(|ttl| now - h.created >= ttl)
                    || tti.is_some_and(|tti| now - h.accessed >= tti)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            let held = self.live.remove(&key).unwrap();
            self.dead.push((key, held.value));
        }
    }

    pub fn dead_len(&self) -> usize {
        self.dead.len()
    }

    /// Applies what the listener heard during one operation: evictions
    /// must name live entries, expiries expired ones, and the rest must be
    /// exactly what the operation was expected to produce.
    pub fn settle(&mut self, log: &Log, op: &str) -> Settled {
        let events = std::mem::take(&mut *log.lock().unwrap());
        let mut settled = Settled::default();
        let mut others = Vec::new();
        for (key, value, cause) in events {
            match cause {
                RemovalCause::Evicted => {
                    let held = self.live.remove(&key);
                    assert_eq!(
                        held.map(|h| h.value),
                        Some(value),
                        "{op}: evicted ({key}, {value}), which was not live"
                    );
                    if self.keeps_stored && self.stored == Some((key.clone(), value)) {
                        assert!(
                            self.weight(value) > self.capacity,
                            "{op}: the entry just stored was evicted"
                        );
                    }
                    self.counts.evictions += 1;
                    settled.evicted.push(value);
                }
                RemovalCause::Expired => {
                    let at = self.dead.iter().position(|(k, v)| *k == key && *v == value);
                    let at = at.unwrap_or_else(|| {
                        panic!("{op}: expired ({key}, {value}), which had not expired")
                    });
                    self.dead.swap_remove(at);
                    settled.expired += 1;
                    settled.expired_weight += self.weight(value);
                }
                _ => others.push((key, value, cause)),
            }
        }
        self.stored = None;
        let expected = sorted(std::mem::take(&mut self.expected));
        assert_eq!(
            sorted(others),
            expected,
            "{op}: replaced/removed/cleared heard"
        );
        settled
    }

    /// Checks the face against the model after an operation: contents,
    /// every live entry readable, the bound, and no needless eviction.
    pub fn check<F: Face>(&self, cache: &F, settled: &Settled, op: &str) {
        let mut entries = cache.to_vec();
        entries.sort();
        assert_eq!(entries, self.live_entries(), "{op}: to_vec");
        for (key, _) in &entries {
            assert!(cache.contains_key(key), "{op}: {key} not readable");
        }
        assert_eq!(cache.len(), self.held_len(), "{op}: len");
        let held = self.held_weight();
        assert!(
            held <= self.capacity,
            "{op}: holds {held}, over the capacity {}",
            self.capacity
        );
        let stats = cache.stats();
        assert_eq!(stats.len, cache.len(), "{op}: stats.len");
        if let Some(weighted) = stats.weighted_size {
            assert!(self.weighted, "{op}: a weighted size without a weigher");
            assert_eq!(weighted, held, "{op}: weighted_size");
        }
        if let Some(&last) = settled.evicted.last() {
            // Without the last victim the rest would have fitted (entries
            // that expired in the same operation are given back: they may
            // have been released after the eviction).
            let before_last = held + settled.expired_weight + self.weight(last);
            assert!(
                before_last > self.capacity,
                "{op}: a needless eviction (evicted {:?}, holds {held} of {})",
                settled.evicted,
                self.capacity
            );
        }
        let counts = Counts {
            hits: stats.hits,
            misses: stats.misses,
            inserts: stats.inserts,
            evictions: stats.evictions,
            inits: stats.inits,
            init_failures: stats.init_failures,
        };
        assert_eq!(counts, self.counts, "{op}: stats");
        assert_eq!(stats.waits, 0, "{op}: waits with one thread");
        cache.check_invariants();
    }
}
