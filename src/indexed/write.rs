//! The writes of [`IndexedStore`]: `insert`, `remove`, `replace`,
//! `clear`, `transaction`.
//!
//! # Write protocol
//!
//! 1. Hash the key (`K`'s `Hash`, once, no lock held): the hash picks the
//!    key's shard. Read-lock that shard briefly to take the current
//!    `Arc<Schema>` (the list of indexes; every shard holds the same one),
//!    unless the store has never had an index: then the values are empty
//!    and step 3 checks that the schema still has none.
//! 2. With no lock held: call every index function on the new object (user
//!    code: it may be slow, fail or panic).
//! 3. Write-lock the shard. If the schema is still the one the values were
//!    computed for (pointer comparison), apply the write to the shard's
//!    core, which runs no user code except `K`'s `Eq` in the probe that
//!    finds the key, before its first change (growth and rehashing use the
//!    stored hashes), and record the write's revision, if it has one;
//!    otherwise an index was added meanwhile: unlock, recompute for the new
//!    schema, and retry.
//! 4. Unlock, then drop what the write replaced (user `Drop` code).
//!
//! Writes that span shards lock them in ascending order (`shards.rs`).

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use super::core::{Core, Inserted, Removed};
use super::error::IndexError;
use super::index_fn::{AllValues, Schema, discard};
use super::shard_lock::ShardWriteGuard;
use super::shards;
use super::store::IndexedStore;
use super::transaction::{self, Spare, Transaction};
use crate::sync::{Arc, Ordering};

#[cfg(loom)]
use super::broken::{apply_insert, apply_remove, computed_for, replace_with};
#[cfg(not(loom))]
use {
    build_then_swap as replace_with, insert_in_one_section as apply_insert,
    remove_in_one_section as apply_remove, schema_unchanged as computed_for,
};

impl<K, V, S> IndexedStore<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// Adds `value` under `key`, or replaces the object there, and updates
    /// every index, atomically. Returns the object it replaced.
    ///
    /// The index functions run first,
    /// with no lock held; the object and every index then change in one
    /// critical section.
    ///
    /// # Errors
    ///
    /// [`IndexError::IndexFunction`] if an index function fails on `value`;
    /// the store is then unchanged.
    ///
    /// Only a fallible index function (registered with
    /// [`try_index`](crate::IndexedStoreBuilder::try_index) or
    /// [`add_try_index`](Self::add_try_index)) can fail. The `Result` is
    /// there even when none is registered, because the store's type does
    /// not record which kind its indexes are, and an index can be added to
    /// a live store. A store whose indexes all come from
    /// [`index`](crate::IndexedStoreBuilder::index) or
    /// [`add_index`](Self::add_index) never returns `Err` here: write
    /// `insert(..).expect("infallible index functions")`, as the example
    /// does with `unwrap`.
    ///
    /// # Panics
    ///
    /// If an index function or `K`'s `Hash` or `Eq` panics; the
    /// store is then unchanged. If the `Drop` of the replaced object
    /// panics, the insert has been applied.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<&str, u32>::builder()
    ///     .index("parity", |n: &u32| [if n % 2 == 0 { "even" } else { "odd" }])
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(store.insert("n", 1).unwrap(), None);
    /// let previous = store.insert("n", 2).unwrap();
    /// assert_eq!(previous, Some(1));
    /// assert!(store.by_index("parity", "odd").unwrap().is_empty());
    /// ```
    ///
    /// An object shared with other code is stored as an `Arc`:
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let store = larder::IndexedStore::<u32, Arc<String>>::new();
    /// let shared = Arc::new("object".to_string());
    /// store.insert(1, Arc::clone(&shared)).unwrap();
    /// assert!(Arc::ptr_eq(&store.get(&1).unwrap(), &shared));
    /// ```
    pub fn insert(&self, key: K, value: V) -> Result<Option<V>, IndexError> {
        self.write_insert(key, value, None)
    }

    /// The one insert: [`insert`](Self::insert), recording
    /// `revision` (if any) in the same critical section as the change.
    pub(crate) fn write_insert(
        &self,
        key: K,
        value: V,
        revision: Option<u64>,
    ) -> Result<Option<V>, IndexError> {
        // User code first, with no lock held: `Hash`, the index functions.
        let hash = self.hasher.hash_one(&key);
        let shard = self.shards.of(hash);
        // Ours until the core's probe is over (declared before the guard,
        // so a key the probe did not take drops after the unlock).
        let mut key = Some(key);
        let mut object = Some(value);
        if revision.is_none() && !self.indexed.load(Ordering::Relaxed) {
            // A store without index (a plain map): the lean write, if no
            // index was added since the flag was read (checked under the
            // lock); otherwise the full write below.
            // The guard drops where it lies, at the block's end (a
            // `drop(guard)` moves it first).
            let lean = {
                let mut core = self.shards.write(shard);
                computed_for(&core, None).then(|| core.upsert_plain(hash, &mut key, &mut object))
            };
            if let Some(previous) = lean {
                return Ok(previous);
            }
        }
        self.write_insert_indexed(hash, shard, &mut key, &mut object, revision)
    }

    /// [`write_insert`](Self::write_insert) once the key is hashed, for a
    /// store that may have indexes (or a write that records a revision).
    /// `key` and `object` stay the caller's until the probe is over, to drop
    /// after the unlock if `K`'s `Eq` panics. Out of line, so that the
    /// lean write's frame stays small.
    #[inline(never)]
    fn write_insert_indexed(
        &self,
        hash: u64,
        shard: usize,
        key: &mut Option<K>,
        object: &mut Option<V>,
        revision: Option<u64>,
    ) -> Result<Option<V>, IndexError> {
        const OURS: &str = "larder: the object is ours";
        // `None`: computed for a schema without indexes (no values).
        let mut schema: Option<Arc<Schema<V>>> = None;
        let mut values = AllValues::default();
        if self.indexed.load(Ordering::Relaxed) {
            let current = Arc::clone(self.shards.read(shard).schema());
            values = current.compute(object.as_ref().expect(OURS))?;
            schema = Some(current);
        }
        loop {
            let core = self.shards.write(shard);
            if computed_for(&core, schema.as_ref()) {
                // `K`'s `Eq` (the probe) while the key and the object are
                // still the caller's: if it panics, the unwinding releases
                // the lock before they drop. Past the probe the core runs no
                // user code, and a key it does not keep comes back to drop
                // after unlocking.
                let inserted = apply_insert(self, shard, core, hash, key, object, values, revision);
                return Ok(previous_of(inserted));
            }
            let current = Arc::clone(core.schema());
            drop(core);
            values = current.compute(object.as_ref().expect(OURS))?;
            schema = Some(current);
        }
    }

    /// Removes the object under `key` from the store and every index,
    /// atomically, and returns it.
    ///
    /// Calls no index function (each object's values are remembered), so it
    /// cannot fail.
    ///
    /// # Panics
    ///
    /// If `K`'s `Hash` or `Eq` panics (the store is then unchanged), or the
    /// `Drop` of the removed key or object does (after the removal).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, u32>::builder()
    ///     .index("all", |_: &u32| ["all"])
    ///     .build()
    ///     .unwrap();
    /// store.insert("a".to_string(), 1).unwrap();
    /// assert_eq!(store.remove("a"), Some(1));
    /// assert_eq!(store.remove("a"), None);
    /// assert!(store.index_values("all").unwrap().is_empty()); // bucket dropped
    /// ```
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.write_remove(key, None)
    }

    /// The one remove: [`remove`](Self::remove), recording `revision` (if
    /// any) in the same critical section, whether or not `key` was there.
    pub(crate) fn write_remove<Q>(&self, key: &Q, revision: Option<u64>) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let hash = self.hasher.hash_one(key);
        let shard = self.shards.of(hash);
        let removed = apply_remove(self, shard, hash, key, revision);
        removed.map(Removed::into_value)
    }

    /// Replaces the whole content with `items` and rebuilds every index,
    /// atomically: a concurrent reader sees all of the old content or all
    /// of the new, never a mix (client-go `Replace`). If a key repeats, its
    /// last object wins.
    ///
    /// The new content, its indexes included, is built with no lock held;
    /// the lock is held only to swap it in. The old objects are dropped
    /// after the lock is released.
    ///
    /// # Errors
    ///
    /// [`IndexError::IndexFunction`] if an index function fails on any item;
    /// the store is then unchanged.
    ///
    /// # Panics
    ///
    /// If an index function or `K`'s `Hash` or `Eq` panics (all run with
    /// no lock held); the store is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, &str>::builder()
    ///     .index("word", |w: &&str| [*w])
    ///     .build()
    ///     .unwrap();
    /// store.insert(1, "old").unwrap();
    /// store.replace([(2, "new"), (3, "new")]).unwrap();
    /// assert!(!store.contains_key(&1));
    /// assert_eq!(store.index_keys("word", "new").unwrap(), [2, 3]);
    /// assert_eq!(store.index_values("word").unwrap(), ["new"]);
    /// ```
    pub fn replace<I>(&self, items: I) -> Result<(), IndexError>
    where
        I: IntoIterator<Item = (K, V)>,
    {
        self.write_replace(items, None)
    }

    /// The one replace: [`replace`](Self::replace), installing `revision`
    /// (or keeping the current one) in the same critical section.
    pub(super) fn write_replace<I>(&self, items: I, revision: Option<u64>) -> Result<(), IndexError>
    where
        I: IntoIterator<Item = (K, V)>,
    {
        replace_with(self, items.into_iter(), revision)
    }

    /// Installs `fresh` (a core per shard, built for `schema`) as the whole
    /// content, and `revision` if any, under every shard's write lock, and
    /// returns the cores it replaced (to be dropped by the caller, with no
    /// lock held). If an index was added since `schema`, changes nothing
    /// and gives `fresh` back with the current schema.
    #[allow(clippy::type_complexity)]
    pub(super) fn swap_in(
        &self,
        fresh: Vec<Core<K, V>>,
        schema: &Arc<Schema<V>>,
        revision: Option<u64>,
    ) -> Result<Vec<Core<K, V>>, (Vec<Core<K, V>>, Arc<Schema<V>>)> {
        let mut cores = self.shards.write_all();
        if !Arc::ptr_eq(cores[0].schema(), schema) {
            return Err((fresh, Arc::clone(cores[0].schema())));
        }
        if let Some(revision) = revision {
            self.revision.store(revision, Ordering::SeqCst);
        }
        Ok(cores
            .iter_mut()
            .zip(fresh)
            .map(|(core, fresh)| std::mem::replace(&mut **core, fresh))
            .collect())
    }

    /// Removes every object, atomically. The objects are dropped after the
    /// lock is released. The indexes stay registered.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store.insert(1, 1).unwrap();
    /// store.clear();
    /// assert!(store.is_empty());
    /// ```
    pub fn clear(&self) {
        let mut cores = self.shards.write_all();
        let old: Vec<Core<K, V>> = cores
            .iter_mut()
            .map(|core| {
                let empty = Core::new(Arc::clone(core.schema()));
                std::mem::replace(&mut **core, empty)
            })
            .collect();
        drop(cores);
        drop(old);
    }

    /// Applies several inserts and removes atomically (client-go
    /// `Transaction`): `f` records them on a [`Transaction`], and if it
    /// returns `Ok`, they are applied in order in one critical section, so
    /// no reader sees some without the others.
    ///
    /// `f` runs with no lock held and the recorded writes are invisible
    /// until it returns. Reads of the store inside `f` see the live store,
    /// and other writers may change it before the commit: a transaction is
    /// atomic, not isolated (there is no compare-and-set).
    ///
    /// # Errors
    ///
    /// If `f` returns `Err`, or an index function fails on a recorded
    /// insert (`Transaction::insert` returns that error and, converted by
    /// `E: From<IndexError>`, so does this method if the failure happens at
    /// commit), nothing is applied.
    ///
    /// # Panics
    ///
    /// If `f`, an index function, or `K`'s `Hash`, `Eq` or `Clone`
    /// panics; nothing is applied (every key is hashed with no lock held
    /// and probed before the first change).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{IndexError, IndexedStore};
    ///
    /// let queue = IndexedStore::<&str, &str>::builder()
    ///     .index("state", |s: &&str| [*s])
    ///     .build()
    ///     .unwrap();
    /// queue.insert("job-1", "pending").unwrap();
    ///
    /// // Move a job between states: readers see it in exactly one.
    /// queue.transaction(|tx| -> Result<(), IndexError> {
    ///     tx.remove(&"job-1");
    ///     tx.insert("job-1/done", "done")?;
    ///     Ok(())
    /// }).unwrap();
    /// assert_eq!(queue.index_keys("state", "done").unwrap(), ["job-1/done"]);
    /// assert!(queue.index_keys("state", "pending").unwrap().is_empty());
    /// ```
    pub fn transaction<F, R, E>(&self, f: F) -> Result<R, E>
    where
        F: FnOnce(&mut Transaction<K, V>) -> Result<R, E>,
        E: From<IndexError>,
    {
        let Spare {
            ops,
            steps,
            mut garbage,
        } = self.take_spare();
        let mut tx = Transaction::new(self.schema(), ops);
        let result = f(&mut tx)?;
        let (mut schema, mut ops) = tx.into_parts();
        if ops.is_empty() {
            self.keep_spare(Spare {
                ops,
                steps,
                garbage,
            });
            return Ok(result);
        }
        // `K`'s `Hash` and `Eq` among the recorded keys, with no lock held.
        let mut plan = transaction::plan(&ops, steps, &self.hasher, |hash| self.shards.of(hash));
        loop {
            // Declared after `ops`: if a probe panics, the locks go first.
            let mut cores = self.shards.write_some(plan.touched());
            if Arc::ptr_eq(cores[0].schema(), &schema) {
                transaction::apply(&mut cores, &mut plan, &mut ops, &mut garbage);
                drop(cores);
                self.keep_spare(Spare {
                    ops,
                    steps: plan.into_steps(),
                    garbage,
                });
                return Ok(result);
            }
            schema = Arc::clone(cores[0].schema());
            drop(cores);
            transaction::recompute(&schema, &mut ops)?;
        }
    }
}

/// Whether index values computed for `schema` (`None`: for a schema
/// without indexes, so no values) fit the schema `core` has now: a write's
/// check under the shard's write lock.
#[inline(always)]
pub(super) fn schema_unchanged<K, V>(core: &Core<K, V>, schema: Option<&Arc<Schema<V>>>) -> bool {
    match schema {
        Some(schema) => Arc::ptr_eq(core.schema(), schema),
        None => core.schema().defs.is_empty(),
    }
}

/// `insert`'s write under the shard's write lock `core`: the object and
/// its index entries in one critical section, with `revision` (if any)
/// recorded in it; then releases the lock. `K`'s `Eq` (the probe) runs
/// while `key` and `object` are still the caller's.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn insert_in_one_section<K, V, S>(
    store: &IndexedStore<K, V, S>,
    _shard: usize,
    mut core: ShardWriteGuard<'_, Core<K, V>>,
    hash: u64,
    key: &mut Option<K>,
    object: &mut Option<V>,
    values: AllValues,
    revision: Option<u64>,
) -> Inserted<K, V>
where
    K: Eq,
{
    let inserted = core.upsert(hash, key, object, values);
    if let Some(revision) = revision {
        store.revision.store(revision, Ordering::SeqCst);
    }
    drop(core);
    inserted
}

/// `remove`'s write: takes the object of `key` (hash `hash`) out of shard
/// `shard` and every index, and records `revision` (if any), in one
/// critical section. What it removed drops in the caller, after the unlock.
#[inline(always)]
pub(super) fn remove_in_one_section<K, V, S, Q>(
    store: &IndexedStore<K, V, S>,
    shard: usize,
    hash: u64,
    key: &Q,
    revision: Option<u64>,
) -> Option<Removed<K, V>>
where
    K: Borrow<Q>,
    Q: ?Sized + Eq,
{
    let mut core = store.shards.write(shard);
    let removed = core.remove(hash, key);
    if let Some(revision) = revision {
        store.revision.store(revision, Ordering::SeqCst);
    }
    removed
}

/// `replace`'s step: the new content, its indexes included, built with no
/// lock held, then swapped in under every shard's write lock (rebuilt if an
/// index was added meanwhile). The old content drops after the unlock.
pub(super) fn build_then_swap<K, V, S>(
    store: &IndexedStore<K, V, S>,
    items: impl Iterator<Item = (K, V)>,
    revision: Option<u64>,
) -> Result<(), IndexError>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    let mut schema = store.schema();
    let count = store.shards.count();
    let mut fresh = match items.size_hint() {
        // Taken as they come when their count is known (the shards are
        // sized for it), else collected first.
        (low, Some(high)) if low == high => build_cores(&schema, &store.hasher, count, items)?,
        _ => {
            let items: Vec<_> = items.collect();
            build_cores(&schema, &store.hasher, count, items.into_iter())?
        }
    };
    loop {
        match store.swap_in(fresh, &schema, revision) {
            Ok(old) => {
                drop(old);
                return Ok(());
            }
            Err((built, current)) => {
                // An index was added meanwhile: rebuild for the new schema.
                schema = current;
                let items: Vec<_> = built.into_iter().flat_map(Core::into_entries).collect();
                fresh = build_cores(&schema, &store.hasher, count, items.into_iter())?;
            }
        }
    }
}

/// The object an insert replaced; the unused key and index values drop
/// here, after the lock is released.
#[inline]
fn previous_of<K, V>(inserted: Inserted<K, V>) -> Option<V> {
    match inserted {
        Inserted::New => None,
        Inserted::Updated {
            previous,
            unused,
            values,
        } => {
            drop(unused);
            discard(values);
            Some(previous)
        }
    }
}

/// Builds the `count` shards of a whole new content (for `replace`) with no
/// lock held, taking `items` as they come (the shards sized from their
/// lower bound).
pub(super) fn build_cores<K, V, S>(
    schema: &Arc<Schema<V>>,
    hasher: &S,
    count: usize,
    items: impl Iterator<Item = (K, V)>,
) -> Result<Vec<Core<K, V>>, IndexError>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    let len = items.size_hint().0;
    let per_shard = len / count + len / count / 8 + 8;
    let mut cores: Vec<Core<K, V>> = (0..count)
        .map(|_| {
            Core::with_capacity(Arc::clone(schema), per_shard)
                .unwrap_or_else(|| Core::new(Arc::clone(schema)))
        })
        .collect();
    for (key, value) in items {
        let values = schema.compute(&value)?;
        let hash = hasher.hash_one(&key);
        // Indexed as it goes: a value already interned in the shard drops
        // its fresh copy at once (the allocator reuses that memory for the
        // next object's). The key itself is stored (no copy: no lock held).
        cores[shards::shard_of(hash, count - 1)].build_insert(hash, key, value, values);
    }
    Ok(cores)
}
