//! `StoreReader`, the read-only view of a reflector's store: it sees the
//! reflector's writes and indexes, its clones read the same store, every
//! read answers as `IndexedStore`'s own on the same content (checked
//! against a model store written beside the source, read for read), and
//! its waits are the reflector handle's. That a reader has no write is a
//! compile-time fact: the `compile_fail` example of `StoreReader`.

#![cfg(feature = "reflector")]

#[path = "common/reflecting.rs"]
mod reflecting;
// `bounded` arms the watchdog.
#[path = "common/watchdog.rs"]
mod watchdog;

use std::fmt::Debug;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use larder::IndexedStore;
use larder::reflector::{MemorySource, Reflector, StoreReader, WaitError};
use reflecting::{LIMIT, bounded, caught_up, fast, key};

type Store = IndexedStore<String, Arc<u32>>;
type Reader = StoreReader<String, u32>;

const NAMES: [&str; 3] = ["parity", "digit", "no-such-index"];

/// Two indexes whose answers differ for every value, so a read that asks
/// the wrong one answers wrong.
fn indexed() -> Store {
    IndexedStore::builder()
        .index("parity", |v: &Arc<u32>| {
            [if **v % 2 == 0 { "even" } else { "odd" }]
        })
        .index("digit", |v: &Arc<u32>| [(**v % 10).to_string()])
        .shards(4)
        .build()
        .unwrap()
}

fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
    items.sort();
    items
}

fn plain(entries: Vec<(String, Arc<u32>)>) -> Vec<(String, u32)> {
    sorted(entries.into_iter().map(|(k, v)| (k, *v)).collect())
}

fn values(objects: Vec<Arc<u32>>) -> Vec<u32> {
    sorted(objects.into_iter().map(|v| *v).collect())
}

/// Results compared by their `Debug` form (`IndexError` has no `Eq`).
fn same<T: Debug>(what: &str, reader: T, model: T) {
    assert_eq!(format!("{reader:?}"), format!("{model:?}"), "{what}");
}

/// Every read of `reader` against the same read of `model`, over every
/// key of either (and one of neither), every index (and an unknown one)
/// and every value each holds (and one none does).
fn assert_reads_match(reader: &Reader, model: &Store) {
    same("len", reader.len(), model.len());
    same("is_empty", reader.is_empty(), model.is_empty());
    same("shard_count", reader.shard_count(), model.shard_count());
    same("revision", reader.revision(), model.revision());
    same("index_names", reader.index_names(), model.index_names());
    same(
        "keys_to_vec",
        sorted(reader.keys_to_vec()),
        sorted(model.keys_to_vec()),
    );
    same(
        "values_to_vec",
        values(reader.values_to_vec()),
        values(model.values_to_vec()),
    );
    same("to_vec", plain(reader.to_vec()), plain(model.to_vec()));
    let (entries, revision) = reader.to_vec_with_revision();
    let (model_entries, model_revision) = model.to_vec_with_revision();
    same(
        "to_vec_with_revision",
        (plain(entries), revision),
        (plain(model_entries), model_revision),
    );
    let mut keys = sorted(model.keys_to_vec());
    keys.push("never-stored".to_string());
    for key in &keys {
        let key = key.as_str();
        same(key, reader.get(key), model.get(key));
        same(
            key,
            reader.get_with(key, |v| **v + 1),
            model.get_with(key, |v| **v + 1),
        );
        same(key, reader.contains_key(key), model.contains_key(key));
        same(
            key,
            reader.get_with_revision(key),
            model.get_with_revision(key),
        );
    }
    for name in NAMES {
        same(
            name,
            reader.index_values(name).map(sorted),
            model.index_values(name).map(sorted),
        );
        let mut index_values = model.index_values(name).unwrap_or_default();
        index_values.push("held-by-none".to_string());
        for value in &index_values {
            let what = format!("{name}={value}");
            same(
                &what,
                reader.by_index(name, value).map(values),
                model.by_index(name, value).map(values),
            );
            same(
                &what,
                reader.by_index_entries(name, value).map(plain),
                model.by_index_entries(name, value).map(plain),
            );
            same(
                &what,
                reader.index_keys(name, value),
                model.index_keys(name, value),
            );
            same(
                &what,
                reader.index_len(name, value),
                model.index_len(name, value),
            );
            let (mut seen, mut model_seen) = (Vec::new(), Vec::new());
            let visited = reader.for_each_by_index(name, value, |k, v| seen.push((k.clone(), **v)));
            let model_visited =
                model.for_each_by_index(name, value, |k, v| model_seen.push((k.clone(), **v)));
            same(
                &what,
                visited.map(|()| sorted(seen)),
                model_visited.map(|()| sorted(model_seen)),
            );
            // Stops at the first entry: the count says whether it stopped.
            let (mut calls, mut model_calls) = (0, 0);
            let flow = reader.try_for_each_by_index(name, value, |_, _| {
                calls += 1;
                ControlFlow::Break(())
            });
            let model_flow = model.try_for_each_by_index(name, value, |_, _| {
                model_calls += 1;
                ControlFlow::Break(())
            });
            same(&what, (flow, calls), (model_flow, model_calls));
        }
        for probe in [0_u32, 7, 13, 20] {
            let probe = Arc::new(probe);
            same(
                &format!("matching {name} {probe}"),
                reader.matching(name, &probe).map(values),
                model.matching(name, &probe).map(values),
            );
        }
    }
}

/// A reader taken before the loop runs sees what the reflector writes:
/// the first list, then puts and deletes, through both indexes; and every
/// read it offers answers as the store's own on a model kept beside the
/// source, after each step.
#[test]
fn a_reader_reads_as_the_store_it_views() {
    bounded("a_reader_reads_as_the_store_it_views", async {
        let source = MemorySource::new();
        for i in 0..30 {
            source.put(key(i), i);
        }
        let model = indexed();
        let reflector = Reflector::builder(source.clone(), indexed())
            .backoff(fast())
            .build()
            .unwrap();
        let reader = reflector.reader();
        let handle = reflector.handle();
        assert!(reader.is_empty(), "nothing listed yet");
        let task = tokio::spawn(reflector.run());
        reader.wait_until_synced().await.unwrap();
        let listed: Vec<(String, Arc<u32>)> = source
            .to_vec()
            .into_iter()
            .map(|(k, v)| (k, Arc::new(v)))
            .collect();
        model
            .replace_at_revision(listed, source.revision())
            .unwrap();
        assert_reads_match(&reader, &model);
        assert_eq!(reader.index_keys("parity", "odd").unwrap().len(), 15);

        // Watched changes, each mirrored into the model at its revision.
        for round in 0..3_u32 {
            for i in 0..10 {
                let (k, v) = (key(i * 3 + round), 100 * (round + 1) + i);
                let revision = source.put(k.clone(), v);
                model.insert_at_revision(k, Arc::new(v), revision).unwrap();
            }
            let gone = key(round * 7);
            if let Some(revision) = source.delete(&gone) {
                model.remove_at_revision(gone.as_str(), revision);
            }
            reader
                .wait_for_revision_timeout(source.revision(), LIMIT)
                .await
                .unwrap();
            assert_reads_match(&reader, &model);
        }
        assert_eq!(
            sorted(reader.keys_to_vec()),
            sorted(source.to_vec().into_iter().map(|(k, _)| k).collect())
        );
        reader.check_invariants();
        handle.stop();
        task.await.unwrap();
    });
}

/// Clones read one store: a clone taken before the loop runs sees the
/// changes made after, and so does the clone's clone after the loop has
/// ended (the store outlives the reflector).
#[test]
fn clones_read_the_same_store() {
    bounded("clones_read_the_same_store", async {
        let source = MemorySource::new();
        source.put("a".to_string(), 1);
        let reflector = Reflector::builder(source.clone(), indexed())
            .backoff(fast())
            .build()
            .unwrap();
        let (reader, handle) = (reflector.reader(), reflector.handle());
        let clone = reader.clone();
        let second = reflector.reader();
        assert!(clone.same_store(&reader) && second.same_store(&reader));
        let task = tokio::spawn(reflector.run());
        clone.wait_until_synced().await.unwrap();
        let revision = source.put("b".to_string(), 2);
        caught_up(&handle, &source).await;
        for view in [&reader, &clone, &second] {
            assert_eq!(view.get("b").as_deref(), Some(&2));
            assert_eq!(view.index_keys("parity", "even").unwrap(), ["b"]);
            assert_eq!(view.revision(), revision);
        }
        handle.stop();
        task.await.unwrap();
        let after = clone.clone();
        assert_eq!(after.len(), 2);
        assert!(after.same_store(&reader));
        assert!(format!("{after:?}").starts_with("StoreReader"));
    });
}

/// The reader's waits are the handle's: readiness before and after the
/// first list, a timeout on a loop not running, and `Stopped` once it ends.
#[test]
fn the_readers_waits_follow_the_reflector() {
    bounded("the_readers_waits_follow_the_reflector", async {
        let source = MemorySource::new();
        source.put("a".to_string(), 1);
        let reflector = Reflector::builder(source.clone(), indexed())
            .backoff(fast())
            .build()
            .unwrap();
        let (reader, handle) = (reflector.reader(), reflector.handle());
        assert!(!reader.has_synced());
        let short = Duration::from_millis(10);
        assert_eq!(
            reader.wait_until_synced_timeout(short).await,
            Err(WaitError::TimedOut)
        );
        let task = tokio::spawn(reflector.run());
        reader.wait_until_synced_timeout(LIMIT).await.unwrap();
        assert!(reader.has_synced());
        let later = source.revision() + 100;
        assert_eq!(
            reader.wait_for_revision_timeout(later, short).await,
            Err(WaitError::TimedOut)
        );
        handle.stop();
        task.await.unwrap();
        assert_eq!(
            reader.wait_for_revision(later).await,
            Err(WaitError::Stopped)
        );
        reader.wait_for_revision(source.revision()).await.unwrap();
    });
}

#[test]
fn a_reader_is_cheap_to_share_across_threads() {
    fn shareable<T: Clone + Debug + Send + Sync + 'static>() {}
    shareable::<Reader>();
    // Like the store, it prints a summary: no bound on its parameters.
    struct Opaque;
    fn debug<T: Debug>() {}
    debug::<StoreReader<Opaque, Opaque>>();
}
