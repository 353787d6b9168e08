//! [`LruCacheBuilder`].

use std::convert::Infallible;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use super::cache::{LruSettings, ValueListener};
use super::load::infallible;
use super::{EvictionPolicy, LoadingLruCache, LruCache};
use crate::cache::{Settings, check_shards};
use crate::error::BuildError;
use crate::removal::RemovalCause;
use crate::sync::Arc;
use crate::time::Clock;

/// Checks a capacity against a shard count.
pub(crate) fn validate(capacity: usize, shards: usize) -> Result<(), BuildError> {
    if capacity == 0 {
        return Err(BuildError::ZeroCapacity);
    }
    check_shards(shards)?;
    if shards > capacity {
        return Err(BuildError::MoreShardsThanCapacity { shards, capacity });
    }
    // Any capacity from 1 up is fine: shards allocate as entries arrive,
    // and a shard's share is held to `cache::MAX_SHARD_CAPACITY` (see
    // `cache::shard_capacity`).
    Ok(())
}

/// The default shard count for `capacity` under `policy`: per available
/// core, 128 shards under `Exact` and `S3Fifo` and 512 under `Clock`,
/// rounded up to a power of two and capped at 4096, but with no fewer than
/// 32 (`Exact`), 8 (`Clock`) or 64 (`S3Fifo`) entries per shard, and at
/// least 1.
///
/// 2-thread throughput rises with the shard count under both policies.
/// Exact LRU's hit ratio falls as shards shrink (slowly: a fraction of a
/// point at a thousand shards of 10K entries), so it keeps 32 entries per
/// shard; CLOCK's stays above exact LRU's down to shards of about 10
/// entries. The figures are in `design/lru.md` ("Choosing shards").
pub(crate) fn default_shards(capacity: usize, policy: EvictionPolicy) -> usize {
    let (per_core, min_entries) = match policy {
        EvictionPolicy::Exact => (128, 32),
        EvictionPolicy::Clock => (512, 8),
        // Hits share the lock, as under `Clock`; but the probation queue is
        // 1/48 of a shard, so shards stay large enough to give it room.
        EvictionPolicy::S3Fifo => (128, 64),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut shards = (cores * per_core).next_power_of_two().min(4096);
    while shards > 1 && capacity / shards < min_entries {
        shards /= 2;
    }
    shards.max(1)
}

/// Configures an [`LruCache`]: capacity (required), shard count, policy,
/// hasher, weigher and eviction listener. Start with [`LruCache::builder`];
/// [`build`](Self::build) checks the settings and returns
/// `Result<LruCache, BuildError>`.
///
/// # Examples
///
/// ```
/// use larder::{LruCache, RemovalCause};
/// use std::sync::{Arc, Mutex};
///
/// let evicted = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&evicted);
/// let cache = LruCache::builder()
///     .capacity(2)
///     .shards(1)
///     .eviction_listener(move |key: &'static str, value: u32, cause: RemovalCause| {
///         log.lock().unwrap().push((key, value, cause));
///     })
///     .build()
///     .expect("valid configuration");
/// cache.insert("a", 1);
/// cache.insert("b", 2);
/// cache.insert("c", 3); // evicts "a", the least recently used
/// assert_eq!(*evicted.lock().unwrap(), [("a", 1, RemovalCause::Evicted)]);
/// ```
pub struct LruCacheBuilder<K, V, S = ahash::RandomState> {
    settings: LruSettings<K, V, S>,
}

impl<K, V> LruCacheBuilder<K, V> {
    pub(crate) fn new() -> Self {
        let hasher = crate::sync::default_hasher();
        Self {
            settings: Settings::new(EvictionPolicy::Exact, hasher, None, None),
        }
    }
}

impl<K, V, S> LruCacheBuilder<K, V, S> {
    /// Sets the bound: the most entries the cache holds, or with a
    /// [`weigher`](Self::weigher) the most total weight. Required: `build`
    /// fails with [`BuildError::ZeroCapacity`] if it is 0 or was never set.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u32, u32>::builder().capacity(1024).build().unwrap();
    /// assert_eq!(cache.capacity(), 1024);
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.settings.capacity = Some(capacity);
        self
    }

    /// Expire each entry `ttl` after it was stored (by a load or `insert`),
    /// however often it is read. An expired entry is never returned; it
    /// goes to the listener as [`RemovalCause::Expired`] when a lookup
    /// finds it, a write to its shard or a read that finds another expired
    /// entry sweeps it (each looks at a few entries), or [`purge_expired`](LruCache::purge_expired) runs. Without
    /// expiry the cache keeps no times and never reads the clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = larder::ManualClock::new();
    /// let cache = larder::LruCache::builder()
    ///     .capacity(8)
    ///     .time_to_live(Duration::from_secs(30))
    ///     .clock(clock.clone())
    ///     .build()
    ///     .unwrap();
    /// cache.insert("a", 1);
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(cache.get("a"), None);
    /// ```
    pub fn time_to_live(mut self, ttl: Duration) -> Self {
        self.settings.time_to_live = Some(ttl);
        self
    }

    /// Expire each entry once it has not been read for `tti`, recorded with
    /// a resolution of `tti / 64` (a hit writes the entry's access time
    /// only when it moved by that much): an entry may expire up to
    /// `tti / 64` early.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = larder::ManualClock::new();
    /// let cache = larder::LruCache::builder()
    ///     .capacity(8)
    ///     .time_to_idle(Duration::from_secs(10))
    ///     .clock(clock.clone())
    ///     .build()
    ///     .unwrap();
    /// cache.insert("a", 1);
    /// clock.advance(Duration::from_secs(9));
    /// assert_eq!(cache.get("a"), Some(1)); // read: idle time starts again
    /// clock.advance(Duration::from_secs(9));
    /// assert_eq!(cache.get("a"), Some(1));
    /// ```
    pub fn time_to_idle(mut self, tti: Duration) -> Self {
        self.settings.time_to_idle = Some(tti);
        self
    }

    /// The clock expiry reads (default: [`SystemClock`](crate::SystemClock)). Tests pass a
    /// [`ManualClock`](crate::ManualClock) clone and move it by hand. Lookups
    /// and inserts read it under a shard's lock (before changing anything):
    /// it must not call this cache.
    ///
    /// # Examples
    ///
    /// ```
    /// let clock = larder::ManualClock::new();
    /// let cache = larder::LruCache::<u8, u8>::builder().capacity(8).clock(clock.clone()).build();
    /// assert!(cache.is_ok());
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.settings.clock = Some(Arc::new(clock));
        self
    }

    /// Sets the number of shards (independent LRU lists, each with its own
    /// lock and `capacity / shards` entries).
    ///
    /// The default is 128 per core as a power of two, at most 4096, reduced
    /// so that each shard holds at least 32 entries (under
    /// [`EvictionPolicy::Clock`]: 512 per core, at least 8 entries). More shards mean fewer
    /// threads meeting on one lock; fewer shards mean an order closer to
    /// one global LRU (`shards(1)` is exactly global LRU). `build` fails if
    /// this is 0 or more than the capacity.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::<u32, u32>::builder().capacity(1024).shards(16).build().unwrap();
    /// assert_eq!(cache.shard_count(), 16);
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.settings.shards = Some(shards);
        self
    }

    /// Sets how each shard picks what to evict: [`EvictionPolicy::Exact`] (the
    /// default: exact LRU, a hit takes the shard's exclusive lock),
    /// [`EvictionPolicy::Clock`] (second chance, a hit takes its shared lock) or
    /// [`EvictionPolicy::S3Fifo`] (scan-resistant, a hit takes its shared lock).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{LruCache, EvictionPolicy};
    /// let cache = LruCache::<u32, u32>::builder()
    ///     .capacity(64)
    ///     .policy(EvictionPolicy::Clock)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(cache.policy(), EvictionPolicy::Clock);
    /// ```
    pub fn policy(mut self, policy: EvictionPolicy) -> Self {
        self.settings.policy = policy;
        self
    }

    /// Sets the hasher used to pick a key's shard and its slot.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// let cache = larder::LruCache::<u32, u32>::builder()
    ///     .capacity(8)
    ///     .hasher(RandomState::new())
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, 1);
    /// assert!(cache.contains_key(&1));
    /// ```
    pub fn hasher<S2>(self, hasher: S2) -> LruCacheBuilder<K, V, S2> {
        LruCacheBuilder {
            settings: self.settings.with_hasher(hasher),
        }
    }

    /// Sets a function called with every entry that leaves the cache, and
    /// why ([`RemovalCause`]): evicted to make room (by an insert, a load or
    /// a shrinking [`resize`](LruCache::resize)), replaced by an insert or a
    /// load (with the old value), removed by [`remove`](LruCache::remove),
    /// or cleared by [`clear`](LruCache::clear). Filter with
    /// [`RemovalCause::was_evicted`] to see only evictions.
    ///
    /// It runs on the thread whose operation removed the entry, after every
    /// shard lock is released, so it may use the cache. The key it gets is
    /// the stored key (for `Replaced`: the key passed to `insert`, equal to
    /// the stored one, which is kept). `remove` and `insert` still return
    /// the old value: with a listener set, they hand the listener the value
    /// and return a clone of it (which is why a listener needs `V: Clone`;
    /// the clone runs with no lock held).
    ///
    /// # Panics
    ///
    /// If the listener panics, the operation has completed and the cache is
    /// consistent; the other entries that operation removed are still
    /// handed to the listener, then the first panic reaches the caller.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::RemovalCause;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let evictions = Arc::new(AtomicUsize::new(0));
    /// let seen = Arc::clone(&evictions);
    /// let cache = larder::LruCache::builder()
    ///     .capacity(1)
    ///     .eviction_listener(move |_key: u32, _value: u32, cause: RemovalCause| {
    ///         if cause.was_evicted() {
    ///             seen.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     })
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, 1);
    /// cache.insert(2, 2); // evicts 1
    /// cache.remove(&2); // a removal, not an eviction
    /// assert_eq!(evictions.load(Ordering::Relaxed), 1);
    /// ```
    pub fn eviction_listener<F>(mut self, listener: F) -> Self
    where
        F: Fn(K, V, RemovalCause) + Send + Sync + 'static,
        V: Clone,
    {
        self.settings.listener = Some(ValueListener {
            call: Arc::new(listener),
            clone: V::clone,
        });
        self
    }

    /// Sets a weigher: the cache's bound becomes the total weight of its
    /// entries instead of their number, as moka's `weigher` and
    /// quick_cache's `Weighter` offer. `capacity` is then that total weight
    /// (say, bytes), split over the shards as the entry count is without a
    /// weigher.
    ///
    /// The weigher is called once per stored value (by `insert`,
    /// and each load that stores its value), with no lock
    /// held, before the shard is touched; the weight is kept with the
    /// entry. Without a weigher every entry weighs 1.
    ///
    /// - **Hard bound**: the total weight never exceeds `capacity()` at any
    ///   moment another thread can observe
    ///   ([`weighted_size`](LruCache::weighted_size) and
    ///   [`CacheStats::weighted_size`](crate::CacheStats::weighted_size)).
    ///   An insert evicts, under the same lock, as many entries as it takes
    ///   to fit; replacing a value with a heavier one may evict others.
    /// - **A weight of 0 counts as 1**: every entry takes room, so the entry
    ///   count stays at most `capacity` too.
    /// - **An entry heavier than its shard's share** (`capacity / shards`)
    ///   is not stored: the key's old value, if any, is removed (as
    ///   [`RemovalCause::Replaced`]), and the new entry goes to the eviction
    ///   listener as [`RemovalCause::Evicted`] and counts as an eviction. Big
    ///   weights want fewer shards: set [`shards`](Self::shards) so that
    ///   `capacity / shards` is well above the largest weight.
    ///   A load whose value is rejected this way still returns it to its
    ///   callers; it is just not cached.
    ///
    /// # Panics
    ///
    /// A panicking weigher makes that `insert` (or the load storing its
    /// value) panic before anything changed: the cache is as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::LruCache;
    ///
    /// // At most 10 bytes of values, in one shard.
    /// let cache = LruCache::builder()
    ///     .capacity(10)
    ///     .shards(1)
    ///     .weigher(|_key: &&str, value: &String| value.len() as u32)
    ///     .build()?;
    /// cache.insert("a", "1234".to_string());
    /// cache.insert("b", "1234".to_string());
    /// cache.get("a"); // "b" is now the least recently used
    /// cache.insert("c", "123456".to_string()); // 14 > 10: evicts "b"
    /// assert_eq!((cache.len(), cache.weighted_size()), (2, 10));
    /// assert!(!cache.contains_key("b"));
    /// cache.insert("a", "12345678".to_string()); // heavier: evicts "c"
    /// assert_eq!((cache.len(), cache.weighted_size()), (1, 8));
    /// cache.insert("d", "12345678901".to_string()); // 11 > 10: not stored
    /// assert!(!cache.contains_key("d") && cache.contains_key("a"));
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

impl<K: Hash + Eq, V, S: BuildHasher> LruCacheBuilder<K, V, S> {
    /// Builds the cache.
    ///
    /// # Errors
    ///
    /// [`BuildError`] if the capacity is 0, or the shard count is 0, more
    /// than the capacity or more than [`LruCache::MAX_SHARDS`]. Any capacity
    /// from 1 up, `usize::MAX` included, is accepted: shards allocate as
    /// entries arrive, and each shard holds at most `u32::MAX - 1` entries
    /// (so a cache never holds more than `capacity()`, though an enormous
    /// capacity may not be reachable).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{BuildError, LruCache};
    ///
    /// assert!(LruCache::<u32, u32>::builder().capacity(100).shards(4).build().is_ok());
    /// assert!(matches!(
    ///     LruCache::<u32, u32>::builder().capacity(2).shards(4).build().unwrap_err(),
    ///     BuildError::MoreShardsThanCapacity { shards: 4, capacity: 2 },
    /// ));
    /// ```
    pub fn build(self) -> Result<LruCache<K, V, S>, BuildError> {
        let capacity = self.settings.capacity.unwrap_or(0);
        let shards = (self.settings.shards)
            .unwrap_or_else(|| default_shards(capacity, self.settings.policy));
        validate(capacity, shards)?;
        let expiry = self.settings.expiry()?;
        Ok(LruCache::from_parts(
            self.settings,
            capacity,
            shards,
            expiry,
        ))
    }

    /// Builds a [`LoadingLruCache`] that owns `loader`, the form closest to
    /// Python's `@lru_cache` decorator.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    ///
    /// # Examples
    ///
    /// ```
    /// let squares = larder::LruCache::builder()
    ///     .capacity(64)
    ///     .build_with_loader(|n: &u64| n * n)
    ///     .unwrap();
    /// assert_eq!(squares.get_or_load(&12), 144);
    /// ```
    pub fn build_with_loader<F>(
        self,
        loader: F,
    ) -> Result<LoadingLruCache<K, V, Infallible, S>, BuildError>
    where
        F: Fn(&K) -> V + Send + Sync + 'static,
    {
        Ok(LoadingLruCache::from_parts(
            self.build()?,
            infallible(loader),
        ))
    }

    /// Builds a [`LoadingLruCache`] that owns the fallible `loader`: its
    /// errors reach the callers waiting for that load and are never cached.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    ///
    /// # Examples
    ///
    /// ```
    /// let parsed = larder::LruCache::builder()
    ///     .capacity(64)
    ///     .build_with_try_loader(|text: &String| text.parse::<u32>())
    ///     .unwrap();
    /// assert_eq!(parsed.get_or_try_load("12").unwrap(), 12);
    /// assert!(parsed.get_or_try_load("twelve").is_err());
    /// ```
    pub fn build_with_try_loader<E, F>(
        self,
        loader: F,
    ) -> Result<LoadingLruCache<K, V, E, S>, BuildError>
    where
        F: Fn(&K) -> Result<V, E> + Send + Sync + 'static,
    {
        Ok(LoadingLruCache::from_parts(self.build()?, Box::new(loader)))
    }
}

impl<K, V, S> fmt::Debug for LruCacheBuilder<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LruCacheBuilder")
            .field("settings", &self.settings)
            .field("eviction_listener", &self.settings.listener.is_some())
            .field("weigher", &self.settings.weigher.is_some())
            .finish()
    }
}
