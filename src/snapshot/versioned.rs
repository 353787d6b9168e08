//! A value together with the version it was stored under, in one allocation.

use std::fmt;
use std::ops::Deref;

/// A value published by a [`Snapshot`](crate::Snapshot), stamped with the
/// version of the store that published it.
///
/// The version lives in the same allocation as the value, so a reader always
/// gets a matching pair: there is no window in which a new value can be seen
/// with an old version or the other way round.
///
/// `Versioned<T>` dereferences to `T`. If `T` has a method of its own called
/// `version` or `value`, reach it through [`Versioned::value`].
///
/// # Examples
///
/// ```
/// use larder::Snapshot;
///
/// let snap = Snapshot::new(String::from("a"));
/// snap.store(String::from("b"));
/// let current = snap.load_full();
/// assert_eq!(current.version(), 1);
/// assert_eq!(current.len(), 1); // derefs to the `String`
/// assert_eq!(current.value(), "b");
/// ```
pub struct Versioned<T> {
    pub(super) version: u64,
    pub(super) value: T,
}

impl<T> Versioned<T> {
    /// The version of the store that published this value: 0 for the value
    /// given to [`Snapshot::new`](crate::Snapshot::new), then one more for
    /// every successful store, swap, compare-and-swap or update.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The value itself.
    #[inline]
    pub fn value(&self) -> &T {
        &self.value
    }
}

impl<T> Deref for Versioned<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Versioned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Versioned")
            .field("version", &self.version)
            .field("value", &self.value)
            .finish()
    }
}
