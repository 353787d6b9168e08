//! Unit tests of a shard's memory as it fills: the slab (and the side
//! tables of weights and times) grows by doubling but never past the
//! entries the shard can hold, so a full shard keeps no room it will never
//! use; and the slot table of a full shard keeps its size however long
//! entries come and go.

use std::time::Duration;

use super::policy::Policy;
use super::{Exact, Expiry, MAX_SHARD_CAPACITY, S3Fifo, SecondChance, Shard};

fn hash(key: u32) -> u64 {
    u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

fn ttl() -> Option<Expiry> {
    Expiry::new(Some(Duration::from_secs(60)), None)
}

/// Fills a shard of `capacity` under policy `P` with `2 * capacity` keys,
/// key `k` of `weight(k)`, checking after each insert that the slab (and the
/// times, with expiry) never has room past the capacity; returns the room
/// once full.
fn filled<P: Policy, const E: bool>(
    capacity: usize,
    weight: fn(u32) -> u32,
) -> (usize, usize, usize) {
    let expiry = if E { ttl() } else { None };
    let mut shard = Shard::<u32, u32, P, E>::with_expiry(capacity, expiry);
    for k in 0..2 * capacity as u32 {
        shard.insert(hash(k), k, k, weight(k), 0, 0);
        let (slab, weights, times) = shard.room();
        assert!(
            slab <= capacity,
            "slab room {slab} past capacity {capacity}"
        );
        assert!(
            weights <= capacity,
            "weights room {weights} past capacity {capacity}"
        );
        assert!(
            times <= capacity,
            "times room {times} past capacity {capacity}"
        );
    }
    shard.check_invariants();
    shard.room()
}

fn each_policy(
    capacity: usize,
    weight: fn(u32) -> u32,
    check: impl Fn(&str, (usize, usize, usize)),
) {
    check("exact", filled::<Exact, false>(capacity, weight));
    check("clock", filled::<SecondChance, false>(capacity, weight));
    check("s3fifo", filled::<S3Fifo, false>(capacity, weight));
    check("exact, ttl", filled::<Exact, true>(capacity, weight));
    check("clock, ttl", filled::<SecondChance, true>(capacity, weight));
    check("s3fifo, ttl", filled::<S3Fifo, true>(capacity, weight));
}

#[test]
fn a_full_shard_has_room_for_its_capacity_and_no_more() {
    // Just past a power of two, where doubling would leave the most room
    // unused (3,906: a 1M-entry cache over 256 shards).
    for capacity in [1, 5, 100, 1_025, 3_906] {
        each_policy(
            capacity,
            |_| 1,
            |policy, (slab, _, times)| {
                assert_eq!(slab, capacity, "{policy}: slab room at capacity {capacity}");
                if policy.ends_with("ttl") {
                    assert_eq!(
                        times, capacity,
                        "{policy}: times room at capacity {capacity}"
                    );
                }
            },
        );
    }
}

#[test]
fn a_weighted_shard_grows_only_as_far_as_its_capacity() {
    // Weights 1 and 2 in turn: about 66 entries of capacity 100, past the
    // 64 a doubling slab would hold, short of the 128 it would double to.
    // The room stays within the capacity (checked after every insert).
    each_policy(
        100,
        |k| 1 + k % 2,
        |policy, (slab, weights, _)| {
            assert!(slab >= 66, "{policy}: slab room {slab}");
            assert!(weights >= 66, "{policy}: weights room {weights}");
        },
    );
}

#[test]
fn a_shard_sized_for_a_share_stops_there_steps_then_doubles() {
    // An unbounded shard of a cache whose bound is global (`TypedCache`):
    // its slab stops at the share it was sized for, takes a step past it
    // (1/64 of it or four square roots of it, whichever is more: a
    // filling cache's shards are uneven, a full one's shard holds its
    // share plus one for a moment), and doubles only if it holds more.
    for (share, step) in [(37, 24), (640, 100), (102_400, 1_600)] {
        let mut shard = Shard::<u32, u32, Exact>::new(MAX_SHARD_CAPACITY);
        shard.size_for(share);
        let mut k = 0;
        let mut fill_to = |shard: &mut Shard<u32, u32, Exact>, n: u32| {
            while k < n {
                shard.insert(hash(k), k, k, 1, 0, 0);
                k += 1;
            }
        };
        fill_to(&mut shard, share as u32);
        assert_eq!(shard.room().0, share, "at the share");
        fill_to(&mut shard, share as u32 + 1);
        assert_eq!(shard.room().0, share + step, "one past the share");
        fill_to(&mut shard, (share + step) as u32);
        assert_eq!(shard.room().0, share + step, "a step past the share");
        fill_to(&mut shard, (share + step) as u32 + 1);
        assert_eq!(shard.room().0, 2 * (share + step), "past the step");
    }
}

#[test]
fn a_shard_step_past_its_share_stops_at_the_capacity() {
    // The step never takes the slab past the capacity.
    let mut shard = Shard::<u32, u32, Exact>::new(40);
    shard.size_for(38);
    for k in 0..40 {
        shard.insert(hash(k), k, k, 1, 0, 0);
    }
    assert_eq!(shard.room().0, 40);
}

/// A hash that clusters buckets as a real hasher's does (see
/// `table_room::tests::mixed`).
fn mixed(key: u32) -> u64 {
    crate::table_room::tests::mixed(u64::from(key))
}

/// Fills a shard of `capacity` under `P`, then inserts `rounds` times its
/// capacity in new keys (each evicting one); returns the table's bytes
/// when first full and at the end.
fn table_bytes_under_churn<P: Policy>(capacity: usize, rounds: usize) -> (usize, usize) {
    let mut shard = Shard::<u32, u32, P>::new(capacity);
    for k in 0..capacity as u32 {
        shard.insert(mixed(k), k, k, 1, 0, 0);
    }
    let full = shard.table_bytes();
    for k in capacity as u32..((rounds + 1) * capacity) as u32 {
        shard.insert(mixed(k), k, k, 1, 0, 0);
    }
    shard.check_invariants();
    (full, shard.table_bytes())
}

#[test]
fn a_full_shard_table_keeps_its_size_under_churn() {
    // 3,906 entries (1M over 256 shards) fill 8,192 buckets to 48%, past
    // the 7/16 where hashbrown doubles a table whose room deleted buckets
    // used up; 1,000 fill 2,048 to 49%. Each eviction removes a slot and
    // adds one; some removals leave a bucket deleted.
    for capacity in [1_000, 3_906] {
        for (policy, (full, after)) in [
            ("exact", table_bytes_under_churn::<Exact>(capacity, 60)),
            (
                "clock",
                table_bytes_under_churn::<SecondChance>(capacity, 60),
            ),
            ("s3fifo", table_bytes_under_churn::<S3Fifo>(capacity, 60)),
        ] {
            assert_eq!(
                after, full,
                "{policy}, capacity {capacity}: table bytes grew"
            );
        }
    }
}

#[test]
fn a_shard_resized_down_gives_back_its_room() {
    let mut shard = Shard::<u32, u32, Exact>::new(4_096);
    for k in 0..4_096 {
        shard.insert(mixed(k), k, k, 1, 0, 0);
    }
    let table_full = shard.table_bytes();
    let mut evicted = Vec::new();
    shard.set_capacity(16, &mut evicted);
    assert_eq!(evicted.len(), 4_080);
    let (slab, _, _) = shard.room();
    assert!(slab <= 32, "room for {slab} kept at capacity 16");
    let table = shard.table_bytes();
    assert!(
        table * 64 <= table_full,
        "{table} table bytes kept of {table_full}"
    );
    for k in 5_000..5_100 {
        shard.insert(mixed(k), k, k, 1, 0, 0);
    }
    shard.check_invariants();
    assert_eq!(shard.len(), 16);
}
