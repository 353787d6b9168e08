//! [`OrderedIndex`]: an ordered concurrent map for read-mostly indexes and for
//! consuming keys in order.
//!
//! The Go misuse this answers: keys that must be consumed in order (message
//! offsets, timestamps, versions) go into an unordered concurrent map, and the
//! consumer iterates it, getting them in hash order. The fix the Go documents
//! give is an ordered map under a read/write lock; `OrderedIndex` is that fix
//! with the atomic multi-step operations a consumer needs built in.
//!
//! # Design
//!
//! Two engines, chosen per instance ([`OrderedLock`]):
//!
//! - the default, partitioned one (`partitioned.rs`): sorted leaves under a
//!   lock each, a router of leaf bounds under a `ShardedLock`, and a
//!   point-lookup table split by hash into shards (`points.rs`); writers to
//!   different leaves run in parallel, and multi-leaf steps lock their
//!   leaves in key order, all at once;
//! - the single-lock one (`sequential.rs`, `lock.rs`): one
//!   `BTreeMap<K, Arc<V>>` written copy-on-write (O(1) snapshots) and a hash
//!   table over the same entries, under one reader-writer lock.
//!
//! The default was chosen by measurement: see `design/ordered.md`.
//!
//! # Files
//!
//! - `partitioned.rs`, with `partitioned/reads.rs` (reads that span
//!   leaves) and `partitioned/check.rs` (the layout check); `leaf.rs` (one
//!   sorted leaf); `points.rs` (the point-lookup table): the default engine.
//! - `sequential.rs` (the single-lock engine) and `lock.rs` (the lock
//!   chosen per instance, [`OrderedLock`]).
//! - `range.rs` (ordered reads), `consume.rs` (`retain`, `pop_*`,
//!   `drain_to`), `wait.rs` (their waiting forms), `view.rs`
//!   ([`OrderedSnapshot`]), `builder.rs`; this file: the face and point
//!   operations.
//! - Test machinery: `broken.rs` and `partitioned/broken.rs` (the loom
//!   negative controls' broken variants, compiled only under `cfg(loom)`),
//!   `tests.rs`, `wait_tests.rs`.

#[cfg(loom)]
mod broken;
mod builder;
mod consume;
mod leaf;
mod lock;
mod partitioned;
mod points;
mod range;
mod sequential;
mod view;
mod wait;

pub use builder::OrderedIndexBuilder;
pub use lock::OrderedLock;
pub use view::OrderedSnapshot;

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};

use self::lock::CoreLock;
use self::partitioned::Partitioned;
use self::sequential::OrderedCore;
use crate::sync::Arc;
use crate::waiters::Waiters;

#[cfg(loom)]
use broken::snapshot_cut;
#[cfg(not(loom))]
use snapshot_at_once as snapshot_cut;

/// An ordered concurrent map with atomic ordered consumption
/// ([`pop_first`](OrderedIndex::pop_first),
/// [`drain_to`](OrderedIndex::drain_to)), consistent range reads, immutable
/// snapshots, and point lookups through a hash table. By default the key
/// space is cut into sorted leaves under a lock each, so writers to
/// different leaves run in parallel ([`OrderedLock::Partitioned`]); the
/// builder offers one `BTreeMap` under one lock instead.
///
/// It is the fix for a classic misuse: keys that must be consumed in order
/// (message offsets, timestamps, versions) kept in an unordered concurrent map
/// that is then iterated, in hash order (see `examples/ordered_offsets.rs`).
///
/// Values are stored as `Arc<V>` and handed out as `Arc<V>` clones; no method
/// returns a guard that holds a lock. Keys are cloned out, so the methods
/// that return or write entries need `K: Clone`.
///
/// # How it is built
///
/// - **Leaves** (the default, [`OrderedLock::Partitioned`]): sorted arrays
///   of at most [`leaf_size`](OrderedIndexBuilder::leaf_size)
///   entries (128 by default), each under its own parking_lot `RwLock`,
///   found through a router of leaf bounds that every operation reads
///   under a `ShardedLock` (a read writes only the calling thread's shard).
///   A write locks one leaf; a full leaf splits and an emptied one merges
///   under the router's write lock, which briefly excludes everything else.
/// - **Point lookups by hash**: [`get`](OrderedIndex::get),
///   [`get_with`](OrderedIndex::get_with) and
///   [`contains_key`](OrderedIndex::contains_key) probe a hash table that
///   holds the same entries (the key's hash, a clone of the key, the same
///   `Arc<V>`), split by hash into 64 shards under a lock each: one probe
///   instead of a search of the router and a leaf. Everything ordered
///   (`range_to_vec`, `first`, `pop_first`, `drain_to`, ...) and every write's
///   search use the leaves. The price: `K: Hash` for the writes and point
///   reads, the hasher `S` (ahash's `RandomState` by default), a key clone,
///   a hash and a second lock per write, and a slot per entry.
///   [`OrderedIndexBuilder::point_lookups`]`(false)` leaves the table out.
/// - **One lock** ([`OrderedLock::Sharded`] or [`OrderedLock::Single`]):
///   one `BTreeMap` written copy-on-write, and the table beside it, under
///   one reader-writer lock. Snapshots are O(1) and one thread runs faster,
///   but writers exclude each other and everyone else.
///
/// At 2 threads the leaves beat one lock or match it on every workload but
/// short ranges, by several times on mixed and write-heavy work, where one
/// lock makes writers wait for each other and for every reader; the
/// [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md#orderedindex)
/// compare it with the peers.
///
/// With consistent `Ord`, `Hash` and `Eq` impls (`a == b` exactly when
/// `a.cmp(b)` is `Equal`, and equal keys hash alike) the table and the
/// ordered structure agree. With inconsistent impls they may disagree on
/// what is present, but never on what is stored: they are kept in step by
/// the identity of each entry's `Arc`, never by the user's impls (see
/// below).
///
/// # Guarantees
///
/// - Every method except [`retain`](OrderedIndex::retain) is one atomic step,
///   so it is linearizable: a concurrent reader sees the index before the
///   step or after it, never in between. A step holds every lock it needs
///   at once (the leaves it reads or writes, taken in key order, and the
///   table shards of the entries it changes) and takes none after letting
///   one go (two-phase locking); the loom models in `loom-tests/` check
///   this against a variant that locks one leaf at a time.
/// - A [`range_to_vec`](OrderedIndex::range_to_vec), [`to_vec`](OrderedIndex::to_vec),
///   [`range_count`](OrderedIndex::range_count),
///   [`for_each_in`](OrderedIndex::for_each_in),
///   [`len`](OrderedIndex::len) or [`snapshot`](OrderedIndex::snapshot) is a
///   consistent cut, the index as it was at one instant during the call:
///   sorted, no entry twice, nothing missed that was present throughout the
///   call.
/// - [`pop_first`](OrderedIndex::pop_first),
///   [`pop_last`](OrderedIndex::pop_last), [`drain_to`](OrderedIndex::drain_to),
///   [`remove`](OrderedIndex::remove) and the waiting forms
///   ([`pop_first_wait`](OrderedIndex::pop_first_wait),
///   [`pop_first_timeout`](OrderedIndex::pop_first_timeout),
///   [`pop_first_async`](OrderedIndex::pop_first_async) and their
///   `drain_to` twins) from any number of threads and tasks hand every
///   entry to exactly one caller. A waiting consumer is woken by every
///   `insert` of a new key; a cancelled async wait takes nothing.
/// - User code never runs under a lock, except `K`'s `Ord`, `Eq` and
///   `Clone` (which the map needs), `Hash` of the keys that `pop_first`,
///   `pop_last` and `drain_to` remove (known only under the lock), and the
///   closures of
///   [`for_each_in`](OrderedIndex::for_each_in) and
///   [`get_with`](OrderedIndex::get_with) (their documented purpose).
///   Replaced and removed values are dropped by the caller, after unlocking.
///   In detail, for a write:
///
///   | User code | Where it runs |
///   |---|---|
///   | `K`'s `Hash` of the written key, and `K::clone` for the table's copy | with no lock held, before anything changes |
///   | `K`'s `Hash` of the keys a pop or drain removes | under the write locks, before the first change |
///   | `K`'s `Ord` (the search) | under the write locks, before the first change |
///   | `K::clone` of a leaf's keys or of the whole tree, when a snapshot shares them | under the write locks, before the first change (the copy replaces what the snapshot shares; nobody sees it) |
///   | `K::clone` of the bound for a leaf split (leaves) | under the leaf's write lock, before the insert's first change; the split itself, under the router's write lock, moves entries by position |
///   | `K`'s `Eq` | never in a write; in point lookups, under a shard's read lock |
///   | `Drop` of replaced or removed keys and values, displaced leaf or tree copies | after every lock is released |
///
///   Merging or dropping a leaf emptied by a removal runs no user code (a
///   merge that would have to copy a leaf a snapshot shares is skipped).
///   One exception, only when another thread steps in between an insert
///   that fills a leaf and the split that follows it (a snapshot taken, or
///   the split's entry removed, in that instant): the split then clones
///   keys under the router's write lock, after the insert has landed. A
///   panic there leaves the leaf over its capacity, with every entry in
///   place, until the next insert into it splits it.
///
/// # The check-then-remove race, and `pop_first`
///
/// Consuming the least entry in two steps, look then remove, hands the same
/// entry to two consumers when they look at the same time:
///
/// ```
/// use larder::OrderedIndex;
///
/// let pending = OrderedIndex::new();
/// pending.insert(7_u64, "message 7");
///
/// // BROKEN: check-then-remove. Two consumers can both see offset 7 in
/// // `first()` before either removes it, and both process it.
/// if let Some((offset, _message)) = pending.first() {
///     pending.remove(&offset);
/// }
///
/// // CORRECT: `pop_first` looks and removes in one step under the write
/// // lock, so every entry goes to exactly one caller.
/// pending.insert(8, "message 8");
/// assert_eq!(pending.pop_first().map(|(offset, _)| offset), Some(8));
/// ```
///
/// The loom model `ordered_consumers_take_each_entry_once` in `loom-tests/`
/// proves `pop_first` and `drain_to` hand out every entry exactly once, and
/// that the check-then-remove variant does not.
///
/// # A key type whose `Ord`, `Hash` or `Eq` is inconsistent
///
/// If `K`'s `Ord` is not a total order, or a key's order changes while it is
/// in the index, `OrderedIndex` gives exactly what `BTreeMap` gives: memory
/// safety, and unspecified but contained results. Lookups may miss entries
/// that are there, inserts may store a key twice, ranges may skip entries or
/// panic on bounds that look inverted, and std allows even non-termination of
/// a search. A `Hash` or `Eq` that disagrees with `Ord` (or with itself)
/// makes `get` and `contains_key` answer differently from `range_to_vec`, as a
/// `HashMap` and a `BTreeMap` of the same keys would. With the leaves, a
/// snapshot's map is built key by key, so it may hold fewer entries than
/// the index.
///
/// What `OrderedIndex` adds: nothing is poisoned, ever, and the ordered
/// entries and the lookup table always hold exactly the same entries. A panic in `cmp`,
/// `hash`, `eq` or `clone` unwinds out of the one call that made it with the
/// lock released and the index as it was before that call (each operation
/// makes every such call before its first change; see the table above), and
/// every later call works. A panicking `Drop` unwinds after its step, which
/// has then fully taken effect (an entry a pop or drain took out is then
/// dropped with the panic, not returned). `tests/ordered_hostile.rs` plants
/// a panic at every such call of every write, for every engine. The table finds a slot to remove by its stored hash and the
/// identity of its `Arc`, and by a scan when the key's hash has changed, so
/// no entry outlives its removal in either structure. Operations that do not
/// search, [`len`](OrderedIndex::len), [`to_vec`](OrderedIndex::to_vec),
/// [`pop_first`](OrderedIndex::pop_first), [`pop_last`](OrderedIndex::pop_last),
/// [`clear`](OrderedIndex::clear) and `drain_to(Bound::Unbounded)`, work on
/// the map's stored order and still account for every stored entry exactly
/// once. The test `inconsistent_ord_poisons_nothing` in `tests/ordered.rs`
/// checks this with a key whose `cmp` and `hash` are random, and a unit test
/// checks the entries and the table after every step of such a run, for each engine.
///
/// # When to use it
///
/// Offsets, timestamps, versions or names that are looked up and also
/// scanned or consumed in order, by several threads. For unordered point
/// lookups alone use a hash map. For a consumer that only inserts and
/// drains, [`point_lookups`](OrderedIndexBuilder::point_lookups)`(false)`
/// saves the table's work on every write. For one thread, or for many
/// O(1) snapshots, [`OrderedLock::Single`] or [`OrderedLock::Sharded`].
/// The [benchmarks](https://github.com/larder-rs/larder/blob/main/docs/benchmarks.md) have the measured trade-offs.
///
/// # Examples
///
/// ```
/// use larder::OrderedIndex;
/// use std::ops::Bound;
///
/// let offsets = OrderedIndex::new();
/// for offset in [105_u64, 101, 103, 102, 104] {
///     offsets.insert(offset, format!("message {offset}"));
/// }
/// // Consume everything up to the committed offset, in order, in one step.
/// let done = offsets.drain_to(Bound::Included(&103));
/// let drained: Vec<u64> = done.iter().map(|(offset, _)| *offset).collect();
/// assert_eq!(drained, [101, 102, 103]);
/// assert_eq!(offsets.first().map(|(offset, _)| offset), Some(104));
/// ```
pub struct OrderedIndex<K, V, S = ahash::RandomState> {
    engine: Engine<K, V>,
    /// Hashes keys for the point-lookup table; used outside the lock.
    hasher: S,
    /// Whether the core keeps the point-lookup table (fixed at
    /// construction; read here so that no hashing is done without one).
    point_lookups: bool,
    /// The consumers waiting for an entry (`wait.rs`).
    waiters: Waiters,
}

/// The map and its locking: one tree under one lock, or leaves under
/// locks of their own.
enum Engine<K, V> {
    /// One `BTreeMap` (and the point-lookup table) under one lock.
    Locked(CoreLock<OrderedCore<K, V>>),
    /// Sorted leaves under a lock each (`partitioned.rs`).
    Partitioned(Partitioned<K, V>),
}

impl<K, V> OrderedIndex<K, V> {
    /// Creates an empty index, hashing keys with ahash's `RandomState`.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u64, String> = larder::OrderedIndex::new();
    /// assert!(index.is_empty());
    /// ```
    pub fn new() -> Self {
        OrderedIndexBuilder::new().build_index()
    }

    /// A builder, to choose the lock ([`OrderedLock`]), whether point
    /// lookups use a hash table, and the hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{OrderedIndex, OrderedLock};
    ///
    /// // A consumer's offsets: written as often as read, never looked up by
    /// // key, so one lock word and no point-lookup table.
    /// let offsets: OrderedIndex<u64, String> = OrderedIndex::builder()
    ///     .lock(OrderedLock::Single)
    ///     .point_lookups(false)
    ///     .build()
    ///     .unwrap();
    /// offsets.insert(7, "message 7".into());
    /// assert_eq!(offsets.pop_first().map(|(offset, _)| offset), Some(7));
    /// ```
    pub fn builder() -> OrderedIndexBuilder<K, V> {
        OrderedIndexBuilder::new()
    }
}

impl<K, V, S> OrderedIndex<K, V, S> {
    /// `point_lookups`: whether `engine` keeps the point-lookup table.
    fn from_engine(engine: Engine<K, V>, hasher: S, point_lookups: bool) -> Self {
        Self {
            point_lookups,
            engine,
            hasher,
            waiters: Waiters::new(),
        }
    }

    /// The lock this index was built with.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{OrderedIndex, OrderedLock};
    ///
    /// let index: OrderedIndex<u8, u8> = OrderedIndex::new();
    /// assert_eq!(index.lock_kind(), OrderedLock::Partitioned);
    /// ```
    pub fn lock_kind(&self) -> OrderedLock {
        match &self.engine {
            Engine::Locked(core) => core.kind(),
            Engine::Partitioned(_) => OrderedLock::Partitioned,
        }
    }

    /// The most entries a leaf holds before it splits, for an index built
    /// with [`OrderedLock::Partitioned`]; `None` for the others.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{OrderedIndex, OrderedLock};
    ///
    /// let index: OrderedIndex<u8, u8> =
    ///     OrderedIndex::builder().lock(OrderedLock::Partitioned).leaf_size(64).build().unwrap();
    /// assert_eq!(index.leaf_size(), Some(64));
    /// ```
    pub fn leaf_size(&self) -> Option<usize> {
        match &self.engine {
            Engine::Locked(_) => None,
            Engine::Partitioned(parts) => Some(parts.leaf_size()),
        }
    }

    /// Whether point lookups (`get`, `get_with`, `contains_key`) use the hash
    /// table (the default) or search the ordered entries.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    ///
    /// let index: OrderedIndex<u8, u8> = OrderedIndex::builder().point_lookups(false).build().unwrap();
    /// assert!(!index.has_point_lookups());
    /// index.insert(1, 10);
    /// assert_eq!(index.get(&1).as_deref(), Some(&10)); // a search of the leaves
    /// ```
    pub fn has_point_lookups(&self) -> bool {
        self.point_lookups
    }

    /// The index's hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, ()> = larder::OrderedIndex::new();
    /// let hasher = index.hasher();
    /// assert_eq!(hasher.hash_one(7_u8), hasher.hash_one(7_u8));
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }

    /// The number of entries, at one instant.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert(1, 'a');
    /// index.insert(1, 'b');
    /// assert_eq!(index.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        match &self.engine {
            Engine::Locked(core) => core.read().map().len(),
            Engine::Partitioned(parts) => parts.len(),
        }
    }

    /// Whether the index has no entries, at one instant.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// assert!(index.is_empty());
    /// index.insert("k", 0);
    /// assert!(!index.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        match &self.engine {
            Engine::Locked(core) => core.read().map().is_empty(),
            Engine::Partitioned(parts) => parts.is_empty(),
        }
    }

    /// Removes every entry, atomically. The removed values are dropped after
    /// the lock is released (or later, by whoever still holds them).
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, u8> = (0..10).map(|k| (k, k)).collect();
    /// index.clear();
    /// assert!(index.is_empty());
    /// ```
    pub fn clear(&self) {
        match &self.engine {
            Engine::Locked(core) => {
                let retired = {
                    let mut core = core.write();
                    core.clear();
                    core.take_retired()
                };
                drop(retired);
            }
            Engine::Partitioned(parts) => parts.clear(),
        }
    }

    /// An immutable view of the whole index at this instant.
    ///
    /// With the default leaves ([`OrderedLock::Partitioned`]) this is O(n):
    /// under the read locks of all leaves it only takes a reference to each
    /// leaf (O(number of leaves)); it builds the view's map after releasing
    /// them (O(n) key clones and `Arc` increments). A writer that meets a
    /// leaf still referenced by a snapshot being built copies that leaf
    /// (O(leaf)).
    ///
    /// With one lock ([`OrderedLock::Sharded`], [`OrderedLock::Single`]) it
    /// is O(1): the view shares the index's map, and the index's next write
    /// while any snapshot of the current version is alive first copies the
    /// map (O(n) clones of keys and `Arc`s, under the write lock). So with
    /// one lock, take snapshots for a unit of work and drop them, rather
    /// than one per write.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::OrderedIndex;
    ///
    /// let index = OrderedIndex::new();
    /// index.insert(10, "ten");
    /// let before = index.snapshot();
    /// index.remove(&10);
    /// assert_eq!(before.get(&10).map(|v| **v), Some("ten"));
    /// assert!(index.get(&10).is_none());
    /// ```
    pub fn snapshot(&self) -> OrderedSnapshot<K, V>
    where
        K: Ord + Clone,
    {
        snapshot_cut(self)
    }

    /// Runs one write step under the write lock, then drops whatever map
    /// version the step displaced after unlocking.
    fn write<R>(
        core: &CoreLock<OrderedCore<K, V>>,
        step: impl FnOnce(&mut OrderedCore<K, V>) -> R,
    ) -> R {
        let mut core = core.write();
        let result = step(&mut core);
        let retired = core.take_retired();
        drop(core);
        drop(retired);
        result
    }
}

/// [`OrderedIndex::snapshot`]'s step: the map at one consistent cut,
/// shared (one lock) or built from the leaves shared at one instant.
#[inline(always)]
fn snapshot_at_once<K: Ord + Clone, V, S>(index: &OrderedIndex<K, V, S>) -> OrderedSnapshot<K, V> {
    match &index.engine {
        Engine::Locked(core) => OrderedSnapshot::new(core.read().share()),
        Engine::Partitioned(parts) => OrderedSnapshot::new(Arc::new(parts.snapshot())),
    }
}

impl<K: Ord + Clone + Hash, V, S: BuildHasher> OrderedIndex<K, V, S> {
    /// The value stored under `key`: one probe of the point-lookup table
    /// (by `Hash` and `Eq`), under the read lock.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert(String::from("alpha"), 1);
    /// assert_eq!(index.get("alpha").as_deref(), Some(&1));
    /// assert_eq!(index.get("beta"), None);
    /// ```
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Ord + Hash + Eq + ?Sized,
    {
        self.lookup(key, Arc::clone)
    }

    /// Runs `f` on the stored `Arc` of `key` under the engine's read lock:
    /// the one point read behind `get`, `get_with` and `contains_key`.
    #[inline]
    fn lookup<Q, R>(&self, key: &Q, f: impl FnOnce(&Arc<V>) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Ord + Hash + Eq + ?Sized,
    {
        let hash = self.hash_of(key);
        match &self.engine {
            Engine::Locked(core) => core.read().lookup(hash, key).map(f),
            Engine::Partitioned(parts) => parts.view(hash, key, f),
        }
    }

    /// The key's hash for the table; 0 (and no call of `Hash`) when there is
    /// no table.
    #[inline]
    fn hash_of<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        if self.point_lookups {
            self.hasher.hash_one(key)
        } else {
            0
        }
    }

    /// Runs `f` on the value stored under `key`, under the read lock, and
    /// returns what it returns; `None` when `key` is absent.
    ///
    /// The fastest point read: unlike [`get`](OrderedIndex::get) it does not
    /// clone the value's `Arc`, so a read writes no memory another reader
    /// touches (the `Arc`'s reference count is shared by every reader of a
    /// key; the read lock writes only the calling thread's shard). Use it
    /// to copy out or compute from a value; use `get` to keep the value.
    /// DashMap calls the same operation `view`; this crate calls it
    /// `get_with` on every keyed primitive.
    ///
    /// # Deadlocks
    ///
    /// `f` runs while the read lock is held: it must not call into the same
    /// index at all. A write from `f` waits for its own read lock (a
    /// deadlock), and so can a read, once a writer is queued between the
    /// two. A panic in `f` releases the lock and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert(7_u64, String::from("seven"));
    /// assert_eq!(index.get_with(&7, |value| value.len()), Some(5));
    /// assert_eq!(index.get_with(&8, |value| value.len()), None);
    /// ```
    #[inline]
    pub fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Ord + Hash + Eq + ?Sized,
    {
        self.lookup(key, |value| f(value))
    }

    /// Whether `key` has an entry, at this instant.
    ///
    /// Acting on the answer is a check-then-act race: by the time the caller
    /// acts, another thread may have inserted or removed `key`. Use the
    /// return value of [`insert`](OrderedIndex::insert) or
    /// [`remove`](OrderedIndex::remove) instead.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert(3, ());
    /// assert!(index.contains_key(&3));
    /// assert!(!index.contains_key(&4));
    /// ```
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + Hash + Eq + ?Sized,
    {
        self.lookup(key, |_| ()).is_some()
    }

    /// Inserts `value` under `key`, atomically; returns the value it
    /// replaced. As with `BTreeMap`, replacing keeps the stored key.
    ///
    /// The value is wrapped in its `Arc`, and the key hashed and cloned (for
    /// the point-lookup table), before the lock is taken. A new key wakes
    /// the consumers waiting for an entry
    /// ([`pop_first_wait`](OrderedIndex::pop_first_wait) and the other
    /// waiting forms); with none waiting that costs one atomic load.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// assert_eq!(index.insert(1, "a"), None);
    /// assert_eq!(index.insert(1, "b").as_deref(), Some(&"a"));
    /// assert_eq!(index.get(&1).as_deref(), Some(&"b"));
    /// ```
    pub fn insert(&self, key: K, value: V) -> Option<Arc<V>> {
        let value = Arc::new(value);
        let slot_key = self
            .point_lookups
            .then(|| (self.hasher.hash_one(&key), key.clone()));
        let publishing = self.waiters.before_insert();
        let replaced = match &self.engine {
            Engine::Locked(core) => Self::write(core, |core| core.insert(slot_key, key, value)).0,
            Engine::Partitioned(parts) => parts.insert(slot_key, key, value),
        };
        // A new entry wakes the consumers waiting for one (`wait.rs`).
        self.waiters.after_insert(publishing, replaced.is_none());
        replaced
    }

    /// Removes `key`, atomically; returns its value. Of several threads
    /// removing the same key, exactly one gets the value.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// index.insert(5, "five");
    /// assert_eq!(index.remove(&5).as_deref(), Some(&"five"));
    /// assert_eq!(index.remove(&5), None);
    /// ```
    pub fn remove<Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Ord + Hash + ?Sized,
    {
        let removed = match &self.engine {
            Engine::Locked(core) => {
                let hash = self.hash_of(key);
                Self::write(core, |core| core.remove(hash, key))
            }
            Engine::Partitioned(parts) => parts.remove(self.hash_of(key), key),
        };
        removed.map(|(_key, value)| value)
    }
}

impl<K, V> Default for OrderedIndex<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone + Hash, V> FromIterator<(K, V)> for OrderedIndex<K, V> {
    /// Builds an index from `(key, value)` pairs; a later pair replaces an
    /// earlier one with the same key.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let map = iter
            .into_iter()
            .map(|(key, value)| (key, Arc::new(value)))
            .collect();
        OrderedIndexBuilder::new().build_from(map)
    }
}

/// A summary (length and configuration), like every larder container; the
/// entries are not printed: format a [`snapshot`](OrderedIndex::snapshot)
/// to see them.
impl<K, V, S> fmt::Debug for OrderedIndex<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrderedIndex")
            .field("len", &self.len())
            .field("lock", &self.lock_kind())
            .field("leaf_size", &self.leaf_size())
            .field("point_lookups", &self.has_point_lookups())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(all(test, not(loom)))]
mod wait_tests;
