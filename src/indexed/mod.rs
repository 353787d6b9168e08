//! [`IndexedStore`]: a keyed store of immutable objects with named secondary
//! indexes that always agree with the objects: client-go's
//! `ThreadSafeStore`/`Indexer`, with reads that scale across cores.
//!
//! # The torn view, and why one lock covers objects and indexes
//!
//! The tempting design keeps the objects in one concurrent map and each
//! index in another. Every write then updates several maps one after the
//! other, and a reader running between those steps sees an object under an
//! index value it no longer has, or a stored object that its index does not
//! list yet:
//!
//! ```
//! use dashmap::{DashMap, DashSet};
//!
//! // BROKEN: two maps, two steps. Between the lines below, a concurrent
//! // reader of `by_color` finds "pod-a" under "red" while `objects` says it
//! // is blue, or (on insert) finds it in `objects` but not in the index.
//! let objects: DashMap<&str, &str> = DashMap::new();
//! let by_color: DashMap<&str, DashSet<&str>> = DashMap::new();
//! objects.insert("pod-a", "red");
//! by_color.entry("red").or_default().insert("pod-a");
//! // update pod-a to blue:
//! objects.insert("pod-a", "blue");
//! //   <- a reader here sees a blue pod listed as red
//! by_color.get("red").unwrap().remove("pod-a");
//! by_color.entry("blue").or_default().insert("pod-a");
//! ```
//!
//! [`IndexedStore`] splits its state into shards by key hash; each shard
//! holds its objects *and* their entries in every index behind one
//! reader-writer lock. A write locks the shard (or, for a transaction, the
//! shards in ascending order) of its keys and changes objects and indexes
//! in one critical section; a read of one key locks its shard; a read of
//! the whole store (`by_index`, `values`, ...) read-locks every shard in
//! ascending order and holds them all until it is done. So every read is a
//! consistent cut, every write (including [`replace`](IndexedStore::replace)
//! and [`transaction`](IndexedStore::transaction)) is atomic, and writes to
//! different shards run in parallel (`shards.rs`):
//!
//! ```
//! use larder::IndexedStore;
//!
//! let pods: IndexedStore<&str, &str> = IndexedStore::builder()
//!     .index("color", |color: &&str| [*color])
//!     .build()
//!     .unwrap();
//! pods.insert("pod-a", "red").unwrap();
//! pods.insert("pod-a", "blue").unwrap(); // one atomic step
//! assert!(pods.by_index("color", "red").unwrap().is_empty());
//! assert_eq!(pods.index_keys("color", "blue").unwrap(), ["pod-a"]);
//! ```
//!
//! The loom model `indexed_index_agrees_with_objects` in `loom-tests/` proves
//! that no reader can observe a disagreement, and its negative control
//! (which updates the index in a second critical section) proves the model
//! catches one; `indexed_cut_across_shards` proves that a whole-store read
//! sees an object moved between shards exactly once, and its negative
//! control (shards read one at a time) proves the model catches a torn cut.
//! Design notes and measurements: `design/indexed.md`.
//!
//! # Files
//!
//! - `store.rs`: [`IndexedStore`], the concurrent wrapper; `shards.rs`:
//!   its key-sharded state; `shard_lock.rs`: one shard's lock (plain or
//!   read-mostly); `core.rs` with `core/`: one shard's sequential core.
//! - `builder.rs`: [`IndexedStoreBuilder`]; `index_fn.rs`: index functions
//!   and the schema; `values.rs`: one object's values for one index;
//!   `error.rs`: [`IndexError`].
//! - `write.rs`: the point writes; `transaction.rs`: [`Transaction`];
//!   `burst.rs`: a reflector's burst of changes as one write; `collect.rs`:
//!   building from and extending with an iterator; `revision.rs`: the
//!   store's resource version.
//! - `lookup.rs`: lookups by index value; `visit.rs`: lookups that hand
//!   out keys with their objects.
//! - `broken.rs`: the loom models' broken variants (`cfg(loom)` only);
//!   `tests.rs`: unit tests.

#[cfg(loom)]
mod broken;
mod builder;
#[cfg(feature = "reflector")]
pub(crate) mod burst;
mod collect;
mod core;
mod error;
mod index_fn;
mod lookup;
mod revision;
mod shard_lock;
mod shards;
mod store;
mod transaction;
mod values;
mod visit;
mod write;

pub use builder::IndexedStoreBuilder;
pub use error::IndexError;
pub use store::IndexedStore;
pub use transaction::Transaction;

#[cfg(all(test, not(loom)))]
mod tests;
