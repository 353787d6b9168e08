//! Writes and what they report: displaced values, the listener's causes,
//! exact statistics, `to_vec` and `clear`, borrowed lookups, `resize`.

use std::time::Duration;

use larder::RemovalCause;

use crate::face::{Axes, Event, Expiry, Face, Log, TTI, TTL, sorted};

/// A value that weighs 1 under the weighted column's weigher, so that a
/// scripted case holds the same entries with and without weights.
pub fn unit(i: u32) -> u32 {
    16 * i + 1
}

fn take(log: &Log) -> Vec<Event> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn causes(events: &[Event], cause: RemovalCause) -> usize {
    events.iter().filter(|e| e.2 == cause).count()
}

/// How far to move the clock so that an untouched entry expires.
pub fn deadline(axes: &Axes) -> Duration {
    match axes.expiry {
        Expiry::Never => Duration::from_secs(10 * 365 * 24 * 3600),
        Expiry::Ttl => TTL,
        Expiry::Tti => TTI,
    }
}

/// `insert` and `remove` return the live value they displace, with a
/// listener or without one; the listener hears it once, as `Replaced` or
/// `Removed`.
pub fn insert_returns_the_displaced_value<F: Face>(axes: &Axes) {
    for listen in [false, true] {
        let mut config = axes.config(4);
        let log = listen.then(|| config.listen());
        let cache = F::build(&config);
        assert_eq!(cache.insert("a".into(), 1), None);
        assert_eq!(cache.insert("a".into(), 2), Some(1), "listener {listen}");
        assert_eq!(cache.get("a"), Some(2));
        assert_eq!(cache.get_or_init("a", || 3), 2, "an init over a live value");
        assert_eq!(cache.remove("a"), Some(2), "listener {listen}");
        assert_eq!(cache.remove("a"), None);
        assert_eq!(cache.insert("a".into(), 4), None);
        if let Some(log) = log {
            assert_eq!(
                take(&log),
                [
                    ("a".to_string(), 1, RemovalCause::Replaced),
                    ("a".to_string(), 2, RemovalCause::Removed),
                ]
            );
        }
        assert_eq!(cache.len(), 1);
        cache.check_invariants();
    }
}

/// Each cause is heard with the right count: replaced, evicted (one per
/// insert over the bound, each a live entry that is then gone), removed,
/// cleared, and expired (none without expiry).
pub fn the_listener_hears_each_cause<F: Face>(axes: &Axes) {
    let mut config = axes.config_with_capacity(3);
    let log = config.listen();
    let clock = config.clock.clone();
    let cache = F::build(&config);
    for k in 0..3 {
        cache.insert(format!("k{k}"), unit(k));
    }
    assert_eq!(cache.insert("k0".into(), unit(10)), Some(unit(0)));
    assert_eq!(take(&log), [("k0".into(), unit(0), RemovalCause::Replaced)]);
    for k in 3..6 {
        let before = cache.to_vec();
        cache.insert(format!("k{k}"), unit(k));
        let heard = take(&log);
        assert_eq!(heard.len(), 1, "{heard:?}");
        let (key, value, cause) = &heard[0];
        assert_eq!(*cause, RemovalCause::Evicted);
        assert!(before.contains(&(key.clone(), *value)), "evicted {key}");
        assert!(!cache.contains_key(key));
        assert_eq!(cache.len(), 3);
    }
    assert_eq!(cache.stats().evictions, 3);
    let (live, _) = cache.to_vec().into_iter().next().unwrap();
    assert!(cache.remove(&live).is_some());
    assert_eq!(cache.remove("absent"), None);
    let heard = take(&log);
    assert_eq!((heard.len(), causes(&heard, RemovalCause::Removed)), (1, 1));
    cache.clear();
    let heard = take(&log);
    assert_eq!((heard.len(), causes(&heard, RemovalCause::Cleared)), (2, 2));
    cache.insert("x".into(), unit(20));
    cache.insert("y".into(), unit(21));
    clock.advance(deadline(axes));
    // Storing over an expired entry replaces nothing: it returns no old
    // value, and the old one is heard as expired.
    let never = axes.expiry == Expiry::Never;
    assert_eq!(
        cache.insert("x".into(), unit(22)),
        never.then_some(unit(20))
    );
    cache.purge_expired();
    assert_eq!(cache.get("y"), never.then_some(unit(21)));
    let heard = sorted(take(&log));
    let expected: Vec<Event> = if never {
        vec![("x".into(), unit(20), RemovalCause::Replaced)]
    } else {
        vec![
            ("x".into(), unit(20), RemovalCause::Expired),
            ("y".into(), unit(21), RemovalCause::Expired),
        ]
    };
    assert_eq!(heard, expected);
    assert_eq!(cache.stats().evictions, 3, "expiry is not eviction");
    cache.check_invariants();
}

/// Every counter, exactly, after a scripted sequence.
pub fn stats_are_exact_for_a_script<F: Face>(axes: &Axes) {
    let config = axes.config_with_capacity(2);
    let clock = config.clock.clone();
    let cache = F::build(&config);
    assert_eq!(cache.get("a"), None); // miss
    cache.insert("a".into(), unit(1)); // insert
    assert_eq!(cache.get("a"), Some(unit(1))); // hit
    assert_eq!(cache.get_with("a", |v| *v + 1), Some(unit(1) + 1)); // hit
    assert!(!cache.contains_key("b")); // not counted
    assert_eq!(cache.get_or_init("b", || unit(2)), unit(2)); // miss, init, insert
    assert_eq!(cache.get_or_init("b", || unreachable!()), unit(2)); // hit
    let failed = cache.get_or_try_init("c", || Err::<u32, _>(())); // miss, init, failure
    assert!(failed.is_err());
    assert_eq!(
        cache.get_or_try_init("b", || Err::<u32, _>(())),
        Ok(unit(2))
    ); // hit
    cache.insert("c".into(), unit(3)); // insert, evicts one
    assert_eq!(cache.get_with("zz", |v| *v), None); // miss
    let stats = cache.stats();
    let got = (stats.hits, stats.misses, stats.inserts, stats.evictions);
    assert_eq!(got, (4, 4, 3, 1), "{stats:?}");
    let got = (stats.inits, stats.init_failures, stats.waits, stats.len);
    assert_eq!(got, (2, 1, 0, 2), "{stats:?}");
    assert_eq!(stats.capacity, Some(2));
    assert_eq!(stats.weighted_size, axes.weighted.then_some(2));
    clock.advance(deadline(axes));
    if axes.expiry == Expiry::Never {
        assert_eq!(cache.get("c"), Some(unit(3))); // hit
        assert_eq!(cache.get_or_init("c", || unreachable!()), unit(3)); // hit
        let stats = cache.stats();
        let got = (stats.hits, stats.misses, stats.inits, stats.inserts);
        assert_eq!(got, (6, 4, 2, 3), "{stats:?}");
    } else {
        assert_eq!(cache.get("c"), None); // miss
        assert_eq!(cache.get_or_init("c", || unit(4)), unit(4)); // miss, init, insert
        let stats = cache.stats();
        let got = (stats.hits, stats.misses, stats.inits, stats.inserts);
        assert_eq!(got, (4, 6, 3, 4), "{stats:?}");
        assert_eq!(stats.evictions, 1, "expiry is not eviction");
    }
}

/// `to_vec` holds exactly the live entries; `clear` empties the cache,
/// hands every entry to the listener as `Cleared`, counts no eviction, and
/// leaves the cache usable.
pub fn to_vec_and_clear<F: Face>(axes: &Axes) {
    let mut config = axes.config(16);
    let log = config.listen();
    let cache = F::build(&config);
    let mut expected: Vec<(String, u32)> = (0..10).map(|k| (format!("k{k:02}"), k * 3)).collect();
    for (k, v) in &expected {
        cache.insert(k.clone(), *v);
    }
    assert_eq!(cache.get_or_init("k10", || 30), 30);
    expected.push(("k10".into(), 30));
    let mut entries = cache.to_vec();
    entries.sort();
    assert_eq!(entries, expected);
    assert_eq!(cache.len(), 11);
    cache.clear();
    assert_eq!((cache.len(), cache.to_vec()), (0, vec![]));
    assert!(expected.iter().all(|(k, _)| !cache.contains_key(k)));
    let heard = sorted(take(&log));
    let cleared: Vec<Event> = expected
        .iter()
        .map(|(k, v)| (k.clone(), *v, RemovalCause::Cleared))
        .collect();
    assert_eq!(heard, cleared);
    let stats = cache.stats();
    assert_eq!((stats.len, stats.evictions), (0, 0));
    cache.insert("after".into(), 1);
    assert_eq!(cache.get("after"), Some(1));
    cache.check_invariants();
}

/// `String` keys are looked up by `&str` in every operation that takes a
/// borrowed key, and `to_vec` hands back the stored owned key.
pub fn borrowed_lookups<F: Face>(axes: &Axes) {
    let cache = F::build(&axes.config(4));
    cache.insert(String::from("alpha"), 1);
    let probe: &str = &format!("al{}", "pha"); // another allocation
    assert_eq!(cache.get(probe), Some(1));
    assert_eq!(cache.get_with(probe, |v| *v * 10), Some(10));
    assert!(cache.contains_key(probe));
    assert!(!cache.contains_key("alph"));
    assert_eq!(cache.get_or_init(probe, || unreachable!()), 1);
    assert_eq!(cache.get_or_try_init(probe, || Err::<u32, _>(())), Ok(1));
    assert_eq!(cache.get_or_init("beta", || 2), 2);
    let mut entries = cache.to_vec();
    entries.sort();
    assert_eq!(entries, [("alpha".to_string(), 1), ("beta".to_string(), 2)]);
    assert_eq!(cache.remove(probe), Some(1));
    assert!(!cache.contains_key("alpha"));
    cache.check_invariants();
}

/// Shrinking evicts down to the new bound (each victim heard, counted);
/// a capacity of 0 is refused and changes nothing; growing makes room.
pub fn resize_keeps_the_bound<F: Face>(axes: &Axes) {
    let mut config = axes.config_with_capacity(8);
    let log = config.listen();
    let cache = F::build(&config);
    for k in 0..8 {
        cache.insert(format!("k{k}"), unit(k));
    }
    cache.resize(3).unwrap();
    let heard = take(&log);
    assert_eq!((heard.len(), causes(&heard, RemovalCause::Evicted)), (5, 5));
    let stats = cache.stats();
    assert_eq!(
        (stats.len, stats.evictions, stats.capacity),
        (3, 5, Some(3))
    );
    assert!(heard.iter().all(|(k, _, _)| !cache.contains_key(k)));
    assert!(cache.resize(0).is_err());
    assert_eq!((cache.len(), cache.stats().capacity), (3, Some(3)));
    cache.resize(6).unwrap();
    for k in 10..13 {
        cache.insert(format!("k{k}"), unit(k));
    }
    assert_eq!((cache.len(), cache.stats().evictions), (6, 5));
    assert!(take(&log).is_empty());
    cache.check_invariants();
}
