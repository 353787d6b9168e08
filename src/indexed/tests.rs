//! Unit tests of the sequential core and the store's protocol details.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::core::{Core, IdHasher, Inserted};
use super::index_fn::{IndexDef, Schema};
use super::*;
use crate::sync::Arc;

fn schema() -> Arc<Schema<String>> {
    Arc::new(
        Schema::new(vec![
            IndexDef::infallible("first", |s: &String| s.chars().next().map(String::from)),
            IndexDef::infallible("chars", |s: &String| {
                s.chars().map(String::from).collect::<Vec<_>>()
            }),
        ])
        .unwrap(),
    )
}

fn core() -> Core<u32, String> {
    Core::new(schema())
}

/// How many objects of `core` have `value` for index `position`.
fn index_len(core: &Core<u32, String>, position: usize, value: &str) -> usize {
    core.index_len(position, core.schema().hash_value(value), value)
}

/// The keys' hash in these tests.
fn h(key: &u32) -> u64 {
    ahash::RandomState::with_seeds(1, 2, 3, 4).hash_one(key)
}

fn put(core: &mut Core<u32, String>, key: u32, value: &str) -> Option<String> {
    let value = value.to_string();
    let values = core.schema().compute(&value).unwrap();
    match core.insert(h(&key), key, value, values) {
        Inserted::New => None,
        Inserted::Updated { previous, .. } => Some(previous),
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn values_are_sorted_and_deduplicated() {
    let def = IndexDef::infallible("chars", |s: &String| {
        s.chars().map(String::from).collect::<Vec<_>>()
    });
    let values = def.compute(&"banana".to_string()).unwrap();
    let values: Vec<&str> = values.iter().map(|v| &**v).collect();
    assert_eq!(values, ["a", "b", "n"]);
}

#[test]
fn update_moves_only_changed_values_and_drops_empty_buckets() {
    let mut core = core();
    assert_eq!(put(&mut core, 1, "ab"), None);
    assert_eq!(put(&mut core, 2, "bc"), None);
    core.check(|_| true);
    assert_eq!(sorted(core.by_index(1, "b")), ["ab", "bc"]);
    assert_eq!(put(&mut core, 1, "bd").as_deref(), Some("ab"));
    core.check(|_| true);
    assert!(core.by_index(1, "a").is_empty());
    assert_eq!(sorted(core.by_index(1, "b")), ["bc", "bd"]);
    assert_eq!(sorted(core.by_index(0, "b")), ["bc", "bd"]);
    let mut values: Vec<String> = core.index_values(1).map(|v| v.to_string()).collect();
    values.sort();
    assert_eq!(values, ["b", "c", "d"]);
    assert_eq!(index_len(&core, 1, "b"), 2);
}

#[test]
fn removed_slots_are_reused_and_buckets_dropped() {
    let mut core = core();
    for key in 0..10 {
        put(&mut core, key, &format!("x{key}"));
    }
    for key in 0..10 {
        let removed = core.remove(h(&key), &key).unwrap();
        assert_eq!(removed.value, format!("x{key}"));
    }
    core.check(|_| true);
    assert_eq!(core.len(), 0);
    assert_eq!(core.index_values(0).count(), 0);
    assert_eq!(core.index_values(1).count(), 0);
    for key in 10..20 {
        put(&mut core, key, "y");
    }
    core.check(|_| true);
    assert_eq!(index_len(&core, 0, "y"), 10);
    assert!(core.remove(h(&3), &3).is_none());
}

#[test]
fn matching_unions_buckets_without_duplicates() {
    let mut core = core();
    put(&mut core, 1, "ab");
    put(&mut core, 2, "bc");
    put(&mut core, 3, "cd");
    let probe: Vec<Arc<str>> = vec![Arc::from("a"), Arc::from("b"), Arc::from("z")];
    let matching = |values: &[Arc<str>]| {
        let mut out = Vec::new();
        core.matching_into(1, values, &mut out);
        out
    };
    assert_eq!(sorted(matching(&probe)), ["ab", "bc"]);
    assert!(matching(&[]).is_empty());
}

#[test]
fn install_index_refuses_values_of_slots_written_since_the_watch() {
    let mut core = core();
    put(&mut core, 1, "a");
    put(&mut core, 2, "b");
    put(&mut core, 3, "c");
    let def = IndexDef::infallible("len", |s: &String| [s.len().to_string()]);
    core.watch();
    let mut computed: HashMap<usize, _> = core
        .objects(None)
        .into_iter()
        .map(|(id, object)| (id, def.compute(&object).unwrap()))
        .collect();
    assert_eq!(computed.len(), 3);
    // After the values were computed: object 2 changes, object 3 leaves
    // and object 4 arrives (in 3's slot).
    put(&mut core, 2, "bbb");
    assert!(core.remove(h(&3), &3).is_some());
    put(&mut core, 4, "dd");
    let schema = Arc::new(core.schema().with(def.clone()).unwrap());
    let stale = core.stale(&mut computed);
    let mut lacking: Vec<String> = core
        .objects(Some(&stale))
        .into_iter()
        .map(|(_, object)| object)
        .collect();
    lacking.sort();
    assert_eq!(lacking, ["bbb", "dd"]);
    assert_eq!(computed.len(), 1, "only object 1's values are current");
    assert_eq!(core.schema().defs.len(), 2, "nothing installed");
    core.check(|_| true);
    // The next round: the watch restarts, then the stale objects are
    // cloned and computed.
    core.watch();
    for (id, object) in core.objects(Some(&stale)) {
        computed.insert(id, def.compute(&object).unwrap());
    }
    assert!(core.stale(&mut computed).is_empty());
    core.install_index(schema, &mut computed);
    core.check(|_| true);
    assert_eq!(sorted(core.by_index(2, "1")), ["a"]);
    assert_eq!(sorted(core.by_index(2, "2")), ["dd"]);
    assert_eq!(sorted(core.by_index(2, "3")), ["bbb"]);
    assert!(core.written().is_none(), "the install stops the watch");
}

#[test]
fn an_unwatched_core_has_no_current_values() {
    // A core that a `replace` or `clear` swapped in during an `add_index`
    // was never watched: every value computed before counts as stale.
    let mut core = core();
    put(&mut core, 1, "a");
    put(&mut core, 2, "b");
    let def = IndexDef::infallible("len", |s: &String| [s.len().to_string()]);
    let mut computed: HashMap<usize, _> = core
        .objects(None)
        .into_iter()
        .map(|(id, object)| (id, def.compute(&object).unwrap()))
        .collect();
    assert_eq!(core.stale(&mut computed).len(), 2);
    assert!(computed.is_empty());
}

#[test]
fn id_hasher_spreads_dense_ids() {
    // Buckets hash `u32` slot ids (`write_u32`); `usize` goes through
    // `write_usize`, and wider integers through the byte-wise `write`.
    let hasher = BuildHasherDefault::<IdHasher>::default();
    let spread = |hash: &dyn Fn(u64) -> u64| {
        (0u64..64)
            .map(|id| hash(id) & 63)
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    assert_eq!(spread(&|id| hasher.hash_one(id as u32)), 64, "u32 ids");
    assert_eq!(spread(&|id| hasher.hash_one(id as usize)), 64, "usize ids");
    // The byte-wise fallback (no slot id uses it) at least tells ids apart.
    let distinct: std::collections::HashSet<u64> =
        (0u64..64).map(|id| hasher.hash_one(id)).collect();
    assert_eq!(distinct.len(), 64, "u64 ids (bytes)");
}

#[test]
fn writes_recompute_after_an_index_is_added_concurrently() {
    // A write whose values were computed before `add_index` must not be
    // applied with them: the store detects the schema change and recomputes.
    let store: IndexedStore<u32, String> = IndexedStore::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    store
        .add_index("len", move |s: &String| {
            counted.fetch_add(1, Ordering::Relaxed);
            [s.len().to_string()]
        })
        .unwrap();
    store.insert(1, "abc".into()).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    store.check_invariants();
    assert_eq!(store.index_keys("len", "3").unwrap(), [1]);
}

#[test]
fn a_transaction_recomputes_its_values_after_an_index_is_added_before_its_commit() {
    // The closure runs with no lock held, so an index may be added between
    // a write's recording (its values computed for the old schema) and the
    // commit: the commit must recompute them for the new one.
    let store: IndexedStore<u32, String> = IndexedStore::builder()
        .index("len", |s: &String| [s.len().to_string()])
        .build()
        .unwrap();
    store.insert(1, "a".into()).unwrap();
    store
        .transaction(|tx| -> Result<(), IndexError> {
            assert!(tx.is_empty());
            tx.insert(2, "bb".to_string())?;
            tx.insert(1, "ccc".to_string())?;
            assert_eq!((tx.len(), tx.is_empty()), (2, false));
            assert!(format!("{tx:?}").starts_with("Transaction"));
            store.add_index("first", |s: &String| [s[..1].to_string()])?;
            Ok(())
        })
        .unwrap();
    store.check_invariants();
    assert_eq!(store.index_keys("first", "b").unwrap(), [2]);
    assert_eq!(store.index_keys("first", "c").unwrap(), [1]);
    assert!(store.index_keys("first", "a").unwrap().is_empty());
    assert_eq!(store.index_keys("len", "3").unwrap(), [1]);
}

/// A store's objects, by key.
fn content(store: &IndexedStore<u32, String>) -> Vec<(u32, String)> {
    let mut content: Vec<(u32, String)> = store.to_vec();
    content.sort();
    content
}

#[test]
fn a_transaction_groups_equal_keys_among_many_distinct_ones() {
    // Small transactions find a key's earlier writes by a scan behind a
    // hash filter, large ones through a table: both against a model, with
    // keys written several times, removed and written again.
    for distinct in [3_u32, 40, 300] {
        let store: IndexedStore<u32, String> = IndexedStore::builder()
            .index("value", |s: &String| [s.clone()])
            .build()
            .unwrap();
        let mut model = HashMap::new();
        for key in 0..distinct {
            store.insert(key, format!("old {key}")).unwrap();
            model.insert(key, format!("old {key}"));
        }
        store
            .transaction(|tx| -> Result<(), IndexError> {
                for round in 0..3 {
                    for key in (0..distinct).rev() {
                        if (key + round) % 3 == 0 {
                            tx.remove(&key);
                            model.remove(&key);
                        } else {
                            tx.insert(key, format!("{round} {key}"))?;
                            model.insert(key, format!("{round} {key}"));
                        }
                    }
                }
                Ok(())
            })
            .unwrap();
        store.check_invariants();
        let held = content(&store);
        let mut expected: Vec<(u32, String)> = model.into_iter().collect();
        expected.sort();
        assert_eq!(held, expected, "{distinct} distinct keys");
    }
}

#[test]
fn transaction_applies_in_order_and_is_all_or_nothing() {
    let store: IndexedStore<u32, String> = IndexedStore::builder()
        .try_index("num", |s: &String| {
            s.parse::<u32>().map(|n| [n.to_string()])
        })
        .build()
        .unwrap();
    store.insert(1, "1".into()).unwrap();
    let err = store
        .transaction(|tx| -> Result<(), IndexError> {
            tx.remove(&1);
            tx.insert(2, "2".to_string())?;
            tx.insert(3, "three".to_string())?;
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, IndexError::IndexFunction { .. }));
    assert_eq!(store.keys_to_vec(), [1]);
    store
        .transaction(|tx| -> Result<(), IndexError> {
            tx.insert(2, "2".to_string())?;
            tx.remove(&2);
            tx.insert(3, "3".to_string())?;
            Ok(())
        })
        .unwrap();
    let mut keys = store.keys_to_vec();
    keys.sort();
    assert_eq!(keys, [1, 3]);
    store.check_invariants();
}

/// A transaction (and a burst) lets go of everything it replaced or
/// removed and of every key it brought but did not store, and a later one
/// (reusing the first one's buffers) does the same.
#[test]
fn a_transaction_and_a_burst_let_go_of_what_they_displace() {
    let key = |name: &str| Arc::new(name.to_string());
    let store: IndexedStore<Arc<String>, Arc<u32>> = IndexedStore::builder()
        .index("n", |n: &Arc<u32>| [n.to_string()])
        .build()
        .unwrap();
    let (stored_a, stored_b) = (key("a"), key("b"));
    let (old_a, old_b) = (Arc::new(1), Arc::new(2));
    store
        .insert(Arc::clone(&stored_a), Arc::clone(&old_a))
        .unwrap();
    store
        .insert(Arc::clone(&stored_b), Arc::clone(&old_b))
        .unwrap();
    for round in 0..2u32 {
        let (brought_a, brought_c) = (key("a"), key("c"));
        let new_a = Arc::new(10 + round);
        store
            .transaction(|tx| -> Result<(), IndexError> {
                tx.insert(Arc::clone(&brought_a), Arc::clone(&new_a))?;
                tx.remove(&stored_b);
                tx.insert(Arc::clone(&brought_c), Arc::new(3))?;
                tx.remove(&brought_c);
                Ok(())
            })
            .unwrap();
        // Only the test holds these now: the store kept its own key "a",
        // dropped "b" and the short-lived "c", and every replaced object.
        for held in [&stored_b, &brought_a, &brought_c] {
            assert_eq!(Arc::strong_count(held), 1);
        }
        assert_eq!(
            (Arc::strong_count(&old_a), Arc::strong_count(&old_b)),
            (1, 1)
        );
        assert_eq!(Arc::strong_count(&stored_a), 2);
        assert_eq!(Arc::strong_count(&new_a), 2);
        assert_eq!(store.keys_to_vec(), [key("a")]);
        store
            .insert(Arc::clone(&stored_b), Arc::clone(&old_b))
            .unwrap();
        store.check_invariants();
    }
    #[cfg(feature = "reflector")]
    {
        use super::burst::{BurstChange, BurstOutcome};
        let brought_b = key("b");
        let outcomes = store.apply_burst(
            vec![
                BurstChange::Put(Arc::clone(&brought_b), Arc::new(20)),
                BurstChange::Delete(key("a")),
                BurstChange::Put(key("d"), Arc::new(4)),
            ],
            7,
        );
        let seen: Vec<(String, Option<u32>)> = outcomes
            .into_iter()
            .map(|BurstOutcome { key, previous, .. }| ((*key).clone(), previous.map(|v| *v)))
            .collect();
        assert_eq!(
            seen,
            [
                ("b".into(), Some(2)),
                ("a".into(), Some(11)),
                ("d".into(), None)
            ]
        );
        assert_eq!(Arc::strong_count(&brought_b), 1);
        assert_eq!(Arc::strong_count(&stored_a), 1);
        assert_eq!(Arc::strong_count(&old_b), 1);
        assert_eq!(store.revision(), 7);
        store.check_invariants();
    }
}

#[test]
fn replace_with_repeated_keys_keeps_the_last() {
    let store: IndexedStore<u32, String> = IndexedStore::builder()
        .index("v", |s: &String| [s.clone()])
        .build()
        .unwrap();
    store
        .replace([(1, "a".to_string()), (1, "b".to_string())])
        .unwrap();
    assert_eq!(store.len(), 1);
    assert_eq!(store.index_values("v").unwrap().len(), 1);
    assert_eq!(store.index_keys("v", "b").unwrap(), [1]);
    store.check_invariants();
}

/// A `replace` whose items' count is not known up front (collected first)
/// and one whose count is (taken as they come) build the same content and
/// indexes, repeated keys keeping their last object.
#[test]
fn replace_of_known_and_unknown_length_agree() {
    let items = || {
        (0..1_000u32)
            .filter(|k| k % 3 != 0)
            .map(|k| (k % 400, format!("v{}", k % 7)))
    };
    let mut model = std::collections::BTreeMap::new();
    model.extend(items());
    let exact: Vec<(u32, String)> = items().collect();
    let store = || {
        IndexedStore::builder()
            .shards(4)
            .index("v", |s: &String| [s.clone()])
            .build()
            .unwrap()
    };
    let (unknown, known) = (store(), store());
    unknown.replace(items()).unwrap();
    known.replace(exact).unwrap();
    for store in [&unknown, &known] {
        store.check_invariants();
        assert_eq!(
            content(store),
            model.clone().into_iter().collect::<Vec<_>>()
        );
        for value in 0..7 {
            let value = format!("v{value}");
            let mut keys = store.index_keys("v", &value).unwrap();
            keys.sort_unstable();
            let want: Vec<u32> = model
                .iter()
                .filter(|(_, v)| **v == value)
                .map(|(k, _)| *k)
                .collect();
            assert_eq!(keys, want, "index of {value}");
        }
    }
}

#[test]
fn debug_and_display_are_informative() {
    let store: IndexedStore<u32, String> = IndexedStore::builder()
        .index("v", |s: &String| [s.clone()])
        .build()
        .unwrap();
    store.insert(1, "a".into()).unwrap();
    let debug = format!("{store:?}");
    assert!(
        debug.contains("len: 1") && debug.contains("\"v\""),
        "{debug}"
    );
    let err = store.by_index("w", "a").unwrap_err();
    assert_eq!(err.to_string(), "no index named \"w\"");
    let builder = IndexedStore::<u32, String>::builder().index("x", |s: &String| [s.clone()]);
    assert!(format!("{builder:?}").contains("\"x\""));
}

/// A bucket keeps its table while at least an eighth of it is used (so
/// removals and re-inserts around one size never rehash back and forth),
/// then halves, keeping room for twice what it holds.
#[test]
fn a_bucket_keeps_its_table_until_an_eighth_is_used() {
    let mut core = core();
    for key in 0..4096 {
        put(&mut core, key, "z");
    }
    let peak = core.bucket_capacity(0, "z");
    assert!(peak >= 4096 && peak % 8 == 0, "capacity {peak}");
    // Removing key `len - 1` leaves `len - 1` ids in the bucket.
    let mut len: usize = 4096;
    let remove = |core: &mut Core<u32, String>, key: usize| {
        let key = u32::try_from(key).unwrap();
        assert!(core.remove(h(&key), &key).is_some());
    };
    while len > peak / 8 {
        len -= 1;
        remove(&mut core, len);
        assert_eq!(core.bucket_capacity(0, "z"), peak, "shrunk at len {len}");
    }
    len -= 1;
    remove(&mut core, len);
    let shrunk = core.bucket_capacity(0, "z");
    assert!(
        shrunk < peak && shrunk >= 2 * len,
        "at len {len}: capacity {shrunk}, was {peak}"
    );
    core.check(|_| true);
}

#[test]
fn a_bucket_that_shrinks_gives_memory_back() {
    let mut core = core();
    for key in 0..4096 {
        put(&mut core, key, "z");
    }
    for key in 1..4096 {
        core.remove(h(&key), &key);
    }
    core.check(|_| true);
    assert_eq!(index_len(&core, 0, "z"), 1);
    assert!(
        core.bucket_capacity(0, "z") <= 64,
        "bucket kept its peak table"
    );
}

/// Updates that change how many values an object has move its positions'
/// run; removals swap other ids into the holes. Every id stays found at its
/// position, and the dead runs are reclaimed: the arena stays within twice
/// the live positions (plus a constant).
#[test]
fn positions_follow_swap_removes_and_dead_runs_are_reclaimed() {
    let mut core = core();
    let words = ["a", "ab", "abc", "abcd", "b", "bcd", "dcba", "x"];
    for key in 0..200u32 {
        put(&mut core, key, words[key as usize % words.len()]);
    }
    core.check(|_| true);
    for round in 0..20usize {
        for key in 0..200u32 {
            let word = words[(key as usize + round * 3) % words.len()];
            if (key as usize + round) % 7 == 0 {
                core.remove(h(&key), &key);
            } else {
                put(&mut core, key, word);
            }
        }
        core.check(|_| true);
        let (arena, live) = core.positions_len();
        assert!(
            arena <= 2 * live + 64,
            "round {round}: arena {arena}, live {live}"
        );
    }
}

#[test]
fn a_core_whose_objects_are_replaced_by_others_keeps_its_table_size() {
    // 1,000 keys fill 2,048 buckets to 49%, past the 7/16 where hashbrown
    // doubles a table whose room deleted buckets used up. Each step removes
    // the oldest key and adds a new one (through `insert` and `upsert` in
    // turn), 60 times the store's size: the table is rebuilt at its size,
    // never doubled.
    let mut core: Core<u32, String> = Core::new(Arc::new(Schema::new(vec![]).unwrap()));
    let n = 1_000;
    let value = String::new;
    for key in 0..n {
        core.insert(h(&key), key, value(), Default::default());
    }
    let full = core.table_bytes();
    for key in n..61 * n {
        assert!(core.remove(h(&(key - n)), &(key - n)).is_some());
        if key % 2 == 0 {
            core.insert(h(&key), key, value(), Default::default());
        } else {
            let mut owned = Some(key);
            core.upsert(h(&key), &mut owned, &mut Some(value()), Default::default());
        }
    }
    core.check(|_| true);
    assert_eq!(core.len(), n as usize);
    assert_eq!(core.table_bytes(), full, "the key table grew under churn");
}

/// A core with no index, holding its objects inline.
fn plain_core() -> Core<u32, String> {
    Core::new(Arc::new(Schema::new(vec![]).unwrap()))
}

fn upsert(core: &mut Core<u32, String>, key: u32, value: &str) -> Option<String> {
    core.upsert_plain(h(&key), &mut Some(key), &mut Some(value.to_string()))
}

#[test]
fn an_inline_core_keeps_its_table_size_under_churn() {
    // As `a_core_whose_objects_are_replaced_by_others_keeps_its_table_size`,
    // for the inline layout: the rebuild at its size applies to it too.
    let mut core = plain_core();
    let n = 1_000;
    for key in 0..n {
        assert_eq!(upsert(&mut core, key, "v"), None);
    }
    let full = core.table_bytes();
    for key in n..61 * n {
        assert!(core.remove(h(&(key - n)), &(key - n)).is_some());
        assert_eq!(upsert(&mut core, key, "v"), None);
    }
    assert_eq!(upsert(&mut core, 61 * n - 1, "w").as_deref(), Some("v"));
    assert!(!core.is_slotted());
    core.check(|_| true);
    assert_eq!(core.len(), n as usize);
    assert_eq!(
        core.table_bytes(),
        full,
        "the inline table grew under churn"
    );
}

#[test]
fn moving_an_inline_core_to_slots_keeps_every_object() {
    let mut core = plain_core();
    for key in 0..500 {
        upsert(&mut core, key, &format!("v{key}"));
    }
    for key in (0..500).step_by(3) {
        assert_eq!(
            core.remove(h(&key), &key).map(|r| r.into_value()),
            Some(format!("v{key}"))
        );
    }
    let before = core.len();
    core.check(|_| true);
    core.slot();
    assert!(core.is_slotted());
    core.check(|_| true);
    assert_eq!(core.len(), before);
    for key in 0..500 {
        let expected = (key % 3 != 0).then(|| format!("v{key}"));
        assert_eq!(core.get(h(&key), &key).cloned(), expected, "key {key}");
    }
    // Both writes work on slots from here on.
    assert_eq!(upsert(&mut core, 0, "new"), None);
    assert_eq!(upsert(&mut core, 1, "one").as_deref(), Some("v1"));
    assert!(core.remove(h(&2), &2).is_some());
    core.slot();
    core.check(|_| true);
    assert_eq!(core.len(), before);
}

/// Whether every shard of `store` holds its objects in slots.
fn slotted(store: &IndexedStore<u32, String>) -> Vec<bool> {
    store
        .shards
        .read_all()
        .iter()
        .map(|core| core.is_slotted())
        .collect()
}

#[test]
fn a_plain_store_is_inline_until_a_transaction_or_an_index_needs_slots() {
    let store: IndexedStore<u32, String> = IndexedStore::builder().shards(4).build().unwrap();
    for key in 0..200 {
        store.insert(key, format!("v{key}")).unwrap();
    }
    store.remove(&7);
    assert_eq!(slotted(&store), [false; 4]);
    store.check_invariants();
    // A transaction moves the shards it touches.
    store
        .transaction(|tx| {
            tx.insert(1, "one".to_string())?;
            tx.remove(&2);
            Ok::<_, IndexError>(())
        })
        .unwrap();
    let moved = slotted(&store).iter().filter(|&&s| s).count();
    assert!((1..=2).contains(&moved), "{:?}", slotted(&store));
    store.check_invariants();
    assert_eq!(store.get(&1).as_deref(), Some("one"));
    assert_eq!(store.get(&2), None);
    assert_eq!(store.len(), 198);
    // An index moves every shard; the objects are all indexed.
    store
        .add_index("len", |s: &String| [s.len().to_string()])
        .unwrap();
    assert_eq!(slotted(&store), [true; 4]);
    store.check_invariants();
    assert_eq!(store.index_len("len", "3").unwrap(), 1 + 90);
    // `clear` and `replace` build cores for the schema they find: slotted.
    store.clear();
    assert_eq!(slotted(&store), [true; 4]);
    // A store that never had an index: `replace` builds inline cores.
    let plain: IndexedStore<u32, String> = IndexedStore::builder().shards(4).build().unwrap();
    plain
        .replace((0..50).map(|key| (key, key.to_string())))
        .unwrap();
    assert_eq!(slotted(&plain), [false; 4]);
    plain.check_invariants();
    assert_eq!(plain.len(), 50);
}

#[test]
fn add_index_indexes_a_plain_core_that_a_replace_swapped_in_meanwhile() {
    // The index function runs with no lock held: the first call replaces
    // the content, so the shards `add_index` watched are swapped for
    // fresh inline ones, which hold no slots to list as written. Every
    // object of the new content must still be indexed.
    type Store = IndexedStore<u32, String>;
    let store: std::sync::Arc<Store> =
        std::sync::Arc::new(IndexedStore::builder().shards(4).build().unwrap());
    for key in 0..20 {
        store.insert(key, "old".to_string()).unwrap();
    }
    // Taken on the first call, so no cycle outlives the test.
    let replacer = std::sync::Arc::new(std::sync::Mutex::new(Some(std::sync::Arc::clone(&store))));
    let taken = std::sync::Arc::clone(&replacer);
    store
        .add_index("len", move |s: &String| {
            if let Some(store) = taken.lock().unwrap().take() {
                store
                    .replace((100..140).map(|key| (key, "new!".to_string())))
                    .unwrap();
            }
            [s.len().to_string()]
        })
        .unwrap();
    assert!(replacer.lock().unwrap().is_none(), "the replace ran");
    store.check_invariants();
    assert_eq!(store.len(), 40);
    assert_eq!(store.index_len("len", "4").unwrap(), 40);
    assert_eq!(store.index_len("len", "3").unwrap(), 0);
}

#[test]
fn index_values_hash_from_the_key_hashers_seeds() {
    let fixed = |seed| ahash::RandomState::with_seeds(seed, 2, 3, 4);
    let schema = |keys: &ahash::RandomState| Schema::<u32>::new(vec![]).unwrap().seeded_from(keys);
    // A fixed key hasher gives the same value hashes on every build (and
    // run); another seed, or the default random hasher, others.
    assert_eq!(
        schema(&fixed(1)).hash_value("web"),
        schema(&fixed(1)).hash_value("web")
    );
    assert_ne!(
        schema(&fixed(1)).hash_value("web"),
        schema(&fixed(9)).hash_value("web")
    );
    let random = ahash::RandomState::new();
    assert_ne!(
        schema(&random).hash_value("web"),
        schema(&ahash::RandomState::new()).hash_value("web")
    );
}
