//! What the reflector's tests on a tokio runtime share: a bounded runtime
//! (a hang fails with the test's name), a fast backoff, a store with one
//! index, and waits for the reflector to catch up with its source.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use larder::IndexedStore;
use larder::reflector::{Backoff, MemorySource, Reflector, ReflectorHandle, Source, StoreReader};
use tokio::task::JoinHandle;

use super::watchdog;

pub const LIMIT: Duration = Duration::from_secs(30);

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(3)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `f` on a runtime, failing the test by name if it takes over LIMIT.
pub fn bounded<F: Future<Output = ()>>(name: &str, f: F) {
    // A backstop if a blocked thread keeps the runtime from timing out.
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    runtime().block_on(async {
        if tokio::time::timeout(LIMIT, f).await.is_err() {
            panic!("{name}: did not finish within {LIMIT:?}");
        }
    });
}

pub fn fast() -> Backoff {
    Backoff::new(Duration::from_millis(1), Duration::from_millis(5))
}

/// A store to hand to a reflector, and the reader it gives back.
pub type Store = IndexedStore<String, Arc<u32>>;
pub type Reader = StoreReader<String, u32>;

pub fn store() -> Store {
    IndexedStore::builder()
        .index("parity", |v: &Arc<u32>| {
            [if **v % 2 == 0 { "even" } else { "odd" }]
        })
        .build()
        .unwrap()
}

/// A store whose one index rejects values of 100 and more.
pub fn small_values_store() -> Store {
    IndexedStore::builder()
        .try_index("small", |v: &Arc<u32>| {
            if **v < 100 {
                Ok(["yes"])
            } else {
                Err("too big")
            }
        })
        .build()
        .unwrap()
}

/// Runs a reflector from `source` into `store` (fast backoff, no handler)
/// on a task of its own: its reader, its handle and its task.
pub fn start<Src>(source: Src, store: Store) -> (Reader, ReflectorHandle, JoinHandle<()>)
where
    Src: Source<Key = String, Object = u32>,
{
    let reflector = Reflector::builder(source, store)
        .backoff(fast())
        .build()
        .unwrap();
    let (reader, handle) = (reflector.reader(), reflector.handle());
    (reader, handle, tokio::spawn(reflector.run()))
}

pub fn sorted(store: &Reader) -> Vec<(String, u32)> {
    let mut items: Vec<(String, u32)> = store.to_vec().into_iter().map(|(k, v)| (k, *v)).collect();
    items.sort();
    items
}

pub async fn caught_up(handle: &ReflectorHandle, source: &MemorySource<String, u32>) {
    handle
        .wait_for_revision_timeout(source.revision(), LIMIT)
        .await
        .expect("the reflector caught up with the source");
}

pub fn key(i: u32) -> String {
    format!("k{i:03}")
}

/// Forces a relist over changes the reflector never watched: watches fail
/// while the source changes, then the history is compacted.
pub async fn relist_over(
    source: &MemorySource<String, u32>,
    handle: &ReflectorHandle,
    change: impl FnOnce(),
) {
    source.fail_watches(usize::MAX);
    source.drop_watches();
    change();
    source.compact(source.revision());
    source.fail_watches(0);
    caught_up(handle, source).await;
}

/// One round of a busy, faulty source: the watches break after three
/// events, then `writes` puts over `keys` keys (every fourth followed by a
/// delete) with every watch dropped after the eleventh; then, by round, a
/// compaction past what the reflector has seen (a relist), expired
/// watches (a relist) or a bookmark. `changed` runs after each change.
pub fn churn(
    source: &MemorySource<String, u32>,
    round: u32,
    keys: u32,
    writes: u32,
    mut changed: impl FnMut(),
) {
    source.break_watches_after(3); // a reconnect in the middle of the burst
    for i in 0..writes {
        source.put(key((i * 7 + round) % keys), round * 100 + i);
        changed();
        if i % 4 == 0 && source.delete(&key((i * 3 + round) % keys)).is_some() {
            changed();
        }
        if i == 10 {
            source.drop_watches();
        }
    }
    match round % 3 {
        0 => {
            source.fail_watches(2);
            source.drop_watches();
            source.put(key(999), round);
            changed();
            source.compact(source.revision());
        }
        1 => source.expire_watches(),
        _ => source.bookmark(),
    }
}
