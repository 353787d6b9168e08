//! Unit tests of the sequential core and of the wrapper's copy-on-write.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::sequential::OrderedCore;
use super::*;

fn core_of(keys: impl IntoIterator<Item = u32>) -> OrderedCore<u32, u32> {
    OrderedCore::from_map(keys.into_iter().map(|k| (k, Arc::new(k * 10))).collect())
}

fn keys(entries: &[(u32, Arc<u32>)]) -> Vec<u32> {
    entries.iter().map(|(k, _)| *k).collect()
}

#[test]
fn drain_to_respects_each_bound_kind() {
    let mut core = core_of(1..=10);
    assert!(core.drain_to(Bound::Excluded(&1)).is_empty());
    assert_eq!(keys(&core.drain_to(Bound::Excluded(&3))), [1, 2]);
    assert_eq!(keys(&core.drain_to(Bound::Included(&4))), [3, 4]);
    assert_eq!(keys(&core.drain_to(Bound::Included(&4))), Vec::<u32>::new());
    assert_eq!(keys(&core.drain_to(Bound::Unbounded)), [5, 6, 7, 8, 9, 10]);
    assert!(core.map().is_empty());
    core.check_invariants();
}

#[test]
fn drain_to_past_the_end_takes_everything() {
    let mut core = core_of([5, 1, 3]);
    let drained = core.drain_to(Bound::Included(&100));
    assert_eq!(keys(&drained), [1, 3, 5]);
    assert_eq!(*drained[2].1, 50);
    assert!(core.map().is_empty());
}

#[test]
fn writes_copy_a_shared_map_once_and_never_change_it() {
    let mut core = core_of(0..4);
    let shared = core.share();
    core.insert(9, Arc::new(90));
    let retired = core.take_retired();
    assert_eq!(retired.len(), 1, "the shared version was not displaced");
    assert!(Arc::ptr_eq(&retired[0], &shared));
    drop(retired);
    assert_eq!(shared.len(), 4, "a snapshot changed");
    // The copy is now unshared: the next write is in place.
    core.remove(&0);
    assert!(core.take_retired().is_empty());
    assert_eq!(core.map().len(), 4);
    assert_eq!(shared.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
    core.check_invariants();
}

#[test]
fn writes_that_change_nothing_do_not_copy() {
    let mut core = core_of(5..8);
    let shared = core.share();
    assert!(core.remove(&1).is_none());
    assert!(core.drain_to(Bound::Excluded(&5)).is_empty());
    let stale = vec![(6, Arc::new(60))]; // same key, different value
    assert!(core.remove_identical(&stale).is_empty());
    assert!(core.take_retired().is_empty());
    assert_eq!(core.share().len(), 3);
    assert!(Arc::ptr_eq(&core.share(), &shared));
    let mut empty: OrderedCore<u32, u32> = OrderedCore::new();
    let _view = empty.share();
    assert!(empty.pop_first().is_none() && empty.pop_last().is_none());
    assert!(empty.take_retired().is_empty());
}

#[test]
fn remove_identical_skips_replaced_entries() {
    let mut core = core_of(0..3);
    let seen: Vec<_> = core.range_cloned(..);
    core.insert(1, Arc::new(111)); // replaced after the look
    core.remove(&2); // removed after the look
    let removed = core.remove_identical(&seen);
    assert_eq!(keys(&removed), [0]);
    assert_eq!(core.map().get(&1).map(|v| **v), Some(111));
    assert_eq!(core.map().len(), 1);
    core.check_invariants();
}

#[test]
fn insert_hands_back_the_new_key_of_a_replacement() {
    let mut core: OrderedCore<String, u8> = OrderedCore::new();
    assert_eq!(core.insert("a".into(), Arc::new(1)), (None, None));
    let (old, key) = core.insert("a".into(), Arc::new(2));
    assert_eq!(old.as_deref(), Some(&1));
    assert_eq!(key.as_deref(), Some("a"));
    let mut plain: OrderedCore<u8, u8> = OrderedCore::new();
    plain.insert(1, Arc::new(1));
    assert_eq!(plain.insert(1, Arc::new(2)).0.as_deref(), Some(&1));
}

#[test]
fn clear_retires_the_old_map() {
    let mut core = core_of(0..3);
    core.clear();
    assert_eq!(
        core.take_retired()
            .iter()
            .map(|m| m.len())
            .collect::<Vec<_>>(),
        [3]
    );
    core.clear();
    assert!(core.take_retired().is_empty());
    core.check_invariants();
}

#[test]
fn core_matches_btreemap_on_a_fixed_sequence() {
    let mut core: OrderedCore<u32, u32> = OrderedCore::new();
    let mut model: BTreeMap<u32, u32> = BTreeMap::new();
    let mut seed = 7_u64;
    for step in 0..2_000_u32 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = ((seed >> 33) % 64) as u32;
        match (seed >> 20) % 6 {
            0 | 1 => {
                let got = core.insert(key, Arc::new(step)).0.map(|v| *v);
                assert_eq!(got, model.insert(key, step));
            }
            2 => assert_eq!(
                core.remove(&key).map(|(k, v)| (k, *v)),
                model.remove_entry(&key)
            ),
            3 => assert_eq!(core.pop_first().map(|(k, v)| (k, *v)), model.pop_first()),
            4 => {
                let got: Vec<_> = core
                    .drain_to(Bound::Included(&(key / 4)))
                    .into_iter()
                    .map(|(k, v)| (k, *v))
                    .collect();
                let rest = model.split_off(&(key / 4 + 1));
                let expected: Vec<_> = std::mem::replace(&mut model, rest).into_iter().collect();
                assert_eq!(got, expected);
            }
            _ => {
                let _view = core.share(); // forces the next write to copy
            }
        }
        drop(core.take_retired());
        core.check_invariants();
        let now: Vec<_> = core.map().iter().map(|(k, v)| (*k, **v)).collect();
        assert_eq!(now, model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
    }
}

#[test]
fn snapshot_outlives_writes_and_clear() {
    let index: OrderedIndex<u32, String> = (0..5).map(|k| (k, k.to_string())).collect();
    let view = index.snapshot();
    index.clear();
    index.insert(9, "nine".into());
    assert_eq!(view.len(), 5);
    assert_eq!(view.first().map(|(k, v)| (*k, v.as_str())), Some((0, "0")));
    assert_eq!(index.iter().map(|(k, _)| k).collect::<Vec<_>>(), [9]);
    assert_eq!(format!("{index:?}"), r#"{9: "nine"}"#);
    assert_eq!(
        format!("{view:?}"),
        r#"{0: "0", 1: "1", 2: "2", 3: "3", 4: "4"}"#
    );
}
