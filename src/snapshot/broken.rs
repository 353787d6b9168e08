//! The broken variants of `Snapshot`'s writes, for the loom negative
//! controls of [`SnapshotFault`] (`crate::fault`); compiled only under
//! `cfg(loom)`. Each step below is a dispatcher: the broken variant the
//! model selected, else the correct step, which outside loom is the step
//! itself.

use super::{Snapshot, Versioned, compare_exchange, publish_version, update_until_published};
use crate::fault::{SnapshotFault, is_selected};
use crate::sync::{Arc, AtomicArc};

/// `store`. `VersionBeforeSwap`: the version is taken from the value
/// loaded first, then the new value is swapped in unconditionally, so two
/// racing stores can publish one version twice, or the later one first.
pub(super) fn store_versioned<T>(snapshot: &Snapshot<T>, value: T) -> u64 {
    if !is_selected(SnapshotFault::VersionBeforeSwap) {
        return publish_version(snapshot, value);
    }
    let version = snapshot.inner.load().version + 1;
    snapshot.inner.swap(Arc::new(Versioned { version, value }));
    version
}

/// `compare_and_swap`'s exchange. `CheckThenSwap`: the comparison and the
/// store are two steps.
pub(super) fn exchange<T>(
    cell: &AtomicArc<Versioned<T>>,
    expected: *const Versioned<T>,
    candidate: Arc<Versioned<T>>,
) -> Result<Arc<Versioned<T>>, Arc<Versioned<T>>> {
    if !is_selected(SnapshotFault::CheckThenSwap) {
        return compare_exchange(cell, expected, candidate);
    }
    let now = cell.load_full();
    if std::ptr::eq(Arc::as_ptr(&now), expected) {
        return Ok(cell.swap(candidate));
    }
    Err(candidate)
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
    snapshot.inner.swap(Arc::clone(&next));
    next
}
