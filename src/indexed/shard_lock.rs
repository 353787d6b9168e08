//! [`ShardLock`]: one shard's reader-writer lock, in one of two modes the
//! builder chooses ([`IndexedStoreBuilder::read_mostly`](super::IndexedStoreBuilder::read_mostly)):
//!
//! - plain (the default): one parking_lot `RwLock`, whose word every read
//!   and write writes; the cheapest lock for one thread and for writes;
//! - read-mostly: a [`StripedRwLock`], whose read writes only the calling
//!   thread's stripe (readers on different cores share no written line)
//!   and whose write locks every stripe.
//!
//! The guards are enums over the two modes' guards: a match per
//! acquisition and per dereference, one predictable branch.

use std::ops::{Deref, DerefMut};

use crate::striped_lock::{StripedReadGuard, StripedRwLock, StripedWriteGuard};
use crate::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, lock_stripe};

/// One shard's lock, plain or striped. A shard holds it cache-padded, so
/// the plain lock's word shares its line with the mode tag (read by every
/// acquisition) and with nothing another shard writes.
pub(crate) enum ShardLock<T> {
    Plain(RwLock<T>),
    Striped(StripedRwLock<T>),
}

impl<T> ShardLock<T> {
    /// A lock over `value`: striped when `read_mostly`, plain otherwise.
    pub(crate) fn new(value: T, read_mostly: bool) -> Self {
        if read_mostly {
            Self::Striped(StripedRwLock::new(value))
        } else {
            Self::Plain(RwLock::new(value))
        }
    }

    /// Read-locks the lock (a striped lock: the calling thread's stripe).
    #[inline]
    pub(crate) fn read(&self) -> ShardReadGuard<'_, T> {
        match self {
            Self::Plain(lock) => ShardReadGuard::Plain(lock.read()),
            Self::Striped(lock) => read_striped(lock, lock_stripe()),
        }
    }

    /// Read-locks the lock; a striped lock's stripe `stripe` (a
    /// whole-store read asks its stripe once for every shard).
    #[inline]
    pub(crate) fn read_on(&self, stripe: usize) -> ShardReadGuard<'_, T> {
        match self {
            Self::Plain(lock) => ShardReadGuard::Plain(lock.read()),
            Self::Striped(lock) => read_striped(lock, stripe),
        }
    }

    /// Write-locks the lock (a striped lock: every stripe, ascending).
    #[inline]
    pub(crate) fn write(&self) -> ShardWriteGuard<'_, T> {
        match self {
            Self::Plain(lock) => ShardWriteGuard::Plain(lock.write()),
            Self::Striped(lock) => write_striped(lock),
        }
    }
}

// The striped write out of line, so that the plain one (the default) stays
// close to a lone `RwLock`'s.

#[inline]
fn read_striped<T>(lock: &StripedRwLock<T>, stripe: usize) -> ShardReadGuard<'_, T> {
    ShardReadGuard::Striped(lock.read_on(stripe))
}

#[inline(never)]
fn write_striped<T>(lock: &StripedRwLock<T>) -> ShardWriteGuard<'_, T> {
    ShardWriteGuard::Striped(lock.write())
}

/// Shared guard of a [`ShardLock`].
pub(crate) enum ShardReadGuard<'a, T> {
    Plain(RwLockReadGuard<'a, T>),
    Striped(StripedReadGuard<'a, T>),
}

impl<T> Deref for ShardReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            Self::Plain(guard) => guard,
            Self::Striped(guard) => guard,
        }
    }
}

/// Exclusive guard of a [`ShardLock`].
pub(crate) enum ShardWriteGuard<'a, T> {
    Plain(RwLockWriteGuard<'a, T>),
    Striped(StripedWriteGuard<'a, T>),
}

impl<T> Deref for ShardWriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            Self::Plain(guard) => guard,
            Self::Striped(guard) => guard,
        }
    }
}

impl<T> DerefMut for ShardWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        match self {
            Self::Plain(guard) => guard,
            Self::Striped(guard) => guard,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Each mode reads what was written; `read_mostly` picks the mode.
    #[test]
    fn both_modes_read_what_was_written() {
        for read_mostly in [false, true] {
            let lock = ShardLock::new(1_u32, read_mostly);
            *lock.write() += 1;
            assert_eq!((*lock.read(), *lock.read_on(1)), (2, 2));
            assert_eq!(matches!(lock, ShardLock::Striped(_)), read_mostly);
        }
    }
}
