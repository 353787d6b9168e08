//! [`StripedRwLock`]: a reader-writer lock whose read path writes only the
//! calling thread's stripe of the lock state, so that readers on different
//! cores do not bounce one cache line between them.
//!
//! The lock is `R` reader-writer locks ("stripes", one padded cache line
//! each), `R` a power of two from [`stripe_count`], each holding an `Arc`
//! of the one value:
//!
//! - a reader read-locks one stripe, number [`lock_stripe`](crate::sync::lock_stripe) mod `R`
//!   (threads past `R` share stripes with lower ones: contention, never a
//!   wrong result), and reads the value through that stripe's `Arc`
//!   without touching its count;
//! - a writer write-locks every stripe in ascending order, which excludes
//!   every reader and every other writer (two writers meet first at stripe
//!   0, so they never wait on each other in a cycle), empties stripes 1 to
//!   `R - 1`, so that stripe 0's `Arc` is the only one and yields `&mut`,
//!   and fills them again before it unlocks (also when unwinding).
//!
//! No `unsafe`: the exclusive access is `Arc::get_mut`'s, which fails (a
//! panic, never a race) if a writer held fewer than every stripe.
//!
//! A write costs `R` uncontended lock and unlock pairs instead of one, plus
//! `R - 1` reference-count decrements and increments; a read costs one lock
//! and unlock pair, on a line no other core's reader writes.
//!
//! parking_lot-shaped: no poisoning, and parking_lot's locks are task-fair
//! (a reader waits behind a waiting writer), so a thread must not
//! read-lock a lock it already holds.
//!
//! # Files
//!
//! This one, and `broken.rs`: the writer's broken variant for the loom
//! models (`cfg(loom)` only).

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use crate::sync::{Arc, CachePadded, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(loom)]
mod broken;
#[cfg(loom)]
use broken::{lock_rest, refill};
#[cfg(not(loom))]
use {lock_every_other_stripe as lock_rest, refill_held as refill};

/// The most read stripes a lock has.
pub(crate) const MAX_STRIPES: usize = 8;

/// The stripe count of a lock built by [`StripedRwLock::new`]: the cores
/// rounded up to a power of two, at least 2, at most [`MAX_STRIPES`] (2
/// under loom). Computed once per process.
pub(crate) fn stripe_count() -> usize {
    #[cfg(loom)]
    {
        2
    }
    #[cfg(not(loom))]
    {
        static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *COUNT.get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            cores.next_power_of_two().clamp(2, MAX_STRIPES)
        })
    }
}

/// One stripe's share of the value: `None` only while a writer holds the
/// stripe.
type StripeShare<T> = Option<Arc<T>>;

/// A reader-writer lock with per-thread read stripes (see the module).
pub(crate) struct StripedRwLock<T> {
    stripes: Box<[CachePadded<RwLock<StripeShare<T>>>]>,
    /// `stripes.len() - 1`; the length is a power of two.
    mask: usize,
}

impl<T> StripedRwLock<T> {
    /// A lock over `value` with [`stripe_count`] stripes.
    pub(crate) fn new(value: T) -> Self {
        Self::with_stripes(value, stripe_count())
    }

    /// A lock over `value` with `stripes` (a power of two up to
    /// [`MAX_STRIPES`]) stripes.
    pub(crate) fn with_stripes(value: T, stripes: usize) -> Self {
        assert!(
            stripes.is_power_of_two() && stripes <= MAX_STRIPES,
            "larder: a stripe count must be a power of two up to {MAX_STRIPES}"
        );
        let value = Arc::new(value);
        Self {
            stripes: (0..stripes)
                .map(|_| CachePadded::new(RwLock::new(Some(Arc::clone(&value)))))
                .collect(),
            mask: stripes - 1,
        }
    }

    /// Read-locks stripe `thread` mod the stripe count: the calling
    /// thread's is [`lock_stripe`](crate::sync::lock_stripe) (a whole-store
    /// read asks it once and locks that stripe of every lock).
    #[inline]
    pub(crate) fn read_on(&self, thread: usize) -> StripedReadGuard<'_, T> {
        StripedReadGuard(self.stripes[thread & self.mask].read())
    }

    /// Write-locks every stripe, in ascending order.
    #[inline]
    pub(crate) fn write(&self) -> StripedWriteGuard<'_, T> {
        let mut guard = StripedWriteGuard {
            first: self.stripes[0].write(),
            rest: ManuallyDrop::new([const { None }; MAX_STRIPES - 1]),
            held: 0,
            lock: self,
        };
        lock_rest(&mut guard);
        guard
    }
}

/// Write-locks stripes 1 to `R - 1` into `guard` (which holds stripe 0),
/// in ascending order, emptying each.
fn lock_every_other_stripe<'a, T>(guard: &mut StripedWriteGuard<'a, T>) {
    let stripes = &guard.lock.stripes[1..];
    for (held, stripe) in guard.rest.iter_mut().zip(stripes) {
        let mut stripe = stripe.write();
        stripe.take();
        *held = Some(stripe);
        guard.held += 1;
    }
}

/// Fills the stripes `guard` holds besides stripe 0 with the value again
/// (before they are unlocked).
fn refill_held<T>(guard: &mut StripedWriteGuard<'_, T>) {
    let count = guard.held;
    if let Some(value) = guard.first.as_ref() {
        for stripe in guard.rest[..count].iter_mut().flatten() {
            **stripe = Some(Arc::clone(value));
        }
    }
}

/// Shared guard of a [`StripedRwLock`]: holds one read stripe.
pub(crate) struct StripedReadGuard<'a, T>(RwLockReadGuard<'a, StripeShare<T>>);

impl<T> Deref for StripedReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        self.0
            .as_deref()
            .expect("larder: a read stripe without its value (a writer left it unlocked)")
    }
}

/// Exclusive guard of a [`StripedRwLock`]: holds every stripe, and the
/// only `Arc` of the value (in stripe 0).
pub(crate) struct StripedWriteGuard<'a, T> {
    first: RwLockWriteGuard<'a, StripeShare<T>>,
    /// Stripes 1 to `R - 1`, emptied, then `None`s. Dropped by hand, only
    /// the first [`held`](Self::held), so that a write does not pay for
    /// dropping the `None`s.
    rest: ManuallyDrop<[Option<RwLockWriteGuard<'a, StripeShare<T>>>; MAX_STRIPES - 1]>,
    /// How many of `rest` are stripes.
    held: usize,
    /// The lock whose stripes these are.
    lock: &'a StripedRwLock<T>,
}

impl<T> Deref for StripedWriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        self.first
            .as_deref()
            .expect("larder: stripe 0 holds the value")
    }
}

impl<T> DerefMut for StripedWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        Arc::get_mut(
            self.first
                .as_mut()
                .expect("larder: stripe 0 holds the value"),
        )
        .expect("larder: a writer holds every stripe of its lock")
    }
}

impl<T> Drop for StripedWriteGuard<'_, T> {
    /// Fills the emptied stripes again, then unlocks them; stripe 0 is
    /// unlocked last (its field drops after this). Out of line, so that a
    /// caller choosing between this lock and a plain one keeps its plain
    /// path small.
    #[inline(never)]
    fn drop(&mut self) {
        refill(self);
        let count = self.held;
        for stripe in &mut self.rest[..count] {
            drop(stripe.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer excludes a reader on every stripe: with a read guard held
    /// on any one stripe, no write lock is free; every stripe is filled
    /// again after a write.
    #[test]
    fn a_writer_holds_every_stripe_and_fills_them_again() {
        for stripes in [1, 2, 4, 8] {
            let lock = StripedRwLock::with_stripes(0_u32, stripes);
            {
                let mut writer = lock.write();
                *writer += 1;
                for stripe in lock.stripes.iter() {
                    assert!(stripe.try_read().is_none(), "a stripe was left unlocked");
                }
            }
            for thread in 0..=stripes {
                assert_eq!(*lock.read_on(thread), 1, "stripe {thread} of {stripes}");
            }
            for stripe in lock.stripes.iter() {
                assert!(stripe.try_write().is_some(), "a stripe stayed locked");
            }
        }
    }

    /// A writer that unwinds fills the stripes again.
    #[test]
    fn a_panicking_writer_fills_the_stripes_again() {
        let lock = StripedRwLock::with_stripes(vec![1], 4);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut writer = lock.write();
            writer.push(2);
            panic!("planted");
        }));
        assert!(unwound.is_err());
        for thread in 0..4 {
            assert_eq!(*lock.read_on(thread), [1, 2]);
        }
    }

    /// Readers on different stripes hold the lock together; each reads its
    /// own stripe.
    #[test]
    fn readers_share_the_lock_on_their_own_stripes() {
        let lock = StripedRwLock::with_stripes(7_u32, 2);
        let first = lock.read_on(0);
        let second = lock.read_on(1);
        assert_eq!(*first + *second, 14);
        assert!(lock.stripes[0].try_write().is_none());
        assert!(lock.stripes[1].try_write().is_none());
        drop(first);
        assert!(lock.stripes[0].try_write().is_some());
        assert!(lock.stripes[1].try_write().is_none());
    }

    #[test]
    fn stripe_count_is_a_small_power_of_two() {
        let count = stripe_count();
        assert!(count.is_power_of_two() && (2..=MAX_STRIPES).contains(&count));
    }
}
