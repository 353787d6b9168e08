//! Expiry on the manual clock: an entry is visible until its deadline,
//! invisible exactly at it and never returned after it, and heard once as
//! `Expired`; `purge_expired` releases exactly the expired entries.

use std::time::Duration;

use larder::RemovalCause;

use crate::face::{Axes, Expiry, Face, TTI, TTL, sorted};
use crate::writes::deadline;

const NANO: Duration = Duration::from_nanos(1);
const SECOND: Duration = Duration::from_secs(1);

pub fn expiry_deadlines<F: Face>(axes: &Axes) {
    let mut config = axes.config(8);
    let log = config.listen();
    let clock = config.clock.clone();
    let cache = F::build(&config);
    let heard = || std::mem::take(&mut *log.lock().unwrap());
    match axes.expiry {
        Expiry::Never => {
            cache.insert("a".into(), 1);
            clock.advance(deadline(axes));
            clock.advance(deadline(axes));
            assert_eq!(cache.get("a"), Some(1));
            cache.insert("b".into(), 2);
            assert_eq!(cache.purge_expired(), 0);
            assert_eq!(cache.len(), 2);
            assert!(heard().is_empty());
        }
        Expiry::Ttl => {
            cache.insert("a".into(), 1);
            cache.insert("b".into(), 2);
            // Reads do not extend a time to live.
            for _ in 0..9 {
                clock.advance(SECOND);
                assert_eq!(cache.get("a"), Some(1));
            }
            clock.advance(SECOND - NANO);
            assert_eq!(cache.get_with("a", |v| *v), Some(1), "before the deadline");
            assert!(cache.contains_key("b"));
            clock.advance(NANO); // exactly TTL after the insert
            assert!(!cache.contains_key("b"), "visible at its deadline");
            assert_eq!(cache.get("a"), None, "returned at its deadline");
            assert_eq!(cache.to_vec(), []);
            // The read released "a" first; its sweep may have released "b"
            // too (one shard), else the next read of "b" does.
            let mut released = heard();
            assert_eq!(released[0], ("a".into(), 1, RemovalCause::Expired));
            clock.advance(TTL);
            assert_eq!(cache.get("b"), None);
            assert_eq!(cache.get_with("b", |v| *v), None);
            released.extend(heard());
            assert_eq!(
                released,
                [
                    ("a".into(), 1, RemovalCause::Expired),
                    ("b".into(), 2, RemovalCause::Expired)
                ]
            );
            assert_eq!(cache.get_or_init("a", || 3), 3, "not initialized again");
            assert_eq!(cache.get_or_init("a", || unreachable!()), 3);
            assert_eq!((cache.stats().inits, cache.len()), (1, 1));
        }
        Expiry::Tti => {
            cache.insert("a".into(), 1);
            cache.insert("b".into(), 2);
            clock.advance(60 * SECOND);
            assert_eq!(cache.get("a"), Some(1)); // read at 60 s
            assert_eq!(cache.get_with("b", |v| *v), Some(2)); // read at 60 s
            clock.advance(TTI - NANO);
            // Idle for just under TTI: live; `contains_key` is not a read.
            assert!(cache.contains_key("a") && cache.contains_key("b"));
            assert_eq!(cache.get("a"), Some(1)); // read at 124 s - 1 ns
            clock.advance(NANO); // b idle exactly TTI
            assert!(!cache.contains_key("b"), "visible at its deadline");
            assert_eq!(cache.get("b"), None, "returned at its deadline");
            assert_eq!(heard(), [("b".into(), 2, RemovalCause::Expired)]);
            assert_eq!(cache.to_vec(), [("a".into(), 1)]);
            clock.advance(TTI - SECOND);
            assert_eq!(cache.get("a"), Some(1), "the read just before extended it");
            clock.advance(TTI);
            assert_eq!(cache.get("a"), None);
            assert_eq!(cache.get("b"), None);
            assert_eq!(heard(), [("a".into(), 1, RemovalCause::Expired)]);
        }
    }
    cache.check_invariants();
}

/// `purge_expired` releases every expired entry and only those, reports
/// how many, and the listener hears each as `Expired`.
pub fn purge_expired_releases_the_expired<F: Face>(axes: &Axes) {
    let mut config = axes.config(40);
    let log = config.listen();
    let clock = config.clock.clone();
    let cache = F::build(&config);
    for k in 0..20 {
        cache.insert(format!("old{k}"), k);
    }
    clock.advance(deadline(axes) / 2);
    for k in 0..10 {
        cache.insert(format!("young{k}"), k);
    }
    clock.advance(deadline(axes) - deadline(axes) / 2);
    let purged = cache.purge_expired();
    let heard = sorted(std::mem::take(&mut *log.lock().unwrap()));
    if axes.expiry == Expiry::Never {
        assert_eq!((purged, cache.len()), (0, 30));
        assert!(heard.is_empty());
        return;
    }
    let expected = sorted(
        (0..20)
            .map(|k| (format!("old{k}"), k, RemovalCause::Expired))
            .collect(),
    );
    assert_eq!(heard, expected);
    assert_eq!((purged, cache.len()), (20, 10));
    assert!((0..10).all(|k| cache.contains_key(&format!("young{k}"))));
    assert_eq!(cache.purge_expired(), 0);
    cache.check_invariants();
}
