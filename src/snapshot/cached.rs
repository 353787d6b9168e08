//! A per-thread reader handle that re-reads the snapshot only when it changed.

use std::fmt;

use super::{Snapshot, Versioned};
use crate::sync::ArcCache;

/// A reader handle for one thread's hottest loop: it keeps the last value it
/// saw and, on each [`load`](CachedReader::load), only compares the
/// snapshot's current address with the one it holds (arc-swap's `Cache`).
/// While nothing changed, a load is one atomic read of a pointer and writes
/// no shared memory at all.
///
/// The price: the handle keeps its value alive until the next `load` that
/// sees a change (or its drop), so an old value may be freed later than with
/// [`Snapshot::load`]. The handle is `Send` but needs `&mut self` to load;
/// give each thread its own (that is what it is for).
///
/// # Examples
///
/// ```
/// use larder::Snapshot;
///
/// let config = Snapshot::new(10_u32);
/// let mut reader = config.cached_reader();
/// assert_eq!(**reader.load(), 10);
/// config.store(20);
/// assert_eq!(**reader.load(), 20);
/// assert_eq!(reader.load().version(), 1);
/// ```
pub struct CachedReader<'a, T> {
    cache: ArcCache<'a, Versioned<T>>,
}

impl<'a, T> CachedReader<'a, T> {
    pub(super) fn new(source: &'a Snapshot<T>) -> Self {
        Self {
            cache: ArcCache::new(&source.inner),
        }
    }

    /// The current value of the snapshot.
    ///
    /// Sees every store that completed before the call (the same guarantee
    /// as [`Snapshot::load`]); the returned reference is valid until the next
    /// `load` on this handle.
    #[inline]
    pub fn load(&mut self) -> &Versioned<T> {
        self.cache.load()
    }
}

impl<T> fmt::Debug for CachedReader<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedReader").finish_non_exhaustive()
    }
}
