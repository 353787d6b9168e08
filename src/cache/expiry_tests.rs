//! Unit tests of expiry in the engine, under every policy: an expired entry
//! is never a hit, the sweep is bounded and reaches every expired entry,
//! idle time follows uses, and a shard without expiry keeps no times.

use std::time::Duration;

use super::policy::Policy;
use super::{Exact, Expiry, Lookup, S3Fifo, SecondChance, Shard};

const S: u64 = 1_000_000_000;

fn hash(key: u32) -> u64 {
    u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

fn ttl(secs: u64) -> Option<Expiry> {
    Expiry::new(Some(Duration::from_secs(secs)), None)
}

fn tti(secs: u64) -> Option<Expiry> {
    Expiry::new(None, Some(Duration::from_secs(secs)))
}

/// Runs `test` on a shard of each policy.
fn each_policy(capacity: usize, expiry: Option<Expiry>, test: impl Fn(&mut dyn Probe)) {
    if expiry.is_none() {
        return each_policy_of::<false>(capacity, expiry, test);
    }
    each_policy_of::<true>(capacity, expiry, test);
}

fn each_policy_of<const E: bool>(
    capacity: usize,
    expiry: Option<Expiry>,
    test: impl Fn(&mut dyn Probe),
) {
    test(&mut Shard::<u32, u32, Exact, E>::with_expiry(
        capacity, expiry,
    ));
    test(&mut Shard::<u32, u32, SecondChance, E>::with_expiry(
        capacity, expiry,
    ));
    test(&mut Shard::<u32, u32, S3Fifo, E>::with_expiry(
        capacity, expiry,
    ));
}

/// The shard operations the tests use, object-safe over the policy.
trait Probe {
    fn put(&mut self, key: u32, now: u64) -> (usize, usize, bool);
    fn hit(&mut self, key: u32, now: u64) -> Option<u32>;
    fn expired(&mut self, key: u32, now: u64) -> bool;
    fn sweep(&mut self, now: u64, budget: usize) -> Vec<u32>;
    fn purge(&mut self, now: u64) -> Vec<u32>;
    fn live(&self, now: u64) -> Vec<u32>;
    fn len(&self) -> usize;
    fn check(&self);
}

impl<P: Policy, const E: bool> Probe for Shard<u32, u32, P, E> {
    /// Inserts `key`, sweeping up to 4: (evicted, of them expired, whether
    /// a replaced value had expired).
    fn put(&mut self, key: u32, now: u64) -> (usize, usize, bool) {
        let inserted = self.insert(hash(key), key, key, 1, now, 4);
        (
            inserted.evicted.len(),
            inserted.expired,
            inserted.replaced_expired,
        )
    }
    fn hit(&mut self, key: u32, now: u64) -> Option<u32> {
        self.get(hash(key), &key, now).live().copied()
    }
    fn expired(&mut self, key: u32, now: u64) -> bool {
        matches!(self.get(hash(key), &key, now), Lookup::Expired)
    }
    fn sweep(&mut self, now: u64, budget: usize) -> Vec<u32> {
        let mut out = Vec::new();
        Shard::sweep(self, now, budget, |(k, _)| out.push(k));
        out
    }
    fn purge(&mut self, now: u64) -> Vec<u32> {
        let mut out = Vec::new();
        Shard::purge(self, now, |(k, _)| out.push(k));
        out.sort_unstable();
        out
    }
    fn live(&self, now: u64) -> Vec<u32> {
        let mut out = Vec::new();
        self.for_each(now, |k, _| out.push(*k));
        out.sort_unstable();
        out
    }
    fn len(&self) -> usize {
        Shard::len(self)
    }
    fn check(&self) {
        self.check_invariants();
    }
}

#[test]
fn an_expired_entry_is_never_a_hit_and_stays_until_released() {
    each_policy(8, ttl(10), |shard| {
        shard.put(1, 0);
        assert_eq!(shard.hit(1, 10 * S - 1), Some(1));
        assert!(shard.expired(1, 10 * S));
        assert_eq!(shard.hit(1, 10 * S), None);
        assert_eq!(shard.len(), 1, "a lookup releases nothing itself");
        assert!(shard.live(10 * S).is_empty());
        shard.check();
    });
}

#[test]
fn a_replacement_starts_the_times_again_and_reports_the_expired_value() {
    each_policy(8, ttl(10), |shard| {
        shard.put(1, 0);
        assert_eq!(shard.put(1, 5 * S), (0, 0, false));
        assert_eq!(shard.put(1, 14 * S), (0, 0, false), "stored at 5 s");
        assert_eq!(shard.put(1, 24 * S), (0, 0, true));
        assert_eq!(shard.hit(1, 25 * S), Some(1));
        shard.check();
    });
}

#[test]
fn idle_time_follows_uses() {
    each_policy(8, tti(10), |shard| {
        shard.put(1, 0);
        for t in 1..5 {
            assert_eq!(shard.hit(1, t * 9 * S), Some(1), "used every 9 s");
        }
        assert!(shard.expired(1, 36 * S + 10 * S));
        shard.check();
    });
}

#[test]
fn the_sweep_is_bounded_and_releases_every_expired_entry_eventually() {
    each_policy(64, ttl(10), |shard| {
        for k in 0..20 {
            shard.put(k, 0);
        }
        // The insert's own sweep: 4 looks.
        let (_, by_insert, _) = shard.put(100, 10 * S);
        assert_eq!(by_insert, 4);
        let swept = shard.sweep(10 * S, 3).len();
        assert!((1..=3).contains(&swept), "{swept} for 3 looks");
        let mut released = by_insert + swept;
        shard.check();
        for _ in 0..12 {
            released += shard.sweep(10 * S, 3).len();
            shard.check();
        }
        assert_eq!(released, 20);
        assert_eq!(shard.live(10 * S), [100]);
        assert_eq!(shard.len(), 1);
    });
}

#[test]
fn an_insert_sweeps_before_it_makes_room() {
    each_policy(4, ttl(10), |shard| {
        for k in 0..4 {
            shard.put(k, 0);
        }
        // Full, and all four expired: the insert's sweep frees room, so no
        // live entry (there is none) and nothing counts as evicted.
        let (evicted, expired, _) = shard.put(9, 10 * S);
        assert_eq!((evicted, expired), (4, 4));
        assert_eq!(shard.live(10 * S), [9]);
        shard.check();
    });
}

#[test]
fn purge_releases_exactly_the_expired_entries() {
    each_policy(64, ttl(10), |shard| {
        for k in 0..10 {
            shard.put(k, k as u64 * S);
        }
        assert_eq!(shard.purge(14 * S), [0, 1, 2, 3, 4]);
        assert_eq!(shard.live(14 * S), [5, 6, 7, 8, 9]);
        shard.check();
    });
}

#[test]
fn without_expiry_nothing_expires_and_no_times_are_kept() {
    each_policy(8, None, |shard| {
        shard.put(1, 0);
        // `now` is ignored: no entry ever expires.
        assert_eq!(shard.hit(1, u64::MAX), Some(1));
        assert!(shard.sweep(u64::MAX, 8).is_empty());
        assert!(shard.purge(u64::MAX).is_empty());
        // The invariant checker asserts the times table is empty.
        shard.check();
    });
}

#[test]
fn an_expired_victim_is_released_as_expired_after_the_swept_ones() {
    let mut shard = Shard::<u32, u32, Exact, true>::with_expiry(3, ttl(10));
    for (key, at) in [(1, 0), (2, 1), (3, 8)] {
        shard.insert(hash(key), key, key, 1, at * S, 0);
    }
    // At 10 s, 1 has expired: no sweep, and it is the victim.
    let inserted = shard.insert(hash(4), 4, 4, 1, 10 * S, 0);
    assert_eq!(inserted.expired, 1);
    assert_eq!(inserted.evicted.single(), Some((1, 1)));
    // At 11 s, 2 has expired too (a use at 0 s made it the most recent,
    // so 3 is the victim): a new entry of weight 2 gets room from the
    // sweep (2, expired) and from evicting 3 (live), in that order.
    shard.get(hash(2), &2, 0);
    let mut inserted = shard.insert(hash(5), 5, 5, 2, 11 * S, 4);
    assert_eq!(inserted.expired, 1);
    inserted.evicted.insert(1, (0, 0));
    let evicted: Vec<_> = inserted.evicted.into_iter().collect();
    assert_eq!(evicted, [(2, 2), (0, 0), (3, 3)], "Evicted::insert at 1");
    shard.check_invariants();
}

/// A shard that shrinks gives back the room of its entries' times too.
#[test]
fn shrinking_gives_back_the_times_room() {
    let mut times = super::expiry::Times::new(ttl(10));
    for _ in 0..1_000 {
        times.push(0);
    }
    for i in (0..990).rev() {
        times.swap_remove(i);
    }
    times.shrink_to(10);
    assert!(times.room() < 100, "room for {} times kept", times.room());
}
