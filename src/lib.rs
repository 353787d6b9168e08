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
//! | [`IndexedStore`] | keyed immutable objects with named secondary indexes (an informer cache: pods by namespace, by label) that always agree with the objects | `RwLock<HashMap>` + filtered scans (kube-rs), client-go's one-`RWMutex` indexer, a `DashMap` per index (torn views) |
//! | [`LruCache`] | a bounded cache of expensive lookups with hit/miss statistics and load-on-miss (`lru_cache` + `cache_info()`) | `Mutex<lru::LruCache>`, moka, quick_cache |
//! | [`TypedCache`], [`AnyCache`] | lazily built shared resources (parsed schemas, compiled patterns, clients): one init per key under contention, expiry, stats; `AnyCache` holds many value types under one key type | `ConcurrentDictionary<K, Lazy<V>>`, `DashMap::entry().or_insert_with`, `Mutex<HashMap<K, Arc<OnceLock<V>>>>`, moka `get_with` |
//! | [`WorkQueue`] | a controller's queue of keys to reconcile: dedup, one worker per key, no lost update, delays and rate-limited retries (client-go's `workqueue`) | a channel and a worker pool with a `HashSet` of pending keys, `Mutex<(VecDeque, HashSet)>` + `Condvar` |
//!
//! Every primitive documents its guarantees: what is atomic, what a
//! concurrent reader can observe, and what happens when user code panics.
//! Each has a guide beside this reference, in the repository's
//! [`docs/` folder][guides]: what it is for, how to use it, its guarantees
//! and costs.
//!
//! ## Cargo features
//!
//! | feature | adds | to build it | to run it |
//! |---|---|---|---|
//! | (none) | the primitives above | nothing more | no runtime |
//! | `reflector` | `larder::reflector`: the informer loop, the `Source` trait, `MemorySource`; `larder::controller` | nothing more | any async executor |
//! | `etcd` | `reflector::EtcdSource` (implies `reflector`) | `protoc` and protobuf's well-known types (`apt-get install protobuf-compiler libprotobuf-dev`) | a tokio runtime, an etcd v3 server |
//! | `kube` | `reflector::KubeSource`, client-go's `namespace/name` keys and ready index functions (implies `reflector`) | Rust 1.89 (kube's minimum; the crate's own is 1.85), a Kubernetes version feature on `k8s-openapi` in the program | a tokio runtime, a Kubernetes API server |
//!
//! Every feature is documented here; items that need one carry a badge
//! naming it.
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
//!   `drain_to` hand every entry to exactly one consumer, and their waiting
//!   forms (`pop_first_wait`, `pop_first_timeout`, `pop_first_async`, ...)
//!   let a consumer thread or task wait for the next entry instead of
//!   polling; `range_take` pages through keys after a cursor in O(page).
//!   By default the keys are cut into leaves under a lock each, so writers
//!   to different leaves run in parallel and a snapshot costs O(n) after
//!   the locks are released; `OrderedIndexBuilder::lock` selects one lock
//!   around one tree instead (O(1) snapshots, serialized writes). For
//!   write-dominated work at many cores a lock-free tree such as
//!   `scc::TreeIndex` scales better.
//!
//! - [`IndexedStore`] when objects are looked up by key and by secondary
//!   values (namespace, labels) and every answer must agree with the
//!   objects: `by_index` costs time proportional to the answer instead of a
//!   scan, `replace` and `transaction` are atomic, and reads scale across
//!   cores (each reader locks only its own shard). Writes are serialized
//!   and pay for index maintenance, so for write-dominated data with no
//!   secondary lookups a sharded map such as `DashMap` is cheaper.
//!
//! - [`LruCache`] when a cache must never hold more than N entries (or N
//!   units of weight, with a weigher), report hits and misses, and load each
//!   missing key once however many threads miss it. Sharded, with one short
//!   lock per operation, so it scales where one `Mutex<lru::LruCache>` does
//!   not; each shard evicts by exact LRU (the default), CLOCK, or
//!   scan-resistant S3-FIFO ([`EvictionPolicy`] has a table of which for which
//!   workload). Entries can expire by a time to live or to idle set for
//!   the whole cache; neither cache sets a deadline per entry (moka's
//!   `Expiry` does).
//!
//! - [`TypedCache`] when each value is expensive to build and many threads
//!   may ask for the same missing key at once: the init runs once per key
//!   with no lock held (other keys never wait), an error is shared with the
//!   callers already waiting and never cached, a panic is never poisoned, and
//!   hits write no shared lock word, so they scale where `Mutex<HashMap>` and
//!   moka do not. Expiry composes (time to live, time to idle, a capacity).
//!   [`AnyCache`] is the same for values of many types under one key type,
//!   type-checked per call. Do not use it as a size-bounded hot cache with a
//!   strict LRU order (use [`LruCache`]) or when inits are cheap and a
//!   duplicate init is harmless (a plain sharded map is simpler).
//!
//! - [`WorkQueue`] when workers reconcile objects by key and must never
//!   process one key twice at once nor miss the change that came while it
//!   was processed: client-go's controller work queue, with delays, rate
//!   limits, blocking and async `get`, and a pluggable clock
//!   (`docs/workqueue.md`). For a stream where every message counts (not
//!   just the latest state of a key), use a channel.
//!
//! ## From async code
//!
//! The loading caches have async forms that never block an executor thread:
//! [`TypedCache::get_or_init_async`], [`AnyCache::get_or_init_async`] and
//! [`LruCache::get_or_init_async`] (and their `try` twins) await the init as
//! a future, and a caller that finds another caller's init in progress
//! waits as a future too; sync and async callers of one key share one load.
//! A dropped future (a timeout, a `select!`, an aborted task) is safe at any
//! point: a cancelled init is handed over like a panicking one. No runtime is
//! named. Calling the blocking `get_or_init` from a task instead is misuse 13
//! of [the misuse catalogue][misuse]; [the async guide][async] covers
//! blocking, cancellation and re-entrancy.
//!
//! ## Keeping a store in step with a source: the reflector
//!
//! With the `reflector` feature, `reflector::Reflector` is client-go's
//! informer loop for an [`IndexedStore`]: it lists a `reflector::Source`,
//! replaces the store atomically, watches
//! from the listed revision and applies each change in revision order;
//! relists when its revision is compacted away, resumes with backoff when
//! the connection drops, and calls handlers (`on_add`, `on_update`,
//! `on_delete`) outside every lock, a relist delivering the exact
//! difference. It runs as a plain future on any executor, with readiness
//! (`wait_until_synced`) and read-your-writes (`wait_for_revision`) waits.
//! It owns the store and is its only writer: readers get read-only
//! `reflector::StoreReader`s.
//! [`IndexedStore::revision`] tracks the revision of the last applied
//! change. `reflector::MemorySource` is an in-memory source with fault
//! injection for tests; with the `etcd` feature, `reflector::EtcdSource`
//! mirrors an etcd key prefix (building it needs `protoc`; running it, a
//! tokio runtime and an etcd server). [The reflector guide][reflector-guide]
//! covers both. `controller::Controller` runs a reflector with a
//! [`WorkQueue`] and async workers that reconcile each changed key
//! (client-go's controller loop, kube-runtime's `Controller`).
//!
//! ## Conventions
//!
//! - **Sharing:** no container is `Clone`. Share one as `Arc<LruCache<..>>`
//!   (or by reference across scoped threads). A `Clone` handle would hide
//!   the same `Arc` inside and make every owner that never shares pay a
//!   second pointer hop per call; a struct of yours holding
//!   `Arc<IndexedStore<..>>` can `#[derive(Clone)]` to get moka- or
//!   kube-rs-style handles.
//! - **Errors of operations** are values, never panics: an index function's
//!   failure is an [`IndexError`], a lost race of
//!   [`Snapshot::compare_and_swap`] a [`CompareAndSwapError`] carrying the
//!   value back, a loader's error is returned to every caller that waited
//!   on it. A panic in user code (a loader, an index function, `Hash`,
//!   `Eq`, `Ord`, `Clone`, `Drop`) leaves the container consistent and
//!   unpoisoned, and loses no other entry.
//!
//! ## Vocabulary
//!
//! One name for one concept, across every primitive. A dash means the
//! primitive has no such operation; a name in another column is that
//! primitive's deviation, explained below the table. The rules below are
//! held by the crate's tests: a new public method that breaks one fails
//! them, naming it.
//!
//! | concept | name | `Snapshot` | `IndexedStore` | `OrderedIndex` | `LruCache` | `TypedCache` | `AnyCache` | `WorkQueue` |
//! |---|---|---|---|---|---|---|---|---|
//! | copy a value out | `get(&Q)` | `load`, `load_full` | `Option<V>` | `Option<Arc<V>>` | `Option<V>` | `Option<V>` | `Option<Arc<V>>` | — |
//! | read a value in place | `get_with(&Q, f)` | `load` (a guard) | ✓ | ✓ | ✓ (`peek_with`: no recency) | ✓ | ✓ | — |
//! | is a key present | `contains_key(&Q)` | — | ✓ | ✓ | ✓ | ✓ | ✓ | — |
//! | store a value | `insert(K, V)` | `store` | ✓ | ✓ | ✓ | ✓ | ✓ | `add` |
//! | store many, all or nothing | `replace`, `transaction`, `try_extend` | — | ✓ | — | — | — | — | — |
//! | remove one key | `remove(&Q)` | — | ✓ | ✓ | ✓ | ✓ | ✓ | — |
//! | remove every key | `clear()` | — | ✓ | ✓ | ✓ | ✓ | ✓ | — |
//! | load a missing key once | `get_or_init(&Q, f)`, `get_or_try_init` | — | — | — | ✓ | ✓ | ✓ | — |
//! | the same, awaiting the init | `get_or_init_async(&Q, f)`, `get_or_try_init_async` | — | — | — | ✓ | ✓ | ✓ | — |
//! | load with the loader the cache owns | `get_or_load(&Q)`, `get_or_try_load`, their `_async` forms | — | — | — | [`LoadingLruCache`] (sync loader), [`AsyncLoadingLruCache`] (async loader), other operations through their `cache()` | — | — | — |
//! | counters | `stats()` | `version` | `revision` | — | `CacheStats` | `CacheStats` | `CacheStats` | `WorkQueueStats` |
//! | how many entries | `len()`, `is_empty()` | — | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |
//! | the bound on entries | `capacity` | — | — | — | ✓ | ✓ | ✓ | — |
//! | room reserved up front | `initial_capacity` | — | ✓ | — | — | — | — | — |
//! | entries per leaf | `leaf_size` | — | — | ✓ | — | — | — | — |
//! | configure, then build | `X::builder()` … `build() -> Result<X, BuildError>` | — (`new`) | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |
//! | every entry, copied (O(n)) | `to_vec()` | — | one atomic cut (and `keys_to_vec`, `values_to_vec`) | one atomic cut | shard by shard | shard by shard | — | — |
//! | wait for the next entry | a blocking form, `_timeout` and `_async` twins, a non-blocking twin | — | — | `pop_first_wait` (`pop_first` does not block) | — | — | — | `get` (`try_get` does not block) |
//! | a key range, copied | `range_to_vec(range)` | — | — | one atomic cut | — | — | — | — |
//! | a consistent view to iterate lazily | `snapshot()`, then `iter()` | `load` | — | O(1) or O(n) | — | — | — | — |
//! | print it | `Debug` | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |
//!
//! The rules behind the names:
//!
//! - **`get` returns a clone of what the primitive stores.** A store whose
//!   values are shared by more than one structure keeps them as `Arc<V>`
//!   and hands out the `Arc`: [`OrderedIndex`] (its snapshots share them)
//!   and [`AnyCache`] (its values are type-erased behind an `Arc`).
//!   [`IndexedStore`] and the two caches keep `V` as given and hand out
//!   `V::clone()`, as moka and quick_cache do: store small values as they
//!   are and large, shared or non-`Clone` ones as `Arc<T>`, whose clone is
//!   a reference-count increment (a reflector's store holds `Arc<V>`). One rule, so the return type never
//!   surprises: what you put in is what you get back.
//! - **`get_with` reads in place.** An `Arc`'s clone writes its reference
//!   count, one cache line every reader of a hot key shares; `get_with`
//!   runs a closure on the stored value under the read lock instead, so a
//!   hit writes no memory another reader touches. Every keyed primitive has
//!   both forms; the closure must not call back into the same container
//!   (each method's *Deadlocks* says why).
//! - **std's names.** `remove`/`clear` (not `invalidate`), `len`,
//!   `is_empty`, `contains_key`, `insert`; `get_or_init`/`get_or_try_init`
//!   as on `std::sync::OnceLock`, for every loading cache, counted in
//!   [`CacheStats`] as `inits`, `init_failures` and `waits`.
//! - **Keys are borrowed** the same way in every lookup, removal and
//!   single-flight call: `&Q` where `K: Borrow<Q>`, `Q: ?Sized`, so a
//!   `String`-keyed container takes `"k"` in `get` and in `get_or_init`
//!   alike. A hit never allocates; a miss that must store the key builds
//!   it with `ToOwned` first. A
//!   key type that is itself a reference (`&'static str`) cannot be built
//!   from a shorter borrow: the calls that may store the key then take
//!   `&key` (`get_or_init(&"k", ..)`), the others take `"k"` as well.
//! - **Async forms have one shape:** `x_async(&Q, f)` is the blocking
//!   `x(&Q, f)` awaited, with the key looked up when the method is called
//!   (a hit's future is ready at its first poll) and the value type
//!   inferred from the init's future or from the result's annotation, never
//!   from a turbofish.
//! - **`capacity` is a bound.** Never a pre-allocation (that is
//!   `initial_capacity`, whose failure is a `BuildError`) and never a node
//!   size (`leaf_size`). A type built with one reports it: `capacity()`.
//! - **Builders:** `X::builder()` takes no argument; every setting is a
//!   method (the hasher too: `hasher(S)`, no `with_hasher` constructor);
//!   `build()` checks them and returns `Result<X, BuildError>`, one
//!   `#[non_exhaustive]` error for every builder, whose variants name the
//!   setting at fault. An error names one condition once: a duplicate index
//!   is [`IndexError::DuplicateIndex`] whether `add_index` or `build` finds
//!   it. Shortcut constructors that take a bound (`LruCache::new(capacity)`)
//!   panic on an invalid one, as documented under their *Panics*. The
//!   `reflector` module's builders take their required parts as arguments
//!   (`Reflector::builder(source, store)`) and have errors of their own.
//! - **Iteration is named for its cost.** `iter()` is lazy and borrows a
//!   view that cannot change under it (a snapshot's); a method that copies
//!   every entry into a `Vec` is `to_vec()` (`keys_to_vec`, `range_to_vec`
//!   for a part of each entry or of the entries) and says whether the copy
//!   is one atomic cut (under one lock) or taken shard by shard.
//! - **Blocking forms come as a family.** A wait has a blocking form, a
//!   `_timeout` form and an `_async` form, and a twin that never blocks.
//!   Where std names the non-blocking operation (`BTreeMap::pop_first`),
//!   it keeps that name and the blocking form adds `_wait`
//!   ([`OrderedIndex::pop_first_wait`]); where the blocking operation is
//!   the one its readers know (client-go's `Get`), the non-blocking twin
//!   is `try_` ([`WorkQueue::try_get`]). A wait that can fail in one way
//!   only (time ran out) returns an `Option`; one that can fail in
//!   several (the queue shut down, or was empty) returns a `Result` whose
//!   error names each, as std's channels do (`recv_timeout`).
//! - **`Debug`** is implemented by every public type, with no bounds on a
//!   container's parameters: a container prints a summary (length,
//!   configuration), never its entries; a snapshot, guard or view prints
//!   its entries and so needs `K: Debug`, `V: Debug`.
//! - **Deviations** keep the name their readers know: [`WorkQueue`] is
//!   client-go's work queue (`add`, `get` takes the next key to process,
//!   `done`, `forget`), [`Snapshot`] is arc-swap's (`load`, `store`, `swap`).
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
//!
//! [guides]: https://github.com/larder-rs/larder/tree/main/docs
//! [misuse]: https://github.com/larder-rs/larder/blob/main/docs/misuse.md
//! [async]: https://github.com/larder-rs/larder/blob/main/docs/async.md
//! [reflector-guide]: https://github.com/larder-rs/larder/blob/main/docs/reflector.md
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![doc(test(attr(deny(warnings))))]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's code examples, compiled and run as doctests (they show the
/// reflector, so they need the `reflector` feature, as the README's test
/// command has).
#[cfg(all(doctest, feature = "reflector"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// Files (a maintainer's map; each folder's module docs map its own):
// - one folder per primitive: `indexed/`, `ordered/`, `snapshot/`, `lru/`,
//   `typed/`, `workqueue/`, `reflector/`, `controller/` (the controller
//   runner); `cache/`: the engine under both caches; `guide.rs`: the
//   guides, as docs.rs modules.
// - shared by several: `flight/` (single-flight loading, sync and async),
//   `waiters.rs` (waiting consumers), `removal.rs` (RemovalCause, the
//   listener), `time.rs` (the Clock trait and clocks), `striped_lock.rs`
//   (the read-mostly lock), `shard_index.rs` (hash to shard),
//   `node_index.rs` (hash to slot table), `table_room.rs` (when a table
//   grows), `error.rs` (BuildError), `sync.rs` (std / parking_lot / loom
//   switch), `fault.rs` (loom-only fault selection for negative controls),
//   `watchdog.rs` (the tests' watchdog, `tests/common/watchdog.rs`).
mod cache;
#[cfg(feature = "reflector")]
#[cfg_attr(docsrs, doc(cfg(feature = "reflector")))]
pub mod controller;
mod error;
#[cfg(loom)]
#[doc(hidden)]
pub mod fault;
#[cfg(not(loom))]
mod fault;
mod flight;
pub mod guide;
mod indexed;
mod lru;
mod node_index;
mod ordered;
#[cfg(feature = "reflector")]
#[cfg_attr(docsrs, doc(cfg(feature = "reflector")))]
pub mod reflector;
mod removal;
mod shard_index;
mod snapshot;
mod striped_lock;
mod sync;
mod table_room;
mod time;
mod typed;
mod waiters;
/// The tests' watchdog (a hang fails fast, naming the test).
#[cfg(test)]
#[path = "../tests/common/watchdog.rs"]
mod watchdog;
mod workqueue;

pub use cache::CacheStats;
pub use error::BuildError;
pub use indexed::{IndexError, IndexedStore, IndexedStoreBuilder, Transaction};
pub use lru::{AsyncLoadingLruCache, EvictionPolicy, LoadingLruCache, LruCache, LruCacheBuilder};
pub use ordered::{OrderedIndex, OrderedIndexBuilder, OrderedLock, OrderedSnapshot};
pub use removal::RemovalCause;
pub use snapshot::{CachedReader, CompareAndSwapError, Guard, Snapshot, Versioned};
pub use time::{Clock, CoarseClock, ManualClock, SystemClock};
pub use typed::{AnyCache, AnyCacheBuilder, TypedCache, TypedCacheBuilder};
pub use workqueue::{
    DrainOutcome, ExponentialBackoff, GetTimeoutError, ItemFastSlow, MaxOf, RateLimiter,
    TokenBucket, TryGetError, WithMaxWait, WorkQueue, WorkQueueBuilder, WorkQueueStats,
};
