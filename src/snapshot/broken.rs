//! The broken variants of `Snapshot`'s writes, for the loom negative
//! controls of [`SnapshotFault`] (`crate::fault`); compiled only under
//! `cfg(loom)`. Each step below is a dispatcher: the broken variant the
//! model selected, else the correct step, which outside loom is the step
//! itself.

use super::{Snapshot, Versioned, compare_exchange, publish_version, update_until_published};
use crate::fault::{SnapshotFault, is_selected};
use crate::sync::{self, Arc};

/// `store`. `VersionBeforeSwap`: the version is read from the value
/// loaded before the writers' lock is taken, then stamped and swapped in
/// under the lock, so two racing stores can publish one version twice, or
/// the later one first.
pub(super) fn store_versioned<T>(snapshot: &Snapshot<T>, value: T) -> u64 {
    if !is_selected(SnapshotFault::VersionBeforeSwap) {
        return publish_version(snapshot, value);
    }
    let version = snapshot.inner.load().version + 1;
    let mut current = snapshot.writers.lock();
    let previous = snapshot.inner.swap(Arc::new(Versioned { version, value }));
    *current = version;
    drop(current);
    drop(previous);
    version
}

/// The exchange of `compare_and_swap` and `try_update`.
///
/// `CheckThenSwap`: the comparison is made before the writers' lock is
/// taken, and the swap under it, as two steps.
///
/// `ExchangeOutsideLock`: a compare-exchange on the value alone, without
/// the writers' lock (lock-free, and atomic in itself), so the lock's
/// version falls behind and a `store` after it publishes a version again.
pub(super) fn exchange<T>(
    snapshot: &Snapshot<T>,
    expected: *const Versioned<T>,
    candidate: Arc<Versioned<T>>,
) -> Result<Arc<Versioned<T>>, Arc<Versioned<T>>> {
    if is_selected(SnapshotFault::CheckThenSwap) {
        let now = snapshot.inner.load_full();
        if !std::ptr::eq(Arc::as_ptr(&now), expected) {
            return Err(candidate);
        }
        let mut version = snapshot.writers.lock();
        *version = candidate.version;
        let previous = snapshot.inner.swap(candidate);
        drop(version);
        return Ok(previous);
    }
    if is_selected(SnapshotFault::ExchangeOutsideLock) {
        return snapshot
            .inner
            .compare_exchange(expected, candidate)
            .map(sync::guard_into_arc);
    }
    compare_exchange(snapshot, expected, candidate)
}

/// `update`. `LoadThenStore`: loads, computes and swaps without checking
/// that the value it computed from is still current (the lost update shown
/// in the type's docs).
pub(super) fn update_versioned<T>(
    snapshot: &Snapshot<T>,
    mut f: impl FnMut(&T) -> T,
) -> Arc<Versioned<T>> {
    if !is_selected(SnapshotFault::LoadThenStore) {
        return update_until_published(snapshot, f);
    }
    let current = snapshot.inner.load();
    let next = Arc::new(Versioned {
        version: current.version + 1,
        value: f(&current.value),
    });
    let mut version = snapshot.writers.lock();
    *version = next.version;
    let previous = snapshot.inner.swap(Arc::clone(&next));
    drop(version);
    drop(previous);
    next
}
