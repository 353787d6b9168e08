//! Random operation sequences against the reference model
//! (`model.rs`): after every operation the face's contents, length,
//! weight, listener events and counters match the model, and the bound
//! holds. Seeded and deterministic (the hasher too), so a failure names a
//! seed and a step that reproduce it.

use std::time::Duration;

use crate::face::{Axes, Expiry, Face};
use crate::model::Model;

const SEEDS: u64 = 4;
const STEPS: usize = 250;
const KEYS: u64 = 12;

/// SplitMix64: small, seedable, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A capacity: 1 to 8 entries, or a total weight of 4 to 47 (weights
    /// go up to 15, so some values are heavier than the whole cache).
    fn capacity(&mut self, weighted: bool) -> usize {
        if weighted {
            4 + self.below(44) as usize
        } else {
            1 + self.below(8) as usize
        }
    }
}

pub fn the_bound_holds_against_the_model<F: Face>(axes: &Axes) {
    // What the sequences exercised, over all seeds: each must happen.
    let (mut evicted, mut expired, mut hits) = (0, 0, 0);
    for seed in 0..SEEDS {
        let mut rng = Rng(seed);
        let mut config = axes.config_with_capacity(rng.capacity(axes.weighted));
        let log = config.listen();
        let clock = config.clock.clone();
        let cache = F::build(&config);
        let mut model = Model::new::<F>(&config);
        for step in 0..STEPS {
            let key = format!("k{}", rng.below(KEYS));
            let value = rng.below(1000) as u32;
            let roll = rng.below(100);
            let op = format!(
                "{} {axes:?} seed {seed} step {step} roll {roll} {key}={value}",
                F::NAME
            );
            let mut purged = None;
            match roll {
                0..20 => assert_eq!(cache.get(&key), model.read(&key), "{op}: get"),
                20..28 => {
                    let got = cache.get_with(&key, |v| *v);
                    assert_eq!(got, model.read(&key), "{op}: get_with");
                }
                28..50 => {
                    let got = cache.insert(key.clone(), value);
                    assert_eq!(got, model.store(&key, value), "{op}: insert");
                }
                50..58 => assert_eq!(cache.remove(&key), model.remove(&key), "{op}: remove"),
                58..73 => {
                    let got = cache.get_or_init(&key, || value);
                    assert_eq!(got, model.get_or_init(&key, value), "{op}: get_or_init");
                }
                73..78 => {
                    let got = cache.get_or_try_init(&key, || Err::<u32, _>(())).ok();
                    assert_eq!(got, model.get_or_fail(&key), "{op}: get_or_try_init");
                }
                78..84 => {
                    let got = cache.contains_key(&key);
                    assert_eq!(got, model.peek(&key).is_some(), "{op}: contains_key");
                }
                84..86 => {
                    cache.clear();
                    model.clear();
                }
                86..94 => {
                    let seconds = match axes.expiry {
                        Expiry::Never | Expiry::Ttl => 1 + rng.below(5),
                        Expiry::Tti => 4 + rng.below(37),
                    };
                    clock.advance(Duration::from_secs(seconds));
                    model.advance(Duration::from_secs(seconds));
                }
                94..97 => purged = Some(cache.purge_expired()),
                _ => {
                    let capacity = rng.capacity(axes.weighted);
                    cache.resize(capacity).unwrap();
                    model.resize(capacity);
                }
            }
            let settled = model.settle(&log, &op);
            if let Some(purged) = purged {
                assert_eq!(purged, settled.expired, "{op}: purge_expired's count");
                assert_eq!(model.dead_len(), 0, "{op}: expired entries left");
            }
            if (84..86).contains(&roll) {
                assert_eq!(cache.len(), 0, "{op}: clear left entries");
            }
            evicted += settled.evicted.len();
            expired += settled.expired;
            model.check(&cache, &settled, &op);
        }
        hits += model.counts.hits;
    }
    assert!(evicted > 0 && hits > 0, "evictions {evicted}, hits {hits}");
    if axes.expiry != Expiry::Never {
        assert!(expired > 0, "no entry expired");
    }
    eprintln!(
        "{} {axes:?}: {evicted} evictions, {expired} expiries, {hits} hits",
        F::NAME
    );
}

/// Storing one new key after another: the cache holds exactly its
/// capacity once full (every key weighs 1), after every insert, whatever
/// the keys' hashes; each insert evicts one entry and never the new one.
pub fn every_insert_keeps_the_bound<F: Face>(axes: &Axes) {
    const CAPACITY: usize = 4;
    let mut config = axes.config_with_capacity(CAPACITY);
    // Every value weighs 1 (the weigher reads `value % 16`).
    let log = config.listen();
    let cache = F::build(&config);
    for k in 0..60u32 {
        let key = format!("k{k}");
        cache.insert(key.clone(), 16 * k + 1);
        let expected = (k as usize + 1).min(CAPACITY);
        assert_eq!(cache.len(), expected, "{} {axes:?}: after {key}", F::NAME);
        assert_eq!(
            cache.get(&key),
            Some(16 * k + 1),
            "{}: {key} evicted",
            F::NAME
        );
        cache.check_invariants();
    }
    let evicted = log.lock().unwrap().len();
    assert_eq!(evicted, 60 - CAPACITY, "{} {axes:?}: evictions", F::NAME);
}
