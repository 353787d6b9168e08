//! [`StoreReader`]: the read-only view of a reflector's store, with the
//! waits a worker needs before it reads.
//!
//! The reflector owns its store (the builder takes it by value) and hands
//! out readers: every read of [`IndexedStore`], delegated, and no write, so
//! the loop is the store's only writer by type, which its relists, its
//! duplicate skipping and the handler registry's no-gap join rely on.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::ops::ControlFlow;
use std::time::Duration;

use super::error::WaitError;
use super::source::Revision;
use super::status::ReflectorHandle;
use crate::sync::Arc;
use crate::{IndexError, IndexedStore};

/// A read-only handle on the [`IndexedStore`] a
/// [`Reflector`](super::Reflector) fills: [`Reflector::reader`](super::Reflector::reader).
///
/// It offers every read of the store, with the same signatures and the
/// same consistency (each method links to the store's own), and none of
/// its writes: the reflector owns the store and is its only writer, so
/// nothing can change the mirror behind its back (kube-runtime's `Store`,
/// client-go's listers). Cloning it is cheap (three reference counts) and
/// every clone reads the same store; it stays valid after the loop ends.
///
/// It also carries the waits a worker needs before it reads
/// ([`wait_until_synced`](Self::wait_until_synced),
/// [`wait_for_revision`](Self::wait_for_revision) and their `_timeout`
/// forms), the same waits as the reflector's [`ReflectorHandle`], which
/// alone also stops the loop and reports its statistics. To be told of
/// changes rather than read them, add a handler through the reflector's
/// [`HandlerRegistry`](super::HandlerRegistry).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use larder::IndexedStore;
/// use larder::reflector::{MemorySource, Reflector};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let source = MemorySource::new();
/// source.put("default/web".to_string(), "default".to_string());
/// let pods = IndexedStore::<String, Arc<String>>::builder()
///     .index("namespace", |ns: &Arc<String>| [ns.to_string()])
///     .build()
///     .unwrap();
/// let reflector = Reflector::builder(source.clone(), pods).build().unwrap();
/// let reader = reflector.reader();
/// let handle = reflector.handle();
/// let task = tokio::spawn(reflector.run());
///
/// reader.wait_until_synced().await.unwrap();
/// let revision = source.put("prod/db".to_string(), "prod".to_string());
/// reader.wait_for_revision(revision).await.unwrap(); // read your writes
/// let worker = reader.clone(); // the same store
/// assert_eq!(worker.index_keys("namespace", "prod").unwrap(), ["prod/db"]);
/// assert_eq!(worker.get("default/web").as_deref().map(String::as_str), Some("default"));
///
/// handle.stop();
/// task.await.unwrap();
/// # });
/// ```
///
/// A reader has no writes:
///
/// ```compile_fail,E0599
/// use std::sync::Arc;
/// use larder::IndexedStore;
/// use larder::reflector::{MemorySource, Reflector};
///
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
/// let reader = reflector.reader();
/// reader.insert("a".to_string(), Arc::new(1)); // error: no method `insert`
/// ```
pub struct StoreReader<K, O, S = ahash::RandomState> {
    store: Arc<IndexedStore<K, Arc<O>, S>>,
    handle: ReflectorHandle,
}

impl<K, O, S> StoreReader<K, O, S> {
    pub(crate) fn new(store: Arc<IndexedStore<K, Arc<O>, S>>, handle: ReflectorHandle) -> Self {
        Self { store, handle }
    }

    /// Whether two readers read the same store. For tests.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn same_store(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.store, &other.store)
    }
}

impl<K, O, S> Clone for StoreReader<K, O, S> {
    fn clone(&self) -> Self {
        Self {
            store: Arc::clone(&self.store),
            handle: self.handle.clone(),
        }
    }
}

impl<K, O, S> fmt::Debug for StoreReader<K, O, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreReader")
            .field("store", &*self.store)
            .field("reflector", &self.handle)
            .finish()
    }
}

impl<K, O, S> StoreReader<K, O, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher,
{
    /// [`IndexedStore::check_invariants`] of the store read. For tests.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn check_invariants(&self) {
        self.store.check_invariants();
    }

    /// [`IndexedStore::get`]: the object under `key`.
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<Arc<O>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.store.get(key)
    }

    /// [`IndexedStore::get_with`]: `f` of the object under `key`, run
    /// under the shard's read lock, cloning nothing.
    #[inline]
    pub fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&Arc<O>) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.store.get_with(key, f)
    }

    /// [`IndexedStore::contains_key`]: whether `key` is stored.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.store.contains_key(key)
    }

    /// [`IndexedStore::get_with_revision`]: the object under `key` and the
    /// store's [`revision`](Self::revision), read together.
    pub fn get_with_revision<Q>(&self, key: &Q) -> (Option<Arc<O>>, u64)
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.store.get_with_revision(key)
    }

    /// [`IndexedStore::len`]: how many objects are stored.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// [`IndexedStore::is_empty`]: whether no object is stored.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// [`IndexedStore::shard_count`]: how many shards the store is split
    /// into.
    pub fn shard_count(&self) -> usize {
        self.store.shard_count()
    }

    /// [`IndexedStore::revision`]: the revision of the last change the
    /// reflector wrote to the store. It can be lower than the revision the
    /// reflector has caught up with (see [`ReflectorHandle::revision`]):
    /// wait for that one with [`wait_for_revision`](Self::wait_for_revision).
    pub fn revision(&self) -> u64 {
        self.store.revision()
    }

    /// [`IndexedStore::keys_to_vec`]: a copy of every key, from one cut.
    pub fn keys_to_vec(&self) -> Vec<K> {
        self.store.keys_to_vec()
    }

    /// [`IndexedStore::values_to_vec`]: a copy of every object, from one
    /// cut.
    pub fn values_to_vec(&self) -> Vec<Arc<O>> {
        self.store.values_to_vec()
    }

    /// [`IndexedStore::to_vec`]: a copy of every entry, from one cut.
    pub fn to_vec(&self) -> Vec<(K, Arc<O>)> {
        self.store.to_vec()
    }

    /// [`IndexedStore::to_vec_with_revision`]: a copy of every entry and
    /// the store's [`revision`](Self::revision), from one cut.
    pub fn to_vec_with_revision(&self) -> (Vec<(K, Arc<O>)>, u64) {
        self.store.to_vec_with_revision()
    }

    /// [`IndexedStore::by_index`]: the objects whose values for index
    /// `name` include `value`.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<O>>, IndexError> {
        self.store.by_index(name, value)
    }

    /// [`IndexedStore::by_index_entries`]: [`by_index`](Self::by_index)
    /// with each object's key.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    pub fn by_index_entries(
        &self,
        name: &str,
        value: &str,
    ) -> Result<Vec<(K, Arc<O>)>, IndexError> {
        self.store.by_index_entries(name, value)
    }

    /// [`IndexedStore::for_each_by_index`]: calls `f` on each entry of
    /// [`by_index_entries`](Self::by_index_entries) in place, under the read
    /// locks.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    pub fn for_each_by_index<F>(&self, name: &str, value: &str, f: F) -> Result<(), IndexError>
    where
        F: FnMut(&K, &Arc<O>),
    {
        self.store.for_each_by_index(name, value, f)
    }

    /// [`IndexedStore::try_for_each_by_index`]:
    /// [`for_each_by_index`](Self::for_each_by_index) that stops at the
    /// first `ControlFlow::Break`.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    pub fn try_for_each_by_index<B, F>(
        &self,
        name: &str,
        value: &str,
        f: F,
    ) -> Result<ControlFlow<B>, IndexError>
    where
        F: FnMut(&K, &Arc<O>) -> ControlFlow<B>,
    {
        self.store.try_for_each_by_index(name, value, f)
    }

    /// [`IndexedStore::index_keys`]: the keys of
    /// [`by_index`](Self::by_index), sorted.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<K>, IndexError>
    where
        K: Ord,
    {
        self.store.index_keys(name, value)
    }

    /// [`IndexedStore::index_len`]: how many objects
    /// [`by_index`](Self::by_index) would return.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    pub fn index_len(&self, name: &str, value: &str) -> Result<usize, IndexError> {
        self.store.index_len(name, value)
    }

    /// [`IndexedStore::index_values`]: the values index `name` holds.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`.
    pub fn index_values(&self, name: &str) -> Result<Vec<String>, IndexError> {
        self.store.index_values(name)
    }

    /// [`IndexedStore::matching`]: the objects that share a value for
    /// index `name` with `object` (client-go `Index`).
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownIndex`] if no index is named `name`; an index
    /// function's error for `object`.
    pub fn matching(&self, name: &str, object: &Arc<O>) -> Result<Vec<Arc<O>>, IndexError> {
        self.store.matching(name, object)
    }

    /// [`IndexedStore::index_names`]: the names of the store's indexes.
    pub fn index_names(&self) -> Vec<String> {
        self.store.index_names()
    }

    /// [`ReflectorHandle::has_synced`]: whether the first list is in the
    /// store.
    pub fn has_synced(&self) -> bool {
        self.handle.has_synced()
    }

    /// [`ReflectorHandle::wait_until_synced`]: waits until the first list
    /// is in the store.
    ///
    /// # Errors
    ///
    /// [`WaitError::Stopped`] if the reflector stops first.
    pub async fn wait_until_synced(&self) -> Result<(), WaitError> {
        self.handle.wait_until_synced().await
    }

    /// [`ReflectorHandle::wait_until_synced_timeout`]:
    /// [`wait_until_synced`](Self::wait_until_synced) for at most `limit`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`] once `limit` has passed;
    /// [`WaitError::Stopped`] if the reflector stops first.
    pub async fn wait_until_synced_timeout(&self, limit: Duration) -> Result<(), WaitError> {
        self.handle.wait_until_synced_timeout(limit).await
    }

    /// [`ReflectorHandle::wait_for_revision`]: waits until the store holds
    /// every change up to `revision` (read your writes).
    ///
    /// # Errors
    ///
    /// [`WaitError::Stopped`] if the reflector stops first.
    pub async fn wait_for_revision(&self, revision: Revision) -> Result<(), WaitError> {
        self.handle.wait_for_revision(revision).await
    }

    /// [`ReflectorHandle::wait_for_revision_timeout`]:
    /// [`wait_for_revision`](Self::wait_for_revision) for at most `limit`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`] once `limit` has passed;
    /// [`WaitError::Stopped`] if the reflector stops first.
    pub async fn wait_for_revision_timeout(
        &self,
        revision: Revision,
        limit: Duration,
    ) -> Result<(), WaitError> {
        self.handle.wait_for_revision_timeout(revision, limit).await
    }
}
