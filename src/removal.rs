//! [`RemovalCause`] and the removal listener that both [`LruCache`] and
//! [`TypedCache`] call with it: one definition, one way of calling.
//!
//! The caches collect what an operation removed (key, value, cause) under
//! their shard lock and hand it to [`notify`] after releasing it, so a
//! listener never runs under a lock and may use the cache.
//!
//! [`LruCache`]: crate::LruCache
//! [`TypedCache`]: crate::TypedCache

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::sync::Arc;

/// Why an entry left a cache: what a removal listener
/// ([`LruCacheBuilder::eviction_listener`],
/// [`TypedCacheBuilder::eviction_listener`]) is told with each entry.
///
/// The same causes as moka's `RemovalCause`, under the same names where
/// they mean the same (`Evicted` is moka's `Size`).
///
/// [`LruCacheBuilder::eviction_listener`]: crate::LruCacheBuilder::eviction_listener
/// [`TypedCacheBuilder::eviction_listener`]: crate::TypedCacheBuilder::eviction_listener
///
/// # Examples
///
/// ```
/// use larder::{LruCache, RemovalCause};
/// use std::sync::{Arc, Mutex};
///
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let seen = Arc::clone(&log);
/// let cache = LruCache::builder()
///     .capacity(1)
///     .eviction_listener(move |key: u32, _value: &str, cause: RemovalCause| {
///         seen.lock().unwrap().push((key, cause));
///     })
///     .build()
///     .unwrap();
/// cache.insert(1, "a");
/// cache.insert(1, "b"); // replaces
/// cache.insert(2, "c"); // evicts 1 (capacity 1)
/// cache.remove(&2);
/// assert_eq!(
///     *log.lock().unwrap(),
///     [
///         (1, RemovalCause::Replaced),
///         (1, RemovalCause::Evicted),
///         (2, RemovalCause::Removed),
///     ]
/// );
/// assert!(RemovalCause::Evicted.was_evicted());
/// assert!(!RemovalCause::Removed.was_evicted());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RemovalCause {
    /// Removed to keep the cache within its size bound (an insert, a load
    /// or a shrinking `resize` made room).
    Evicted,
    /// Its time to live or time to idle had passed (`TypedCache` only):
    /// released by a write to its shard, a read that found it, an insert
    /// that replaced it, eviction, or `purge_expired`.
    Expired,
    /// Its key was stored again (`insert`, or a load or init that
    /// published a value over it); the listener gets the old value.
    Replaced,
    /// Removed by an explicit `remove`.
    Removed,
    /// Removed by `clear`.
    Cleared,
}

impl RemovalCause {
    /// Whether the cache removed the entry on its own (`Evicted` or
    /// `Expired`) rather than because a caller asked for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::RemovalCause;
    /// assert!(RemovalCause::Expired.was_evicted());
    /// assert!(!RemovalCause::Replaced.was_evicted());
    /// ```
    pub fn was_evicted(self) -> bool {
        matches!(self, Self::Evicted | Self::Expired)
    }
}

/// A removal listener: called with each removed entry and why, unlocked.
///
/// `V` is the stored value (each cache hands out clones of it).
pub(crate) type Listener<K, V> = Arc<dyn Fn(K, V, RemovalCause) + Send + Sync>;

/// The caller's copy of a value that also goes to the listener, made with
/// no lock held: a panicking `clone` is caught, so the removed entries can
/// still reach the listener before the panic resumes in the caller.
pub(crate) fn copy_unlocked<V>(value: &V, clone: impl FnOnce(&V) -> V) -> std::thread::Result<V> {
    catch_unwind(AssertUnwindSafe(|| clone(value)))
}

/// One removed entry, on its way to the listener.
pub(crate) type Removal<K, V> = (K, V, RemovalCause);

/// Appends `entries` to `out`, each with `cause`.
pub(crate) fn tagged<K, V>(
    out: &mut Vec<Removal<K, V>>,
    entries: impl IntoIterator<Item = (K, V)>,
    cause: RemovalCause,
) {
    out.extend(entries.into_iter().map(|(k, v)| (k, v, cause)));
}

/// Hands each removed entry to `listener` (if any), in order, then drops
/// it. Call with no lock held.
///
/// A panicking listener call does not stop the others: every entry is
/// handed over, then the first panic resumes in the caller.
pub(crate) fn notify<K, V>(
    listener: Option<&Listener<K, V>>,
    removed: impl IntoIterator<Item = Removal<K, V>>,
) {
    let Some(listener) = listener else {
        drop_all(removed);
        return;
    };
    let mut first_panic = None;
    for (key, value, cause) in removed {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| listener(key, value, cause))) {
            first_panic.get_or_insert(panic);
        }
    }
    if let Some(panic) = first_panic {
        resume_unwind(panic);
    }
}

/// Drops every entry, even if one `Drop` panics (the first panic resumes
/// after the rest are dropped).
fn drop_all<T>(items: impl IntoIterator<Item = T>) {
    let mut first_panic = None;
    for item in items {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| drop(item))) {
            first_panic.get_or_insert(panic);
        }
    }
    if let Some(panic) = first_panic {
        resume_unwind(panic);
    }
}
