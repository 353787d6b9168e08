//! The sequential state of a [`WorkQueue`](super::WorkQueue): `&mut self`,
//! no locks. The wrapper in `mod.rs` holds it under one mutex.
//!
//! Every key known to the queue has one entry in a slab, found through a
//! hash table that stores slab slots and reads each entry's hash from the
//! entry (no user `Hash` runs inside the table). An entry lives while its
//! key is *dirty* (added and not yet taken), *processing* (taken by a
//! worker and not yet done) or *delayed* (added for a later time):
//!
//! | dirty | processing | where the key is |
//! |---|---|---|
//! | yes | no | in `queue`, once |
//! | no | yes | with one worker |
//! | yes | yes | with one worker, queued again by its `done` |
//!
//! A delayed key also has an item in the `delayed` heap; heap items are
//! removed lazily (an item whose entry is gone or now due at another time
//! is skipped), so a sooner `add_after` just pushes a new item.
//!
//! User code: each method runs every `Eq` and `Clone` of `K` before its
//! first change, so a panicking one leaves the state as it was. Keys that
//! leave the queue are handed back to the caller, to be dropped after the
//! lock is released.

use std::borrow::Borrow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use hashbrown::HashTable;

use super::stats::Counters;

/// One key's state.
#[derive(Debug)]
struct KeyState<K> {
    hash: u64,
    key: K,
    /// Unique among the entries ever created, so that a heap item of a
    /// freed and reused slot is recognised as stale.
    id: u64,
    dirty: bool,
    processing: bool,
    /// When the key is due, if it waits for a later time.
    due: Option<Duration>,
    /// When the key last became dirty (for the time-in-queue statistics).
    dirty_since: Duration,
    /// When a worker took the key (for the processing statistics).
    processing_since: Duration,
}

impl<K> KeyState<K> {
    fn alive(&self) -> bool {
        self.dirty || self.processing || self.due.is_some()
    }
}

/// What [`Core::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Added {
    /// Queued: a waiting worker can take it.
    Queued,
    /// Already waiting in the queue: not queued twice.
    AlreadyQueued,
    /// Being processed: marked to be queued again when its worker is done.
    WhileProcessing,
    /// The queue is shutting down: ignored.
    Ignored,
}

/// What [`Core::pop`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Popped<K> {
    /// A key, now processing.
    Key(K),
    /// Nothing queued.
    Empty,
    /// Nothing queued, and the queue is shutting down.
    ShutDown,
}

/// The sequential state of a work queue.
#[derive(Debug)]
pub(crate) struct Core<K> {
    entries: Vec<Option<KeyState<K>>>,
    free: Vec<usize>,
    table: HashTable<usize>,
    /// Slots of the entries that are dirty and not processing, in order.
    queue: VecDeque<usize>,
    /// `(due, entry id, slot)`, soonest first; stale items skipped.
    delayed: BinaryHeap<Reverse<(Duration, u64, usize)>>,
    next_id: u64,
    processing: usize,
    delayed_keys: usize,
    shutting_down: bool,
    /// How many times the queue was shut down without a drain: a drain
    /// ends (forced) once this moves past the value it began with.
    forced_shutdowns: u64,
    pub(crate) counters: Counters,
}

impl<K> Default for Core<K> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
            table: HashTable::new(),
            queue: VecDeque::new(),
            delayed: BinaryHeap::new(),
            next_id: 0,
            processing: 0,
            delayed_keys: 0,
            shutting_down: false,
            forced_shutdowns: 0,
            counters: Counters::default(),
        }
    }
}

impl<K> Core<K> {
    fn entry(&self, slot: usize) -> &KeyState<K> {
        self.entries[slot]
            .as_ref()
            .expect("larder: a work queue slot in use holds an entry")
    }

    fn entry_mut(&mut self, slot: usize) -> &mut KeyState<K> {
        self.entries[slot]
            .as_mut()
            .expect("larder: a work queue slot in use holds an entry")
    }

    /// The slot of `key`'s entry. Runs `Eq` only; changes nothing.
    fn find<Q>(&self, hash: u64, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let entries = &self.entries;
        self.table
            .find(hash, |&slot| {
                entries[slot]
                    .as_ref()
                    .is_some_and(|entry| entry.hash == hash && entry.key.borrow() == key)
            })
            .copied()
    }

    /// Creates an entry for `key` (runs no user code).
    fn create(&mut self, hash: u64, key: K, now: Duration) -> usize {
        let id = self.next_id;
        self.next_id += 1;
        let entry = KeyState {
            hash,
            key,
            id,
            dirty: false,
            processing: false,
            due: None,
            dirty_since: now,
            processing_since: now,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.entries[slot] = Some(entry);
                slot
            }
            None => {
                self.entries.push(Some(entry));
                self.entries.len() - 1
            }
        };
        let entries = &self.entries;
        self.table.insert_unique(hash, slot, |&other| {
            entries[other].as_ref().map_or(0, |entry| entry.hash)
        });
        slot
    }

    /// Removes the entry in `slot` if nothing keeps it alive; returns its
    /// key, for the caller to drop after unlocking.
    fn release(&mut self, slot: usize) -> Option<K> {
        if self.entry(slot).alive() {
            return None;
        }
        let hash = self.entry(slot).hash;
        if let Ok(found) = self.table.find_entry(hash, |&other| other == slot) {
            found.remove();
        }
        self.free.push(slot);
        self.entries[slot].take().map(|entry| entry.key)
    }

    /// Marks the entry in `slot` dirty, queueing it unless a worker holds
    /// it.
    fn mark_dirty(&mut self, slot: usize, now: Duration) -> Added {
        let entry = self.entry_mut(slot);
        if entry.dirty {
            return if entry.processing {
                Added::WhileProcessing
            } else {
                Added::AlreadyQueued
            };
        }
        entry.dirty = true;
        entry.dirty_since = now;
        let processing = entry.processing;
        self.counters.adds += 1;
        if processing {
            Added::WhileProcessing
        } else {
            self.queue.push_back(slot);
            Added::Queued
        }
    }

    /// client-go's `Add`. Returns what happened and, when the key was
    /// already known, the `key` given, to be dropped after unlocking.
    pub(crate) fn add(&mut self, hash: u64, key: K, now: Duration) -> (Added, Option<K>)
    where
        K: Eq,
    {
        if self.shutting_down {
            return (Added::Ignored, Some(key));
        }
        match self.find(hash, &key) {
            Some(slot) => (self.mark_dirty(slot, now), Some(key)),
            None => {
                let slot = self.create(hash, key, now);
                (self.mark_dirty(slot, now), None)
            }
        }
    }

    /// client-go's `AddAfter` for a positive delay: `key` is due at `due`,
    /// or at the time it is already due if that is sooner. Returns whether
    /// `due` is now the soonest time of the heap (the delay thread must
    /// look again), and the `key` given if it was already known.
    pub(crate) fn add_at(&mut self, hash: u64, key: K, due: Duration) -> (bool, Option<K>)
    where
        K: Eq,
    {
        if self.shutting_down {
            return (false, Some(key));
        }
        let (slot, leftover) = match self.find(hash, &key) {
            Some(slot) => (slot, Some(key)),
            None => (self.create(hash, key, due), None),
        };
        let entry = self.entry_mut(slot);
        let was_delayed = match entry.due {
            Some(current) if current <= due => return (false, leftover),
            Some(_) => true,
            None => false,
        };
        entry.due = Some(due);
        let id = entry.id;
        self.delayed_keys += usize::from(!was_delayed);
        let soonest = self.next_due().is_none_or(|next| due < next);
        self.delayed.push(Reverse((due, id, slot)));
        (soonest, leftover)
    }

    /// Drops the heap's stale items from its top.
    fn skip_stale(&mut self) {
        while let Some(&Reverse((due, id, slot))) = self.delayed.peek() {
            let live = self.entries[slot]
                .as_ref()
                .is_some_and(|entry| entry.id == id && entry.due == Some(due));
            if live {
                return;
            }
            self.delayed.pop();
        }
    }

    /// When the soonest delayed key is due.
    pub(crate) fn next_due(&mut self) -> Option<Duration> {
        self.skip_stale();
        self.delayed.peek().map(|Reverse((due, _, _))| *due)
    }

    /// Moves every delayed key due at `now` into the queue (as `add`).
    /// Returns how many were queued.
    pub(crate) fn promote_due(&mut self, now: Duration) -> usize {
        let mut queued = 0;
        loop {
            self.skip_stale();
            let slot = match self.delayed.peek() {
                Some(&Reverse((due, _, slot))) if due <= now => slot,
                _ => return queued,
            };
            self.delayed.pop();
            self.entry_mut(slot).due = None;
            self.delayed_keys -= 1;
            if self.mark_dirty(slot, now) == Added::Queued {
                queued += 1;
            }
        }
    }

    /// client-go's `Get` without the wait: takes the first queued key
    /// (promoting the due delayed keys first) and marks it processing.
    /// Runs `Clone` of the key after the promotion (a complete change of
    /// its own) and before changing anything else. Returns how many
    /// delayed keys it queued, too.
    pub(crate) fn pop(&mut self, now: Duration) -> (Popped<K>, usize)
    where
        K: Clone,
    {
        let promoted = if self.shutting_down {
            0
        } else {
            self.promote_due(now)
        };
        (self.take_first(now), promoted)
    }

    fn take_first(&mut self, now: Duration) -> Popped<K>
    where
        K: Clone,
    {
        let Some(&slot) = self.queue.front() else {
            return if self.shutting_down {
                Popped::ShutDown
            } else {
                Popped::Empty
            };
        };
        let key = self.entry(slot).key.clone();
        self.queue.pop_front();
        let entry = self.entry_mut(slot);
        entry.dirty = false;
        let waited = now.saturating_sub(entry.dirty_since);
        hand_out(self, slot, now, waited);
        Popped::Key(key)
    }

    /// client-go's `Done`: the worker holding `key` is finished. Returns
    /// whether the key was queued again (it was added while processing),
    /// and the key if its entry went away, to be dropped after unlocking.
    /// A key not being processed is left alone.
    pub(crate) fn done<Q>(&mut self, hash: u64, key: &Q, now: Duration) -> (bool, Option<K>)
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let Some(slot) = self.find(hash, key) else {
            return (false, None);
        };
        let entry = self.entry_mut(slot);
        if !entry.processing {
            return (false, None);
        }
        entry.processing = false;
        let worked = now.saturating_sub(entry.processing_since);
        let requeue = requeue_after_done(entry);
        self.processing -= 1;
        self.counters.processed(worked);
        if requeue {
            self.entry_mut(slot).dirty_since = now;
            self.queue.push_back(slot);
            (true, None)
        } else {
            (false, self.release(slot))
        }
    }

    /// client-go's `ShutDown`: later adds are ignored, delayed keys are
    /// dropped (returned, to drop after unlocking), queued keys can still
    /// be taken.
    pub(crate) fn shut_down(&mut self) -> Vec<K> {
        self.shutting_down = true;
        let mut dropped = Vec::new();
        let slots: Vec<usize> = self
            .delayed
            .drain()
            .map(|Reverse((_, _, slot))| slot)
            .collect();
        for slot in slots {
            if let Some(entry) = self.entries[slot].as_mut() {
                if entry.due.take().is_some() {
                    self.delayed_keys -= 1;
                    dropped.extend(self.release(slot));
                }
            }
        }
        dropped
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// client-go's `ShutDown` clearing the drain flag: every drain begun
    /// before this call ends, whether or not its keys are done.
    pub(crate) fn force_shut_down(&mut self) {
        self.forced_shutdowns = self.forced_shutdowns.wrapping_add(1);
    }

    /// How many forced shutdowns there were: a drain remembers the value
    /// it began with and ends when it changes.
    pub(crate) fn forced_shutdowns(&self) -> u64 {
        self.forced_shutdowns
    }

    /// Keys queued (dirty and not processing): client-go's `Len`.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Keys held by workers now.
    pub(crate) fn processing(&self) -> usize {
        self.processing
    }

    /// Keys waiting for a later time.
    pub(crate) fn delayed(&self) -> usize {
        self.delayed_keys
    }

    /// The start times of the keys being processed now.
    pub(crate) fn processing_since(&self) -> impl Iterator<Item = Duration> + '_ {
        self.entries
            .iter()
            .flatten()
            .filter(|entry| entry.processing)
            .map(|entry| entry.processing_since)
    }

    /// Checks every invariant of the module docs; panics naming the broken
    /// one. For tests.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_invariants(&self) {
        let live: Vec<usize> = (0..self.entries.len())
            .filter(|&slot| self.entries[slot].is_some())
            .collect();
        assert_eq!(live.len(), self.table.len(), "table and slab disagree");
        assert_eq!(
            live.len() + self.free.len(),
            self.entries.len(),
            "free list and slab disagree"
        );
        let mut queued = std::collections::HashSet::new();
        for &slot in &self.queue {
            assert!(queued.insert(slot), "a key is queued twice");
            let entry = self.entry(slot);
            assert!(
                entry.dirty && !entry.processing,
                "a queued key is not dirty"
            );
        }
        let (mut processing, mut delayed) = (0, 0);
        for &slot in &live {
            let entry = self.entry(slot);
            assert!(entry.alive(), "an entry outlived its key's reasons");
            assert_eq!(
                self.table.find(entry.hash, |&other| other == slot),
                Some(&slot),
                "an entry is missing from the table"
            );
            assert_eq!(
                entry.dirty && !entry.processing,
                queued.contains(&slot),
                "a dirty key is not queued"
            );
            processing += usize::from(entry.processing);
            if let Some(due) = entry.due {
                delayed += 1;
                assert!(
                    self.delayed
                        .iter()
                        .any(|Reverse(item)| *item == (due, entry.id, slot)),
                    "a delayed key has no heap item"
                );
            }
        }
        assert_eq!(processing, self.processing, "processing count is off");
        assert_eq!(delayed, self.delayed_keys, "delayed count is off");
    }
}

/// `pop`'s last step: the key taken from `slot` (no longer dirty), which
/// waited `waited` in the queue, is now processing.
fn mark_processing<K>(core: &mut Core<K>, slot: usize, now: Duration, waited: Duration) {
    let entry = core.entry_mut(slot);
    entry.processing = true;
    entry.processing_since = now;
    core.processing += 1;
    core.counters.waited(waited);
}

/// Whether the key `done` finished was added while it was processed (and
/// so is queued again).
fn added_while_processing<K>(entry: &mut KeyState<K>) -> bool {
    entry.dirty
}

// The steps loom negative controls break: outside loom each name is the
// correct step itself; under loom it dispatches to the correct step or to
// the broken one the control selected (`crate::fault`).
#[cfg(not(loom))]
use self::{added_while_processing as requeue_after_done, mark_processing as hand_out};

#[cfg(loom)]
fn hand_out<K>(core: &mut Core<K>, slot: usize, now: Duration, waited: Duration) {
    if crate::fault::is_selected(crate::fault::WorkQueueFault::GetSkipsProcessing) {
        hand_out_unmarked(core, slot);
    } else {
        mark_processing(core, slot, now, waited);
    }
}

/// BROKEN on purpose (the loom control `GetSkipsProcessing`): the key is
/// handed out but not marked processing, so an add now queues it for a
/// second worker.
#[cfg(loom)]
fn hand_out_unmarked<K>(core: &mut Core<K>, slot: usize) {
    let _ = core.release(slot);
}

#[cfg(loom)]
fn requeue_after_done<K>(entry: &mut KeyState<K>) -> bool {
    if crate::fault::is_selected(crate::fault::WorkQueueFault::DoneForgetsDirty) {
        forget_the_add(entry)
    } else {
        added_while_processing(entry)
    }
}

/// BROKEN on purpose (the loom control `DoneForgetsDirty`): an add that
/// came during processing is lost.
#[cfg(loom)]
fn forget_the_add<K>(entry: &mut KeyState<K>) -> bool {
    entry.dirty = false;
    false
}
