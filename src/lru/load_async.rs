//! Async load on miss: [`LruCache::get_or_init_async`] and
//! [`LruCache::get_or_try_init_async`], through the crate's single-flight
//! module (`crate::flight`), sharing one flight per key with the sync
//! [`LruCache::get_or_init`].

use std::borrow::Borrow;
use std::convert::{Infallible, identity};
use std::future::Future;
use std::hash::{BuildHasher, Hash};

use super::LruCache;
use crate::flight::Looked;
use crate::sync::Arc;

impl<K: Hash + Eq, V, S: BuildHasher> LruCache<K, V, S> {
    /// The value of `key`; on a miss, awaits the future `load()` returns,
    /// once however many callers, sync or async, miss the same key at the
    /// same time, caches its value and returns it to all of them: the async
    /// form of [`get_or_init`](Self::get_or_init).
    ///
    /// A caller that finds a load of the key in progress waits as a future
    /// (its waker registered with the load), never blocking its thread. The
    /// key is looked up (by reference) when this method is called, not when
    /// the future is first polled: a hit is counted and marks its entry
    /// used at the call, and returns a future that is ready at once and
    /// holds only the value (nothing allocated or registered, `load`
    /// dropped uncalled). The owned key is built (`Q::to_owned`) only on a
    /// miss. `load` is called, and its future polled, only by the caller
    /// that loads; the others drop theirs uncalled. So what a call costs
    /// does not grow with the loader's future: the returned future holds
    /// the closure, never that future, until this caller loads. The
    /// returned future is `Send` when `K`, `V`, `Q`, `load` and its future
    /// are. Counts a hit or a miss, and a load for the caller whose loader
    /// ran, as the sync form does.
    ///
    /// # Cancellation
    ///
    /// Dropping the returned future is safe at any point. If this caller was
    /// loading, the load is abandoned as if it had panicked: one waiting
    /// caller (sync or async) loads instead, nothing is cached or poisoned,
    /// and the abandoned load counts in `init_failures`. A dropped waiter
    /// simply stops waiting.
    ///
    /// # Panics
    ///
    /// If `load` or its future panics, the panic reaches this caller only
    /// and a waiting caller loads. If the loader's future, while it is
    /// being polled, asks this cache for the same key, that inner call
    /// panics (`larder: re-entrant load`). Panics if the eviction listener
    /// panics.
    ///
    /// # Deadlocks
    ///
    /// A loader that hands the same key to another task and awaits that task
    /// waits for itself forever (not detectable without a runtime; see
    /// [the async guide](https://github.com/larder-rs/larder/blob/main/docs/async.md#re-entrancy)).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cache: larder::LruCache<String, usize> = larder::LruCache::new(16);
    /// let value = cache.get_or_init_async("answer", || async { 42 }).await;
    /// assert_eq!(value, 42);
    /// let again = cache.get_or_init_async("answer", || async { unreachable!("cached") }).await;
    /// assert_eq!(again, 42);
    /// let stats = cache.stats();
    /// assert_eq!((stats.hits, stats.misses, stats.inits), (1, 1, 1));
    /// # });
    /// ```
    #[inline(always)]
    pub fn get_or_init_async<Q, F, Fut>(&self, key: &Q, load: F) -> impl Future<Output = V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        V: Clone,
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        self.load_async_with(key, load, Ok::<V, Infallible>, |outcome| match outcome {
            Ok(value) => value,
            Err(never) => match *never {},
        })
    }

    /// As [`get_or_init_async`](Self::get_or_init_async) with a fallible
    /// loader: the async form of [`get_or_try_init`](Self::get_or_try_init).
    ///
    /// # Errors
    ///
    /// The loader's error, shared as `Arc<E>` by every caller that was
    /// waiting for that load. Nothing is cached on error: the next call
    /// loads afresh.
    ///
    /// # Cancellation
    ///
    /// As [`get_or_init_async`](Self::get_or_init_async).
    ///
    /// # Panics
    ///
    /// As [`get_or_init_async`](Self::get_or_init_async).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cache = larder::LruCache::<u32, String>::new(16);
    /// let err = cache.get_or_try_init_async(&1, || async { Err("database down") }).await;
    /// assert_eq!(*err.unwrap_err(), "database down");
    /// assert!(!cache.contains_key(&1)); // errors are not cached
    /// let ok = cache
    ///     .get_or_try_init_async(&1, || async { Ok::<_, &str>("row 1".to_string()) })
    ///     .await;
    /// assert_eq!(ok.unwrap().as_str(), "row 1");
    /// assert_eq!(cache.stats().init_failures, 1);
    /// # });
    /// ```
    #[inline(always)]
    pub fn get_or_try_init_async<Q, E, F, Fut>(
        &self,
        key: &Q,
        load: F,
    ) -> impl Future<Output = Result<V, Arc<E>>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        V: Clone,
        E: Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        self.load_async_with(key, load, identity, identity)
    }

    /// The one future behind both async forms. It looks the key up when
    /// called: a hit returns a ready future holding the value and nothing
    /// else (nothing registered or allocated, `load` dropped at once); a
    /// miss returns the flight protocol's future, where a waiter allocates
    /// nothing and only the leader boxes its loader's state. The loader's
    /// future is made (`load()`) inside the leader's box, where `lift` turns
    /// its output into a `Result`: every other caller's future holds only
    /// the closure; `finish` shapes the outcome (the infallible form
    /// unwraps it).
    #[inline(always)]
    fn load_async_with<Q, E, L, Fut, O>(
        &self,
        key: &Q,
        load: L,
        lift: impl Fn(Fut::Output) -> Result<V, E> + Copy,
        finish: impl Fn(Result<V, Arc<E>>) -> O + Copy,
    ) -> impl Future<Output = O>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        V: Clone,
        E: Send + Sync + 'static,
        L: FnOnce() -> Fut,
        Fut: Future,
    {
        let hash = self.hash(key);
        if let Some(value) = self.lookup(hash, key) {
            return Looked::Hit(Some(finish(Ok(value))));
        }
        let make_key = |key: &Q| key.to_owned();
        Looked::Miss(crate::cache::load_async(
            self, hash, key, load, make_key, lift, finish,
        ))
    }
}
