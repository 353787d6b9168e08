//! loom models of `LruCache`: every interleaving of 2-3 threads, with the
//! real cache code over loom's stand-ins for the shard mutexes, the
//! single-flight group's locks and the atomics. Each model runs under both
//! policies (`Exact`: every lookup takes the shard's exclusive lock;
//! `Clock`: lookups share its shared lock) and has a negative control per
//! policy that runs a deliberately broken protocol and must fail.
#![cfg(loom)]

use larder::EvictionPolicy;
use larder::fault::{FlightFault, LruFault, inject};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

/// A full one-shard cache of capacity 1; two threads insert new keys while
/// the main thread reads `len()`: it never exceeds the capacity, and the
/// counts are exact at the end.
fn bound_holds_under_concurrent_inserts(policy: EvictionPolicy, fault: LruFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(loom_tests::lru(1, 1, policy));
        cache.insert(0, 0);
        let inserters: Vec<_> = [1, 2]
            .into_iter()
            .map(|key| {
                let cache = Arc::clone(&cache);
                thread::spawn(move || {
                    cache.insert(key, key);
                })
            })
            .collect();
        let seen = cache.len();
        assert!(seen <= 1, "bound exceeded: len {seen} over capacity 1");
        for inserter in inserters {
            inserter.join().unwrap();
        }
        let stats = cache.stats();
        assert_eq!((stats.len, stats.inserts, stats.evictions), (1, 3, 2));
    });
}

#[test]
fn lru_bound_holds_under_concurrent_inserts() {
    bound_holds_under_concurrent_inserts(EvictionPolicy::Exact, LruFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn lru_bound_negative_control_split_eviction() {
    bound_holds_under_concurrent_inserts(EvictionPolicy::Exact, LruFault::SplitEviction);
}

#[test]
fn lru_clock_bound_holds_under_concurrent_inserts() {
    bound_holds_under_concurrent_inserts(EvictionPolicy::Clock, LruFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn lru_clock_bound_negative_control_split_eviction() {
    bound_holds_under_concurrent_inserts(EvictionPolicy::Clock, LruFault::SplitEviction);
}

/// Two threads each make two gets (one hit, one miss) on one shard while the
/// main thread inserts: `hits + misses` is exactly the number of gets. One
/// reader uses `get` (an `Arc` out), the other `get_with` (the value read
/// under the lock): both hit paths count the same way.
fn hits_plus_misses_equal_gets(policy: EvictionPolicy, fault: LruFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(loom_tests::lru(2, 1, policy));
        cache.insert(1, 1);
        let readers: Vec<_> = (0..2)
            .map(|reader| {
                let cache = Arc::clone(&cache);
                thread::spawn(move || {
                    if reader == 0 {
                        assert!(cache.get(&1).is_some());
                        cache.get(&2);
                    } else {
                        assert_eq!(cache.get_with(&1, |v| *v), Some(1));
                        if let Some(value) = cache.get_with(&2, |v| *v) {
                            assert_eq!(value, 2);
                        }
                    }
                })
            })
            .collect();
        cache.insert(2, 2);
        for reader in readers {
            reader.join().unwrap();
        }
        let stats = cache.stats();
        assert_eq!(
            stats.hits + stats.misses,
            4,
            "hits + misses != gets: {stats:?}"
        );
        assert!(stats.hits >= 2);
    });
}

#[test]
fn lru_hits_plus_misses_equal_gets() {
    hits_plus_misses_equal_gets(EvictionPolicy::Exact, LruFault::None);
}

#[test]
#[should_panic(expected = "hits + misses != gets")]
fn lru_stats_negative_control_racy_counter() {
    hits_plus_misses_equal_gets(EvictionPolicy::Exact, LruFault::RacyStats);
}

/// Under `Clock` the two readers' lookups share the shard's lock, so their
/// counts go to per-thread stripes (loom: the shared fallback stripe).
#[test]
fn lru_clock_hits_plus_misses_equal_gets() {
    hits_plus_misses_equal_gets(EvictionPolicy::Clock, LruFault::None);
}

/// Counting under the shared lock with a load and a store loses a count
/// when both readers hold it at once.
#[test]
#[should_panic(expected = "hits + misses != gets")]
fn lru_clock_stats_negative_control_racy_counter() {
    hits_plus_misses_equal_gets(EvictionPolicy::Clock, LruFault::RacyStats);
}

/// `Clock`: a full two-entry shard holds 1 and 2, neither used; one thread
/// gets 1 while another inserts 3. A hit sets 1's reference bit before the
/// lookup ends, so the hand then passes over it: the get hits if and only
/// if 1 survives (2 is evicted), and misses only if the insert evicted 1
/// first.
///
/// `S3Fifo` has the same property on this shard: 1 and 2 both sit in the
/// probation queue, 1 the oldest; a hit moves 1 on to the main queue when
/// the insert looks for a victim, which is then 2.
fn clock_hit_protects_its_entry(policy: EvictionPolicy, fault: LruFault, read_in_place: bool) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(loom_tests::lru(2, 1, policy));
        cache.insert(1, 1);
        cache.insert(2, 2);
        let reader = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                if read_in_place {
                    cache.get_with(&1, |v| *v).is_some()
                } else {
                    cache.get(&1).is_some()
                }
            })
        };
        cache.insert(3, 3);
        let hit = reader.join().unwrap();
        let survived = cache.contains_key(&1);
        assert_eq!(
            hit, survived,
            "a hit's entry was evicted before an unused one (hit {hit}, 1 survived {survived})"
        );
        assert_eq!(cache.contains_key(&2), !survived);
        assert!(cache.contains_key(&3));
    });
}

#[test]
fn lru_clock_hit_protects_its_entry() {
    clock_hit_protects_its_entry(EvictionPolicy::Clock, LruFault::None, false);
}

#[test]
#[should_panic(expected = "a hit's entry was evicted before an unused one")]
fn lru_clock_hit_negative_control_late_reference_bit() {
    clock_hit_protects_its_entry(EvictionPolicy::Clock, LruFault::LateReferenceBit, false);
}

/// The same through `get_with`, which reads the value under the lock.
#[test]
fn lru_clock_get_with_hit_protects_its_entry() {
    clock_hit_protects_its_entry(EvictionPolicy::Clock, LruFault::None, true);
}

#[test]
#[should_panic(expected = "a hit's entry was evicted before an unused one")]
fn lru_clock_get_with_hit_negative_control_late_reference_bit() {
    clock_hit_protects_its_entry(EvictionPolicy::Clock, LruFault::LateReferenceBit, true);
}

/// Two threads race `get_or_init` on one missing key: the loader runs once,
/// both get its value, and the stats count one load and two misses.
fn get_or_load_runs_the_loader_once(policy: EvictionPolicy, fault: FlightFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let cache = Arc::new(loom_tests::lru(2, 1, policy));
        let runs = Arc::new(AtomicUsize::new(0));
        let racer = || {
            let cache = Arc::clone(&cache);
            let runs = Arc::clone(&runs);
            thread::spawn(move || {
                cache.get_or_init(&7, || {
                    // SeqCst: a test counter, read after both joins.
                    runs.fetch_add(1, Ordering::SeqCst);
                    70
                })
            })
        };
        let a = racer();
        let b = racer();
        assert_eq!((a.join().unwrap(), b.join().unwrap()), (70, 70));
        let runs = runs.load(Ordering::SeqCst);
        assert_eq!(runs, 1, "the loader ran {runs} times");
        let stats = cache.stats();
        assert_eq!((stats.inits, stats.len), (1, 1));
        assert_eq!(stats.hits + stats.misses, 2);
    });
}

#[test]
fn lru_get_or_load_runs_the_loader_once() {
    get_or_load_runs_the_loader_once(EvictionPolicy::Exact, FlightFault::None);
}

#[test]
#[should_panic(expected = "the loader ran 2 times")]
fn lru_get_or_load_negative_control_skip_flight() {
    get_or_load_runs_the_loader_once(EvictionPolicy::Exact, FlightFault::SkipFlight);
}

#[test]
fn lru_clock_get_or_load_runs_the_loader_once() {
    get_or_load_runs_the_loader_once(EvictionPolicy::Clock, FlightFault::None);
}

#[test]
#[should_panic(expected = "the loader ran 2 times")]
fn lru_clock_get_or_load_negative_control_skip_flight() {
    get_or_load_runs_the_loader_once(EvictionPolicy::Clock, FlightFault::SkipFlight);
}

// The same models under `S3Fifo`, whose hits also share the shard's lock.

#[test]
fn lru_s3fifo_bound_holds_under_concurrent_inserts() {
    bound_holds_under_concurrent_inserts(EvictionPolicy::S3Fifo, LruFault::None);
}

#[test]
#[should_panic(expected = "bound exceeded")]
fn lru_s3fifo_bound_negative_control_split_eviction() {
    bound_holds_under_concurrent_inserts(EvictionPolicy::S3Fifo, LruFault::SplitEviction);
}

#[test]
fn lru_s3fifo_hits_plus_misses_equal_gets() {
    hits_plus_misses_equal_gets(EvictionPolicy::S3Fifo, LruFault::None);
}

#[test]
#[should_panic(expected = "hits + misses != gets")]
fn lru_s3fifo_stats_negative_control_racy_counter() {
    hits_plus_misses_equal_gets(EvictionPolicy::S3Fifo, LruFault::RacyStats);
}

#[test]
fn lru_s3fifo_hit_protects_its_entry() {
    clock_hit_protects_its_entry(EvictionPolicy::S3Fifo, LruFault::None, false);
}

#[test]
#[should_panic(expected = "a hit's entry was evicted before an unused one")]
fn lru_s3fifo_hit_negative_control_late_use() {
    clock_hit_protects_its_entry(EvictionPolicy::S3Fifo, LruFault::LateReferenceBit, false);
}

#[test]
fn lru_s3fifo_get_or_load_runs_the_loader_once() {
    get_or_load_runs_the_loader_once(EvictionPolicy::S3Fifo, FlightFault::None);
}
