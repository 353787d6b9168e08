//! The writes of [`LruCache`]: `insert` (and the insert that publishes a
//! loaded value), `remove` and `resize`.
//!
//! # Weights
//!
//! An insert weighs its entry first, with no lock held (the weigher is user
//! code), then stores it under the shard's exclusive lock, evicting in the
//! same critical section as many entries as it takes to fit: the shard's
//! total weight never exceeds its share of the capacity at any point
//! another thread can observe. The evicted entries go to the listener, and
//! are dropped, after the lock is released.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use super::LruCache;
use crate::cache::weigh;
use crate::cache::{Displaced, Event, Evicted, SWEEP_BUDGET};
use crate::error::BuildError;
use crate::removal::{RemovalCause, copy_unlocked};
use std::panic::resume_unwind;

use crate::sync::Ordering;

#[cfg(loom)]
use super::broken::{insert_locked, resize_shards};
#[cfg(not(loom))]
use {insert_and_evict as insert_locked, resize_in_order as resize_shards};

impl<K: Hash + Eq, V, S: BuildHasher> LruCache<K, V, S> {
    /// Inserts `value` as the most recently used entry of its shard and
    /// returns the value it replaced. If the shard is full, its least
    /// recently used entry is evicted under the same lock (the bound is never
    /// exceeded) and handed to the eviction listener (as
    /// [`RemovalCause::Evicted`]) after the lock is released; a replaced
    /// value goes to it too (as [`RemovalCause::Replaced`]).
    ///
    /// If the key is present, its stored key is kept (as in `HashMap`).
    ///
    /// With a [`weigher`](crate::LruCacheBuilder::weigher), the shard's
    /// entries are evicted until the new one fits in its share of the
    /// weight (a heavier value for a present key may evict others); an
    /// entry heavier than the shard's whole share is not stored: the key's
    /// old value, if any, is removed (as [`RemovalCause::Replaced`], and
    /// returned), and the new entry goes to the listener as
    /// [`RemovalCause::Evicted`], counted as an eviction.
    ///
    /// # Panics
    ///
    /// If the eviction listener panics (the insert itself has completed),
    /// or the weigher panics (before anything changed: the cache is as it
    /// was).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(2);
    /// assert_eq!(cache.insert("a", 1), None);
    /// assert_eq!(cache.insert("a", 2), Some(1));
    /// assert_eq!(cache.stats().inserts, 2);
    /// ```
    pub fn insert(&self, key: K, value: V) -> Option<V> {
        let hash = self.hash(&key);
        let mut displaced = Displaced::nothing();
        self.insert_hashed_into(hash, key, value, &mut displaced);
        let Some(copy) = self.copy else {
            // An expired old value is the listener's (none here), not the
            // caller's.
            let replaced = match displaced.replaced_expired {
                false => displaced.replaced.take(),
                true => None,
            };
            self.finish_insert(displaced);
            return replaced;
        };
        // The listener gets the replaced value, the caller a clone of it,
        // made with no lock held; a panicking clone still lets every
        // displaced entry reach the listener first.
        let copy = displaced
            .replaced
            .as_ref()
            .filter(|_| !displaced.replaced_expired)
            .map(|value| copy_unlocked(value, copy));
        self.finish_insert(displaced);
        copy.map(|copy| copy.unwrap_or_else(|panic| resume_unwind(panic)))
    }

    /// Weighs the entry (user code, no lock held; a panic there leaves the
    /// cache unchanged), then inserts it under the shard lock and counts
    /// it; what was displaced goes into the caller's `inserted` (which holds
    /// nothing yet, and is not copied up through the calls), to be disposed
    /// of with [`Self::finish_insert`] unlocked.
    pub(crate) fn insert_hashed_into(
        &self,
        hash: u64,
        key: K,
        value: V,
        inserted: &mut Displaced<K, V>,
    ) {
        let weight = weigh(self.weigher.as_ref(), &key, &value);
        insert_locked(self, hash, key, value, weight, inserted);
    }

    /// Gives the replaced and the evicted entries to the listener, then drops
    /// them and the unused key. Unlocked.
    #[inline]
    pub(crate) fn finish_insert(&self, displaced: Displaced<K, V>) {
        let Displaced {
            replaced,
            replaced_expired,
            evicted,
            expired,
            unused_key,
        } = displaced;
        // The common case, no listener and at most one entry evicted: a plain
        // drop (one user `Drop` at most, so a panic in it spares nothing
        // else), inlined, with no iterator chain built around it.
        if self.layer.listener.is_none() && replaced.is_none() && unused_key.is_none() {
            match evicted.at_most_one() {
                Ok(victim) => drop(victim),
                Err(evicted) => self.notify_displaced(None, false, None, evicted, expired),
            }
            return;
        }
        self.notify_displaced(replaced, replaced_expired, unused_key, evicted, expired);
    }

    /// [`finish_insert`](Self::finish_insert) past its common case: every
    /// displaced entry to the listener (if any) in one `notify`, so a
    /// panicking call still hands over the others.
    #[inline(never)]
    fn notify_displaced(
        &self,
        replaced: Option<V>,
        replaced_expired: bool,
        unused_key: Option<K>,
        evicted: Evicted<K, V>,
        expired: usize,
    ) {
        // The replaced value goes to the listener under the key passed in
        // (equal to the stored one, which is kept).
        let replaced = unused_key.zip(replaced);
        let replaced_cause = if replaced_expired {
            RemovalCause::Expired
        } else {
            RemovalCause::Replaced
        };
        let removed = (replaced.map(|(k, v)| (k, v, replaced_cause)).into_iter()).chain(
            evicted.into_iter().enumerate().map(move |(i, (k, v))| {
                let cause = if i < expired {
                    RemovalCause::Expired
                } else {
                    RemovalCause::Evicted
                };
                (k, v, cause)
            }),
        );
        self.layer.notify(removed);
    }

    /// Removes `key` and returns its value. The eviction listener gets the
    /// entry (as [`RemovalCause::Removed`]) and the key's `Drop` runs after
    /// the lock is released. Not counted as an eviction.
    ///
    /// # Panics
    ///
    /// If the eviction listener panics (the entry has been removed).
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::new(2);
    /// cache.insert(1, "a");
    /// assert_eq!(cache.remove(&1), Some("a"));
    /// assert_eq!(cache.remove(&1), None);
    /// ```
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let hash = self.hash(key);
        let now = self.now();
        let mut swept = Vec::new();
        let removed = {
            let mut shard = self.lock(hash);
            let removed = shard.entries.remove(hash, key, now);
            if self.layer.clock.is_some() {
                shard.entries.sweep(now, SWEEP_BUDGET, &mut swept);
            }
            removed
        };
        self.dispose(swept, RemovalCause::Expired);
        let (key, value, expired) = removed?;
        if expired {
            self.dispose([(key, value)], RemovalCause::Expired);
            return None;
        }
        let Some(copy) = self.copy else {
            return Some(value);
        };
        // As in `insert`: the listener gets the value, the caller a clone.
        let copy = copy_unlocked(&value, copy);
        self.dispose([(key, value)], RemovalCause::Removed);
        Some(copy.unwrap_or_else(|panic| resume_unwind(panic)))
    }

    /// Changes the capacity (with a weigher, the total weight). Shrinking
    /// evicts the least recently used entries of each shard (in the
    /// policy's order) until it fits (counted, and given to the listener
    /// after that shard's lock is released).
    ///
    /// Concurrent operations stay within the bound throughout: when
    /// growing, `capacity()` reports the new value before any shard grows;
    /// when shrinking, only after every shard has shrunk. Resizes are
    /// serialized.
    ///
    /// # Errors
    ///
    /// [`BuildError`] if `capacity` is 0 or below the shard count; the
    /// cache is then unchanged.
    ///
    /// # Panics
    ///
    /// If the eviction listener panics; the shards already resized keep their
    /// new capacity and `capacity()` keeps reporting the old, larger one, so
    /// the bound still holds. A later `resize` completes the change.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = larder::LruCache::builder().capacity(4).shards(1).build().unwrap();
    /// for i in 0..4 {
    ///     cache.insert(i, i);
    /// }
    /// cache.resize(2).unwrap();
    /// assert_eq!((cache.len(), cache.capacity()), (2, 2));
    /// assert!(cache.contains_key(&3) && !cache.contains_key(&0));
    /// assert!(cache.resize(0).is_err());
    /// ```
    pub fn resize(&self, capacity: usize) -> Result<(), BuildError> {
        let shards = self.shard_count();
        super::builder::validate(capacity, shards)?;
        let _serial = self.resize_lock.lock();
        resize_shards(self, capacity);
        Ok(())
    }

    /// Sets every shard's capacity to its share of `capacity`, evicting
    /// what no longer fits (expired entries first, as such) and counting
    /// the evictions; each shard's removed entries go to the listener
    /// after its lock is released.
    pub(super) fn resize_each_shard(&self, capacity: usize, growing: bool) {
        let shards = self.shard_count();
        let now = self.now();
        for (index, shard) in self.layer.shards().iter().enumerate() {
            let (mut evicted, mut expired) = (Vec::new(), Vec::new());
            {
                let mut shard = shard.write();
                let target = super::cache::shard_capacity(capacity, shards, index);
                // Expired entries leave as such, before any live one is
                // evicted to fit the new capacity.
                if !growing {
                    shard.entries.purge(now, &mut expired);
                }
                shard.entries.set_capacity(target, &mut evicted);
                shard.counters.add(Event::Eviction, evicted.len() as u64);
            }
            // One `notify`, so a panicking listener still hears every entry.
            self.layer.notify(
                (expired.into_iter())
                    .map(|(k, v)| (k, v, RemovalCause::Expired))
                    .chain((evicted.into_iter()).map(|(k, v)| (k, v, RemovalCause::Evicted))),
            );
        }
    }
}

/// `insert`'s locked step: stores the entry under its shard's lock,
/// evicting in the same critical section as many entries as it takes to
/// fit, and counts the insert and the evictions there.
pub(super) fn insert_and_evict<K: Hash + Eq, V, S: BuildHasher>(
    cache: &LruCache<K, V, S>,
    hash: u64,
    key: K,
    value: V,
    weight: u32,
    inserted: &mut Displaced<K, V>,
) {
    let mut shard = cache.lock(hash);
    // Only a shard whose entries can expire reads the clock (under the
    // lock, before any change: reading it first would cost every insert a
    // test) and sweeps.
    shard.entries.insert_into(
        hash,
        key,
        value,
        weight,
        || cache.now(),
        SWEEP_BUDGET,
        inserted,
    );
    let counters = &mut shard.counters;
    counters.record(Event::Insert);
    counters.add(
        Event::Eviction,
        (inserted.evicted.len() - inserted.expired) as u64,
    );
}

/// `resize`'s step: concurrent operations stay within the bound, so when
/// growing `capacity()` reports the new value before any shard grows, and
/// when shrinking only after every shard has shrunk.
pub(super) fn resize_in_order<K: Hash + Eq, V, S: BuildHasher>(
    cache: &LruCache<K, V, S>,
    capacity: usize,
) {
    let growing = capacity >= cache.capacity();
    if growing {
        // Relaxed: see `capacity()`; stored before any shard grows.
        cache.capacity.store(capacity, Ordering::Relaxed);
    }
    cache.resize_each_shard(capacity, growing);
    if !growing {
        // Relaxed: see `capacity()`; stored after every shard shrank.
        cache.capacity.store(capacity, Ordering::Relaxed);
    }
}
