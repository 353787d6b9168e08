//! Public-API tests of `TypedCache`'s release of expired entries without
//! `purge_expired`, its removal listener and its iteration, on a manual
//! clock: no sleeps. Keys share one shard where a test needs a write to
//! land in the shard of an expired entry (`TestState`). Deadlines, the
//! listener's causes and `purge_expired` as every face has them are in
//! `conformance.rs`.

#[path = "common/hasher.rs"]
mod hasher;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hasher::TestState;
use larder::{ManualClock, RemovalCause, TypedCache, TypedCacheBuilder};

const S: Duration = Duration::from_secs(1);

type Log = Arc<Mutex<Vec<(u32, u32, RemovalCause)>>>;

/// A cache of `u32` keys all in one shard, on a manual clock, whose
/// listener logs `(key, value, cause)`.
fn one_shard(
    configure: impl FnOnce(
        TypedCacheBuilder<u32, u32, TestState>,
    ) -> TypedCacheBuilder<u32, u32, TestState>,
) -> (TypedCache<u32, u32, TestState>, ManualClock, Log) {
    let clock = ManualClock::new();
    let log: Log = Arc::default();
    let seen = Arc::clone(&log);
    let builder = TypedCache::<u32, u32>::builder()
        .hasher(TestState::one_shard())
        .clock(clock.clone())
        .eviction_listener(move |key, value: u32, cause| {
            seen.lock().unwrap().push((key, value, cause));
        });
    (configure(builder).build().unwrap(), clock, log)
}

fn taken(log: &Log) -> Vec<(u32, u32, RemovalCause)> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[test]
fn an_expired_entry_is_released_by_a_later_insert_into_its_shard() {
    let (cache, clock, log) = one_shard(|b| b.time_to_live(10 * S));
    cache.insert(1, 10);
    clock.advance(11 * S);
    assert_eq!(cache.len(), 1, "expired, not yet released");
    cache.insert(2, 20);
    assert_eq!(cache.len(), 1, "the insert released the expired entry");
    assert_eq!(taken(&log), [(1, 10, RemovalCause::Expired)]);
    cache.check_invariants();
}

#[test]
fn an_idle_entry_behind_a_live_one_is_released_by_a_later_write() {
    // Time to idle: the queue's front entry is kept alive by reads, so a
    // sweep that stops at the first live entry would never reach the idle
    // one behind it.
    let (cache, clock, log) = one_shard(|b| b.time_to_idle(64 * S));
    cache.insert(1, 10); // read below: stays alive
    cache.insert(2, 20); // never read: idles out
    clock.advance(40 * S);
    assert_eq!(cache.get(&1), Some(10));
    clock.advance(40 * S); // key 2 idle 80 s, key 1 idle 40 s
    assert_eq!(cache.len(), 2);
    cache.insert(3, 30);
    assert_eq!(cache.len(), 2, "the idle entry was released");
    assert!(cache.contains_key(&1) && cache.contains_key(&3));
    assert_eq!(taken(&log), [(2, 20, RemovalCause::Expired)]);
    cache.check_invariants();
}

#[test]
fn invalidate_and_init_release_expired_entries_of_their_shard() {
    let (cache, clock, log) = one_shard(|b| b.time_to_live(10 * S));
    cache.insert(1, 10);
    cache.insert(2, 20);
    clock.advance(11 * S);
    cache.insert(3, 30); // releases 1 and 2
    assert_eq!(cache.len(), 1);
    clock.advance(11 * S); // 3 expires
    assert_eq!(cache.remove(&99), None); // a write, of an absent key
    assert_eq!(cache.len(), 0, "remove released the expired entry");
    cache.insert(4, 40);
    clock.advance(11 * S);
    assert_eq!(cache.get_or_init(&5, || 50), 50); // an init's store
    assert_eq!(
        cache.len(),
        1,
        "the init's store released the expired entry"
    );
    // (In key order: the order of releases within one write is not fixed.)
    let mut causes: Vec<_> = taken(&log).into_iter().map(|(k, _, c)| (k, c)).collect();
    causes.sort_unstable_by_key(|&(k, _)| k);
    assert_eq!(
        causes,
        [
            (1, RemovalCause::Expired),
            (2, RemovalCause::Expired),
            (3, RemovalCause::Expired),
            (4, RemovalCause::Expired),
        ]
    );
    cache.check_invariants();
}

#[test]
fn a_write_releases_a_bounded_number_and_every_expired_entry_goes_eventually() {
    let (cache, clock, log) = one_shard(|b| b.time_to_live(10 * S));
    for k in 0..100 {
        cache.insert(k, k);
    }
    clock.advance(11 * S);
    let mut writes = 0;
    // Until only the fresh (live) entries are left.
    while cache.len() > writes as usize {
        let before = cache.len();
        cache.insert(1_000 + writes, 0);
        writes += 1;
        // The new entry replaced nothing: the drop is what the write
        // released, and no write pays for the whole shard.
        let released = before + 1 - cache.len();
        assert!(released <= 4, "one write released {released} entries");
        // The fresh inserts are alive: only the 100 old ones expire.
        assert!(writes <= 100, "expired entries left behind");
        clock.advance(Duration::from_millis(1));
    }
    assert!(writes >= 25, "{writes} writes released 100 entries");
    assert_eq!(cache.to_vec().len(), cache.len());
    let expired = taken(&log);
    assert_eq!(expired.len(), 100);
    assert!(expired.iter().all(|&(_, _, c)| c == RemovalCause::Expired));
}

#[test]
fn a_panicking_listener_leaves_the_cache_consistent_and_hears_the_rest() {
    let heard: Log = Arc::default();
    let log = Arc::clone(&heard);
    let clock = ManualClock::new();
    let cache = TypedCache::<u32, u32>::builder()
        .hasher(TestState::one_shard())
        .time_to_live(10 * S)
        .clock(clock.clone())
        .eviction_listener(move |key, value: u32, cause| {
            log.lock().unwrap().push((key, value, cause));
            if key == 1 {
                panic!("listener");
            }
        })
        .build()
        .unwrap();
    for k in 0..4 {
        cache.insert(k, k);
    }
    clock.advance(11 * S);
    // Releases 0..4 (a write looks at four); key 1's listener call panics
    // once the insert is complete.
    let outcome = catch_unwind(AssertUnwindSafe(|| cache.insert(10, 10)));
    assert!(outcome.is_err());
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.get(&10), Some(10));
    // Key 1's call panicked; 2 and 3 were still handed over.
    let mut heard_keys: Vec<u32> = taken(&heard).into_iter().map(|(k, _, _)| k).collect();
    heard_keys.sort_unstable();
    assert_eq!(heard_keys, [0, 1, 2, 3]);
    cache.check_invariants();
    // An explicit removal whose listener panics: the entry is gone, the
    // cache usable.
    cache.insert(1, 1);
    let outcome = catch_unwind(AssertUnwindSafe(|| cache.remove(&1)));
    assert!(outcome.is_err());
    assert!(!cache.contains_key(&1));
    assert_eq!(cache.len(), 1);
    cache.check_invariants();
    cache.insert(2, 2);
    assert_eq!(cache.get(&2), Some(2));
}

#[test]
fn iter_is_a_snapshot_of_the_live_entries_and_not_a_read() {
    let (cache, clock, _log) = one_shard(|b| b.time_to_idle(64 * S));
    cache.insert(1, 10);
    cache.insert(2, 20);
    clock.advance(40 * S);
    cache.get(&1);
    clock.advance(30 * S); // 2 idle 70 s: expired but not yet released
    let stats = cache.stats();
    let entries: Vec<(u32, u32)> = cache.to_vec().into_iter().collect();
    assert_eq!(entries, [(1, 10)], "expired entries are left out");
    assert_eq!(cache.stats(), stats, "iter counts nothing");
    clock.advance(30 * S); // 1 idle 60 s since its read: iter did not refresh it
    assert!(cache.contains_key(&1));
    clock.advance(4 * S);
    assert!(!cache.contains_key(&1), "iter was not a read");
    let snapshot = {
        cache.insert(3, 30);
        cache.to_vec().into_iter()
    };
    cache.clear();
    assert_eq!(snapshot.map(|(k, _)| k).collect::<Vec<_>>(), [3]);
}

/// A clock that counts its reads.
#[derive(Debug, Default)]
struct CountingClock(std::sync::atomic::AtomicU64);

impl larder::Clock for CountingClock {
    fn now(&self) -> Duration {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Duration::ZERO
    }
}

/// Without a time to live or time to idle nothing can expire: no operation
/// reads the clock (and the shards keep no times), bounded or not; with
/// one, every operation reads it.
#[test]
fn the_clock_is_read_only_when_entries_can_expire() {
    let reads = |builder: TypedCacheBuilder<u32, u32>| {
        let clock = Arc::new(CountingClock::default());
        #[derive(Debug)]
        struct Shared(Arc<CountingClock>);
        impl larder::Clock for Shared {
            fn now(&self) -> Duration {
                larder::Clock::now(&*self.0)
            }
        }
        let cache = builder.clock(Shared(Arc::clone(&clock))).build().unwrap();
        cache.get_or_init(&1, || 1);
        assert_eq!(cache.get(&1), Some(1));
        assert_eq!(cache.insert(2, 2), None);
        assert_eq!(cache.remove(&2), Some(2));
        cache.check_invariants();
        clock.0.load(std::sync::atomic::Ordering::SeqCst)
    };
    assert_eq!(reads(TypedCache::builder()), 0);
    assert_eq!(reads(TypedCache::builder().capacity(4)), 0);
    assert!(reads(TypedCache::builder().time_to_live(10 * S)) >= 4);
    assert!(reads(TypedCache::builder().time_to_idle(10 * S)) >= 4);
}

/// A read that finds its key expired releases that entry itself, wherever
/// it stands in the shard: here the shard's sweep (four looks from its
/// cursor, which the inserts moved away from the entry) would not reach it.
#[test]
fn a_read_releases_the_expired_entry_it_found() {
    let (cache, clock, log) = one_shard(|b| b.time_to_live(10 * S));
    cache.insert(0, 0);
    clock.advance(5 * S);
    for k in 1..=20 {
        cache.insert(k, k);
    }
    clock.advance(6 * S); // 0 expired, the others live
    assert!(taken(&log).is_empty());
    assert_eq!(cache.get(&0), None);
    assert_eq!(taken(&log), [(0, 0, RemovalCause::Expired)]);
    assert_eq!(cache.len(), 20);
    cache.check_invariants();
}
