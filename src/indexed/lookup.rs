//! The index side of [`IndexedStore`]: lookups by index value
//! (`by_index`, `index_keys`, `index_values`, `matching`) and adding an
//! index to a live store.
//!
//! # `add_index` protocol
//!
//! One `add_index` at a time (the store's `adding` mutex).
//!
//! 1. Write-lock every shard: each starts recording the slots written from
//!    then on (`Core::watch`); release. Read-lock every shard: clone every
//!    object (with its shard and slot id); release.
//! 2. No lock: call the new index function on each clone.
//! 3. Write-lock every shard: drop the values of every slot written since
//!    its shard started recording (all of a shard that a `replace` or
//!    `clear` swapped in, which records nothing). If every live slot still
//!    has values, install the index and the new schema in every shard in
//!    this critical section, and stop recording. Otherwise restart the
//!    recording, release, clone the objects of the slots that lack values,
//!    compute theirs, and retry step 3.
//!
//! A slot's values are installed only if nothing wrote the slot after its
//! shard started recording, which was before its object was cloned: they
//! are that object's. Writes racing with step 3 notice the new schema
//! (pointer comparison) and recompute their own values, so no object is
//! ever missing from the index. If the index function fails or panics, a
//! guard stops the recording and nothing else has changed.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use super::IndexedStore;
use super::shards::MAX_SHARDS;

use super::error::IndexError;
use super::index_fn::{BoxError, IndexDef, Values};
use crate::sync::{Arc, Ordering};

impl<K, V, S> IndexedStore<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// The objects whose values for index `name` include `value`, in no
    /// particular order (client-go `ByIndex`). A consistent cut: each
    /// returned object had `value` at that instant, and no object that had
    /// it is missing. Costs time proportional to the answer.
    ///
    /// Each object is cloned under the read lock (for `Arc<T>` objects, a
    /// reference-count increment each). For the keys too, from the same cut, use
    /// [`by_index_entries`](Self::by_index_entries); to read the objects in
    /// place without cloning, [`for_each_by_index`](Self::for_each_by_index).
    /// The lookup is by the value itself, so no probe object is needed
    /// ([`matching`](Self::matching) is the form that takes one).
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, String>::builder()
    ///     .index("word", |s: &String| s.split(' ').map(String::from).collect::<Vec<_>>())
    ///     .build()
    ///     .unwrap();
    /// store.insert(1, "red apple".into()).unwrap();
    /// store.insert(2, "red car".into()).unwrap();
    /// assert_eq!(store.by_index("word", "red").unwrap().len(), 2);
    /// assert_eq!(store.by_index("word", "car").unwrap()[0].as_str(), "red car");
    /// assert!(store.by_index("word", "blue").unwrap().is_empty());
    /// ```
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<V>, IndexError>
    where
        V: Clone,
    {
        // Declared before the guards: a panicking `V::clone` drops the
        // guards first, then the objects cloned so far, with no lock held.
        let mut objects = Vec::new();
        let cores = self.shards.read_all();
        let schema = cores.first().schema();
        let position = schema.position(name)?;
        // Hashed once: every shard hashes values alike.
        let hash = schema.hash_value(value);
        let mut buckets = [None; MAX_SHARDS];
        let mut len = 0;
        for (found, core) in buckets.iter_mut().zip(cores.iter()) {
            *found = core.bucket(position, hash, value);
            len += found.map_or(0, |bucket| bucket.len());
        }
        objects.reserve_exact(len);
        for (core, bucket) in cores.iter().zip(&buckets) {
            if let Some(bucket) = bucket {
                core.bucket_objects(bucket, &mut objects);
            }
        }
        drop(cores);
        Ok(objects)
    }

    /// The keys of the objects whose values for index `name` include
    /// `value`, sorted (client-go `IndexKeys`). A consistent cut; the keys
    /// are sorted after the lock is released. Calling [`get`](Self::get)
    /// for each key afterwards reads a later state: for keys with their
    /// objects from one cut, use [`by_index_entries`](Self::by_index_entries).
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::builder()
    ///     .index("mod3", |n: &u32| [(n % 3).to_string()])
    ///     .build()
    ///     .unwrap();
    /// for n in [9, 3, 4, 6] {
    ///     store.insert(n, n).unwrap();
    /// }
    /// assert_eq!(store.index_keys("mod3", "0").unwrap(), [3, 6, 9]);
    /// ```
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<K>, IndexError>
    where
        K: Ord,
    {
        // Declared before the guards: a panicking `K::clone` drops the
        // guards first, then the keys cloned so far, with no lock held.
        let mut keys = Vec::new();
        let mut hash = None;
        self.cut(|core| {
            let position = core.schema().position(name)?;
            let hash = *hash.get_or_insert_with(|| core.schema().hash_value(value));
            core.index_keys_into(position, hash, value, &mut keys);
            Ok(())
        })?;
        keys.sort_unstable();
        Ok(keys)
    }

    /// How many objects have `value` for index `name`: `by_index(..).len()`
    /// without cloning the objects.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::builder()
    ///     .index("even", |n: &u32| (n % 2 == 0).then_some("yes"))
    ///     .build()
    ///     .unwrap();
    /// for n in 0..10 {
    ///     store.insert(n, n).unwrap();
    /// }
    /// assert_eq!(store.index_len("even", "yes").unwrap(), 5);
    /// ```
    pub fn index_len(&self, name: &str, value: &str) -> Result<usize, IndexError> {
        let cores = self.shards.read_all();
        let schema = cores.first().schema();
        let position = schema.position(name)?;
        let hash = schema.hash_value(value);
        Ok(cores
            .iter()
            .map(|core| core.index_len(position, hash, value))
            .sum())
    }

    /// Every value of index `name` that at least one object has, sorted
    /// (client-go `ListIndexFuncValues`). A consistent cut; the values are
    /// copied out and sorted after the lock is released.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, &str>::builder()
    ///     .index("ns", |ns: &&str| [*ns])
    ///     .build()
    ///     .unwrap();
    /// store.insert(1, "prod").unwrap();
    /// store.insert(2, "dev").unwrap();
    /// store.insert(3, "prod").unwrap();
    /// assert_eq!(store.index_values("ns").unwrap(), ["dev", "prod"]);
    /// store.remove(&2);
    /// assert_eq!(store.index_values("ns").unwrap(), ["prod"]);
    /// ```
    pub fn index_values(&self, name: &str) -> Result<Vec<String>, IndexError> {
        let shared: Vec<Arc<str>> = {
            let cores = self.shards.read_all();
            let position = cores.first().schema().position(name)?;
            cores
                .iter()
                .flat_map(|core| core.index_values(position).cloned())
                .collect()
        };
        let mut values: Vec<String> = shared.iter().map(|value| value.to_string()).collect();
        values.sort_unstable();
        // Shards each list the values their own objects have.
        values.dedup();
        Ok(values)
    }

    /// The stored objects sharing at least one of `object`'s values for
    /// index `name`, each once (client-go `Index`). `object` need not be in
    /// the store.
    ///
    /// The index function runs on `object` with no lock held; the lookup is
    /// then a consistent cut.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`;
    /// [`IndexError::IndexFunction`] if the index function fails on
    /// `object`.
    ///
    /// # Panics
    ///
    /// If the index function panics.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, Vec<&str>>::builder()
    ///     .index("tag", |tags: &Vec<&str>| tags.clone())
    ///     .build()
    ///     .unwrap();
    /// store.insert(1, vec!["a", "b"]).unwrap();
    /// store.insert(2, vec!["b", "c"]).unwrap();
    /// store.insert(3, vec!["d"]).unwrap();
    /// let probe = vec!["a", "c"];
    /// assert_eq!(store.matching("tag", &probe).unwrap().len(), 2);
    /// ```
    pub fn matching(&self, name: &str, object: &V) -> Result<Vec<V>, IndexError>
    where
        V: Clone,
    {
        let (position, def) = {
            let schema = self.schema();
            let position = schema.position(name)?;
            (position, schema.defs[position].clone())
        };
        let values = def.compute(object)?;
        // Indexes are only ever appended, so `position` still names `def`.
        // Each object is in one shard: the shards' answers are disjoint.
        let mut objects = Vec::new();
        self.cut(|core| -> Result<(), IndexError> {
            core.matching_into(position, &values, &mut objects);
            Ok(())
        })?;
        Ok(objects)
    }

    /// The names of the indexes, in the order they were added.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store.add_index("tens", |n: &u32| [(n / 10).to_string()]).unwrap();
    /// assert_eq!(store.index_names(), ["tens"]);
    /// ```
    pub fn index_names(&self) -> Vec<String> {
        let schema = self.schema();
        schema.defs.iter().map(|def| def.name.to_string()).collect()
    }

    /// Adds an index to a live store, indexing every object already there
    /// (client-go `AddIndexers`). See
    /// [`IndexedStoreBuilder::index`](crate::IndexedStoreBuilder::index) for what `f` may return.
    ///
    /// `f` runs on clones of the existing objects (`V::clone` under the
    /// read lock) with no lock held; the index is then installed in one
    /// critical section, so readers see no index or the complete one.
    /// Objects written meanwhile are indexed in another round (a write
    /// racing with the installation recomputes its own values), so under a
    /// sustained stream of writes this may take several rounds. Calls of
    /// `add_index` run one at a time.
    ///
    /// # Errors
    ///
    /// [`IndexError::DuplicateIndex`] if an index is already named `name`;
    /// nothing changes.
    ///
    /// # Panics
    ///
    /// If `f` panics; nothing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{IndexError, IndexedStore};
    ///
    /// let store = IndexedStore::<u32, u32>::new();
    /// store.insert(15, 15).unwrap();
    /// store.add_index("tens", |n: &u32| [(n / 10).to_string()]).unwrap();
    /// assert_eq!(store.index_keys("tens", "1").unwrap(), [15]);
    /// let clash = store.add_index("tens", |_: &u32| ["x"]);
    /// assert!(matches!(clash, Err(IndexError::DuplicateIndex { .. })));
    /// ```
    pub fn add_index<F, I>(&self, name: &str, f: F) -> Result<(), IndexError>
    where
        F: Fn(&V) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: Into<Arc<str>>,
        V: Clone + 'static,
    {
        self.install(IndexDef::infallible(name, f))
    }

    /// [`add_index`](IndexedStore::add_index) with a fallible index function
    /// (see [`IndexedStoreBuilder::try_index`](crate::IndexedStoreBuilder::try_index)).
    ///
    /// # Errors
    ///
    /// [`IndexError::DuplicateIndex`] on a name clash;
    /// [`IndexError::IndexFunction`] if `f` fails on an existing object.
    /// Either way nothing changes.
    ///
    /// # Panics
    ///
    /// If `f` panics; nothing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, String>::new();
    /// store.insert(1, "x".into()).unwrap();
    /// let failed = store.add_try_index("number", |s: &String| s.parse::<u32>().map(|n| [n.to_string()]));
    /// assert!(failed.is_err());
    /// assert!(store.index_names().is_empty());
    /// ```
    pub fn add_try_index<F, I, E>(&self, name: &str, f: F) -> Result<(), IndexError>
    where
        F: Fn(&V) -> Result<I, E> + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: Into<Arc<str>>,
        E: Into<BoxError>,
        V: Clone + 'static,
    {
        self.install(IndexDef::fallible(name, f))
    }

    /// `add_index`'s protocol (module docs).
    fn install(&self, def: IndexDef<V>) -> Result<(), IndexError>
    where
        V: Clone,
    {
        let _adding = self.adding.lock();
        {
            let mut cores = self.shards.write_all();
            cores[0].schema().with(def.clone())?;
            for core in cores.iter_mut() {
                core.watch();
            }
        }
        // Stops the recording if `f` fails or panics.
        let mut watching = Watching {
            store: self,
            done: false,
        };
        let count = self.shards.count();
        let mut todo: Vec<Option<Vec<usize>>> = vec![None; count];
        let mut computed: Vec<HashMap<usize, Values>> =
            (0..count).map(|_| HashMap::new()).collect();
        loop {
            // Declared before the guards: a panicking `V::clone` drops the
            // guards first, then the clones made so far.
            let mut objects = Vec::new();
            {
                let cores = self.shards.read_all();
                for (shard, (core, todo)) in cores.iter().zip(&todo).enumerate() {
                    objects.extend(
                        core.objects(todo.as_deref())
                            .into_iter()
                            .map(|(id, object)| (shard, id, object)),
                    );
                }
            }
            for (shard, id, object) in objects {
                let values = def.compute(&object)?;
                computed[shard].insert(id, values);
            }
            let mut cores = self.shards.write_all();
            let schema = Arc::new(cores[0].schema().with(def.clone())?);
            let mut complete = true;
            for ((core, computed), todo) in cores.iter_mut().zip(&mut computed).zip(&mut todo) {
                let stale = core.stale(computed);
                complete &= stale.is_empty();
                *todo = Some(stale);
            }
            if complete {
                for (core, computed) in cores.iter_mut().zip(&mut computed) {
                    core.install_index(Arc::clone(&schema), computed);
                }
                // Before the locks are released: a write that then finds
                // the flag clear still checks the schema under its lock.
                self.indexed.store(true, Ordering::Relaxed);
                watching.done = true;
                return Ok(());
            }
            for core in cores.iter_mut() {
                core.watch();
            }
        }
    }
}

/// Stops every shard's recording of written slots when an `add_index`
/// ends without installing its index (its function failed or panicked).
struct Watching<'a, K, V, S> {
    store: &'a IndexedStore<K, V, S>,
    done: bool,
}

impl<K, V, S> Drop for Watching<'_, K, V, S> {
    fn drop(&mut self) {
        if !self.done {
            for core in self.store.shards.write_all().iter_mut() {
                core.unwatch();
            }
        }
    }
}
