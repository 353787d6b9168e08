//! [`AsyncLoadingLruCache`]: an [`LruCache`] that owns an async loader, the
//! async twin of [`LoadingLruCache`](super::LoadingLruCache). Its loads go
//! through the cache's async single flight
//! ([`LruCache::get_or_try_init_async`]).

use std::borrow::Borrow;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;

use super::LruCache;
use crate::sync::Arc;

/// The boxed future an async loader returns.
type LoadFuture<V, E> = Pin<Box<dyn Future<Output = Result<V, E>> + Send>>;

/// A boxed async loader, fallible in form (an infallible one is wrapped):
/// the cache's type then names only `K`, `V`, `E` and `S`.
type AsyncLoader<K, V, E> = Box<dyn Fn(&K) -> LoadFuture<V, E> + Send + Sync>;

/// An [`LruCache`] that owns an async loader: `get_or_load_async(&key)`
/// awaits the loader's future on a miss, once for all the callers that miss
/// the key together, and never blocks an executor thread. Made by
/// [`LruCache::with_async_loader`] or [`LruCache::with_try_async_loader`].
///
/// The loader is a closure from `&K` to a `Send + 'static` future (clone
/// what the future needs from the key), boxed as the sync
/// [`LoadingLruCache`](super::LoadingLruCache)'s is, so the type names only
/// the key, the value, the error type and the hasher. Like it, it does not
/// dereference to its cache: every other operation goes through
/// [`cache`](AsyncLoadingLruCache::cache).
///
/// # Examples
///
/// ```
/// use larder::{AsyncLoadingLruCache, LruCache};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let lengths: AsyncLoadingLruCache<String, usize> =
///     LruCache::with_async_loader(128, |path: &String| {
///         let path = path.clone();
///         async move { path.len() } // a real loader would await I/O here
///     });
/// assert_eq!(lengths.get_or_load_async("/etc/hosts").await, 10);
/// assert_eq!(lengths.get_or_load_async("/etc/hosts").await, 10);
/// assert_eq!(lengths.cache().stats().inits, 1);
/// # });
/// ```
pub struct AsyncLoadingLruCache<K, V, E = Infallible, S = ahash::RandomState> {
    cache: LruCache<K, V, S>,
    loader: AsyncLoader<K, V, E>,
}

impl<K: Hash + Eq, V> LruCache<K, V> {
    /// A cache of at most `capacity` entries that loads missing keys with
    /// the async `loader` (see [`AsyncLoadingLruCache`]).
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let squares = larder::LruCache::with_async_loader(8, |n: &u64| {
    ///     let n = *n;
    ///     async move { n * n }
    /// });
    /// assert_eq!(squares.get_or_load_async(&9).await, 81);
    /// # });
    /// ```
    pub fn with_async_loader<F, Fut>(capacity: usize, loader: F) -> AsyncLoadingLruCache<K, V>
    where
        F: Fn(&K) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = V> + Send + 'static,
    {
        AsyncLoadingLruCache {
            cache: Self::new(capacity),
            loader: Box::new(move |key| {
                let load = loader(key);
                Box::pin(async move { Ok(load.await) })
            }),
        }
    }

    /// A cache of at most `capacity` entries that loads missing keys with
    /// the fallible async `loader` (see [`AsyncLoadingLruCache`]); its
    /// errors are shared by the callers waiting for that load and never
    /// cached.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let users = larder::LruCache::with_try_async_loader(8, |id: &u32| {
    ///     let id = *id;
    ///     async move { if id == 0 { Err("no user 0") } else { Ok(format!("user {id}")) } }
    /// });
    /// assert_eq!(*users.get_or_try_load_async(&0).await.unwrap_err(), "no user 0");
    /// assert_eq!(users.get_or_try_load_async(&3).await.unwrap(), "user 3");
    /// # });
    /// ```
    pub fn with_try_async_loader<E, F, Fut>(
        capacity: usize,
        loader: F,
    ) -> AsyncLoadingLruCache<K, V, E>
    where
        F: Fn(&K) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<V, E>> + Send + 'static,
    {
        AsyncLoadingLruCache {
            cache: Self::new(capacity),
            loader: Box::new(move |key| Box::pin(loader(key))),
        }
    }
}

impl<K, V, E, S> AsyncLoadingLruCache<K, V, E, S> {
    /// The cache underneath, for every operation but loading: `get`,
    /// `get_with`, `insert`, `remove`, `clear`, `len`, `stats`, ...
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::with_async_loader(8, |n: &u64| {
    ///     let n = *n;
    ///     async move { n + 1 }
    /// });
    /// cache.cache().insert(1, 10);
    /// assert_eq!(cache.cache().get(&1), Some(10));
    /// ```
    pub fn cache(&self) -> &LruCache<K, V, S> {
        &self.cache
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> AsyncLoadingLruCache<K, V, Infallible, S> {
    /// The value of `key`, awaiting the loader's future on a miss (once for
    /// all concurrent callers, sync or async): the async form of
    /// [`LoadingLruCache::get_or_load`](super::LoadingLruCache::get_or_load),
    /// with the cancellation rules of [`LruCache::get_or_init_async`]. The
    /// key is looked up when the method is called.
    ///
    /// # Panics
    ///
    /// As [`LruCache::get_or_init_async`].
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cache = larder::LruCache::with_async_loader(8, |id: &u32| {
    ///     let id = *id;
    ///     async move { format!("user {id}") }
    /// });
    /// assert_eq!(cache.get_or_load_async(&7).await, "user 7");
    /// # });
    /// ```
    pub fn get_or_load_async<Q>(&self, key: &Q) -> impl Future<Output = V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
    {
        let load = self.get_or_try_load_async(key);
        async move {
            match load.await {
                Ok(value) => value,
                Err(never) => match *never {},
            }
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone, E, S: BuildHasher> AsyncLoadingLruCache<K, V, E, S> {
    /// The value of `key`, awaiting the fallible loader's future on a miss:
    /// the async form of
    /// [`LoadingLruCache::get_or_try_load`](super::LoadingLruCache::get_or_try_load).
    /// The key is looked up when the method is called; the owned key the
    /// loader is given is built only on a miss.
    ///
    /// # Errors
    ///
    /// The loader's error, shared by the callers waiting for that load; not
    /// cached.
    ///
    /// # Panics
    ///
    /// As [`LruCache::get_or_try_init_async`].
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ports = larder::LruCache::with_try_async_loader(8, |text: &String| {
    ///     let text = text.clone();
    ///     async move { text.parse::<u16>() }
    /// });
    /// assert!(ports.get_or_try_load_async("80a").await.is_err());
    /// assert_eq!(ports.get_or_try_load_async("80").await.unwrap(), 80);
    /// # });
    /// ```
    pub fn get_or_try_load_async<Q>(&self, key: &Q) -> impl Future<Output = Result<V, Arc<E>>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        E: Send + Sync + 'static,
    {
        self.cache
            .get_or_try_init_async(key, move || (self.loader)(&key.to_owned()))
    }
}

impl<K, V, E, S> fmt::Debug for AsyncLoadingLruCache<K, V, E, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncLoadingLruCache")
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}
