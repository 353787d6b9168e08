//! Builders of [`TypedCache`] and [`AnyCache`]: composable expiry, a size
//! bound, the clock and the hasher, validated by `build()`.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::time::Duration;

use super::TypedCache;
use super::any::{AnyCache, TypedKey};
use super::raw::{Raw, default_shards};
use crate::EvictionPolicy;
use crate::cache::{Settings, Weigher, check_shards};
use crate::error::BuildError;
use crate::removal::{Listener, RemovalCause};
use crate::sync::{Arc, default_hasher};
use crate::time::Clock;

/// A typed builder's weigher, if any.
type Weighs<K, V> = Option<Weigher<K, V>>;

/// Validates `settings` (see [`Settings::expiry`]) and builds the cache
/// both typed faces wrap.
fn build_raw<K, V, L, W, S>(
    mut settings: Settings<L, W, S>,
    weigher: Option<Weigher<K, V>>,
) -> Result<Raw<K, V, S>, BuildError>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    let expiry = settings.expiry()?;
    let clock = settings.clock_or_system();
    let (policy, capacity) = (settings.policy, settings.capacity);
    // More shards than entries is allowed: the bound is global.
    let shards = match settings.shards {
        None => default_shards(capacity),
        Some(shards) => check_shards(shards)?,
    };
    Ok(Raw::new(
        policy,
        expiry,
        capacity,
        weigher,
        clock,
        settings.hasher,
        shards,
    ))
}

/// Builds a [`TypedCache`]; from [`TypedCache::builder`].
///
/// The policies compose: an entry is gone once *any* of them says so (its
/// time to live has passed since it was stored, or its time to idle since it
/// was last read, or it was evicted to keep within `capacity`).
///
/// # Examples
///
/// ```
/// use larder::{ManualClock, TypedCache};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let cache: TypedCache<&str, u32> = TypedCache::builder()
///     .time_to_live(Duration::from_secs(60))
///     .time_to_idle(Duration::from_secs(10))
///     .capacity(1_000)
///     .clock(clock.clone())
///     .build()
///     .unwrap();
/// cache.insert("a", 1);
/// clock.advance(Duration::from_secs(11)); // idle for longer than 10 s
/// assert_eq!(cache.get("a"), None);
/// ```
pub struct TypedCacheBuilder<K, V, S = ahash::RandomState> {
    settings: Settings<Option<Listener<K, V>>, Weighs<K, V>, S>,
    types: PhantomData<fn() -> (K, V)>,
}

/// Builds an [`AnyCache`]; from [`AnyCache::builder`]. Same settings as
/// [`TypedCacheBuilder`] but the listener and the weigher; `capacity` counts
/// the entries of every type. (A weigher would need one function per
/// erased value type, each checked against the type at every store: bound
/// such a cache by entries, or weigh in a `TypedCache` per type.)
///
/// # Examples
///
/// ```
/// use larder::AnyCache;
/// use std::time::Duration;
///
/// let cache: AnyCache<String> = AnyCache::builder()
///     .time_to_live(Duration::from_secs(300))
///     .capacity(10_000)
///     .build()
///     .unwrap();
/// assert_eq!(*cache.get_or_init("port", || 8080_u16), 8080);
/// ```
pub struct AnyCacheBuilder<K, S = ahash::RandomState> {
    /// No listener (values of many types have no one `V` to hand over),
    /// no weigher (see the type's documentation).
    settings: Settings<(), (), S>,
    types: PhantomData<fn() -> K>,
}

macro_rules! setters {
    ($builder:ident < $($param:ident),* >, $example:literal) => {
        impl<$($param,)* S> $builder<$($param,)* S> {
            /// Expire each entry `ttl` after it was stored (by an init or
            /// `insert`), however often it is read.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\nuse std::time::Duration;\nlet builder = ", $example, "\n    .time_to_live(Duration::from_secs(30));\n# let _ = builder.build().unwrap();\n```")]
            pub fn time_to_live(mut self, ttl: Duration) -> Self {
                self.settings.time_to_live = Some(ttl);
                self
            }

            /// Expire each entry once it has not been read for `tti`.
            ///
            /// Reads are recorded with a resolution of `tti / 64` (a hit
            /// writes the entry's access time only when it moved by that
            /// much, so hot entries are not written on every hit): an entry
            /// may expire up to `tti / 64` before exactly `tti` of idleness.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\nuse std::time::Duration;\nlet builder = ", $example, "\n    .time_to_idle(Duration::from_secs(5));\n# let _ = builder.build().unwrap();\n```")]
            pub fn time_to_idle(mut self, tti: Duration) -> Self {
                self.settings.time_to_idle = Some(tti);
                self
            }

            /// Keep at most `max` entries: storing one more evicts one. The
            /// victim comes from the stored key's shard while that shard
            /// holds more than its share (`max / shards`, see
            /// [`shards`](Self::shards)), else from
            /// a shard that does, chosen by the [`policy`](Self::policy)
            /// (never the entry just stored): the shards stay level, so
            /// each holds its keys about as long. The bound holds whenever
            /// no insert is in progress; it is global, not split per shard.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\nlet builder = ", $example, "\n    .capacity(10_000);\n# let _ = builder.build().unwrap();\n```")]
            pub fn capacity(mut self, max: usize) -> Self {
                self.settings.capacity = Some(max);
                self
            }

            /// Sets the number of key shards (default: one per 64 entries
            /// of `capacity`, between 1 and 16; 16 for an unbounded cache).
            /// Reads never contend, whatever the count; more shards let
            /// more writes (inits, inserts, removals) proceed at once, and
            /// fewer make eviction choose from more entries (each shard's
            /// policy orders its own). The bound stays global, so a count
            /// above the capacity is allowed. `build` fails if this is 0
            /// or more than 65,536.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\nlet cache = ", $example, "\n    .shards(4)\n    .build()\n    .unwrap();\nassert_eq!(cache.shard_count(), 4);\n```")]
            pub fn shards(mut self, shards: usize) -> Self {
                self.settings.shards = Some(shards);
                self
            }

            /// How a bounded cache picks what to evict (default:
            /// [`EvictionPolicy::Clock`], whose hits, like `S3Fifo`'s, take
            /// only the shard's read lock; under `Exact` every hit takes
            /// its write lock). See [`EvictionPolicy`] for which to pick.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\nlet builder = ", $example, "\n    .policy(larder::EvictionPolicy::S3Fifo);\n# let _ = builder.build().unwrap();\n```")]
            pub fn policy(mut self, policy: EvictionPolicy) -> Self {
                self.settings.policy = policy;
                self
            }

            /// The clock expiry reads (default: [`SystemClock`](crate::SystemClock)). Tests pass
            /// a [`ManualClock`](crate::ManualClock) clone and move it by
            /// hand. Writes read it before taking a shard's lock, lookups under
            /// it (before changing anything), and only when entries can
            /// expire: it must not call this cache.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\nlet clock = larder::ManualClock::new();\nlet builder = ", $example, "\n    .clock(clock.clone());\n# let _ = builder.build().unwrap();\n```")]
            pub fn clock(mut self, clock: impl Clock) -> Self {
                self.settings.clock = Some(Arc::new(clock));
                self
            }

            /// The hasher of keys (default: `ahash::RandomState`, resistant
            /// to hash flooding).
            ///
            /// # Examples
            ///
            #[doc = concat!("```\nlet builder = ", $example, "\n    .hasher(std::collections::hash_map::RandomState::new());\n# let _ = builder.build().unwrap();\n```")]
            pub fn hasher<S2>(self, hasher: S2) -> $builder<$($param,)* S2> {
                $builder {
                    settings: self.settings.with_hasher(hasher),
                    types: PhantomData,
                }
            }
        }

        impl<$($param,)* S> fmt::Debug for $builder<$($param,)* S> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($builder))
                    .field("settings", &self.settings)
                    .finish()
            }
        }
    };
}

setters!(TypedCacheBuilder<K, V>, "larder::TypedCache::<String, u64>::builder()");
setters!(AnyCacheBuilder<K>, "larder::AnyCache::<String>::builder()");

impl<K, V> TypedCacheBuilder<K, V> {
    pub(crate) fn new() -> Self {
        Self {
            settings: Settings::new(EvictionPolicy::Clock, default_hasher(), None, None),
            types: PhantomData,
        }
    }
}

impl<K, V, S> TypedCacheBuilder<K, V, S> {
    /// Sets a function called with every entry that leaves the cache, and
    /// why ([`RemovalCause`]): `Evicted` to keep within `capacity`,
    /// `Expired` once its time to live or time to idle has passed (whatever
    /// operation then releases it), `Replaced` by `insert` (with the old
    /// value), `Removed` by `remove`, `Cleared` by `clear`.
    /// Filter with [`RemovalCause::was_evicted`] for the cache's own
    /// removals. An init whose value is not cached (a write raced it) was
    /// never stored, so it is not reported.
    ///
    /// It runs on the thread whose operation released the entry, after
    /// every lock is released, so it may use the cache. An expired entry is
    /// released by the next write to its shard, by a read that finds it, or
    /// by [`purge_expired`](TypedCache::purge_expired), so a listener sees it
    /// then, not at the instant it expired.
    ///
    /// # Panics
    ///
    /// If the listener panics, the operation has completed and the cache is
    /// consistent; the other entries that operation released are still
    /// handed to the listener, then the first panic reaches the caller.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{ManualClock, RemovalCause, TypedCache};
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    ///
    /// let log = Arc::new(Mutex::new(Vec::new()));
    /// let seen = Arc::clone(&log);
    /// let clock = ManualClock::new();
    /// let cache = TypedCache::<&str, u32>::builder()
    ///     .time_to_live(Duration::from_secs(10))
    ///     .clock(clock.clone())
    ///     .eviction_listener(move |key: &str, _value: u32, cause: RemovalCause| {
    ///         seen.lock().unwrap().push((key, cause));
    ///     })
    ///     .build()
    ///     .unwrap();
    /// cache.insert("a", 1);
    /// cache.insert("a", 2);
    /// clock.advance(Duration::from_secs(11));
    /// assert_eq!(cache.get("a"), None); // the read releases the expired entry
    /// assert_eq!(
    ///     *log.lock().unwrap(),
    ///     [("a", RemovalCause::Replaced), ("a", RemovalCause::Expired)]
    /// );
    /// ```
    pub fn eviction_listener<F>(mut self, listener: F) -> Self
    where
        F: Fn(K, V, RemovalCause) + Send + Sync + 'static,
    {
        self.settings.listener = Some(Arc::new(listener));
        self
    }

    /// Sets a weigher: the bound becomes the total weight of the entries
    /// instead of their number. `capacity` is then that total weight (say,
    /// bytes), global over the shards as the entry count is without a
    /// weigher; it is held to `u32::MAX - 1` (about 4 GiB of bytes).
    ///
    /// The weigher is called once per stored value (by `insert`, and each
    /// init that stores its value), with no lock held, before the shard is
    /// touched; the weight is kept with the entry. Without a weigher every
    /// entry weighs 1.
    ///
    /// - **Bound**: the total weight
    ///   ([`weighted_size`](TypedCache::weighted_size)) is at most
    ///   `capacity` whenever no insert is in progress. A store evicts, never
    ///   the entry just stored, until the total fits; replacing a value with
    ///   a heavier one may evict others.
    /// - **A weight of 0 counts as 1**: every entry takes room, so the entry
    ///   count stays at most `capacity` too.
    /// - **An entry heavier than `capacity`** is not stored: the key's old
    ///   value, if any, is removed (as [`RemovalCause::Replaced`], and
    ///   returned by `insert`), and the new entry goes to the listener as
    ///   [`RemovalCause::Evicted`] and counts as an eviction. An init whose
    ///   value is rejected this way still returns it to its callers.
    ///
    /// # Panics
    ///
    /// A panicking weigher makes that `insert` (or the init storing its
    /// value) panic before anything changed: the cache is as it was (the
    /// init's callers get the panic, as from a panicking init).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::TypedCache;
    ///
    /// // At most 10 bytes of values.
    /// let cache = TypedCache::builder()
    ///     .capacity(10)
    ///     .weigher(|_key: &&str, value: &String| value.len() as u32)
    ///     .build()?;
    /// cache.insert("a", "1234".to_string());
    /// cache.insert("b", "1234".to_string());
    /// assert_eq!((cache.len(), cache.weighted_size()), (2, 8));
    /// cache.insert("c", "123456".to_string()); // 14 > 10: evicts "a" or "b"
    /// assert_eq!((cache.len(), cache.weighted_size()), (2, 10));
    /// cache.insert("c", "12345678901".to_string()); // 11 > 10: not stored
    /// assert!(!cache.contains_key("c"));
    /// assert_eq!((cache.len(), cache.weighted_size()), (1, 4));
    /// # Ok::<(), larder::BuildError>(())
    /// ```
    pub fn weigher<F>(mut self, weigher: F) -> Self
    where
        F: Fn(&K, &V) -> u32 + Send + Sync + 'static,
    {
        self.settings.weigher = Some(Arc::new(weigher));
        self
    }
}

impl<K, V, S> TypedCacheBuilder<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    /// Builds the cache.
    ///
    /// # Errors
    ///
    /// [`BuildError`] for a zero time to live, time to idle or
    /// `capacity`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::TypedCache::<u8, u8>::builder().capacity(2).build().unwrap();
    /// assert!(cache.is_empty());
    /// ```
    pub fn build(self) -> Result<TypedCache<K, V, S>, BuildError> {
        let mut settings = self.settings;
        let listener = settings.listener.take();
        let weigher = settings.weigher.take();
        let mut raw = build_raw(settings, weigher)?;
        raw.set_listener(listener);
        Ok(TypedCache::from_raw(raw))
    }
}

impl<K> AnyCacheBuilder<K> {
    pub(crate) fn new() -> Self {
        Self {
            settings: Settings::new(EvictionPolicy::Clock, default_hasher(), (), ()),
            types: PhantomData,
        }
    }
}

impl<K, S> AnyCacheBuilder<K, S>
where
    K: Hash + Eq + Clone,
    S: BuildHasher + Clone,
{
    /// Builds the cache.
    ///
    /// # Errors
    ///
    /// [`BuildError`] for a zero time to live, time to idle or
    /// `capacity`.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = larder::AnyCache::<u8>::builder().capacity(0).build().unwrap_err();
    /// assert!(matches!(err, larder::BuildError::ZeroCapacity));
    /// ```
    pub fn build(self) -> Result<AnyCache<K, S>, BuildError> {
        Ok(AnyCache::from_raw(build_raw::<TypedKey<K>, _, _, _, _>(
            self.settings,
            None,
        )?))
    }
}
