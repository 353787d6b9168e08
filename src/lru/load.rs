//! Load on miss: [`LruCache::get_or_init`], [`LruCache::get_or_try_init`]
//! and [`LoadingLruCache`], all through the crate's single-flight module
//! (`crate::flight`).
//!
//! A miss registers a flight for the key (or joins the one in progress),
//! runs the loader with no lock held, and publishes the value into the cache
//! *before* the flight ends, so a caller arriving after the flight finds the
//! value. Errors are shared with the callers already waiting, as `Arc<E>`,
//! and never cached. A panicking loader abandons its flight and one waiter
//! takes over. See `src/flight/` for the protocol and its loom models.

use std::borrow::Borrow;
use std::convert::Infallible;
use std::fmt;
use std::hash::{BuildHasher, Hash};

use super::LruCache;
use crate::cache::{Displaced, Event, LoadFace};
use crate::flight::FlightGroup;
use crate::sync::Arc;

/// The face's side of the load glue (`crate::cache::load`): the re-check
/// under the shard's write lock, the counters under it too, and the store
/// through `insert`'s own path, its displaced entries released by
/// `finish_insert`.
impl<K: Hash + Eq, V: Clone, S: BuildHasher> LoadFace<K, V> for LruCache<K, V, S> {
    type Seen = ();
    type Leftover = Displaced<K, V>;

    fn flights(&self) -> &FlightGroup<K, V> {
        &self.layer.flights
    }

    fn recheck<Q>(&self, hash: u64, key: &Q) -> Result<V, ()>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        self.layer.recheck(hash, key).map_err(drop)
    }

    fn count(&self, hash: u64, event: Event) {
        self.lock(hash).counters.record(event);
    }

    fn nothing() -> Displaced<K, V> {
        Displaced::nothing()
    }

    fn publish(&self, hash: u64, key: K, value: V, _: Option<()>, out: &mut Displaced<K, V>) {
        self.insert_hashed_into(hash, key, value, out);
    }

    fn release(&self, displaced: Displaced<K, V>) {
        self.finish_insert(displaced);
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> LruCache<K, V, S> {
    /// The value of `key`; on a miss, runs `load` once however many threads
    /// miss the same key at the same time, caches its value and returns it
    /// to all of them.
    ///
    /// The loader runs with no lock held; other keys, in any shard, are never
    /// blocked by it. Counts a hit or a miss, and a load for the caller
    /// whose loader ran. A value inserted for the key while the load runs is
    /// replaced by the loaded value.
    ///
    /// # Panics
    ///
    /// If `load` panics, the panic reaches this caller only: the callers
    /// waiting for it retry, and one of them loads. Panics if `load` asks
    /// this cache for the same key on the same thread (it would wait for
    /// itself forever), and if the eviction listener panics. If the key's
    /// `Hash`, `Eq` or `Clone` panics, the cache keeps every other entry,
    /// and a loader run is still counted (in `inits` as it starts, and in
    /// `init_failures` if it failed, as soon as it returns or unwinds).
    ///
    /// # Deadlocks
    ///
    /// A loader that waits for another thread which is itself waiting for
    /// this key deadlocks, as with any lock.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(16);
    /// let value = cache.get_or_init(&"answer", || 42);
    /// assert_eq!(value, 42);
    /// let again = cache.get_or_init(&"answer", || unreachable!("cached"));
    /// assert_eq!(again, 42);
    /// let stats = cache.stats();
    /// assert_eq!((stats.hits, stats.misses, stats.inits), (1, 1, 1));
    /// ```
    pub fn get_or_init<Q, F>(&self, key: &Q, load: F) -> V
    where
        K: Borrow<Q> + Clone,
        V: Clone,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        F: FnOnce() -> V,
    {
        match self.get_or_try_init(key, || Ok::<V, Infallible>(load())) {
            Ok(value) => value,
            Err(never) => match *never {},
        }
    }

    /// As [`get_or_init`](Self::get_or_init) with a fallible loader.
    ///
    /// # Errors
    ///
    /// The loader's error, shared as `Arc<E>` by every caller that was
    /// waiting for that load (a failing backend sees one call, not one per
    /// waiter). Nothing is cached on error: the next call loads afresh.
    ///
    /// # Panics
    ///
    /// As [`get_or_init`](Self::get_or_init).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u32, String>::new(16);
    /// let err = cache.get_or_try_init(&1, || Err("database down")).unwrap_err();
    /// assert_eq!(*err, "database down");
    /// assert!(!cache.contains_key(&1)); // errors are not cached
    /// let ok = cache.get_or_try_init(&1, || Ok::<_, &str>("row 1".to_string()));
    /// assert_eq!(ok.unwrap().as_str(), "row 1");
    /// assert_eq!(cache.stats().init_failures, 1);
    /// ```
    pub fn get_or_try_init<Q, E, F>(&self, key: &Q, load: F) -> Result<V, Arc<E>>
    where
        K: Borrow<Q> + Clone,
        V: Clone,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        F: FnOnce() -> Result<V, E>,
        E: Send + Sync + 'static,
    {
        let hash = self.hash(key);
        if let Some(value) = self.lookup(hash, key) {
            return Ok(value);
        }
        // A miss: the owned key is built now (user `ToOwned`, no lock held).
        crate::cache::load(self, hash, &key.to_owned(), load)
    }
}

/// The loader a [`LoadingLruCache`] owns: boxed, so the cache's type does
/// not name the closure's.
type Loader<K, V, E> = Box<dyn Fn(&K) -> Result<V, E> + Send + Sync>;

/// An [`LruCache`] that owns its loader: the closest thing to Python's
/// `@lru_cache` decorator. Made by [`LruCache::with_loader`],
/// [`LruCache::with_try_loader`], or the builder's
/// [`build_with_loader`](super::LruCacheBuilder::build_with_loader) and
/// [`build_with_try_loader`](super::LruCacheBuilder::build_with_try_loader).
///
/// The loader is boxed (`Box<dyn Fn(&K) -> Result<V, E> + Send + Sync>`), so
/// the type names only the key, the value, the loader's error type `E`
/// (`Infallible` for a loader that cannot fail) and the hasher: a
/// `LoadingLruCache<String, Metadata, io::Error>` can be a field of your
/// struct without naming a closure type. The box costs one indirect call
/// per load, never anything on a hit.
///
/// It does not dereference to its [`LruCache`] (a `get_or_init` that
/// bypassed the loader would be one call away): reach the cache's other
/// operations (`get`, `insert`, `remove`, `stats`, ...) explicitly through
/// [`cache`](LoadingLruCache::cache).
///
/// # Examples
///
/// ```
/// use larder::{LoadingLruCache, LruCache};
///
/// struct Service {
///     lengths: LoadingLruCache<String, usize>,
/// }
///
/// let service = Service { lengths: LruCache::with_loader(128, |path: &String| path.len()) };
/// assert_eq!(service.lengths.get_or_load("/etc/hosts"), 10);
/// assert_eq!(service.lengths.cache().stats().misses, 1);
/// assert_eq!(service.lengths.get_or_load("/etc/hosts"), 10);
/// assert_eq!(service.lengths.cache().stats().hits, 1);
/// ```
pub struct LoadingLruCache<K, V, E = Infallible, S = ahash::RandomState> {
    cache: LruCache<K, V, S>,
    loader: Loader<K, V, E>,
}

impl<K: Hash + Eq, V> LruCache<K, V> {
    /// A cache of at most `capacity` entries that loads missing keys with
    /// `loader` (see [`LoadingLruCache`]).
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 (use
    /// [`build_with_loader`](super::LruCacheBuilder::build_with_loader) for
    /// an error instead).
    ///
    /// # Examples
    ///
    /// ```
    /// let squares = larder::LruCache::with_loader(8, |n: &u32| n * n);
    /// assert_eq!(squares.get_or_load(&9), 81);
    /// ```
    pub fn with_loader<F>(capacity: usize, loader: F) -> LoadingLruCache<K, V>
    where
        F: Fn(&K) -> V + Send + Sync + 'static,
    {
        LoadingLruCache::from_parts(Self::new(capacity), infallible(loader))
    }

    /// A cache of at most `capacity` entries that loads missing keys with
    /// the fallible `loader` (see [`LoadingLruCache`]); its errors are
    /// shared by the callers waiting for that load and never cached.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 (use
    /// [`build_with_try_loader`](super::LruCacheBuilder::build_with_try_loader)
    /// for an error instead).
    ///
    /// # Examples
    ///
    /// ```
    /// let users = larder::LruCache::with_try_loader(8, |id: &u32| {
    ///     if *id == 0 { Err("no user 0") } else { Ok(format!("user {id}")) }
    /// });
    /// assert_eq!(*users.get_or_try_load(&0).unwrap_err(), "no user 0");
    /// assert_eq!(users.get_or_try_load(&3).unwrap().as_str(), "user 3");
    /// ```
    pub fn with_try_loader<E, F>(capacity: usize, loader: F) -> LoadingLruCache<K, V, E>
    where
        F: Fn(&K) -> Result<V, E> + Send + Sync + 'static,
    {
        LoadingLruCache::from_parts(Self::new(capacity), Box::new(loader))
    }
}

/// An infallible loader in the boxed fallible form.
pub(crate) fn infallible<K, V, F>(loader: F) -> Loader<K, V, Infallible>
where
    F: Fn(&K) -> V + Send + Sync + 'static,
{
    Box::new(move |key| Ok(loader(key)))
}

impl<K, V, E, S> LoadingLruCache<K, V, E, S> {
    pub(crate) fn from_parts(cache: LruCache<K, V, S>, loader: Loader<K, V, E>) -> Self {
        Self { cache, loader }
    }

    /// The cache underneath, for every operation but loading: `get`,
    /// `get_with`, `insert`, `remove`, `clear`, `len`, `stats`, ...
    ///
    /// # Examples
    ///
    /// ```
    /// let squares = larder::LruCache::with_loader(8, |n: &u64| n * n);
    /// assert_eq!(squares.get_or_load(&3), 9);
    /// assert_eq!(squares.cache().get(&3), Some(9));
    /// assert_eq!(squares.cache().stats().inits, 1);
    /// ```
    pub fn cache(&self) -> &LruCache<K, V, S> {
        &self.cache
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> LoadingLruCache<K, V, Infallible, S> {
    /// The value of `key`, loaded by the cache's loader on a miss (once for
    /// all concurrent callers). See [`LruCache::get_or_init`]. Only for a
    /// cache whose loader cannot fail; a fallible one answers
    /// [`get_or_try_load`](Self::get_or_try_load).
    ///
    /// # Panics
    ///
    /// As [`LruCache::get_or_init`].
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::with_loader(8, |id: &u32| format!("user {id}"));
    /// assert_eq!(cache.get_or_load(&7).as_str(), "user 7");
    /// ```
    pub fn get_or_load<Q>(&self, key: &Q) -> V
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
    {
        match self.get_or_try_load(key) {
            Ok(value) => value,
            Err(never) => match *never {},
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone, E, S: BuildHasher> LoadingLruCache<K, V, E, S> {
    /// The value of `key`, loaded by the cache's loader on a miss. See
    /// [`LruCache::get_or_try_init`]. A lookup first; on a miss the owned
    /// key is built (before any loader runs, so a panicking `ToOwned` is
    /// not a loader run) and the loader runs through the single flight.
    ///
    /// # Errors
    ///
    /// The loader's error, shared by the callers waiting for that load; not
    /// cached.
    ///
    /// # Panics
    ///
    /// As [`LruCache::get_or_init`].
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::with_try_loader(8, |id: &u32| {
    ///     if *id == 0 { Err("no user 0") } else { Ok(format!("user {id}")) }
    /// });
    /// assert_eq!(*cache.get_or_try_load(&0).unwrap_err(), "no user 0");
    /// assert_eq!(cache.get_or_try_load(&3).unwrap().as_str(), "user 3");
    /// ```
    pub fn get_or_try_load<Q>(&self, key: &Q) -> Result<V, Arc<E>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        E: Send + Sync + 'static,
    {
        let hash = self.cache.hash(key);
        if let Some(value) = self.cache.lookup(hash, key) {
            return Ok(value);
        }
        let owned = key.to_owned();
        crate::cache::load(&self.cache, hash, &owned, || (self.loader)(&owned))
    }
}

impl<K, V, E, S> fmt::Debug for LoadingLruCache<K, V, E, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadingLruCache")
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}
