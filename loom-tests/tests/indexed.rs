//! loom models of `IndexedStore`: every interleaving of a few threads, with
//! the real store code; each shard's lock is one loom `RwLock`, or, in a
//! read-mostly store, two (stripes), a thread reading through the one its
//! loom thread number picks. Each
//! model has a negative control that runs a deliberately broken protocol
//! and must fail.
#![cfg(loom)]

use larder::IndexedStore;
use larder::fault::{IndexedFault, inject};
use loom::sync::Arc;
use loom::thread;

type Store = IndexedStore<&'static str, &'static str>;

fn colored() -> Store {
    IndexedStore::builder()
        .index("color", |color: &&'static str| [*color])
        .build()
        .unwrap()
}

/// Every object `by_index(color)` returns has that color.
fn assert_listed_correctly(store: &Store, color: &str) {
    for object in store.by_index("color", color).unwrap() {
        assert_eq!(
            object, color,
            "invariant violated: index disagrees with objects: by_index({color}) returned a {object} object"
        );
    }
}

/// One thread updates `a` from red to blue, another removes `b`, while the
/// main thread reads: at every point the index agrees exactly with the
/// objects (checked by `check_invariants` at one consistent cut and by
/// `by_index` results).
fn index_agrees_with_objects(fault: IndexedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let store = Arc::new(colored());
        store.insert("a", "red").unwrap();
        store.insert("b", "red").unwrap();
        let updater = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.insert("a", "blue").unwrap();
            })
        };
        let remover = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.remove("b");
            })
        };
        store.check_invariants();
        assert_listed_correctly(&store, "red");
        updater.join().unwrap();
        remover.join().unwrap();
        store.check_invariants();
        assert_eq!(store.index_keys("color", "blue").unwrap(), ["a"]);
        assert!(store.by_index("color", "red").unwrap().is_empty());
        assert_eq!(store.index_values("color").unwrap(), ["blue"]);
    });
}

#[test]
fn indexed_index_agrees_with_objects() {
    index_agrees_with_objects(IndexedFault::None);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn indexed_index_negative_control_index_outside_lock() {
    index_agrees_with_objects(IndexedFault::IndexOutsideLock);
}

/// A `replace` and a `transaction` (remove `a`, insert `e`) racing with a
/// reader: the reader sees the content before or after each of them, never
/// a mix, in `values()`/`keys()` and in `by_index`.
fn replace_is_all_or_nothing(fault: IndexedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let store = Arc::new(colored());
        store.insert("a", "red").unwrap();
        store.insert("b", "red").unwrap();
        let replacer = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.replace([("c", "blue"), ("d", "blue")]).unwrap();
            })
        };
        let mover = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store
                    .transaction(|tx| {
                        tx.remove(&"a");
                        tx.insert("e", "red")
                    })
                    .unwrap();
            })
        };
        let mut seen: Vec<(&str, &str)> = store.to_vec();
        seen.sort();
        let valid: [&[(&str, &str)]; 4] = [
            &[("a", "red"), ("b", "red")],
            &[("b", "red"), ("e", "red")],
            &[("c", "blue"), ("d", "blue")],
            &[("c", "blue"), ("d", "blue"), ("e", "red")],
        ];
        assert!(
            valid.contains(&&seen[..]),
            "replace was torn: a reader saw {seen:?}"
        );
        let blue = store.by_index("color", "blue").unwrap().len();
        assert!(
            blue == 0 || blue == 2,
            "replace was torn: {blue} blue objects"
        );
        replacer.join().unwrap();
        mover.join().unwrap();
        let mut keys = store.keys_to_vec();
        keys.sort();
        assert!(keys == ["c", "d"] || keys == ["c", "d", "e"], "{keys:?}");
        store.check_invariants();
    });
}

#[test]
fn indexed_replace_is_all_or_nothing() {
    replace_is_all_or_nothing(IndexedFault::None);
}

#[test]
#[should_panic(expected = "replace was torn")]
fn indexed_replace_negative_control_piecewise() {
    replace_is_all_or_nothing(IndexedFault::ReplacePiecewise);
}

/// `add_index` on a live store racing with an insert of a new object and an
/// update of an existing one (whose values `add_index` may have computed
/// from the old version): afterwards the new index covers every object, in
/// its latest version. A store with no index to start with writes through
/// the lean no-index path; one that has an index (`indexed`), through the
/// full write, whose values were computed for the schema it read.
fn add_index_covers_racing_writes(fault: IndexedFault, indexed: bool) {
    let _fault = inject(fault);
    loom::model(move || {
        let store: Arc<Store> = Arc::new(if indexed {
            IndexedStore::builder()
                .index("all", |_: &&'static str| ["all"])
                .build()
                .unwrap()
        } else {
            IndexedStore::new()
        });
        store.insert("a", "red").unwrap();
        let writer = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.insert("b", "blue").unwrap();
            })
        };
        let updater = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.insert("a", "green").unwrap();
            })
        };
        store
            .add_index("color", |color: &&'static str| [*color])
            .unwrap();
        writer.join().unwrap();
        updater.join().unwrap();
        store.check_invariants();
        assert_eq!(store.index_keys("color", "blue").unwrap(), ["b"]);
        assert_eq!(store.index_keys("color", "green").unwrap(), ["a"]);
        assert_eq!(store.index_values("color").unwrap(), ["blue", "green"]);
    });
}

#[test]
fn indexed_add_index_covers_racing_writes() {
    add_index_covers_racing_writes(IndexedFault::None, false);
}

#[test]
fn indexed_add_index_covers_racing_writes_to_an_indexed_store() {
    add_index_covers_racing_writes(IndexedFault::None, true);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn indexed_add_index_negative_control_ignore_schema_change() {
    add_index_covers_racing_writes(IndexedFault::IgnoreSchemaChange, false);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn indexed_add_index_negative_control_ignore_schema_change_indexed() {
    add_index_covers_racing_writes(IndexedFault::IgnoreSchemaChange, true);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn indexed_add_index_negative_control_ignores_writes() {
    add_index_covers_racing_writes(IndexedFault::AddIndexIgnoresWrites, false);
}

/// One thread updates `a` from red to blue while the main thread visits the
/// red objects and then the blue ones (`for_each_by_index`): each visit
/// sees `a` as the old object under the old value or the new object under
/// the new value, never an object under a value it does not have. The
/// negative control reads the bucket and the objects under two separate
/// read locks, and the model finds the update run between them.
fn visit_sees_a_consistent_cut(fault: IndexedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let store = Arc::new(colored());
        store.insert("a", "red").unwrap();
        store.insert("b", "red").unwrap();
        let updater = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.insert("a", "blue").unwrap();
            })
        };
        for color in ["red", "blue"] {
            store
                .for_each_by_index("color", color, |key, object| {
                    assert_eq!(
                        *object, color,
                        "invariant violated: the visit of {color} got {key} as a {object} object"
                    );
                })
                .unwrap();
        }
        updater.join().unwrap();
        let mut blue = Vec::new();
        store
            .for_each_by_index("color", "blue", |key, _| blue.push(*key))
            .unwrap();
        assert_eq!(blue, ["a"]);
    });
}

#[test]
fn indexed_visit_sees_a_consistent_cut() {
    visit_sees_a_consistent_cut(IndexedFault::None);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn indexed_visit_negative_control_two_locks() {
    visit_sees_a_consistent_cut(IndexedFault::VisitTwoLocks);
}

/// Two keys of `store` on different shards: `from` on shard 0, `to` on
/// shard 1.
fn keys_on_two_shards(store: &Store) -> (&'static str, &'static str) {
    const CANDIDATES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let on = |shard: usize| {
        *CANDIDATES
            .iter()
            .find(|key| store.shard_of(*key) == shard)
            .expect("a candidate key on each shard")
    };
    (on(0), on(1))
}

/// A transaction moves the one object from a key on shard 0 to a key on
/// shard 1 and changes its color from red to blue, while the main thread
/// lists the store (`to_vec`) and the objects of one index value
/// (`by_index_entries`): each read sees the object exactly once, under the
/// key and color it had at one instant, never twice (both shards after
/// the move's halves), never zero times, never under the wrong color. The
/// negative control reads the shards one at a time, releasing each before
/// the next, and the model finds the transaction run in between. Run on
/// plain and on striped (`read_mostly`) shard locks.
fn cut_across_shards(fault: IndexedFault, read_mostly: bool) {
    let _fault = inject(fault);
    loom::model(move || {
        let store: Arc<Store> = Arc::new(
            IndexedStore::builder()
                .index("color", |color: &&'static str| [*color])
                .index("all", |_: &&'static str| ["all"])
                .shards(2)
                .read_mostly(read_mostly)
                .build()
                .unwrap(),
        );
        let (from, to) = keys_on_two_shards(&store);
        store.insert(from, "red").unwrap();
        let mover = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store
                    .transaction(|tx| {
                        tx.remove(&from);
                        tx.insert(to, "blue")
                    })
                    .unwrap();
            })
        };
        let valid = |seen: &[(&str, &str)]| seen == [(from, "red")] || seen == [(to, "blue")];
        let listed: Vec<(&str, &str)> = store.to_vec();
        assert!(
            valid(&listed),
            "invariant violated: a cut across shards listed {listed:?}"
        );
        let all: Vec<(&str, &str)> = store.by_index_entries("all", "all").unwrap();
        assert!(
            valid(&all),
            "invariant violated: by_index across shards returned {all:?}"
        );
        mover.join().unwrap();
        assert_eq!(store.index_keys("color", "blue").unwrap(), [to]);
        store.check_invariants();
    });
}

#[test]
fn indexed_cut_across_shards() {
    cut_across_shards(IndexedFault::None, false);
}

#[test]
fn indexed_cut_across_shards_read_mostly() {
    cut_across_shards(IndexedFault::None, true);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn indexed_cut_negative_control_shard_by_shard() {
    cut_across_shards(IndexedFault::CutShardByShard, false);
}

#[test]
#[should_panic(expected = "invariant violated")]
fn indexed_cut_negative_control_shard_by_shard_read_mostly() {
    cut_across_shards(IndexedFault::CutShardByShard, true);
}

/// In a read-mostly store, a reader on the second read stripe of a
/// shard's lock (the spawned thread; the main thread reads through the
/// first) while the main thread
/// updates its key: the reader sees the object before or after the update,
/// whole. A writer that holds only stripe 0 leaves the reader's stripe
/// empty while it writes.
fn reader_on_another_stripe(fault: IndexedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let store: Arc<Store> = Arc::new(
            IndexedStore::builder()
                .index("color", |color: &&'static str| [*color])
                .read_mostly(true)
                .build()
                .unwrap(),
        );
        store.insert("a", "red").unwrap();
        let reader = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let seen = store.get("a").expect("a is never removed");
                assert!(seen == "red" || seen == "blue", "torn read: {seen}");
            })
        };
        store.insert("a", "blue").unwrap();
        assert_eq!(store.get("a").unwrap(), "blue");
        reader.join().unwrap();
        assert_eq!(store.index_keys("color", "blue").unwrap(), ["a"]);
    });
}

#[test]
fn indexed_reader_on_another_stripe() {
    reader_on_another_stripe(IndexedFault::None);
}

#[test]
#[should_panic(expected = "a read stripe without its value")]
fn indexed_stripe_negative_control_writer_one_stripe() {
    reader_on_another_stripe(IndexedFault::WriterOneStripe);
}
