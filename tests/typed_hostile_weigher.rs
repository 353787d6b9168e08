//! A panicking weigher in every write of a weighted `TypedCache`: each
//! operation runs with the weigher panicking at its first, second, ...
//! call, on every policy, one shard or spread, with and without expired
//! entries held. The weigher runs before the shard is touched, so a run
//! whose weigher panicked must leave the cache exactly as it was (entries,
//! `len`, `weighted_size`, no listener event); every run, panicked or not,
//! must leave the invariants (`len` and the weight total in step with the
//! shards, within `capacity`) and a cache that still caches and evicts.
//! Also: the weight accounting of replacements, a value heavier than the
//! whole capacity, and the removals that subtract weight.

#[path = "common/hasher.rs"]
mod hasher;

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use hasher::TestState;
use larder::{EvictionPolicy, ManualClock, RemovalCause, TypedCache};

type Cache = TypedCache<u64, u64, TestState>;
/// A named operation on the cache.
type Op<'a> = (&'a str, &'a dyn Fn(&Cache));

thread_local! {
    /// The weigher's calls so far on this thread.
    static CALLS: Cell<u64> = const { Cell::new(0) };
    /// The call that panics (0: none).
    static PLANTED: Cell<u64> = const { Cell::new(0) };
    /// What the listener heard.
    static HEARD: RefCell<Vec<(u64, u64, RemovalCause)>> = const { RefCell::new(Vec::new()) };
}

/// A value's weight is its low four bits (0 counts as 1); the weigher
/// panics at the planted call.
fn weigh(_key: &u64, value: &u64) -> u32 {
    let call = CALLS.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    if PLANTED.with(Cell::get) == call {
        panic!("hostile weigher at call {call}");
    }
    (value % 16) as u32
}

/// The weight the cache counts for `value`.
fn weight(value: u64) -> usize {
    ((value % 16) as usize).max(1)
}

/// `id`'s value of weight `w` (1 to 15): the id in the high bits.
fn value(id: u64, w: u64) -> u64 {
    id * 16 + w
}

const CAPACITY: usize = 12;

#[derive(Clone, Copy, Debug)]
struct Shape {
    policy: EvictionPolicy,
    one_shard: bool,
    ttl: bool,
}

/// A cache of `CAPACITY` weight, filled with ids 0..8 of weights 1 to 2
/// (under `ttl`, the first half stored 6 s before the rest and the clock
/// then moved to 12 s: expired, still held).
fn build(shape: Shape) -> (Cache, ManualClock) {
    let clock = ManualClock::new();
    let mut builder = TypedCache::<u64, u64>::builder()
        .hasher(TestState {
            one_shard: shape.one_shard,
            ..TestState::spread()
        })
        .clock(clock.clone())
        .policy(shape.policy)
        // 16 shards (a cache this small gets one by default): spread keys
        // evict across shards.
        .shards(16)
        .capacity(CAPACITY)
        .weigher(weigh)
        .eviction_listener(|key, value, cause| {
            HEARD.with(|heard| heard.borrow_mut().push((key, value, cause)));
        });
    if shape.ttl {
        builder = builder.time_to_live(Duration::from_secs(10));
    }
    let cache = builder.build().unwrap();
    for id in 0..8 {
        if shape.ttl && id == 4 {
            clock.advance(Duration::from_secs(6));
        }
        cache.insert(id, value(id, 1 + id % 2));
    }
    if shape.ttl {
        clock.advance(Duration::from_secs(6));
    }
    HEARD.with(|heard| heard.borrow_mut().clear());
    (cache, clock)
}

/// Everything a panicking weigher must leave as it was.
#[derive(Debug, PartialEq)]
struct State {
    entries: Vec<(u64, u64)>,
    len: usize,
    weighted_size: usize,
    heard: usize,
}

fn state(cache: &Cache) -> State {
    let mut entries = cache.to_vec();
    entries.sort();
    State {
        entries,
        len: cache.len(),
        weighted_size: cache.weighted_size(),
        heard: HEARD.with(|heard| heard.borrow().len()),
    }
}

/// The checks after every run.
fn check(cache: &Cache, shape: Shape) {
    cache.check_invariants();
    let stats = cache.stats();
    assert_eq!(stats.weighted_size, Some(cache.weighted_size()));
    assert!(cache.weighted_size() <= CAPACITY);
    assert!(cache.len() <= cache.weighted_size());
    if !shape.ttl {
        // Nothing expired: every held entry is live, and its weight is
        // what the total counts.
        let live: usize = cache.to_vec().iter().map(|&(_, v)| weight(v)).sum();
        assert_eq!(live, cache.weighted_size(), "weighted_size vs the entries");
        assert_eq!(cache.to_vec().len(), cache.len());
    }
    // Still caches and evicts: fresh keys of weight 3, the bound kept.
    for id in 1_000..1_010 {
        cache.insert(id, value(id, 3));
        cache.check_invariants();
    }
    assert!(cache.contains_key(&1_009), "the last insert was not kept");
    assert!(cache.weighted_size() <= CAPACITY);
}

/// Runs `op` with the weigher panicking at its 1st, 2nd, ... call on a
/// fresh cache each time, until a run makes no planted call; returns the
/// panics caught.
fn sweep(shape: Shape, op: &dyn Fn(&Cache)) -> u64 {
    let mut panics = 0;
    for n in 1.. {
        let (cache, _clock) = build(shape);
        let before = state(&cache);
        let start = CALLS.with(Cell::get);
        PLANTED.with(|p| p.set(start + n));
        let outcome = catch_unwind(AssertUnwindSafe(|| op(&cache)));
        PLANTED.with(|p| p.set(0));
        let fired = CALLS.with(Cell::get) >= start + n;
        match outcome {
            Ok(()) => assert!(!fired, "{shape:?}: the planted panic was swallowed"),
            Err(_) => {
                assert!(fired, "{shape:?}: a panic that was not planted");
                assert_eq!(state(&cache), before, "{shape:?} call {n}: changed");
                panics += 1;
            }
        }
        check(&cache, shape);
        if !fired {
            return panics;
        }
        assert!(n < 100, "{shape:?}: the operation never finishes");
    }
    unreachable!()
}

#[test]
fn a_panicking_weigher_changes_nothing() {
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let planted = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m.starts_with("hostile weigher"));
        if !planted {
            quiet(info);
        }
    }));
    let ops: [Op<'_>; 7] = [
        ("insert new", &|c| {
            c.insert(600, value(600, 3));
        }),
        ("insert heavier", &|c| {
            c.insert(5, value(5, 9));
        }),
        ("insert lighter", &|c| {
            c.insert(6, value(6, 1));
        }),
        ("insert too heavy", &|c| {
            c.insert(5, value(5, 13));
        }),
        ("init", &|c| {
            c.get_or_init(&500, || value(500, 4));
        }),
        ("init too heavy", &|c| {
            c.get_or_init(&501, || value(501, 15));
        }),
        ("init hit", &|c| {
            c.get_or_init(&7, || value(7, 4));
        }),
    ];
    let mut panics = 0;
    for policy in [
        EvictionPolicy::Clock,
        EvictionPolicy::Exact,
        EvictionPolicy::S3Fifo,
    ] {
        for one_shard in [true, false] {
            for ttl in [false, true] {
                let shape = Shape {
                    policy,
                    one_shard,
                    ttl,
                };
                for (name, op) in ops {
                    let caught = sweep(shape, op);
                    // Each store weighs once; a hit weighs nothing.
                    let expected = u64::from(name != "init hit");
                    assert_eq!(caught, expected, "{shape:?} {name}");
                    panics += caught;
                }
            }
        }
    }
    assert_eq!(panics, 3 * 2 * 2 * 6);
}

/// Replacements adjust the total by the difference; a value heavier than
/// the capacity is not stored (its key's old value removed and returned,
/// the new one heard as evicted); remove, expiry, `purge_expired` and
/// `clear` subtract what they release.
#[test]
fn weights_follow_every_write() {
    for policy in [
        EvictionPolicy::Clock,
        EvictionPolicy::Exact,
        EvictionPolicy::S3Fifo,
    ] {
        for one_shard in [true, false] {
            let shape = Shape {
                policy,
                one_shard,
                ttl: true,
            };
            let (cache, clock) = build(shape);
            // Ids 0..4 (weights 1, 2, 1, 2) expired; 4..8 live.
            assert_eq!((cache.len(), cache.weighted_size()), (8, 12));
            assert_eq!(cache.purge_expired(), 4);
            assert_eq!((cache.len(), cache.weighted_size()), (4, 6));
            cache.insert(4, value(4, 5)); // 1 -> 5
            assert_eq!(cache.weighted_size(), 10);
            cache.insert(4, value(4, 2)); // 5 -> 2
            assert_eq!(cache.weighted_size(), 7);
            assert_eq!(cache.remove(&5), Some(value(5, 2)));
            assert_eq!((cache.len(), cache.weighted_size()), (3, 5));
            HEARD.with(|heard| heard.borrow_mut().clear());
            // Too heavy: the old value is removed and returned, the new
            // one heard as evicted and counted.
            let evictions = cache.stats().evictions;
            assert_eq!(cache.insert(6, value(6, 13)), Some(value(6, 1)));
            assert!(!cache.contains_key(&6));
            assert_eq!((cache.len(), cache.weighted_size()), (2, 4));
            assert_eq!(cache.stats().evictions, evictions + 1);
            let heard = HEARD.with(|heard| std::mem::take(&mut *heard.borrow_mut()));
            assert_eq!(
                heard,
                [
                    (6, value(6, 1), RemovalCause::Replaced),
                    (6, value(6, 13), RemovalCause::Evicted)
                ]
            );
            // An init of a too heavy value returns it, uncached.
            assert_eq!(cache.get_or_init(&9, || value(9, 14)), value(9, 14));
            assert!(!cache.contains_key(&9));
            // Heavier than what is left: evicts others, never itself.
            cache.insert(10, value(10, 11));
            assert!(cache.contains_key(&10));
            assert!(cache.weighted_size() <= CAPACITY);
            cache.check_invariants();
            // Expiry through a read releases the weight too.
            clock.advance(Duration::from_secs(11));
            assert_eq!(cache.get(&10), None);
            assert_eq!(cache.weighted_size(), cache.len());
            cache.insert(11, value(11, 3));
            cache.clear();
            assert_eq!((cache.len(), cache.weighted_size()), (0, 0));
            cache.check_invariants();
            check(&cache, shape);
        }
    }
}
