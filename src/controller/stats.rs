//! [`ControllerStats`] and the counters behind them.

use crate::sync::{AtomicU64, Ordering};

/// A controller's counts since it was built, read with
/// [`ControllerHandle::stats`](super::ControllerHandle::stats). Each count
/// is exact; the counts are read one after another, not at one instant.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use larder::IndexedStore;
/// use larder::controller::{Action, Controller};
/// use larder::reflector::{MemorySource, Reflector};
///
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
/// let controller = Controller::builder(reflector, |_key: String, _object| async {
///     Ok::<_, String>(Action::done())
/// })
/// .build()
/// .unwrap();
/// let stats = controller.handle().stats();
/// assert_eq!(stats.reconciled, 0);
/// assert_eq!(stats.failed + stats.panicked, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControllerStats {
    /// Reconciles that returned `Ok` (with either [`Action`](super::Action)).
    pub reconciled: u64,
    /// Reconciles that returned `Err` (each retried, rate limited).
    pub failed: u64,
    /// Reconciles that panicked (each caught and retried, rate limited).
    pub panicked: u64,
    /// Successful reconciles that asked to be requeued after a delay
    /// ([`Action::requeue`](super::Action::requeue)).
    pub requeued: u64,
    /// Keys taken from the queue after shutdown began and not reconciled.
    pub skipped_at_shut_down: u64,
}

/// The live counts. Each is a plain counter: Relaxed throughout, as no
/// other memory is published through them.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) reconciled: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) requeued: AtomicU64,
    pub(crate) skipped_at_shut_down: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> ControllerStats {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ControllerStats {
            reconciled: load(&self.reconciled),
            failed: load(&self.failed),
            panicked: load(&self.panicked),
            requeued: load(&self.requeued),
            skipped_at_shut_down: load(&self.skipped_at_shut_down),
        }
    }
}
