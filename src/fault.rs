//! Fault injection for the loom suite's negative controls: the one place
//! that selects a deliberately broken protocol.
//!
//! A negative control runs a loom model against a broken variant of a
//! protocol and must fail, which proves the model can catch that bug.
//!
//! # Where a broken variant lives
//!
//! A broken variant is an item of its own, in a file compiled only under
//! `cfg(loom)` (each folder's `broken.rs`), never a branch inside a
//! function that ships. The shipping function calls a private *step*
//! function; outside loom that name is the correct item itself (a `use
//! correct_step as step;`), so the build that ships contains no trace of
//! the fault; under loom it names a dispatcher in `broken.rs` that runs
//! the broken variant if the model selected it ([`is_selected`]) and the
//! correct item otherwise:
//!
//! ```ignore
//! // flight/mod.rs
//! #[cfg(loom)]
//! use broken::fail;
//! #[cfg(not(loom))]
//! use complete_failed as fail;
//!
//! // flight/broken.rs (cfg(loom) only)
//! pub(super) fn fail<K, V>(leader: &mut Leader<'_, K, V>, error: SharedError) {
//!     if is_selected(FlightFault::StickyError) {
//!         /* the broken variant */
//!         return;
//!     }
//!     complete_failed(leader, error);
//! }
//! ```
//!
//! Selection: under `cfg(loom)` a control [`inject`]s a fault on the
//! current thread (a loom model runs all of its threads on the thread that
//! called `loom::model`, so the selection holds for the whole model and for
//! no other test). The catalogue below (loom builds only) holds the broken
//! variants, one enum per protocol. A control injects one and then builds
//! the type as a user does, so no type has a loom-only constructor:
//!
//! ```ignore
//! let _fault = larder::fault::inject(larder::fault::SnapshotFault::LoadThenStore);
//! loom::model(|| { let snap = larder::Snapshot::new(0); /* ... */ });
//! ```

#[cfg(loom)]
pub use catalogue::*;

#[cfg(loom)]
mod catalogue {
    use std::cell::RefCell;

    thread_local! {
        /// The faults injected on this thread, in injection order.
        static SELECTED: RefCell<Vec<Fault>> = const { RefCell::new(Vec::new()) };
    }

    /// Selects `fault` on the current thread until the returned guard
    /// drops. Selecting a `None` variant selects nothing.
    #[must_use = "the fault is selected only while the guard lives"]
    pub fn inject(fault: impl Into<Fault>) -> Injected {
        let fault = fault.into();
        SELECTED.with(|selected| selected.borrow_mut().push(fault));
        Injected(fault)
    }

    /// Whether `fault` is selected on the current thread.
    pub fn is_selected(fault: impl Into<Fault>) -> bool {
        let fault = fault.into();
        SELECTED.with(|selected| selected.borrow().contains(&fault))
    }

    /// An injected fault; dropping it deselects the fault.
    #[derive(Debug)]
    pub struct Injected(Fault);

    impl Drop for Injected {
        fn drop(&mut self) {
            SELECTED.with(|selected| {
                let mut selected = selected.borrow_mut();
                if let Some(at) = selected.iter().rposition(|f| *f == self.0) {
                    selected.remove(at);
                }
            });
        }
    }

    /// Declares [`Fault`] over each protocol's enum, with a `From` for each.
    macro_rules! any_fault {
        ($($variant:ident($kind:ident)),* $(,)?) => {
            /// Any broken variant of the catalogue.
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub enum Fault {
                $(
                    #[doc = concat!("A [`", stringify!($kind), "`].")]
                    $variant($kind),
                )*
            }

            $(
                impl From<$kind> for Fault {
                    fn from(fault: $kind) -> Self {
                        Self::$variant(fault)
                    }
                }
            )*
        };
    }

    any_fault!(
        Flight(FlightFault),
        Wait(WaitFault),
        Snapshot(SnapshotFault),
        Typed(TypedFault),
        Lru(LruFault),
        Ordered(OrderedFault),
        WorkQueue(WorkQueueFault),
        Indexed(IndexedFault),
    );

    /// A broken single-flight protocol (`flight/`: the loads of `LruCache` and
    /// `TypedCache`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum FlightFault {
        /// The correct protocol.
        None,
        /// Check-then-act: no flight is registered; every miss runs its loader.
        SkipFlight,
        /// A failed flight stays registered: later callers get the old error.
        StickyError,
        /// A leader dropped while its loader's panic unwinds leaves its flight
        /// registered and never wakes its waiters.
        AbandonOnPanic,
        /// A leader dropped unfinished without a panic (an async leader's
        /// future dropped mid-load: cancelled) leaves its flight registered and
        /// never wakes its waiters.
        LeakOnCancel,
        /// A finished flight wakes only the first async waiter registered.
        WakeOneAsync,
        /// A finishing leader wakes one blocked waiter (`notify_one`) instead
        /// of all: a second waiter sleeps forever.
        NotifyOne,
        /// An async waiter checks the state and registers its waker under two
        /// separate locks: a `finish` that falls between them is never seen
        /// (a lost wake-up).
        RegisterUnlocked,
    }

    /// A broken wake-up protocol of `OrderedIndex`'s waiting consumers
    /// (`waiters.rs`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum WaitFault {
        /// The correct protocol.
        None,
        /// `insert` never wakes anyone.
        NoWake,
        /// `insert` loads the waiter count before it publishes the entry (and
        /// wakes only if that early load saw a waiter).
        CountBeforePublish,
        /// A blocking consumer registers after its failed try and waits without
        /// trying again.
        RegisterAfterCheck,
        /// `insert` wakes one waiter: the first pending future if there is one,
        /// else one blocked thread.
        WakeOne,
        /// A future that finds an entry keeps it and returns `Pending` once
        /// (waking itself), handing it out on the next poll: dropping it then
        /// loses the entry.
        TakeThenPending,
    }

    /// A broken `Snapshot` protocol.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum SnapshotFault {
        /// The correct protocol.
        None,
        /// `update` loads, computes and stores without checking (lost update).
        LoadThenStore,
        /// `store` takes its version from the value it loads before taking
        /// the writers' lock, then swaps under it (two racing stores can
        /// publish one version twice, or the later version first).
        VersionBeforeSwap,
        /// `compare_and_swap` compares before taking the writers' lock,
        /// then swaps under it in a second step.
        CheckThenSwap,
        /// `compare_and_swap` and `update` exchange without the writers'
        /// lock (one compare-exchange on the value), so the lock's version
        /// falls behind and a later `store` publishes a version again.
        ExchangeOutsideLock,
    }

    /// A broken `TypedCache` write-versus-init protocol (its loads:
    /// [`FlightFault`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TypedFault {
        /// The correct protocol.
        None,
        /// An init publishes its value even if an insert or invalidation landed
        /// while it ran (a stale value outlives the invalidation).
        InitIgnoresWrites,
        /// `insert` does not bump its shard's write generation: an init that
        /// raced it overwrites the inserted value.
        InsertKeepsGeneration,
        /// `clear` does not bump the write generations: an init that
        /// raced it publishes a value read before the invalidation.
        InvalidateAllKeepsGeneration,
        /// An insert decides whether eviction is needed from the total it read
        /// before taking its shard lock (check-then-act): two inserts into
        /// different shards can both decide "no room needed".
        EvictionCheckedBeforeLock,
        /// A write does not sweep its shard: an expired entry stays (and is
        /// counted in `len`) until a read finds it or `purge_expired` runs.
        WriteSkipsSweep,
        /// With a weigher: an eviction leaves its victim's weight in the
        /// total (the cache then counts weight it no longer holds).
        EvictionKeepsWeight,
        /// `resize` evicts down to the new capacity before setting it: a
        /// write landing in between evicts to the old capacity, and its
        /// entry stays over the new one.
        CapacityAfterShrink,
    }

    /// A broken `LruCache` protocol (its loads: [`FlightFault`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum LruFault {
        /// The correct protocol.
        None,
        /// `insert` adds the entry in one critical section and evicts in a
        /// second one: the bound (the entry count, or with a weigher the total
        /// weight) is exceeded in between.
        SplitEviction,
        /// `get` counts its hit or miss with a load then a store: outside the
        /// shard lock under `Exact`, under the shared lock (which other readers
        /// hold too) under `Clock`. Lost updates either way.
        RacyStats,
        /// Under `Clock`, a hit finds its entry under one shared lock and sets
        /// its reference bit under a second one: the hand can evict the entry
        /// in between, after the hit was reported.
        LateReferenceBit,
        /// `resize` stores a smaller capacity before the shards shrink: until
        /// they have, `stats()` reports more entries than capacity.
        CapacityBeforeShrink,
        /// A read that found its entry expired removes the key under the
        /// write lock it takes next without checking again that the entry
        /// there is the expired one: a value stored in between is released
        /// as expired.
        ReleaseUnchecked,
    }

    /// A broken `OrderedIndex` protocol (its waiting forms: [`WaitFault`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum OrderedFault {
        /// The correct protocol.
        None,
        /// `pop_first` and `drain_to` look under the read lock, then remove what
        /// they saw in a second step (the same entry goes to two callers).
        CheckThenRemove,
        /// `range`, `iter` and `snapshot` read one entry per read lock (a torn
        /// cut).
        TornCut,
        /// With [`OrderedLock::Partitioned`](crate::OrderedLock::Partitioned):
        /// ranges, snapshots and `drain_to` lock one leaf at a time, releasing
        /// each before taking the next (hand-over-hand instead of two-phase
        /// locking: a torn cut across leaves).
        LeafByLeaf,
        /// With [`OrderedLock::Partitioned`](crate::OrderedLock::Partitioned)
        /// and point lookups: `drain_to` removes the point-lookup slots after
        /// releasing the leaf locks (a point read finds an entry a range no
        /// longer shows).
        LateSlots,
        /// With [`OrderedLock::Partitioned`](crate::OrderedLock::Partitioned):
        /// the split or merge a write asks for finds its leaf again by the
        /// index the leaf had, not by its address (a concurrent split or merge
        /// that shifted the leaves sends it to the wrong leaf).
        StaleLeafIndex,
        /// With [`OrderedLock::Partitioned`](crate::OrderedLock::Partitioned):
        /// a split cuts at its prepared entry even after concurrent writes moved
        /// that entry to the front of the leaf (an empty leaf is left).
        SplitAtMovedMarker,
        /// With [`OrderedLock::Partitioned`](crate::OrderedLock::Partitioned):
        /// a merge checks only the left leaf for a snapshot sharing it, and
        /// merges a right leaf a snapshot still holds.
        MergeSharedLeaf,
        /// With [`OrderedLock::Partitioned`](crate::OrderedLock::Partitioned):
        /// `first` and `last` take an empty end leaf (emptied by a removal
        /// whose merge has not run yet) for an empty map, instead of dropping
        /// it and looking again.
        EmptyEndLeaf,
    }

    /// A broken `WorkQueue` protocol.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum WorkQueueFault {
        /// The correct protocol.
        None,
        /// `done` forgets that the key was added while it was processed: the
        /// add is lost.
        DoneForgetsDirty,
        /// `get` hands a key out without marking it processing: an add while
        /// it is processed queues it for a second worker.
        GetSkipsProcessing,
        /// `shut_down` wakes one waiting worker, not all of them.
        ShutdownWakesOne,
        /// `done` queues a key added during processing again but wakes no
        /// waiting worker.
        DoneSkipsWake,
        /// `shut_down` ends the drains in progress but wakes none of them:
        /// a drain already waiting waits on for keys no worker will finish.
        ShutdownSkipsDrains,
        /// `done` of the last held key of a queue shutting down wakes no
        /// drain.
        DoneSkipsDrainWake,
    }

    /// A broken `IndexedStore` protocol.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum IndexedFault {
        /// The correct protocol.
        None,
        /// `insert` and `remove` change the object under one write lock and the
        /// index under a second one.
        IndexOutsideLock,
        /// `replace` clears the store, then inserts the new objects one write
        /// lock at a time.
        ReplacePiecewise,
        /// Writes apply index values computed for an older set of indexes
        /// without checking that no index was added meanwhile.
        IgnoreSchemaChange,
        /// A revisioned insert records its revision in a second critical
        /// section, after the object.
        RevisionOutsideLock,
        /// The by-index visits read a bucket's keys under one read lock and
        /// look each object up under another.
        VisitTwoLocks,
        /// The whole-store reads that go through `IndexedStore::cut`
        /// (`to_vec`, `by_index_entries`, `index_keys`, `matching`) read-lock
        /// the shards one at a time, releasing each before taking the next.
        CutShardByShard,
        /// A shard's writer write-locks only read stripe 0 of its striped
        /// lock, not every stripe.
        WriterOneStripe,
        /// `add_index` installs the values it computed from its clones
        /// without dropping those of the slots written since it cloned them.
        AddIndexIgnoresWrites,
    }
}
