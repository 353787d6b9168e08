//! [`AnyCache`]: one cache for values of many types, keyed by
//! `(key, value type)`.
//!
//! Entries are stored type-erased as `Arc<dyn Any + Send + Sync>` under a
//! [`TypedKey`] made of the caller's key and the `TypeId` of the value type
//! the call names. Every way in (`get_or_init::<V>`, `insert::<V>`) stores a
//! `V` under `TypeId::of::<V>()`, and every way out looks up
//! `TypeId::of::<V>()`, so the downcast back to `V` cannot fail: a type
//! mismatch is a different key, not a failed cast.
//!
//! Lookups borrow the key (`&Q` where `K: Borrow<Q>`) through the usual
//! trick for compound keys: both the stored `TypedKey<K>` and a borrowed
//! `(&Q, TypeId)` view themselves as `dyn KeyView<Q>`, which hashes and
//! compares the same way.

use std::any::{Any, TypeId};
use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash, Hasher};

use super::builder::AnyCacheBuilder;
use super::raw::Raw;
use crate::cache::CacheStats;
use crate::sync::Arc;

/// A key of the type-erased map: the caller's key and the value's type.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct TypedKey<K> {
    key: K,
    type_id: TypeId,
}

impl<K: Hash> Hash for TypedKey<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must match `Hash for dyn KeyView<Q>` (K and Q hash alike, as
        // `Borrow` requires).
        self.key.hash(state);
        self.type_id.hash(state);
    }
}

/// A borrowed view of a typed key, shared by `TypedKey<K>` and `(&Q, TypeId)`.
pub(crate) trait KeyView<Q: ?Sized> {
    fn key(&self) -> &Q;
    fn value_type(&self) -> TypeId;
}

impl<K: Borrow<Q>, Q: ?Sized> KeyView<Q> for TypedKey<K> {
    fn key(&self) -> &Q {
        self.key.borrow()
    }
    fn value_type(&self) -> TypeId {
        self.type_id
    }
}

impl<Q: ?Sized> KeyView<Q> for (&Q, TypeId) {
    fn key(&self) -> &Q {
        self.0
    }
    fn value_type(&self) -> TypeId {
        self.1
    }
}

impl<'a, K, Q> Borrow<dyn KeyView<Q> + 'a> for TypedKey<K>
where
    K: Borrow<Q> + 'a,
    Q: ?Sized + 'a,
{
    fn borrow(&self) -> &(dyn KeyView<Q> + 'a) {
        self
    }
}

impl<Q: ?Sized + Hash> Hash for dyn KeyView<Q> + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
        self.value_type().hash(state);
    }
}

impl<Q: ?Sized + Eq> PartialEq for dyn KeyView<Q> + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.value_type() == other.value_type() && self.key() == other.key()
    }
}

impl<Q: ?Sized + Eq> Eq for dyn KeyView<Q> + '_ {}

// The same view, `Sync`: the async lookups hold it across `.await`s, and
// their futures are `Send` only if it is.
impl<'a, K, Q> Borrow<dyn KeyView<Q> + Sync + 'a> for TypedKey<K>
where
    K: Borrow<Q> + Sync + 'a,
    Q: ?Sized + 'a,
{
    fn borrow(&self) -> &(dyn KeyView<Q> + Sync + 'a) {
        self
    }
}

impl<Q: ?Sized + Hash> Hash for dyn KeyView<Q> + Sync + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
        self.value_type().hash(state);
    }
}

impl<Q: ?Sized + Eq> PartialEq for dyn KeyView<Q> + Sync + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.value_type() == other.value_type() && self.key() == other.key()
    }
}

impl<Q: ?Sized + Eq> Eq for dyn KeyView<Q> + Sync + '_ {}

/// A value stored type-erased; its type is the `TypeId` of its key.
#[derive(Clone)]
pub(crate) struct Erased(Arc<dyn Any + Send + Sync>);

/// Recovers the `Arc<V>` stored under a key whose type id is `V`'s.
fn downcast<V: Any + Send + Sync>(erased: &Erased) -> Arc<V> {
    match Arc::clone(&erased.0).downcast::<V>() {
        Ok(value) => value,
        // Every entry under TypeId::of::<V>() was stored as a V.
        Err(_) => unreachable!("larder: AnyCache entry stored under another type's id"),
    }
}

/// A heterogeneous single-flight cache: values of any `'static` type under
/// keys of one type, each `(key, value type)` pair its own entry.
///
/// This is .NET's `GetOrAdd<TValue>(key, factory)` made type-safe:
/// `get_or_init::<V>(key, f)` is checked by the compiler, a `u32` and a
/// `String` stored under the same key never collide, and no downcast can
/// fail (the value type is part of the key). Everything else, from
/// exactly-once init to expiry and statistics, is as in [`TypedCache`]:
/// see its documentation for the guarantees, errors, panics and deadlocks.
///
/// # Guarantees
///
/// Those of [`TypedCache`], user code included: the key's `Hash` (with the
/// value type's id) runs before any lock, `K: Clone` before the shard lock,
/// and only `K: Eq` under it, before the operation's first change; a
/// panicking `Hash`, `Eq`, `Clone` or `Drop` loses no other entry.
/// Expired entries are released by writes and reads as in `TypedCache`.
///
/// Two things `TypedCache` has are missing here: a removal listener (its
/// values have no one type to hand over) and `to_vec` (likewise). Keep a
/// `TypedCache` per value type where you need them.
///
/// [`TypedCache`]: crate::TypedCache
///
/// # Examples
///
/// ```
/// use larder::AnyCache;
/// use std::sync::Arc;
///
/// #[derive(Debug, PartialEq)]
/// struct Schema(Vec<&'static str>);
///
/// let cache: AnyCache<String> = AnyCache::new();
/// let schema: Arc<Schema> = cache.get_or_init("users", || Schema(vec!["id", "name"]));
/// let rows: Arc<u64> = cache.get_or_init("users", || 1_000);
/// assert_eq!(schema.0.len(), 2);
/// assert_eq!(*rows, 1_000);
/// // Same key, different types: two entries, no collision.
/// assert_eq!(cache.len(), 2);
/// assert_eq!(cache.get::<u64, _>("users").as_deref(), Some(&1_000));
/// assert_eq!(cache.get::<String, _>("users"), None);
/// ```
pub struct AnyCache<K, S = ahash::RandomState> {
    raw: Raw<TypedKey<K>, Erased, S>,
}

impl<K> AnyCache<K>
where
    K: Hash + Eq + Clone,
{
    /// An empty cache without expiry or size bound.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u32> = larder::AnyCache::new();
    /// assert!(cache.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::builder()
            .build()
            .expect("the default settings are valid")
    }

    /// A builder for expiry, a size bound, the clock and the hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::AnyCache::<u32>::builder().capacity(100).build().unwrap();
    /// cache.insert(1, "one");
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn builder() -> AnyCacheBuilder<K> {
        AnyCacheBuilder::new()
    }
}

impl<K> Default for AnyCache<K>
where
    K: Hash + Eq + Clone,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, S> AnyCache<K, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher + Clone,
{
    pub(crate) fn from_raw(raw: Raw<TypedKey<K>, Erased, S>) -> Self {
        Self { raw }
    }

    fn typed<V: 'static>(key: K) -> TypedKey<K> {
        TypedKey {
            key,
            type_id: TypeId::of::<V>(),
        }
    }

    /// The `V` under `key`, running `f` to create it if there is none; among
    /// concurrent callers for the same `(key, V)`, `f` runs once. As
    /// [`TypedCache::get_or_init`](crate::TypedCache::get_or_init).
    ///
    /// # Panics
    ///
    /// Resumes `f`'s panic in this caller only; panics with a re-entrant
    /// load message if `f` asks this cache for the same key and type.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<String> = larder::AnyCache::new();
    /// let a = cache.get_or_init("pi", || 3.14_f64);
    /// let b = cache.get_or_init("pi", || -> f64 { unreachable!() });
    /// assert!(std::sync::Arc::ptr_eq(&a, &b));
    /// ```
    pub fn get_or_init<V, Q>(&self, key: &Q, f: impl FnOnce() -> V) -> Arc<V>
    where
        V: Send + Sync + 'static,
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
    {
        match self.get_or_try_init(key, || Ok::<V, std::convert::Infallible>(f())) {
            Ok(value) => value,
            Err(never) => match *never {},
        }
    }

    /// The fallible [`get_or_init`](AnyCache::get_or_init); errors as
    /// [`TypedCache::get_or_try_init`](crate::TypedCache::get_or_try_init).
    ///
    /// # Errors
    ///
    /// The error of the init this caller ran or joined, shared as `Arc<E>`;
    /// nothing is cached.
    ///
    /// # Panics
    ///
    /// As [`get_or_init`](AnyCache::get_or_init).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<String> = larder::AnyCache::new();
    /// let port = cache.get_or_try_init("port", || "80a".parse::<u16>());
    /// assert!(port.is_err());
    /// let port = cache.get_or_try_init("port", || "80".parse::<u16>());
    /// assert_eq!(*port.unwrap(), 80);
    /// ```
    pub fn get_or_try_init<V, E, Q>(
        &self,
        key: &Q,
        f: impl FnOnce() -> Result<V, E>,
    ) -> Result<Arc<V>, Arc<E>>
    where
        V: Send + Sync + 'static,
        E: Send + Sync + 'static,
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
    {
        let view = (key, TypeId::of::<V>());
        self.raw.get_or_try_init(
            &view as &dyn KeyView<Q>,
            || Self::typed::<V>(key.to_owned()),
            || f().map(|value| Erased(Arc::new(value))),
            downcast::<V>,
        )
    }

    /// The `V` under `key`, awaiting the future `init()` returns to create
    /// it if there is none:
    /// the async form of [`get_or_init`](AnyCache::get_or_init), with the
    /// guarantees, cancellation and re-entrancy rules of
    /// [`TypedCache::get_or_init_async`](crate::TypedCache::get_or_init_async).
    /// The key is looked up when the method is called, as
    /// `TypedCache`'s is: a hit borrows the key, allocates nothing and
    /// returns a future that is ready at its first poll; a miss starts its
    /// flight when the future is first polled, and the owned key is built
    /// only then.
    ///
    /// # Cancellation
    ///
    /// Dropping the future while it runs the init abandons the init as a
    /// panic would: a waiting caller runs its own init; nothing is cached
    /// or poisoned. A dropped waiter simply stops waiting.
    ///
    /// # Panics
    ///
    /// Resumes the panic of `init` or its future in this caller only;
    /// panics with a re-entrant load message if the init's future, while
    /// polled, asks this cache for the same key and type.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cache: larder::AnyCache<String> = larder::AnyCache::new();
    /// let pi = cache.get_or_init_async("pi", || async { 3.14_f64 }).await;
    /// // An init that never returns leaves `V` to the annotation, no turbofish.
    /// let again: std::sync::Arc<f64> = cache.get_or_init_async("pi", || async { unreachable!() }).await;
    /// assert!(std::sync::Arc::ptr_eq(&pi, &again));
    /// # });
    /// ```
    pub fn get_or_init_async<V, Q, F, Fut>(&self, key: &Q, init: F) -> impl Future<Output = Arc<V>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
        V: Send + Sync + 'static,
        K: Borrow<Q> + Sync,
        Q: ?Sized + Hash + Eq + Sync + ToOwned<Owned = K>,
    {
        self.init_async(
            key,
            init,
            |value| Ok::<_, std::convert::Infallible>(Erased(Arc::new(value))),
            |outcome| match outcome {
                Ok(value) => value,
                Err(never) => match *never {},
            },
        )
    }

    /// Both async forms: the key is looked up now, at the call (a hit
    /// counts and costs no future state); a miss runs the flight protocol
    /// when the returned future is polled, with the key's view built there
    /// (the raw future borrows it, so it must live in the future).
    fn init_async<V, E, Q, F, Fut, O>(
        &self,
        key: &Q,
        init: F,
        lift: impl Fn(Fut::Output) -> Result<Erased, E> + Copy,
        finish: impl Fn(Result<Arc<V>, Arc<E>>) -> O + Copy,
    ) -> impl Future<Output = O>
    where
        F: FnOnce() -> Fut,
        Fut: Future,
        V: Send + Sync + 'static,
        E: Send + Sync + 'static,
        K: Borrow<Q> + Sync,
        Q: ?Sized + Hash + Eq + Sync + ToOwned<Owned = K>,
    {
        let view = (key, TypeId::of::<V>());
        let view = &view as &(dyn KeyView<Q> + Sync);
        let hash = self.raw.hasher().hash_one(view);
        let hit = self.raw.hit(hash, view, downcast::<V>);
        async move {
            if let Some(value) = hit {
                return finish(Ok(value));
            }
            let view = (key, TypeId::of::<V>());
            let view = &view as &(dyn KeyView<Q> + Sync);
            let make_key = move |_: &_| Self::typed::<V>(key.to_owned());
            let finish =
                move |outcome: Result<Erased, Arc<E>>| finish(outcome.map(|v| downcast::<V>(&v)));
            crate::cache::load_async(&self.raw, hash, view, init, make_key, lift, finish).await
        }
    }

    /// The fallible [`get_or_init_async`](AnyCache::get_or_init_async).
    ///
    /// # Errors
    ///
    /// The error of the init this caller ran or joined, shared as `Arc<E>`;
    /// nothing is cached.
    ///
    /// # Cancellation
    ///
    /// As [`get_or_init_async`](AnyCache::get_or_init_async).
    ///
    /// # Panics
    ///
    /// As [`get_or_init_async`](AnyCache::get_or_init_async).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cache: larder::AnyCache<String> = larder::AnyCache::new();
    /// let port = cache.get_or_try_init_async("port", || async { "80a".parse::<u16>() }).await;
    /// assert!(port.is_err());
    /// let port = cache.get_or_try_init_async("port", || async { "80".parse::<u16>() }).await;
    /// assert_eq!(*port.unwrap(), 80);
    /// # });
    /// ```
    pub fn get_or_try_init_async<V, E, Q, F, Fut>(
        &self,
        key: &Q,
        init: F,
    ) -> impl Future<Output = Result<Arc<V>, Arc<E>>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        V: Send + Sync + 'static,
        E: Send + Sync + 'static,
        K: Borrow<Q> + Sync,
        Q: ?Sized + Hash + Eq + Sync + ToOwned<Owned = K>,
    {
        self.init_async(
            key,
            init,
            |result: Result<V, E>| result.map(|value| Erased(Arc::new(value))),
            std::convert::identity,
        )
    }

    /// The live `V` under `key`, if any; counts a hit or a miss.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<String> = larder::AnyCache::new();
    /// cache.insert("k".to_string(), 7_i32);
    /// assert_eq!(cache.get::<i32, _>("k").as_deref(), Some(&7));
    /// assert_eq!(cache.get::<i64, _>("k"), None);
    /// ```
    pub fn get<V, Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        V: Send + Sync + 'static,
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let view = (key, TypeId::of::<V>());
        self.raw.get(&view as &dyn KeyView<Q>, downcast::<V>)
    }

    /// The live `V` under `key`, if any, without recording a use (the
    /// eviction policy does not see it) or counting a hit or miss.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.insert(1, 7_u64);
    /// assert_eq!(cache.peek::<u64, _>(&1).as_deref(), Some(&7));
    /// assert_eq!(cache.stats().hits, 0);
    /// ```
    pub fn peek<V, Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        V: Send + Sync + 'static,
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let view = (key, TypeId::of::<V>());
        self.raw.peek(&view as &dyn KeyView<Q>, downcast::<V>)
    }

    /// Runs `f` on the live `V` under `key` in place, under the key's shard
    /// read lock, and returns what it returns; `None` when there is none.
    /// Counts a hit or a miss, as [`get`](AnyCache::get) does.
    ///
    /// Unlike `get` it does not clone the value's `Arc`, so a hit writes no
    /// memory another reader of the key touches.
    ///
    /// # Deadlocks
    ///
    /// `f` runs under the key's shard read lock: keep it short, and do not
    /// write to this cache from it (a write to the same shard deadlocks).
    ///
    /// # Panics
    ///
    /// If `f` panics. The hit was counted before `f` ran; the lock is
    /// released as the panic unwinds and nothing is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<String> = larder::AnyCache::new();
    /// cache.insert("k".to_string(), String::from("seven"));
    /// assert_eq!(cache.get_with("k", |s: &String| s.len()), Some(5));
    /// assert_eq!(cache.get_with("k", |n: &u32| *n), None);
    /// ```
    pub fn get_with<V, Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        V: Send + Sync + 'static,
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let view = (key, TypeId::of::<V>());
        self.raw.get(&view as &dyn KeyView<Q>, |erased: &Erased| {
            match erased.0.downcast_ref::<V>() {
                Some(value) => f(value),
                // Every entry under TypeId::of::<V>() was stored as a V.
                None => unreachable!("larder: AnyCache entry stored under another type's id"),
            }
        })
    }

    /// Stores `value` as the `V` under `key`; returns the live `V` it
    /// replaced. An init of the same `(key, V)` in progress will not
    /// overwrite it.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// assert_eq!(cache.insert(1, 'a'), None);
    /// assert_eq!(cache.insert(1, 'b').as_deref(), Some(&'a'));
    /// ```
    pub fn insert<V>(&self, key: K, value: V) -> Option<Arc<V>>
    where
        V: Send + Sync + 'static,
    {
        self.raw
            .insert(Self::typed::<V>(key), Erased(Arc::new(value)))
            .map(|old| downcast::<V>(&old))
    }

    /// Removes the `V` under `key` (entries of other types under the same
    /// key stay); returns it if it was live.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.insert(1, 10_u32);
    /// cache.insert(1, "ten");
    /// assert_eq!(cache.remove::<u32, _>(&1).as_deref(), Some(&10));
    /// assert_eq!(cache.get::<&str, _>(&1).as_deref(), Some(&"ten"));
    /// ```
    pub fn remove<V, Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        V: Send + Sync + 'static,
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let view = (key, TypeId::of::<V>());
        self.raw
            .remove(&view as &dyn KeyView<Q>)
            .map(|old| downcast::<V>(&old))
    }

    /// Removes every entry, shard by shard (see
    /// [`TypedCache::clear`](crate::TypedCache::clear)).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.insert(1, 1_u8);
    /// cache.clear();
    /// assert!(cache.is_empty());
    /// ```
    pub fn clear(&self) {
        self.raw.clear();
    }

    /// Whether a live `V` is stored under `key` (no statistics, does not
    /// count as a read for time to idle).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.insert(1, 1_u8);
    /// assert!(cache.contains_key::<u8, _>(&1));
    /// assert!(!cache.contains_key::<u16, _>(&1));
    /// ```
    pub fn contains_key<V, Q>(&self, key: &Q) -> bool
    where
        V: Send + Sync + 'static,
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let view = (key, TypeId::of::<V>());
        self.raw.contains_key(&view as &dyn KeyView<Q>)
    }

    /// The most entries the cache holds, of every type together, as built
    /// or last [`resize`](Self::resize)d; `None` for an unbounded cache.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::AnyCache;
    ///
    /// let cache: AnyCache<u32> = AnyCache::builder().capacity(100).build().unwrap();
    /// assert_eq!(cache.capacity(), Some(100));
    /// assert_eq!(AnyCache::<u32>::new().capacity(), None);
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.raw.capacity()
    }

    /// Changes the capacity, bounding a cache built without one; shrinking
    /// evicts until the entries fit (see
    /// [`TypedCache::resize`](crate::TypedCache::resize)).
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroCapacity`](crate::BuildError::ZeroCapacity) for a
    /// capacity of 0; the cache is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.insert(1, 'a');
    /// cache.insert(2, 2_u64);
    /// cache.resize(1).unwrap();
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn resize(&self, capacity: usize) -> Result<(), crate::BuildError> {
        self.raw.resize(capacity)
    }

    /// Removes every expired entry now; returns how many. Not needed for
    /// expiry to work: as in [`TypedCache::purge_expired`], writes and
    /// reads release expired entries a few at a time.
    ///
    /// [`TypedCache::purge_expired`]: crate::TypedCache::purge_expired
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// assert_eq!(cache.purge_expired(), 0);
    /// ```
    pub fn purge_expired(&self) -> usize {
        self.raw.purge_expired()
    }

    /// The number of key shards (see the builder's `shards`).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::builder().capacity(64).build().unwrap();
    /// assert_eq!(cache.shard_count(), 1);
    /// ```
    pub fn shard_count(&self) -> usize {
        self.raw.shard_count()
    }

    /// Entries stored, over all value types (see
    /// [`TypedCache::len`](crate::TypedCache::len)).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.insert(1, 1_u8);
    /// cache.insert(1, 1_u16);
    /// assert_eq!(cache.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether [`len`](AnyCache::len) is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(larder::AnyCache::<u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters so far (see [`CacheStats`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.get_or_init(&1, || 'x');
    /// assert_eq!(cache.stats().inits, 1);
    /// ```
    pub fn stats(&self) -> CacheStats {
        self.raw.stats()
    }

    /// Sets every counter of [`stats`](AnyCache::stats) to 0, leaving the
    /// entries.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache: larder::AnyCache<u8> = larder::AnyCache::new();
    /// cache.get::<u8, _>(&1);
    /// cache.reset_stats();
    /// assert_eq!(cache.stats().misses, 0);
    /// ```
    pub fn reset_stats(&self) {
        self.raw.reset_stats();
    }

    /// Asserts internal invariants; for tests, with no other thread using
    /// the cache.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn check_invariants(&self) {
        self.raw.check_invariants();
    }
}

impl<K, S> fmt::Debug for AnyCache<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyCache").field("raw", &self.raw).finish()
    }
}
