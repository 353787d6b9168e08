//! # larder
//!
//! Concurrent cache primitives for Rust services and controllers: the pieces
//! of a Kubernetes-style informer cache and the fixes for the classic misuses
//! of concurrent maps, each model-checked with loom and benchmarked against
//! the maps people would otherwise wrap in a lock.
//!
//! | primitive | use it for | instead of |
//! |---|---|---|
//! | [`Snapshot`] | a read-mostly value replaced whole (configuration, routing table) | `RwLock<Arc<T>>`, load-then-store on an `ArcSwap` |
//! | [`OrderedIndex`] | keys looked up, scanned and consumed in order (offsets, timestamps, versions) | an unordered map iterated as if ordered, `RwLock<BTreeMap>` |
//!
//! Every primitive documents its guarantees: what is atomic, what a
//! concurrent reader can observe, and which loom model proves it
//! (`docs/verification.md`).
//!
//! ## Choosing
//!
//! - [`Snapshot`] when readers vastly outnumber writers and the value is
//!   replaced as a whole. Reads are lock-free and write no shared memory, so
//!   they scale with cores where `RwLock<Arc<T>>` does not. Do not use it for
//!   a value that is modified piecewise by many writers at a high rate: every
//!   write copies the value.
//!
//! - [`OrderedIndex`] when keys must be read in order or consumed in order
//!   (offsets up to a committed one, the oldest timestamp first). Reads
//!   scale across cores where `RwLock<BTreeMap>` does not; `pop_first` and
//!   `drain_to` hand every entry to exactly one consumer; `snapshot` is O(1).
//!   Writes take one exclusive lock, so for write-dominated work at many
//!   cores a lock-free tree such as `scc::TreeIndex` scales better.
//!
//! ## Example
//!
//! ```
//! use larder::Snapshot;
//!
//! let routes = Snapshot::new(vec!["/a", "/b"]);
//! routes.update(|old| {
//!     let mut new = old.clone();
//!     new.push("/c");
//!     new
//! });
//! assert_eq!(routes.load().len(), 3);
//! assert_eq!(routes.version(), 1);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![doc(test(attr(deny(warnings))))]

/// The README's code examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod flight;
mod indexed;
mod lru;
mod ordered;
mod snapshot;
mod sync;
mod typed;

pub use ordered::{OrderedIndex, OrderedSnapshot};
pub use snapshot::{CachedReader, CompareAndSwapError, Guard, Snapshot, Versioned};

#[cfg(loom)]
#[doc(hidden)]
pub use flight::FlightFault;
#[cfg(loom)]
#[doc(hidden)]
pub use snapshot::Fault as SnapshotFault;

#[cfg(loom)]
#[doc(hidden)]
pub use ordered::Fault as OrderedFault;
