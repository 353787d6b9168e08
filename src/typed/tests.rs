use super::*;
use crate::cache::{Expiry, SecondChance, Shard};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, mpsc};
use std::thread;
use std::time::Duration;

// The engine shard as `raw.rs` runs it: CLOCK, unbounded (the bound is
// global), evicting through `evict_one`.

type Plain = Shard<u32, u32, SecondChance>;
type Expiring = Shard<u32, u32, SecondChance, true>;

fn expiring(ttl: Option<u64>, tti: Option<u64>) -> Expiring {
    let expiry = Expiry::new(ttl.map(Duration::from_nanos), tti.map(Duration::from_nanos));
    Shard::with_expiry(crate::cache::MAX_SHARD_CAPACITY, expiry)
}

/// A key's hash (any fixed function will do for the shard alone).
fn h(key: u32) -> u64 {
    u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The slot of `key`, spared by `evict_one` (`None` if absent).
fn kept<const E: bool>(core: &Shard<u32, u32, SecondChance, E>, key: u32) -> Option<u32> {
    core.slot_of(h(key), &key)
}

/// Stores `key -> value` at `now` as an init would (no sweep).
fn put<const E: bool>(core: &mut Shard<u32, u32, SecondChance, E>, key: u32, value: u32, now: u64) {
    core.insert(h(key), key, value, 1, now, 0);
}

/// A read of `key` at `now` under the shared lock.
fn touch<const E: bool>(core: &Shard<u32, u32, SecondChance, E>, key: u32, now: u64) {
    assert!(core.get_shared(h(key), &key, now, true).live().is_some());
}

fn evicted(removed: Option<(u32, u32, bool)>) -> Option<u32> {
    removed.map(|(_, value, _)| value)
}

fn unbounded() -> Plain {
    Shard::with_expiry(crate::cache::MAX_SHARD_CAPACITY, None)
}

#[test]
fn core_clock_gives_read_entries_a_second_chance() {
    let mut core = unbounded();
    for k in 0..3 {
        put(&mut core, k, k, 0);
    }
    // Displaced entries start unreferenced: the hand evicts the oldest.
    assert_eq!(evicted(core.evict_one(0, &mut None)), Some(0));
    // Read 1: it survives the next pick, 2 goes.
    touch(&core, 1, 0);
    assert_eq!(evicted(core.evict_one(0, &mut None)), Some(2));
    assert_eq!(evicted(core.evict_one(0, &mut None)), Some(1));
    assert_eq!(evicted(core.evict_one(0, &mut None)), None);
    core.check_invariants();
}

#[test]
fn core_clock_passes_over_a_referenced_entry() {
    let mut core = unbounded();
    for k in 0..3 {
        put(&mut core, k, k, 0);
    }
    // 0 was read: the hand clears its bit and takes 1 instead.
    touch(&core, 0, 0);
    assert_eq!(evicted(core.evict_one(0, &mut None)), Some(1));
    core.check_invariants();
}

#[test]
fn core_never_evicts_the_entry_just_stored() {
    let mut core = unbounded();
    for k in 0..4 {
        put(&mut core, k, k, 0);
    }
    for k in 0..4 {
        touch(&core, k, 0);
    }
    // Every old entry read, the new one not: it would be the hand's first
    // unreferenced entry, but it is kept.
    put(&mut core, 4, 4, 0);
    for _ in 0..4 {
        let victim = evicted(core.evict_one(0, &mut kept(&core, 4)));
        assert!(matches!(victim, Some(v) if v < 4), "{victim:?}");
        core.check_invariants();
    }
    // Only the kept entry is left: nothing to evict.
    assert_eq!(evicted(core.evict_one(0, &mut kept(&core, 4))), None);
    assert_eq!(core.len(), 1);
}

#[test]
fn core_a_kept_entry_moved_under_the_hand_is_not_the_next_victim() {
    let mut core = unbounded();
    for k in 0..3 {
        put(&mut core, k, k, 0);
        touch(&core, k, 0);
    }
    // The hand clears 0..3 and takes 0; the new entry 3 (last) moves into
    // 0's slot, under the hand, and the hand moves past it.
    put(&mut core, 3, 3, 0);
    assert_eq!(evicted(core.evict_one(0, &mut kept(&core, 3))), Some(0));
    put(&mut core, 4, 4, 0);
    assert_eq!(evicted(core.evict_one(0, &mut kept(&core, 4))), Some(1));
    assert!(core.peek(h(3), &3, 0).is_some());
    core.check_invariants();
}

#[test]
fn core_evicts_expired_before_referenced() {
    let mut core = expiring(Some(10), None);
    put(&mut core, 1, 1, 0);
    put(&mut core, 2, 2, 5);
    // At 12 ns, 1 is expired (stored at 0): a read finds it so, and it is
    // released as expired.
    assert!(core.get_shared(h(1), &1, 12, true).live().is_none());
    assert_eq!(core.evict_one(12, &mut None), Some((1, 1, true)));
    core.check_invariants();
}

#[test]
fn core_stays_consistent_under_churn() {
    let mut core = unbounded();
    for round in 0..1_000 {
        put(&mut core, round % 4, round, 0);
        if round % 3 == 0 {
            core.remove(h(round % 4), &(round % 4), 0);
        }
        if round % 5 == 0 {
            core.evict_one(0, &mut kept(&core, round % 4));
        }
        core.check_invariants();
    }
}

#[test]
fn core_sweep_looks_at_no_more_than_its_budget_and_purge_releases_all() {
    let mut core = expiring(Some(100), None);
    for k in 0..10 {
        put(&mut core, k, k, u64::from(k) * 10);
    }
    let mut out = Vec::new();
    // At 150 ns, keys 0..=5 (stored at 0..=50) are expired; key 0 is where
    // the cursor starts, then the last entry (key 9, live) moves there.
    core.sweep(150, 2, |entry| out.push(entry));
    assert_eq!(out, vec![(0, 0)]);
    core.purge(150, |entry| out.push(entry));
    assert_eq!(out.len(), 6);
    assert_eq!(core.len(), 4);
    core.check_invariants();
}

#[test]
fn core_sweep_cursor_reaches_expired_entries_behind_live_ones() {
    let mut core = expiring(None, Some(6_400));
    for k in 0..16 {
        put(&mut core, k, k, 0);
    }
    // The even keys are read at 5000: alive at 8000; the odd ones idle.
    for k in (0..16).step_by(2) {
        touch(&core, k, 5_000);
    }
    let mut out = Vec::new();
    // The cursor walks on from sweep to sweep, four entries at a time: in
    // two laps' worth of sweeps every idle entry is released, none other.
    for _ in 0..8 {
        let before = out.len();
        core.sweep(8_000, 4, |entry| out.push(entry));
        assert!(out.len() - before <= 4);
        core.check_invariants();
    }
    assert_eq!(core.len(), 8);
    assert_eq!(out.len(), 8);
    assert!(out.iter().all(|(k, _)| k % 2 == 1));
}

#[test]
fn idle_time_is_recorded_only_when_it_moved_a_step() {
    let mut core = expiring(None, Some(6_400));
    put(&mut core, 1, 1, 0);
    let live = |core: &Expiring, now| core.peek(h(1), &1, now).is_some();
    // Resolution is 6400 / 64 = 100 ns: a read at 50 records nothing...
    touch(&core, 1, 50);
    assert!(!live(&core, 6_400));
    // ...a read at 100 does.
    touch(&core, 1, 100);
    assert!(live(&core, 6_400));
    assert!(!live(&core, 6_500));
}

/// Runs `get_or_init(1, || 10)` on another thread, calls `during` while that
/// init is paused inside its closure, then lets it finish; returns what the
/// initializing caller got.
fn with_init_paused(cache: &TypedCache<u32, u32>, during: impl FnOnce()) -> u32 {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    thread::scope(|s| {
        let init = s.spawn(move || {
            cache.get_or_init(&1, || {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                10
            })
        });
        started_rx.recv().unwrap();
        during();
        release_tx.send(()).unwrap();
        init.join().unwrap()
    })
}

#[test]
fn invalidate_during_init_keeps_the_value_out_of_the_cache() {
    let cache: TypedCache<u32, u32> = TypedCache::new();
    let got = with_init_paused(&cache, || assert_eq!(cache.remove(&1), None));
    // The caller still gets its value...
    assert_eq!(got, 10);
    // ...but the invalidation is not undone.
    assert!(!cache.contains_key(&1));
    assert_eq!(cache.get_or_init(&1, || 11), 11);
    cache.check_invariants();
}

#[test]
fn insert_during_init_wins() {
    let cache: TypedCache<u32, u32> = TypedCache::new();
    let got = with_init_paused(&cache, || {
        cache.insert(1, 20);
    });
    assert_eq!(got, 10);
    assert_eq!(cache.get(&1), Some(20));
    cache.check_invariants();
}

#[test]
fn error_is_shared_with_joined_waiters_and_not_cached() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let cache: TypedCache<u32, u32> = TypedCache::new();
    let calls = AtomicUsize::new(0);
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    thread::scope(|s| {
        let cache = &cache;
        let calls = &calls;
        let leader = s.spawn(move || {
            cache.get_or_try_init(&1, || {
                calls.fetch_add(1, Ordering::SeqCst);
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                Err::<u32, _>("backend down")
            })
        });
        started_rx.recv().unwrap();
        let waiter = s.spawn(move || {
            cache.get_or_try_init(&1, || {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok::<u32, &str>(5)
            })
        });
        // Let the waiter join the flight (it blocks; nothing to observe but
        // the waits counter).
        while cache.stats().misses < 2 {
            thread::yield_now();
        }
        thread::sleep(Duration::from_millis(20));
        release_tx.send(()).unwrap();
        let leader = leader.join().unwrap().unwrap_err();
        let waited = waiter.join().unwrap();
        assert_eq!(*leader, "backend down");
        match waited {
            // Joined in time: the same error, one backend call.
            Err(shared) => {
                assert!(Arc::ptr_eq(&leader, &shared));
                assert_eq!(calls.load(Ordering::SeqCst), 1);
            }
            // Arrived after the failure: its own init ran.
            Ok(value) => assert_eq!(value, 5),
        }
    });
    let stats = cache.stats();
    assert!(stats.init_failures == 1);
    assert_eq!(cache.get_or_try_init(&1, || Ok::<u32, ()>(7)).unwrap(), 7);
    cache.check_invariants();
}

#[test]
fn panicking_init_hands_over_to_a_waiter() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let cache: TypedCache<u32, u32> = TypedCache::new();
    let barrier = Barrier::new(2);
    let (started_tx, started_rx) = mpsc::channel();
    thread::scope(|s| {
        let panicker = s.spawn(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cache.get_or_init(&1, || {
                    started_tx.send(()).unwrap();
                    barrier.wait();
                    thread::sleep(Duration::from_millis(20));
                    panic!("init failed")
                })
            }))
        });
        started_rx.recv().unwrap();
        let waiter = s.spawn(|| {
            barrier.wait();
            cache.get_or_init(&1, || 9)
        });
        assert!(panicker.join().unwrap().is_err());
        assert_eq!(waiter.join().unwrap(), 9);
    });
    let stats = cache.stats();
    assert_eq!((stats.inits, stats.init_failures), (2, 1));
    cache.check_invariants();
}

#[test]
fn reentrant_init_panics_with_a_clear_message() {
    let cache: TypedCache<u32, u32> = TypedCache::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cache.get_or_init(&1, || cache.get_or_init(&1, || 2) + 1)
    }));
    let message = outcome.unwrap_err();
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("re-entrant load"), "got {text:?}");
    // Nothing stuck: the key loads normally afterwards, and an init may use
    // other keys.
    assert_eq!(cache.get_or_init(&1, || cache.get_or_init(&2, || 2) + 1), 3);
    cache.check_invariants();
}

#[test]
fn max_entries_spills_eviction_into_other_shards() {
    let cache = TypedCache::<u32, u32>::builder()
        .capacity(3)
        .build()
        .unwrap();
    for k in 0..100 {
        cache.insert(k, k);
        assert!(cache.len() <= 3);
        cache.check_invariants();
    }
    assert_eq!(cache.get(&99), Some(99));
}

#[test]
fn debug_shows_len_and_stats() {
    let cache: TypedCache<u32, u32> = TypedCache::new();
    cache.insert(1, 1);
    let text = format!("{cache:?}");
    assert!(text.contains("len: 1"), "{text}");
    assert!(text.contains("hits"), "{text}");
}

/// A hasher whose hash of a `u64` key is the key itself, so a test can
/// choose the shard of each key (`shard_index.rs`).
#[derive(Clone, Default)]
struct KeyIsHash;

impl std::hash::BuildHasher for KeyIsHash {
    type Hasher = KeyIsHashHasher;
    fn build_hasher(&self) -> KeyIsHashHasher {
        KeyIsHashHasher(0)
    }
}

struct KeyIsHashHasher(u64);

impl std::hash::Hasher for KeyIsHashHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// Keys in different shards have different locks: a reader held inside
/// `get_with` on one shard does not hold up a write to another. (All keys
/// in one shard would deadlock here: the write waits for the read, which
/// waits for the write.)
#[test]
fn a_read_of_one_shard_does_not_block_a_write_to_another() {
    let _watchdog = crate::watchdog::arm(crate::watchdog::STRESS_LIMIT);
    let cache = TypedCache::<u64, u64>::builder()
        .hasher(KeyIsHash)
        .build()
        .unwrap();
    let in_shard = |shard: usize| {
        (0u64..)
            .find(|&key| crate::shard_index::shard_index(key, super::raw::SHARDS) == shard)
            .unwrap()
    };
    let shards = [in_shard(0), in_shard(1), in_shard(7), in_shard(15)];
    for key in shards {
        cache.insert(key, key);
    }
    for reader_key in shards {
        let (reading_tx, reading_rx) = mpsc::channel();
        let (written_tx, written_rx) = mpsc::channel::<()>();
        let cache = &cache;
        thread::scope(|s| {
            s.spawn(move || {
                cache.get_with(&reader_key, |_| {
                    reading_tx.send(()).unwrap();
                    // Holds the shard's read lock until the writes are done.
                    written_rx.recv().unwrap();
                })
            });
            reading_rx.recv().unwrap();
            for key in shards.into_iter().filter(|&key| key != reader_key) {
                cache.insert(key, key + 1);
            }
            written_tx.send(()).unwrap();
        });
    }
    cache.check_invariants();
}

/// An init in progress is registered (what `Debug` reports, and what
/// `check_invariants` rejects: it is called when no other thread uses the
/// cache), and nothing is once it has finished.
#[test]
fn an_init_in_progress_is_counted_in_flight() {
    let cache: TypedCache<u32, u32> = TypedCache::new();
    assert_eq!(cache.raw.in_flight(), 0);
    // Asserted after the init is released (a failed assertion inside
    // `during` would leave the init paused).
    let mut during = (0, String::new(), false);
    let got = with_init_paused(&cache, || {
        let checked =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cache.check_invariants()));
        during = (
            cache.raw.in_flight(),
            format!("{cache:?}"),
            checked.is_err(),
        );
    });
    assert_eq!(got, 10);
    assert_eq!(during.0, 1);
    assert!(during.1.contains("in_flight: 1"), "{}", during.1);
    assert!(during.2, "check_invariants missed the init in progress");
    assert_eq!(cache.raw.in_flight(), 0);
    cache.check_invariants();
}

/// Small integer keys under an identity hash (their top bits zero) spread
/// over every shard (`shard_index.rs`): taking shards from fixed hash bits
/// put them all in one.
#[test]
fn small_integer_keys_under_an_identity_hash_use_every_shard() {
    let cache = TypedCache::<u64, u64>::builder()
        .capacity(8_192)
        .hasher(KeyIsHash)
        .build()
        .unwrap();
    for key in 0..4_096 {
        cache.insert(key, key);
    }
    let lens = cache.raw.shard_lens();
    let even = 4_096 / lens.len();
    assert!(
        lens.iter().all(|&n| n > even / 2 && n < even * 2),
        "{lens:?}"
    );
    cache.check_invariants();
}

/// A full bounded cache keeps little room past what it holds: each shard's
/// slab stops a step past its share (which a filling cache's shard can
/// pass, and a full one's passes by one for a moment before the bound
/// evicts), where doubling would have reserved twice the capacity.
#[test]
fn a_full_bounded_cache_reserves_a_step_past_each_share() {
    let cache = TypedCache::<u64, u64>::builder()
        .capacity(4_096)
        .shards(4)
        .build()
        .unwrap();
    for key in 0..3 * 4_096 {
        cache.insert(key, key);
    }
    assert_eq!(cache.len(), 4_096);
    let rooms = cache.raw.shard_rooms();
    assert_eq!(rooms.len(), 4);
    // A share of 1,024 and a step of 128 (four square roots of it) past it.
    assert!(rooms.iter().all(|&room| room <= 1_024 + 128), "{rooms:?}");
    assert!(rooms.iter().sum::<usize>() >= 4_096, "{rooms:?}");
    cache.check_invariants();
}

/// A resize sizes each shard for its new share: a cache built small and
/// grown keeps as little room past its entries as one built at that size.
#[test]
fn a_resized_cache_sizes_its_shards_for_the_new_share() {
    let cache = TypedCache::<u64, u64>::builder()
        .capacity(64)
        .shards(4)
        .build()
        .unwrap();
    for key in 0..1_000 {
        cache.insert(key, key);
    }
    cache.resize(4_096).unwrap();
    for key in 0..3 * 4_096 {
        cache.insert(key, key);
    }
    assert_eq!(cache.len(), 4_096);
    let rooms = cache.raw.shard_rooms();
    assert!(rooms.iter().all(|&room| room <= 1_024 + 128), "{rooms:?}");
    cache.check_invariants();
}
