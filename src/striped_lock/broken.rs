//! The broken variant of the striped lock's writer, for the loom negative
//! control `IndexedFault::WriterOneStripe` (`crate::fault`); compiled only
//! under `cfg(loom)`. Each step below is a dispatcher: the broken variant
//! the model selected, else the correct step, which outside loom is the
//! step itself.

use super::{StripedWriteGuard, lock_every_other_stripe, refill_held};
use crate::fault::{IndexedFault, is_selected};
use crate::sync::Arc;

/// A writer's locking of stripes 1 to `R - 1`. `WriterOneStripe`: it
/// empties each in a critical section of its own and writes under stripe 0
/// alone.
pub(super) fn lock_rest<T>(guard: &mut StripedWriteGuard<'_, T>) {
    if !is_selected(IndexedFault::WriterOneStripe) {
        return lock_every_other_stripe(guard);
    }
    for stripe in &guard.lock.stripes[1..] {
        stripe.write().take();
    }
}

/// A writer's refill of the stripes. `WriterOneStripe`: each stripe other
/// than 0 is filled again in a further critical section of its own.
pub(super) fn refill<T>(guard: &mut StripedWriteGuard<'_, T>) {
    if !is_selected(IndexedFault::WriterOneStripe) {
        return refill_held(guard);
    }
    if let Some(value) = guard.first.as_ref() {
        for stripe in &guard.lock.stripes[1..] {
            *stripe.write() = Some(Arc::clone(value));
        }
    }
}
