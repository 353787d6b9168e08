//! The async forms of [`TypedCache::get_or_init`] and
//! [`TypedCache::get_or_try_init`]: the init is a closure that returns a
//! future, and a caller that finds another caller's init in progress waits
//! as a future, never blocking its thread. One flight per key serves sync
//! and async callers alike (see `crate::flight`). The `AnyCache` forms are
//! in `any.rs`.

use std::borrow::Borrow;
use std::convert::{Infallible, identity};
use std::future::Future;
use std::hash::{BuildHasher, Hash};

use super::TypedCache;
use crate::sync::Arc;

impl<K, V, S> TypedCache<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    /// The value of `key`, awaiting the future `init()` returns to create
    /// it if there is none: the async form of
    /// [`get_or_init`](TypedCache::get_or_init), for callers on an async
    /// runtime.
    ///
    /// Among concurrent callers for one key that find no value, sync or
    /// async, exactly one runs its init; the async others wait without
    /// blocking their thread (their waker is registered with the init in
    /// progress) and get clones of its value. The key is looked up (by
    /// reference) when this method is called, not when the future is first
    /// polled: a hit is counted at the call and returns a future that is
    /// ready at once and holds only the value (nothing allocated or
    /// registered, `init` dropped uncalled); the owned key is built
    /// (`Q::to_owned`) only on a miss. `init` is called, and its future
    /// polled, only if this caller runs the init; otherwise it is dropped
    /// uncalled. So what a call costs does not grow with the init's future:
    /// the returned future holds the closure, never that future, until this
    /// caller runs the init (the future is then made in the box the running
    /// init lives in). The returned future is `Send` when `K`, `V`, `Q`,
    /// `init` and its future are.
    ///
    /// # Cancellation
    ///
    /// Dropping the returned future is safe at any point. If this caller was
    /// running the init, the init is abandoned as if it had panicked: it
    /// leaves the key, one waiting caller (sync or async) runs its own init,
    /// nothing is cached or poisoned, and the abandoned init counts as a
    /// failed one in [`stats`](TypedCache::stats). If this caller was
    /// waiting, it simply stops waiting.
    ///
    /// # Panics
    ///
    /// - If `init` or its future panics, the panic resumes in this caller
    ///   only; the key is released and a waiting caller runs its own init.
    /// - If the init's future, while it is being polled, asks this cache
    ///   for the same key (awaiting `get_or_init_async`, or calling
    ///   `get_or_init`), that inner call panics with a message starting
    ///   `larder: re-entrant load`.
    ///
    /// # Deadlocks
    ///
    /// An init that hands the same key to *another task* and awaits that
    /// task (say, `tokio::spawn(cache.get_or_init_async(..))` then awaiting
    /// the handle) waits for itself forever: the other task is an ordinary
    /// waiter that cannot be told apart without a runtime. Bound such code
    /// with a timeout (see [the async guide](https://github.com/larder-rs/larder/blob/main/docs/async.md#re-entrancy)).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TypedCache;
    /// use std::sync::Arc;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let cache: Arc<TypedCache<String, String>> = Arc::new(TypedCache::new());
    /// let tasks: Vec<_> = (0..3)
    ///     .map(|_| {
    ///         let cache = Arc::clone(&cache);
    ///         tokio::spawn(async move {
    ///             // Borrowed `&str` key: the `String` is built only on a miss.
    ///             cache
    ///                 .get_or_init_async("users", || async {
    ///                     tokio::task::yield_now().await; // an async fetch
    ///                     "id,name".to_string()
    ///                 })
    ///                 .await
    ///         })
    ///     })
    ///     .collect();
    /// for task in tasks {
    ///     assert_eq!(task.await.unwrap(), "id,name");
    /// }
    /// assert_eq!(cache.stats().inits, 1);
    /// # });
    /// ```
    #[inline(always)]
    pub fn get_or_init_async<Q, F, Fut>(&self, key: &Q, init: F) -> impl Future<Output = V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        // The raw future itself, no level of our own: it looks the key up
        // first (a hit builds no flight state and polls no inner future).
        self.raw.get_or_try_init_async(
            key,
            |key: &Q| key.to_owned(),
            init,
            Ok::<V, Infallible>,
            V::clone,
            |outcome| match outcome {
                Ok(value) => value,
                Err(never) => match *never {},
            },
        )
    }

    /// The value of `key`, awaiting the fallible future `init()` returns to
    /// create it if there is none: the async form of
    /// [`get_or_try_init`](TypedCache::get_or_try_init), exactly once among
    /// concurrent callers as [`get_or_init_async`](TypedCache::get_or_init_async).
    ///
    /// # Errors
    ///
    /// If the init this caller ran returned an error, that error; if this
    /// caller was waiting on another caller's init (sync or async) that
    /// failed, the *same* error, shared as `Arc<E>`. Nothing is cached on
    /// failure, so the next call starts a fresh init. A waiter whose own `E`
    /// differs in type from the failed init's runs its own init instead.
    ///
    /// # Cancellation
    ///
    /// As [`get_or_init_async`](TypedCache::get_or_init_async): a cancelled
    /// init is abandoned (not shared as an error), and a waiter takes over.
    ///
    /// # Panics
    ///
    /// As [`get_or_init_async`](TypedCache::get_or_init_async).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TypedCache;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let cache: TypedCache<String, u16> = TypedCache::new();
    /// let err = cache
    ///     .get_or_try_init_async("port", || async { "80a".parse::<u16>() })
    ///     .await
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("invalid digit"));
    /// assert!(!cache.contains_key("port")); // the error was not cached
    /// let port = cache
    ///     .get_or_try_init_async("port", || async { "80".parse::<u16>() })
    ///     .await
    ///     .unwrap();
    /// assert_eq!(port, 80);
    /// # });
    /// ```
    #[inline(always)]
    pub fn get_or_try_init_async<Q, E, F, Fut>(
        &self,
        key: &Q,
        init: F,
    ) -> impl Future<Output = Result<V, Arc<E>>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
        E: Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        self.raw.get_or_try_init_async(
            key,
            |key: &Q| key.to_owned(),
            init,
            identity,
            V::clone,
            identity,
        )
    }
}
