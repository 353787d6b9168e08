//! Public-API tests of `LruCache`'s expiry (time to live, time to idle)
//! under every policy, on a manual clock: no sleeps. An expired entry is
//! never returned, and reaches the listener as `Expired` once: when a
//! lookup finds it, a write or an expired read sweeps it, `purge_expired`, `clear`, or an
//! insert replaces it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use larder::{BuildError, EvictionPolicy, LruCache, LruCacheBuilder, ManualClock, RemovalCause};

const S: Duration = Duration::from_secs(1);
const POLICIES: [EvictionPolicy; 3] = [
    EvictionPolicy::Exact,
    EvictionPolicy::Clock,
    EvictionPolicy::S3Fifo,
];

type Log = Arc<Mutex<Vec<(u32, u32, RemovalCause)>>>;

/// A one-shard cache of `capacity` under `policy` on a manual clock, whose
/// listener logs `(key, value, cause)`.
fn cache(
    policy: EvictionPolicy,
    capacity: usize,
    configure: impl FnOnce(LruCacheBuilder<u32, u32>) -> LruCacheBuilder<u32, u32>,
) -> (LruCache<u32, u32>, ManualClock, Log) {
    let clock = ManualClock::new();
    let log: Log = Arc::default();
    let seen = Arc::clone(&log);
    let builder = LruCache::builder()
        .capacity(capacity)
        .shards(1)
        .policy(policy)
        .clock(clock.clone())
        .eviction_listener(move |key, value, cause| {
            seen.lock().unwrap().push((key, value, cause));
        });
    (configure(builder).build().unwrap(), clock, log)
}

fn taken(log: &Log) -> Vec<(u32, u32, RemovalCause)> {
    let mut taken = std::mem::take(&mut *log.lock().unwrap());
    taken.sort_unstable_by_key(|&(k, _, _)| k);
    taken
}

#[test]
fn an_expired_entry_is_never_returned_and_a_lookup_releases_it() {
    for policy in POLICIES {
        let (cache, clock, log) = cache(policy, 8, |b| b.time_to_live(10 * S));
        cache.insert(1, 10);
        cache.insert(2, 20);
        clock.advance(9 * S);
        assert_eq!(cache.get(&1), Some(10));
        clock.advance(S);
        assert!(!cache.contains_key(&1));
        assert_eq!(cache.peek(&1), None);
        assert!(cache.to_vec().is_empty());
        assert!(
            taken(&log).is_empty(),
            "reads that do not use release nothing"
        );
        assert_eq!(cache.get(&1), None);
        assert_eq!(cache.get_with(&2, |v| *v), None);
        assert_eq!(
            taken(&log),
            [
                (1, 10, RemovalCause::Expired),
                (2, 20, RemovalCause::Expired)
            ],
            "{policy:?}"
        );
        assert_eq!(cache.len(), 0);
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (1, 2), "{policy:?}");
        cache.check_invariants();
    }
}

#[test]
fn reads_keep_an_idle_entry_alive() {
    for policy in POLICIES {
        let (cache, clock, log) = cache(policy, 8, |b| b.time_to_idle(10 * S));
        cache.insert(1, 10);
        cache.insert(2, 20);
        for _ in 0..5 {
            clock.advance(9 * S);
            assert_eq!(cache.get(&1), Some(10), "{policy:?}");
        }
        assert_eq!(cache.get(&2), None);
        assert_eq!(taken(&log), [(2, 20, RemovalCause::Expired)]);
        clock.advance(10 * S);
        assert_eq!(cache.get(&1), None);
        cache.check_invariants();
    }
}

/// A read that finds its key expired releases it and sweeps its shard as a
/// write does (a few entries looked at), under every policy and through
/// each read form: the other expired entries go without a write.
#[test]
fn a_read_that_finds_an_expired_entry_sweeps_its_shard() {
    for policy in POLICIES {
        for read in 0..3 {
            let (cache, clock, log) = cache(policy, 64, |b| b.time_to_live(10 * S));
            for k in 0..8 {
                cache.insert(k, k);
            }
            clock.advance(10 * S);
            match read {
                0 => assert_eq!(cache.get(&0), None),
                1 => assert_eq!(cache.get_with(&0, |v| *v), None),
                _ => assert_eq!(cache.get_or_init(&0, || 100), 100),
            }
            let released = taken(&log);
            assert!(
                released.contains(&(0, 0, RemovalCause::Expired)),
                "{policy:?}, read {read}: {released:?}"
            );
            assert!(
                released.len() > 1,
                "{policy:?}, read {read}: the read swept nothing else: {released:?}"
            );
            assert!(
                released
                    .iter()
                    .all(|&(_, _, cause)| cause == RemovalCause::Expired)
            );
            cache.check_invariants();
        }
    }
}

#[test]
fn writes_sweep_expired_entries_and_inserts_over_them_return_nothing() {
    for policy in POLICIES {
        let (cache, clock, log) = cache(policy, 64, |b| b.time_to_live(10 * S));
        for k in 0..8 {
            cache.insert(k, k);
        }
        clock.advance(10 * S);
        // Replacing an expired value: the caller gets nothing back, the
        // listener the old value as expired.
        assert_eq!(cache.insert(0, 100), None);
        let mut released = taken(&log);
        assert!(released.contains(&(0, 0, RemovalCause::Expired)));
        // Every write sweeps a few: the rest goes with the next writes.
        for k in 100..110 {
            cache.insert(k, k);
        }
        released.extend(taken(&log));
        released.sort_unstable_by_key(|&(k, _, _)| k);
        let expected: Vec<_> = (0..8).map(|k| (k, k, RemovalCause::Expired)).collect();
        assert_eq!(released, expected, "{policy:?}");
        assert_eq!(cache.len(), 11);
        assert_eq!(
            cache.stats().evictions,
            0,
            "expired entries are not evictions"
        );
        cache.check_invariants();
    }
}

#[test]
fn remove_of_an_expired_entry_returns_nothing() {
    for policy in POLICIES {
        let (cache, clock, log) = cache(policy, 8, |b| b.time_to_live(10 * S));
        cache.insert(1, 10);
        clock.advance(10 * S);
        assert_eq!(cache.remove(&1), None);
        assert_eq!(taken(&log), [(1, 10, RemovalCause::Expired)]);
        cache.check_invariants();
    }
}

#[test]
fn purge_and_clear_tell_expired_from_live() {
    for policy in POLICIES {
        let (cache, clock, log) = cache(policy, 64, |b| b.time_to_live(10 * S));
        for k in 0..5 {
            cache.insert(k, k);
        }
        clock.advance(5 * S);
        for k in 5..10 {
            cache.insert(k, k);
        }
        clock.advance(5 * S);
        let before = taken(&log);
        let purged = cache.purge_expired() + before.len();
        assert_eq!(purged, 5, "{policy:?}");
        let mut expired = before;
        expired.extend(taken(&log));
        expired.sort_unstable_by_key(|&(k, _, _)| k);
        let expected: Vec<_> = (0..5).map(|k| (k, k, RemovalCause::Expired)).collect();
        assert_eq!(expired, expected);
        cache.insert(10, 10);
        clock.advance(5 * S);
        cache.clear();
        let causes: Vec<_> = taken(&log).into_iter().map(|(k, _, c)| (k, c)).collect();
        let mut expected: Vec<_> = (5..10).map(|k| (k, RemovalCause::Expired)).collect();
        expected.push((10, RemovalCause::Cleared));
        assert_eq!(causes, expected, "{policy:?}");
        assert!(cache.is_empty());
        cache.check_invariants();
    }
}

#[test]
fn eviction_still_bounds_an_expiring_cache() {
    for policy in POLICIES {
        let (cache, _clock, log) = cache(policy, 4, |b| b.time_to_live(10 * S));
        for k in 0..10 {
            cache.insert(k, k);
            assert!(cache.len() <= 4);
        }
        let causes = taken(&log);
        assert_eq!(causes.len(), 6);
        assert!(causes.iter().all(|&(_, _, c)| c == RemovalCause::Evicted));
        cache.check_invariants();
    }
}

#[test]
fn a_zero_time_is_a_build_error() {
    let zero_ttl = LruCache::<u32, u32>::builder()
        .capacity(8)
        .time_to_live(Duration::ZERO)
        .build();
    assert!(matches!(zero_ttl, Err(BuildError::ZeroTimeToLive)));
    let zero_tti = LruCache::<u32, u32>::builder()
        .capacity(8)
        .time_to_idle(Duration::ZERO)
        .build();
    assert!(matches!(zero_tti, Err(BuildError::ZeroTimeToIdle)));
}

/// A clock that counts its reads.
#[derive(Debug, Clone, Default)]
struct CountingClock(Arc<AtomicU64>);

impl larder::Clock for CountingClock {
    fn now(&self) -> Duration {
        self.0.fetch_add(1, Ordering::SeqCst);
        Duration::ZERO
    }
}

/// Without a time to live or time to idle, no operation reads the clock;
/// with one, every operation does.
#[test]
fn the_clock_is_read_only_when_entries_can_expire() {
    for policy in POLICIES {
        let reads = |builder: LruCacheBuilder<u32, u32>| {
            let clock = CountingClock::default();
            let cache = builder
                .capacity(8)
                .policy(policy)
                .clock(clock.clone())
                .build()
                .unwrap();
            cache.get_or_init(&1, || 1);
            assert_eq!(cache.get(&1), Some(1));
            assert_eq!(cache.insert(2, 2), None);
            assert_eq!(cache.remove(&2), Some(2));
            cache.to_vec();
            cache.check_invariants();
            clock.0.load(Ordering::SeqCst)
        };
        assert_eq!(reads(LruCache::builder()), 0);
        assert!(reads(LruCache::builder().time_to_live(10 * S)) >= 5);
        assert!(reads(LruCache::builder().time_to_idle(10 * S)) >= 5);
    }
}
