//! By-index lookups that hand out keys with their objects
//! (`by_index_entries`) or visit them in place under the read lock
//! (`for_each_by_index`, `try_for_each_by_index`), cloning nothing.
//!
//! # Locking
//!
//! One lock, taken once per call: the read side of the store's lock. A
//! visit reads the bucket and the objects it lists in the same critical
//! section, so it sees one consistent cut (an object under a value it has
//! at that instant, never an object updated after its bucket was read).
//! The visit closure runs under that read lock; see the methods'
//! *Deadlocks* sections.

use std::hash::{BuildHasher, Hash};
use std::ops::ControlFlow;

use super::IndexedStore;
use super::error::IndexError;

#[cfg(loom)]
use super::broken::visit_bucket;
#[cfg(not(loom))]
use visit_under_one_cut as visit_bucket;

impl<K, V, S> IndexedStore<K, V, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// The objects whose values for index `name` include `value`, each with
    /// its key, in no particular order: [`by_index`](Self::by_index) and
    /// [`index_keys`](Self::index_keys) in one consistent cut (two separate
    /// calls may see different contents). Costs time proportional to the
    /// answer.
    ///
    /// Each key is cloned (`K::clone`) under the read lock: the store keeps
    /// its keys by value, so there is nothing to copy them from once the
    /// lock is released. So is each object (`V::clone`).
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    ///
    /// # Deadlocks
    ///
    /// `K::clone` and `V::clone` run while this thread holds the store's
    /// read lock: they must not call into the same store (see
    /// [`for_each_by_index`](Self::for_each_by_index)).
    ///
    /// # Panics
    ///
    /// If `K::clone` or `V::clone` panics. Nothing was changed; the lock is
    /// released as the panic unwinds (before the entries already cloned are
    /// dropped), and
    /// nothing is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, &str>::builder()
    ///     .index("node", |node: &&str| [*node])
    ///     .build()
    ///     .unwrap();
    /// store.insert("default/web-1".into(), "node-a").unwrap();
    /// store.insert("default/web-2".into(), "node-b").unwrap();
    /// store.insert("prod/web-1".into(), "node-a").unwrap();
    ///
    /// let mut on_a = store.by_index_entries("node", "node-a").unwrap();
    /// on_a.sort_unstable_by(|x, y| x.0.cmp(&y.0));
    /// let keys: Vec<&str> = on_a.iter().map(|(key, _)| key.as_str()).collect();
    /// assert_eq!(keys, ["default/web-1", "prod/web-1"]);
    /// assert!(on_a.iter().all(|(_, node)| *node == "node-a"));
    /// ```
    pub fn by_index_entries(&self, name: &str, value: &str) -> Result<Vec<(K, V)>, IndexError>
    where
        V: Clone,
    {
        // Declared before the guard, so that if `K::clone` panics the guard
        // is dropped first and the keys already cloned after it: their
        // `Drop` runs with no lock held.
        let mut entries = Vec::new();
        let mut hash = None;
        self.cut(|core| {
            let position = core.schema().position(name)?;
            let hash = *hash.get_or_insert_with(|| core.schema().hash_value(value));
            entries.reserve(core.index_len(position, hash, value));
            entries.extend(
                core.bucket_entries(position, hash, value)
                    .map(|(key, object)| (key.clone(), object.clone())),
            );
            Ok(())
        })?;
        Ok(entries)
    }

    /// Calls `f` with the key and the object of every object whose values
    /// for index `name` include `value`, in no particular order, under the
    /// read lock: one consistent cut, and nothing cloned (no key, no
    /// object).
    ///
    /// Use it to count, sum or pick out a few fields of many objects; to
    /// keep the objects, [`by_index`](Self::by_index) or
    /// [`by_index_entries`](Self::by_index_entries) hand out clones
    /// instead and hold no lock afterwards.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`; `f` is not
    /// called.
    ///
    /// # Deadlocks
    ///
    /// `f` runs while this thread holds the read lock of every shard. So:
    ///
    /// - If `f` writes to the same store (`insert`, `remove`, `replace`,
    ///   `clear`, `transaction`, `add_index`), the write waits for every
    ///   shard's read lock, including the one this thread holds while it
    ///   waits: a deadlock, every time (on some platforms the standard
    ///   library's lock under each shard panics instead).
    /// - If `f` reads the same store (`get`, `by_index`, `len`, another
    ///   visit, ...), it takes the same read lock a second time. That
    ///   succeeds while no writer waits, but a writer that arrives between
    ///   the two reads is let in first, and it waits for the outer read: a
    ///   deadlock that only happens under concurrent writes.
    ///
    /// So `f` must not call into this store at all. A writer that arrives
    /// while `f` runs waits for it to finish, and so do readers on the
    /// threads whose shards that writer has already locked: keep `f` short.
    /// To call back into the store while walking, walk the `Vec` of
    /// [`by_index_entries`](Self::by_index_entries) instead.
    ///
    /// # Panics
    ///
    /// If `f` panics, the panic propagates after the lock is released (as it
    /// unwinds). A visit changes nothing, so the store stays as it was, and
    /// nothing is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// #[derive(Debug)]
    /// struct Pod { node: String, cpu_millis: u32 }
    ///
    /// let pods = larder::IndexedStore::<String, Pod>::builder()
    ///     .index("node", |pod: &Pod| [pod.node.clone()])
    ///     .build()
    ///     .unwrap();
    /// let pod = |node: &str, cpu_millis| Pod { node: node.into(), cpu_millis };
    /// pods.insert("web-1".into(), pod("node-a", 250)).unwrap();
    /// pods.insert("web-2".into(), pod("node-a", 500)).unwrap();
    /// pods.insert("db-1".into(), pod("node-b", 1000)).unwrap();
    ///
    /// // CPU requested on node-a, with no pod cloned.
    /// let mut requested = 0;
    /// pods.for_each_by_index("node", "node-a", |_, pod| requested += pod.cpu_millis)
    ///     .unwrap();
    /// assert_eq!(requested, 750);
    /// ```
    pub fn for_each_by_index<F>(&self, name: &str, value: &str, mut f: F) -> Result<(), IndexError>
    where
        F: FnMut(&K, &V),
    {
        let visited = self.try_for_each_by_index(name, value, |key, object| {
            f(key, object);
            ControlFlow::<()>::Continue(())
        })?;
        debug_assert!(visited.is_continue());
        Ok(())
    }

    /// [`for_each_by_index`](Self::for_each_by_index) that can stop early:
    /// `f` returns [`ControlFlow::Break`] to end the walk, and the walk
    /// returns that break (`Iterator::try_for_each`'s shape). A walk that
    /// stops after `n` objects costs O(n), not O(answer).
    ///
    /// The objects seen are one consistent cut.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`; `f` is not
    /// called.
    ///
    /// # Deadlocks
    ///
    /// As [`for_each_by_index`](Self::for_each_by_index): `f` runs under the
    /// store's read lock and must not call into this store.
    ///
    /// # Panics
    ///
    /// As [`for_each_by_index`](Self::for_each_by_index).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::ops::ControlFlow;
    ///
    /// let store = larder::IndexedStore::<u32, u32>::builder()
    ///     .index("parity", |n: &u32| [if n % 2 == 0 { "even" } else { "odd" }])
    ///     .build()
    ///     .unwrap();
    /// for n in 0..100 {
    ///     store.insert(n, n * n).unwrap();
    /// }
    /// // Any odd key whose square is over 1000; stops at the first found.
    /// let found = store
    ///     .try_for_each_by_index("parity", "odd", |key, square| {
    ///         if *square > 1000 { ControlFlow::Break(*key) } else { ControlFlow::Continue(()) }
    ///     })
    ///     .unwrap();
    /// assert!(matches!(found, ControlFlow::Break(key) if key % 2 == 1 && key * key > 1000));
    /// ```
    pub fn try_for_each_by_index<B, F>(
        &self,
        name: &str,
        value: &str,
        f: F,
    ) -> Result<ControlFlow<B>, IndexError>
    where
        F: FnMut(&K, &V) -> ControlFlow<B>,
    {
        visit_bucket(self, name, value, f)
    }
}

/// [`IndexedStore::try_for_each_by_index`]'s step: every shard
/// read-locked at once, and `f` called on each object of the bucket of
/// `value` under index `name` while they are held.
#[inline(always)]
pub(super) fn visit_under_one_cut<K, V, S, B>(
    store: &IndexedStore<K, V, S>,
    name: &str,
    value: &str,
    mut f: impl FnMut(&K, &V) -> ControlFlow<B>,
) -> Result<ControlFlow<B>, IndexError> {
    let cores = store.shards.read_all();
    let schema = cores.first().schema();
    let position = schema.position(name)?;
    let hash = schema.hash_value(value);
    Ok(cores.iter().try_for_each(|core| {
        core.bucket_entries(position, hash, value)
            .try_for_each(|(key, object)| f(key, object))
    }))
}
