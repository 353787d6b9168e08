//! The partitioned engine of an [`OrderedIndex`](super::OrderedIndex)
//! ([`OrderedLock::Partitioned`](super::OrderedLock::Partitioned)): the key
//! space cut into leaves, each a sorted array under a lock of its own, so
//! that writers to different leaves run in parallel.
//!
//! # Layout
//!
//! A router, behind one `ShardedLock`, holds `leaves` (boxed, each on cache
//! lines of its own) and `bounds`, where `bounds[i]` is the least key leaf
//! `i + 1` may hold: leaf `i` holds the keys `k` with
//! `bounds[i - 1] <= k < bounds[i]` (leaf 0 everything below `bounds[0]`,
//! the last leaf everything from its bound up). A leaf is an
//! `Arc<LeafData>`: its keys and values in two parallel `Vec`s sorted by key
//! (`leaf.rs`). Without the point-lookup table (`points.rs`) a point
//! operation is a binary search of the bounds, then of one leaf's keys.
//!
//! # Files
//!
//! This one (the router, point operations, splits and merges), and in its
//! folder: `reads.rs` (reads that span leaves), `check.rs` (the
//! layout check of tests and models), `broken.rs` (the loom models' broken
//! variants, `cfg(loom)` only).
//!
//! # Locking protocol
//!
//! 1. Every operation takes the router's read lock first and keeps it to
//!    the end; in a `ShardedLock` that writes only the calling thread's
//!    shard, so it moves no cache line between cores. Structural changes
//!    (a split, a merge, dropping empty leaves, `clear`) take the router's
//!    write lock, which excludes every other operation; under it no leaf
//!    lock is needed (`get_mut`).
//! 2. Under the router's read lock an operation locks the leaves it needs in
//!    ascending order and keeps every one until it is done (two-phase
//!    locking). So a multi-leaf step (`drain_to`, a range, `len`, a
//!    snapshot) is atomic, a consistent cut at the moment its last lock was
//!    taken, and the fixed order rules out deadlock. Nothing takes the
//!    router's write lock while holding a leaf lock.
//! 3. With the point-lookup table (`points.rs`), a writer locks the table
//!    shards of the entries it changes after its leaves, in ascending
//!    order, and changes leaf and slots while holding both; a point read
//!    takes the router's read lock and one shard's read lock, nothing else.
//! 4. A write that leaves a leaf too big (over `leaf_size`) or empty or
//!    small releases everything, then takes the router's write lock to split
//!    or merge it. The leaf is found again by its address, so no user code
//!    runs to find it, and the condition is checked again there: the
//!    reshaping is invisible to readers (it moves entries between leaves, it
//!    never adds or removes one).
//! 5. An operation at an end of the map (`first`, `pop_last`, ...) that finds
//!    the end leaf empty, with other leaves beside it, drops the empty end
//!    leaves under the router's write lock and tries again, rather than
//!    lock leaves out of order.
//!
//! # User code
//!
//! Every call of `K`'s `Ord` and `Clone` in a step comes before that step's
//! first change (a leaf copied for a snapshot's sake is a change nobody can
//! see), and splits and merges move entries by position, never comparing
//! keys. An insert that takes its leaf over capacity clones the key of the
//! leaf's middle entry (the new bound) before its first change and hands it
//! to the split, which finds that entry again by its value's `Arc`. A merge
//! runs no user code: an emptied leaf is dropped with its bound, and a merge
//! that would have to copy a leaf a snapshot shares is skipped. So a
//! panicking `cmp` or `clone` unwinds with the index as it was, and a pop or
//! removal never loses its entry to a panic in the reshaping after it. (The
//! one exception, a split racing another thread's snapshot or removal, is in
//! [`Router::split`].)
//! A copy-on-write leaf displaced by a write, keys and leaves removed by a
//! merge, are dropped only after every lock is released.
//!
//! # Copy-on-write leaves
//!
//! A snapshot takes a reference to every leaf under the read locks (O(number
//! of leaves)) and builds its map after releasing them. A writer that finds
//! its leaf shared copies that leaf once (O(leaf) key clones).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;

use super::leaf::{LeafData, lower, search, upper};
use super::points::{Points, Slot};
use super::sequential::{Map, Pair};
use crate::sync::{Arc, CachePadded, RwLock, ShardedLock};

#[cfg(loom)]
mod broken;
#[cfg(any(test, feature = "testing"))]
mod check;
mod reads;

#[cfg(loom)]
use broken::{drain, empty_means_none, leaf_at, mergeable, split_point};
#[cfg(not(loom))]
use {
    drain_at_once as drain, leaf_by_address as leaf_at, marker_inside as split_point,
    neither_shared as mergeable, only_leaf as empty_means_none,
};

/// The leaf size when none is chosen.
pub(crate) const DEFAULT_LEAF_SIZE: usize = 128;

/// The least leaf size (smaller requests are raised to it).
pub(crate) const MIN_LEAF_SIZE: usize = 2;

/// The greatest leaf size (larger requests are lowered to it): a leaf
/// is a sorted `Vec` written in place, so much larger leaves only make
/// every write slower, and capacity arithmetic stays far from overflow.
pub(crate) const MAX_LEAF_SIZE: usize = 1 << 20;

/// A requested leaf size brought into
/// `MIN_LEAF_SIZE..=MAX_LEAF_SIZE`.
fn clamp_capacity(requested: usize) -> usize {
    requested.clamp(MIN_LEAF_SIZE, MAX_LEAF_SIZE)
}

/// A leaf's entries, sorted by key; shared with snapshots.
type Entries<K, V> = Arc<LeafData<K, V>>;

/// A leaf: its entries under its lock, on cache lines of its own. Boxed, so
/// that its address (its identity, see [`Router::find`]) stays put while the
/// router's queue moves.
type Leaf<K, V> = Box<CachePadded<RwLock<Entries<K, V>>>>;

fn new_leaf<K, V>(entries: LeafData<K, V>) -> Leaf<K, V> {
    Box::new(CachePadded::new(RwLock::new(Arc::new(entries))))
}

/// A leaf's identity: its address. Compared, never dereferenced.
fn id_of<K, V>(leaf: &Leaf<K, V>) -> usize {
    let padded: &CachePadded<RwLock<Entries<K, V>>> = leaf;
    std::ptr::from_ref(padded).addr()
}

/// What a step displaced, dropped after every lock is released (dropping
/// runs the `Drop` of keys and values).
pub(crate) struct Garbage<K, V> {
    entries: Vec<Entries<K, V>>,
    keys: Vec<K>,
    leaves: Vec<Leaf<K, V>>,
    slots: Vec<Slot<K, V>>,
}

impl<K, V> Default for Garbage<K, V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            keys: Vec::new(),
            leaves: Vec::new(),
            slots: Vec::new(),
        }
    }
}

/// The entries of `leaf`, made unique: if a snapshot shares them they are
/// copied (`K: Clone`, user code, before anything changes) and the shared
/// version goes to `garbage`.
fn unshare<'a, K: Clone, V>(
    leaf: &'a mut Entries<K, V>,
    garbage: &mut Vec<Entries<K, V>>,
) -> &'a mut LeafData<K, V> {
    if Arc::get_mut(leaf).is_none() {
        let copy = Arc::new(leaf.as_ref().clone());
        garbage.push(std::mem::replace(leaf, copy));
    }
    Arc::get_mut(leaf).expect("larder: a leaf just made unique")
}

/// The index of the leaf whose interval holds `key`.
#[inline]
fn leaf_index<K: Borrow<Q>, Q: Ord + ?Sized>(bounds: &VecDeque<K>, key: &Q) -> usize {
    bounds.partition_point(|bound| bound.borrow() <= key)
}

/// The first leaf that may hold keys at or after `start`.
fn first_leaf<K: Borrow<Q>, Q: Ord + ?Sized>(bounds: &VecDeque<K>, start: Bound<&Q>) -> usize {
    match start {
        Bound::Included(key) | Bound::Excluded(key) => leaf_index(bounds, key),
        Bound::Unbounded => 0,
    }
}

/// The last leaf that may hold keys at or before `end`.
fn last_leaf<K: Borrow<Q>, Q: Ord + ?Sized>(bounds: &VecDeque<K>, end: Bound<&Q>) -> usize {
    match end {
        Bound::Included(key) | Bound::Excluded(key) => leaf_index(bounds, key),
        Bound::Unbounded => bounds.len(),
    }
}

/// The positions of a sorted leaf's entries inside the bounds.
fn span<K: Borrow<Q>, V, Q: Ord + ?Sized>(
    leaf: &LeafData<K, V>,
    start: Bound<&Q>,
    end: Bound<&Q>,
) -> (usize, usize) {
    (lower(leaf.keys(), start), upper(leaf.keys(), end))
}

/// Panics, as `BTreeMap::range` does, on bounds that make no range.
pub(crate) fn check_range<Q: Ord + ?Sized>(start: Bound<&Q>, end: Bound<&Q>) {
    if let (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) =
        (start, end)
    {
        match s.cmp(e) {
            Ordering::Greater => panic!("range start is greater than range end in OrderedIndex"),
            Ordering::Equal
                if matches!(start, Bound::Excluded(_)) && matches!(end, Bound::Excluded(_)) =>
            {
                panic!("range start and end are equal and excluded in OrderedIndex")
            }
            _ => {}
        }
    }
}

/// The leaves, their bounds, and the point-lookup table.
struct Router<K, V> {
    /// `bounds[i]` is the least key leaf `i + 1` may hold; one fewer than
    /// the leaves.
    bounds: VecDeque<K>,
    /// At least one leaf, always.
    leaves: VecDeque<Leaf<K, V>>,
    /// A slot for every leaf entry, if the index keeps point lookups.
    points: Option<Points<K, V>>,
}

impl<K, V> Router<K, V> {
    fn empty(point_lookups: bool) -> Self {
        Self {
            bounds: VecDeque::new(),
            leaves: VecDeque::from([new_leaf(LeafData::default())]),
            points: point_lookups.then(Points::new),
        }
    }

    /// Leaves filled to three quarters from sorted, distinct entries.
    fn from_sorted(entries: Vec<Pair<K, V>>, leaf_size: usize, points: Option<Points<K, V>>) -> Self
    where
        K: Clone,
    {
        let fill = (leaf_size * 3 / 4).max(1);
        let mut leaves = VecDeque::new();
        let mut bounds = VecDeque::new();
        let mut rest = entries.into_iter().peekable();
        loop {
            let chunk: Vec<Pair<K, V>> = rest.by_ref().take(fill).collect();
            if let Some((first, _)) = chunk.first().filter(|_| !leaves.is_empty()) {
                bounds.push_back(first.clone());
            }
            if !chunk.is_empty() || leaves.is_empty() {
                leaves.push_back(new_leaf(LeafData::from_entries(chunk)));
            }
            if rest.peek().is_none() {
                return Self {
                    bounds,
                    leaves,
                    points,
                };
            }
        }
    }

    /// The index of the leaf whose address is `id`: `hint` if it still is
    /// there, else found by a scan; `None` if a merge removed it.
    fn find(&self, hint: usize, id: usize) -> Option<usize> {
        leaf_at(self, hint, id)
    }

    fn len_of(&mut self, i: usize) -> usize {
        self.leaves[i].get_mut().len()
    }

    /// Splits leaf `i` in two if it holds more than `capacity`, at the
    /// entry whose value is `prepared`'s `Arc`, with `prepared`'s key (a
    /// clone the insert made before its first change) as the new bound.
    ///
    /// Runs no user code unless a concurrent step got between the insert
    /// and this split: if the prepared entry has gone or moved to an end of
    /// the leaf, the bound is cloned here, and if a snapshot has shared the
    /// leaf since, the leaf is copied (`K: Clone`). A panic there leaves
    /// the leaf over capacity, every entry in place, and the next insert
    /// into it splits it.
    fn split(
        &mut self,
        i: usize,
        capacity: usize,
        prepared: Option<(K, &Arc<V>)>,
        garbage: &mut Garbage<K, V>,
    ) where
        K: Clone,
    {
        let leaf = self.leaves[i].get_mut();
        let (bound, marker) = prepared.unzip();
        if leaf.len() <= capacity {
            garbage.keys.extend(bound);
            return;
        }
        let at = split_point(leaf, marker);
        let (bound, mid) = match (bound, at) {
            (Some(bound), Some(at)) => (bound, at),
            (bound, _) => {
                garbage.keys.extend(bound);
                let mid = leaf.len() / 2;
                (leaf.keys()[mid].clone(), mid)
            }
        };
        let right = unshare(leaf, &mut garbage.entries).split_off(mid);
        self.bounds.insert(i, bound);
        self.leaves.insert(i + 1, new_leaf(right));
    }

    /// Drops leaf `i` if it is empty, or merges it into a neighbour if the
    /// two together fill at most half a leaf. Runs no user code: a merge
    /// that would have to copy a leaf a snapshot shares (`K: Clone`) is
    /// left undone (the leaf stays small, which costs only speed).
    fn merge(&mut self, i: usize, capacity: usize, garbage: &mut Garbage<K, V>) {
        let n = self.leaves.len();
        if n < 2 {
            return;
        }
        let len = self.len_of(i);
        if len == 0 {
            // Leaf `i - 1` (or, for the first leaf, leaf 1) takes over its
            // interval: drop the bound between them.
            garbage.leaves.extend(self.leaves.remove(i));
            garbage.keys.extend(self.bounds.remove(i.saturating_sub(1)));
            return;
        }
        let fits = |router: &mut Self, j: usize| len + router.len_of(j) <= capacity / 2;
        let (left, right) = if i + 1 < n && (len == 0 || fits(self, i + 1)) {
            (i, i + 1)
        } else if i > 0 && (len == 0 || fits(self, i - 1)) {
            (i - 1, i)
        } else {
            return;
        };
        if !mergeable(self, left, right) {
            return;
        }
        let mut gone = self.leaves.remove(right).expect("larder: leaf to merge");
        garbage.keys.extend(self.bounds.remove(right - 1));
        let mut moved = std::mem::take(Arc::get_mut(gone.get_mut()).expect("unshared"));
        Arc::get_mut(self.leaves[left].get_mut())
            .expect("unshared")
            .append(&mut moved);
        garbage.leaves.push(gone);
    }

    /// Drops the empty leaves at the front (or back) of the map, keeping one.
    fn trim(&mut self, back: bool, garbage: &mut Garbage<K, V>) {
        while self.leaves.len() > 1 {
            let i = if back { self.leaves.len() - 1 } else { 0 };
            if self.len_of(i) != 0 {
                return;
            }
            garbage.leaves.extend(self.leaves.remove(i));
            let bound = if back {
                self.bounds.pop_back()
            } else {
                self.bounds.pop_front()
            };
            garbage.keys.extend(bound);
        }
    }
}

/// The partitioned map.
pub(crate) struct Partitioned<K, V> {
    router: ShardedLock<Router<K, V>>,
    leaf_size: usize,
}

/// A reshaping a write asks for once its locks are released: the leaf's
/// index then and its identity.
type Reshape = Option<(usize, usize)>;

impl<K, V> Partitioned<K, V> {
    /// An empty map whose leaves split above `leaf_size` entries, with
    /// or without the point-lookup table.
    pub(crate) fn new(leaf_size: usize, point_lookups: bool) -> Self {
        Self {
            router: ShardedLock::new(Router::empty(point_lookups)),
            leaf_size: clamp_capacity(leaf_size),
        }
    }

    /// A map holding `map`'s entries; with the point-lookup table if
    /// `point_lookups`, whose keys `hash` hashes (user code, run before the
    /// map exists).
    pub(crate) fn from_map(
        map: Map<K, V>,
        leaf_size: usize,
        point_lookups: bool,
        hash: impl Fn(&K) -> u64,
    ) -> Self
    where
        K: Clone,
    {
        let leaf_size = clamp_capacity(leaf_size);
        let points = point_lookups.then(|| Points::from_entries(map.iter(), hash));
        Self {
            router: ShardedLock::new(Router::from_sorted(
                map.into_iter().collect(),
                leaf_size,
                points,
            )),
            leaf_size,
        }
    }

    pub(crate) fn leaf_size(&self) -> usize {
        self.leaf_size
    }

    /// Whether a leaf left with `len` entries, in a router of `leaves`,
    /// should be merged. Only on reaching 0 or a quarter of the capacity
    /// (edges, not levels), so a leaf that cannot merge is not retried on
    /// every write.
    fn wants_merge(&self, len: usize, leaves: usize) -> bool {
        leaves > 1 && (len == 0 || len == self.leaf_size / 4)
    }

    /// Runs `f` on the value of `key` (whose hash is `hash` if there is a
    /// point-lookup table), under the read lock of its table shard or leaf.
    #[inline]
    pub(crate) fn view<Q, R>(&self, hash: u64, key: &Q, f: impl FnOnce(&Arc<V>) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Ord + Eq + ?Sized,
    {
        let router = self.router.read();
        if let Some(points) = &router.points {
            return points.view(hash, key, f);
        }
        let leaf = router.leaves[leaf_index(&router.bounds, key)].read();
        let i = search(leaf.keys(), key).ok()?;
        Some(f(leaf.value(i)))
    }

    /// Inserts or replaces; returns the replaced value. `slot_key` is the
    /// key's hash and a clone of it for the point-lookup table (made by the
    /// caller before locking), `None` without a table.
    pub(crate) fn insert(&self, slot_key: Option<(u64, K)>, key: K, value: Arc<V>) -> Option<Arc<V>>
    where
        K: Ord + Clone,
    {
        let mut garbage = Garbage::default();
        let split_at;
        let (replaced, split) = {
            let router = self.router.read();
            let i = leaf_index(&router.bounds, &key);
            let mut leaf = router.leaves[i].write();
            let position = search(leaf.keys(), &key);
            // A leaf this insert takes over capacity splits at its middle
            // entry once the locks are released: clone that entry's key for
            // the new bound now, before the first change (user code).
            split_at = match position {
                Err(j) if leaf.len() >= self.leaf_size => {
                    let mid = leaf.len().div_ceil(2);
                    Some(match mid.cmp(&j) {
                        Ordering::Less => (leaf.keys()[mid].clone(), Arc::clone(leaf.value(mid))),
                        Ordering::Equal => (key.clone(), Arc::clone(&value)),
                        Ordering::Greater => (
                            leaf.keys()[mid - 1].clone(),
                            Arc::clone(leaf.value(mid - 1)),
                        ),
                    })
                }
                _ => None,
            };
            // `Clone` if a snapshot shares the leaf (a change nobody can
            // see); no user code from here on.
            let entries = unshare(&mut *leaf, &mut garbage.entries);
            let points = router.points.as_ref().zip(slot_key);
            match position {
                Ok(j) => {
                    let old = entries.replace(j, value);
                    if let Some((points, (hash, unused))) = points {
                        points.replace(hash, &old, Arc::clone(entries.value(j)));
                        garbage.keys.push(unused);
                    }
                    garbage.keys.push(key);
                    (Some(old), None)
                }
                Err(j) => {
                    if let Some((points, (hash, slot_key))) = points {
                        points.add(hash, slot_key, Arc::clone(&value));
                    }
                    entries.insert(j, key, value);
                    let over = entries.len() > self.leaf_size;
                    (None, over.then(|| (i, id_of(&router.leaves[i]))))
                }
            }
        };
        match (split, split_at) {
            (Some(target), Some((bound, marker))) => self.split(target, bound, &marker),
            (_, prepared) => drop(prepared),
        }
        drop(garbage);
        replaced
    }

    /// Removes `key` (whose hash is `hash` if there is a point-lookup
    /// table); returns its entry.
    pub(crate) fn remove<Q>(&self, hash: u64, key: &Q) -> Option<Pair<K, V>>
    where
        K: Borrow<Q> + Clone,
        Q: Ord + ?Sized,
    {
        self.remove_picked(hash, key, |leaf| search(leaf.keys(), key).ok())
    }

    /// Removes the entry of `key` only if its value is `value` (the same
    /// `Arc`), searching by key and then, if an inconsistent `Ord` hides it,
    /// by identity through that leaf. Returns the removed entry.
    pub(crate) fn remove_identical(&self, hash: u64, key: &K, value: &Arc<V>) -> Option<Pair<K, V>>
    where
        K: Ord + Clone,
    {
        self.remove_picked(hash, key, |leaf| match search(leaf.keys(), key) {
            Ok(j) if Arc::ptr_eq(leaf.value(j), value) => Some(j),
            _ => leaf.position_of(value),
        })
    }

    /// Removes the entry `pick` chooses (by position) in the leaf of `key`,
    /// with its table slot; merges the leaf afterwards if it asks for it.
    fn remove_picked<Q>(
        &self,
        hash: u64,
        key: &Q,
        pick: impl FnOnce(&LeafData<K, V>) -> Option<usize>,
    ) -> Option<Pair<K, V>>
    where
        K: Borrow<Q> + Clone,
        Q: Ord + ?Sized,
    {
        let mut garbage = Garbage::default();
        let (entry, merge) = {
            let router = self.router.read();
            let i = leaf_index(&router.bounds, key);
            let mut leaf = router.leaves[i].write();
            let j = pick(&leaf)?;
            let entries = unshare(&mut *leaf, &mut garbage.entries);
            let entry = entries.remove(j);
            if let Some(points) = &router.points {
                points.remove_one(hash, &entry.1, &mut garbage.slots);
            }
            let merge = self.wants_merge(entries.len(), router.leaves.len());
            (entry, merge.then(|| (i, id_of(&router.leaves[i]))))
        };
        self.reshape(merge);
        drop(garbage);
        Some(entry)
    }

    /// Splits the leaf an insert named (index then, identity), under the
    /// router's write lock, at the entry whose value is `marker` with
    /// `bound` as the new bound.
    fn split(&self, (hint, id): (usize, usize), bound: K, marker: &Arc<V>)
    where
        K: Clone,
    {
        let mut garbage = Garbage::default();
        {
            let mut router = self.router.write();
            match router.find(hint, id) {
                Some(i) => router.split(i, self.leaf_size, Some((bound, marker)), &mut garbage),
                None => garbage.keys.push(bound),
            }
        }
        drop(garbage);
    }

    /// Merges the leaf a removal named, under the router's write lock (no
    /// user code: see [`Router::merge`]).
    fn reshape(&self, target: Reshape) {
        let Some((hint, id)) = target else { return };
        let mut garbage = Garbage::default();
        {
            let mut router = self.router.write();
            if let Some(i) = router.find(hint, id) {
                router.merge(i, self.leaf_size, &mut garbage);
            }
        }
        drop(garbage);
    }

    /// The first or last entry, cloned.
    pub(crate) fn end(&self, last: bool) -> Option<Pair<K, V>>
    where
        K: Clone,
    {
        loop {
            {
                let router = self.router.read();
                let n = router.leaves.len();
                let leaf = router.leaves[if last { n - 1 } else { 0 }].read();
                let entry = if last { leaf.last() } else { leaf.first() };
                if let Some((key, value)) = entry {
                    return Some((key.clone(), Arc::clone(value)));
                }
                if empty_means_none(n) {
                    return None;
                }
            }
            self.trim(last);
        }
    }

    /// Removes and returns the first or last entry; `hash` hashes its key
    /// for the point-lookup table (user code, called before the change).
    pub(crate) fn pop_end(&self, last: bool, hash: impl Fn(&K) -> u64) -> Option<Pair<K, V>>
    where
        K: Clone,
    {
        loop {
            let mut garbage = Garbage::default();
            let popped = {
                let router = self.router.read();
                let n = router.leaves.len();
                let i = if last { n - 1 } else { 0 };
                let mut leaf = router.leaves[i].write();
                if leaf.is_empty() {
                    if n == 1 {
                        return None;
                    }
                    None
                } else {
                    let victim = if last { leaf.last() } else { leaf.first() };
                    let victim_hash = match (&router.points, victim) {
                        (Some(_), Some((key, _))) => hash(key),
                        _ => 0,
                    };
                    let entries = unshare(&mut *leaf, &mut garbage.entries);
                    let entry = if last {
                        entries.pop().expect("non-empty leaf")
                    } else {
                        entries.remove(0)
                    };
                    if let Some(points) = &router.points {
                        points.remove_one(victim_hash, &entry.1, &mut garbage.slots);
                    }
                    let merge = self.wants_merge(entries.len(), n);
                    Some((entry, merge.then(|| (i, id_of(&router.leaves[i])))))
                }
            };
            match popped {
                Some((entry, merge)) => {
                    self.reshape(merge);
                    drop(garbage);
                    return Some(entry);
                }
                None => self.trim(last),
            }
        }
    }

    /// Drops the empty leaves at one end, under the router's write lock.
    fn trim(&self, back: bool) {
        let mut garbage = Garbage::default();
        self.router.write().trim(back, &mut garbage);
        drop(garbage);
    }

    /// Removes and returns, in order, every entry up to `end`, in one step;
    /// `hash` hashes their keys for the point-lookup table.
    pub(crate) fn drain_to<Q>(&self, end: Bound<&Q>, hash: impl Fn(&K) -> u64) -> Vec<Pair<K, V>>
    where
        K: Borrow<Q> + Clone,
        Q: Ord + ?Sized,
    {
        drain(self, end, hash)
    }

    /// Removes every entry.
    pub(crate) fn clear(&self) {
        let old = {
            let mut router = self.router.write();
            let points = router.points.is_some();
            std::mem::replace(&mut *router, Router::empty(points))
        };
        drop(old);
    }

    /// The number of leaves (for the tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn leaf_count(&self) -> usize {
        self.router.read().leaves.len()
    }
}

/// [`Router::find`]'s step: the index of the leaf whose address is `id`,
/// `hint` if it still is there, else found by a scan; `None` if a merge
/// removed it.
#[inline(always)]
fn leaf_by_address<K, V>(router: &Router<K, V>, hint: usize, id: usize) -> Option<usize> {
    if router
        .leaves
        .get(hint)
        .is_some_and(|leaf| id_of(leaf) == id)
    {
        return Some(hint);
    }
    router.leaves.iter().position(|leaf| id_of(leaf) == id)
}

/// [`Router::split`]'s step: where the prepared entry (its value
/// `marker`) now is in `leaf`, if strictly inside it (a cut at an end
/// would leave an empty leaf).
#[inline(always)]
fn marker_inside<K, V>(leaf: &LeafData<K, V>, marker: Option<&Arc<V>>) -> Option<usize> {
    marker
        .and_then(|value| leaf.position_of(value))
        .filter(|&at| at > 0 && at < leaf.len())
}

/// [`Router::merge`]'s step: whether leaves `left` and `right` may merge,
/// neither being shared with a snapshot.
#[inline(always)]
fn neither_shared<K, V>(router: &mut Router<K, V>, left: usize, right: usize) -> bool {
    let shared =
        |router: &mut Router<K, V>, j: usize| Arc::get_mut(router.leaves[j].get_mut()).is_none();
    !shared(router, left) && !shared(router, right)
}

/// [`Partitioned::end`]'s step: whether an empty end leaf, one of `n`,
/// means an empty map (only if it is the only leaf: else it was emptied by
/// a removal whose merge has not run yet).
#[inline(always)]
fn only_leaf(n: usize) -> bool {
    n == 1
}

/// [`Partitioned::drain_to`]'s step: every leaf up to `end` write-locked
/// at once, all user code run before the first change, the entries and
/// their point-lookup slots taken in one step.
fn drain_at_once<K, V, Q>(
    parts: &Partitioned<K, V>,
    end: Bound<&Q>,
    hash: impl Fn(&K) -> u64,
) -> Vec<Pair<K, V>>
where
    K: Borrow<Q> + Clone,
    Q: Ord + ?Sized,
{
    let mut garbage = Garbage::default();
    let (out, emptied) = {
        let router = parts.router.read();
        let last = last_leaf(&router.bounds, end).min(router.leaves.len() - 1);
        let mut guards: Vec<_> = router
            .leaves
            .range(..=last)
            .map(|leaf| leaf.write())
            .collect();
        // Every user call (`Ord` for the cuts, `Hash` of the keys to
        // take, `Clone` to unshare) before the first change.
        let cuts: Vec<usize> = guards.iter().map(|leaf| upper(leaf.keys(), end)).collect();
        let hashes: Vec<u64> = match &router.points {
            Some(_) => guards
                .iter()
                .zip(&cuts)
                .flat_map(|(leaf, &cut)| leaf.keys()[..cut].iter().map(&hash))
                .collect(),
            None => Vec::new(),
        };
        for (leaf, &cut) in guards.iter_mut().zip(&cuts) {
            if cut > 0 {
                unshare(&mut **leaf, &mut garbage.entries);
            }
        }
        let mut out = Vec::with_capacity(cuts.iter().sum());
        let mut emptied = false;
        for (leaf, &cut) in guards.iter_mut().zip(&cuts) {
            if cut == 0 {
                continue;
            }
            let entries = Arc::get_mut(&mut **leaf).expect("larder: unshared leaf");
            emptied |= cut == entries.len();
            entries.take_front(cut, &mut out);
        }
        if let Some(points) = &router.points {
            let victims: Vec<(u64, &Arc<V>)> = hashes
                .iter()
                .copied()
                .zip(out.iter().map(|(_, value)| value))
                .collect();
            points.remove(&victims, &mut garbage.slots);
        }
        (out, emptied && router.leaves.len() > 1)
    };
    if emptied {
        parts.trim(false);
    }
    drop(garbage);
    out
}
