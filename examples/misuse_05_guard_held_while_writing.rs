//! Misuse 05: holding a map guard while writing to the same map.
//!
//! `DashMap::get` returns a `Ref` that holds its shard's read lock until it is
//! dropped. Writing to any key of the same shard while the `Ref` lives, from
//! the same thread, waits for that thread to release the lock: a deadlock,
//! DashMap's most reported issue. The same happens with `RwLock<HashMap>`
//! when a read guard is still alive at the `write()` call.
//!
//! The demonstrator never hangs: it asks with `try_get_mut`/`try_entry` (they
//! report a locked shard instead of waiting) and with `try_write_for` (gives
//! up after a timeout) whether the write would have waited.
//!
//! Run with `cargo run --example misuse_05_guard_held_while_writing`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::collections::HashMap;

use dashmap::DashMap;
use dashmap::try_result::TryResult;
use larder::{IndexedStore, Snapshot};
use parking_lot::RwLock;

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// DashMap: a write to the key whose `Ref` is held would deadlock.
    pub broken_same_key_deadlock: bool,
    /// DashMap: how many of `other_keys` other keys would deadlock too
    /// (they share the held key's shard).
    pub broken_other_keys_deadlocked: usize,
    /// How many other keys were tried.
    pub other_keys: usize,
    /// `RwLock<HashMap>`: `write()` under a live read guard would deadlock
    /// (`try_write_for` timed out).
    pub broken_rwlock_deadlock: bool,
    /// larder: writes made while a read guard was alive, out of those tried.
    pub fixed_writes_completed: usize,
    /// larder: what the still-alive guard shows after the writes (it keeps
    /// the value it loaded: version 0).
    pub fixed_guard_version: u64,
    /// larder: the version after the writes.
    pub fixed_final_version: u64,
    /// larder `IndexedStore`: with the value from `get` alive, `insert` of
    /// the same key and `remove` of it both completed, and the held value
    /// is still the old one.
    pub fixed_store_writes_completed: bool,
}

const SHARDS: usize = 4;

/// BROKEN: DashMap write while a `Ref` is alive.
fn broken_dashmap(other_keys: usize) -> (bool, usize) {
    let map: DashMap<String, u64, common::FixedHasher> =
        DashMap::with_hasher_and_shard_amount(common::FixedHasher::default(), SHARDS);
    map.insert("visits".to_owned(), 1);

    let visits = map.get("visits").expect("present"); // holds the shard's read lock
    // `map.insert("visits".into(), *visits + 1)` would wait forever for the
    // read lock this very thread holds. Ask instead of waiting:
    let same_key = matches!(map.try_get_mut("visits"), TryResult::Locked);
    // Any other key hashed to the same shard deadlocks as well.
    let others = (0..other_keys)
        .filter(|i| map.try_entry(format!("other-{i}")).is_none())
        .count();
    drop(visits);
    (same_key, others)
}

/// BROKEN: `RwLock<HashMap>`, read guard still alive at `write()`.
fn broken_rwlock() -> bool {
    let table = RwLock::new(HashMap::from([("visits", 1_u64)]));
    let guard = table.read();
    let deadlocked = if guard.get("visits") == Some(&1) {
        // The author meant "upgrade": `table.write()` here never returns.
        table.try_write_for(common::STALL_TIMEOUT).is_none()
    } else {
        false
    };
    drop(guard);
    deadlocked
}

/// LARDER: a `Snapshot` guard holds no lock; writes go through while it is
/// alive, and the guard keeps showing the value it loaded.
fn fixed(writes: usize) -> (usize, u64, u64) {
    let table = Snapshot::new(HashMap::from([("visits", 1_u64)]));
    let guard = table.load();
    let mut completed = 0;
    for _ in 0..writes {
        table.update(|old| {
            let mut new = old.clone();
            *new.entry("visits").or_default() += 1;
            new
        });
        completed += 1;
    }
    let guard_version = guard.version();
    drop(guard);
    (completed, guard_version, table.version())
}

/// LARDER: an `IndexedStore` hands out a clone of the value, not a guard:
/// writing to the same key while holding it just works.
fn fixed_store() -> bool {
    let visits: IndexedStore<&str, u64> = IndexedStore::new();
    visits.insert("visits", 1).expect("no index to fail");
    let held = visits.get("visits").expect("present"); // a copy: no lock held
    let replaced = visits.insert("visits", held + 1).expect("no index to fail");
    let removed = visits.remove("visits");
    held == 1 && replaced == Some(1) && removed == Some(2)
}

/// Runs every variant.
pub fn run() -> Outcome {
    let other_keys = 64;
    let (broken_same_key_deadlock, broken_other_keys_deadlocked) = broken_dashmap(other_keys);
    let (fixed_writes_completed, fixed_guard_version, fixed_final_version) = fixed(3);
    Outcome {
        broken_same_key_deadlock,
        broken_other_keys_deadlocked,
        other_keys,
        broken_rwlock_deadlock: broken_rwlock(),
        fixed_writes_completed,
        fixed_guard_version,
        fixed_final_version,
        fixed_store_writes_completed: fixed_store(),
    }
}

fn main() {
    common::header(5, "holding a map guard while writing to the same map");
    let outcome = run();
    common::broken(format!(
        "DashMap, Ref to \"visits\" alive: insert(\"visits\") would deadlock: {}; inserts of {} of {} other keys would too (same shard, {SHARDS} shards)",
        outcome.broken_same_key_deadlock, outcome.broken_other_keys_deadlocked, outcome.other_keys
    ));
    common::broken(format!(
        "RwLock<HashMap>, read guard alive: write() would deadlock: {} (try_write_for gave up after {:?})",
        outcome.broken_rwlock_deadlock,
        common::STALL_TIMEOUT
    ));
    common::fixed(format!(
        "Snapshot guard alive: {} of 3 updates completed; the guard still shows version {}, the snapshot is at version {}",
        outcome.fixed_writes_completed, outcome.fixed_guard_version, outcome.fixed_final_version
    ));
    common::fixed(format!(
        "IndexedStore, value from get(\"visits\") alive: insert and remove of \"visits\" completed = {}",
        outcome.fixed_store_writes_completed
    ));
    common::note("larder's maps return an owned value (a clone of V, or an Arc<V>), never a guard");
}
