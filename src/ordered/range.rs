//! Ordered reads of [`OrderedIndex`]: first and last entries, ranges (copied
//! out, counted, visited, or the first `n` from a cursor) and iteration.

use std::borrow::Borrow;
use std::ops::{ControlFlow, RangeBounds};

use super::{Engine, OrderedIndex};
use crate::sync::Arc;

#[cfg(loom)]
use super::broken::range_cut;
#[cfg(not(loom))]
use range_at_once as range_cut;

/// Ordered reads: the ordered entries alone, no hashing.
impl<K: Ord + Clone, V, S> OrderedIndex<K, V, S> {
    /// The entry with the least key, at this instant (key cloned, value
    /// shared).
    ///
    /// Removing it afterwards is a check-then-remove race (see
    /// [`OrderedIndex`]); use [`pop_first`](OrderedIndex::pop_first).
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, char> = [(2, 'b'), (1, 'a')].into_iter().collect();
    /// assert_eq!(index.first().map(|(k, v)| (k, *v)), Some((1, 'a')));
    /// ```
    pub fn first(&self) -> Option<(K, Arc<V>)> {
        let core = match &self.engine {
            Engine::Locked(core) => core.read(),
            Engine::Partitioned(parts) => return parts.end(false),
        };
        let (key, value) = core.map().first_key_value()?;
        Some((key.clone(), Arc::clone(value)))
    }

    /// The entry with the greatest key, at this instant.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u8, char> = [(2, 'b'), (1, 'a')].into_iter().collect();
    /// assert_eq!(index.last().map(|(k, v)| (k, *v)), Some((2, 'b')));
    /// ```
    pub fn last(&self) -> Option<(K, Arc<V>)> {
        let core = match &self.engine {
            Engine::Locked(core) => core.read(),
            Engine::Partitioned(parts) => return parts.end(true),
        };
        let (key, value) = core.map().last_key_value()?;
        Some((key.clone(), Arc::clone(value)))
    }

    /// The entries in `range`, in key order, copied out as one consistent
    /// cut (keys cloned, values shared).
    ///
    /// The copy is made under the read lock, which is then released; the
    /// result is the caller's to keep. For a large range that need not be
    /// copied, see [`for_each_in`](OrderedIndex::for_each_in) or
    /// [`snapshot`](OrderedIndex::snapshot).
    ///
    /// # Panics
    ///
    /// As `BTreeMap::range`: if the range's start is greater than its end, or
    /// if start equals end and both bounds are excluded. The index is
    /// unaffected.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u32, String> =
    ///     (0..100).map(|k| (k, k.to_string())).collect();
    /// let page = index.range_to_vec(40..43);
    /// let keys: Vec<u32> = page.iter().map(|(k, _)| *k).collect();
    /// assert_eq!(keys, [40, 41, 42]);
    /// assert_eq!(page[0].1.as_str(), "40");
    /// ```
    pub fn range_to_vec<Q, R>(&self, range: R) -> Vec<(K, Arc<V>)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        range_cut(self, range)
    }

    /// [`range_to_vec`](Self::range_to_vec) without the loom faults.
    pub(super) fn range_inner<Q, R>(&self, range: R) -> Vec<(K, Arc<V>)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        match &self.engine {
            Engine::Locked(core) => core.read().range_cloned(range),
            Engine::Partitioned(parts) => {
                let mut out = Vec::new();
                parts.visit(range, |key, value| {
                    out.push((key.clone(), Arc::clone(value)))
                });
                out
            }
        }
    }

    /// The number of entries in `range`, at one instant: O(entries counted),
    /// under the read lock, copying nothing.
    ///
    /// # Panics
    ///
    /// As [`range_to_vec`](OrderedIndex::range_to_vec).
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u32, ()> = (0..100).map(|k| (k, ())).collect();
    /// assert_eq!(index.range_count(10..20), 10);
    /// assert_eq!(index.range_count(..), 100);
    /// ```
    pub fn range_count<Q, R>(&self, range: R) -> usize
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        match &self.engine {
            Engine::Locked(core) => core.read().map().range::<Q, R>(range).count(),
            Engine::Partitioned(parts) => parts.range_count(range),
        }
    }

    /// Every entry, in key order, as one consistent cut copied into a `Vec`
    /// (the same as `range_to_vec(..)`): O(n). The `Vec` holds no lock.
    ///
    /// Copying costs O(n) while writers wait; to walk a large index without
    /// copying and without blocking writers, iterate a
    /// [`snapshot`](OrderedIndex::snapshot) instead.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = larder::OrderedIndex::new();
    /// for k in [3, 1, 2] {
    ///     index.insert(k, k * 10);
    /// }
    /// let entries: Vec<(i32, i32)> = index.to_vec().into_iter().map(|(k, v)| (k, *v)).collect();
    /// assert_eq!(entries, [(1, 10), (2, 20), (3, 30)]);
    /// ```
    pub fn to_vec(&self) -> Vec<(K, Arc<V>)> {
        self.range_to_vec::<K, _>(..)
    }

    /// Calls `f` on every entry in `range`, in key order, under the read
    /// lock: one consistent cut, nothing copied.
    ///
    /// # Deadlocks
    ///
    /// `f` runs while this thread holds the read lock. If `f` writes to the
    /// same index (`insert`, `remove`, `pop_first`, ...), it waits for its
    /// own read lock to be released: a deadlock. If `f` reads the same index,
    /// it can deadlock too, once a writer is queued between the two reads.
    /// So `f` must not call into this index at all; every writer waits
    /// while `f` runs, so keep it short. To call back into the index while
    /// walking, walk a [`snapshot`](OrderedIndex::snapshot) instead.
    ///
    /// # Panics
    ///
    /// As [`range_to_vec`](OrderedIndex::range_to_vec); and if `f` panics, the panic
    /// propagates after the lock is released. Nothing is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let index: larder::OrderedIndex<u32, u64> = (0..10).map(|k| (k, u64::from(k))).collect();
    /// let mut sum = 0;
    /// index.for_each_in(2..=4, |_, value| sum += value);
    /// assert_eq!(sum, 2 + 3 + 4);
    /// ```
    pub fn for_each_in<Q, R, F>(&self, range: R, mut f: F)
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
        F: FnMut(&K, &V),
    {
        match &self.engine {
            Engine::Locked(core) => {
                let core = core.read();
                for (key, value) in core.map().range::<Q, R>(range) {
                    f(key, value);
                }
            }
            Engine::Partitioned(parts) => parts.visit(range, |key, value| f(key, value)),
        }
    }

    /// [`for_each_in`](OrderedIndex::for_each_in) that can stop early: `f`
    /// returns [`ControlFlow::Break`] to end the walk, and the walk returns
    /// that break (`Iterator::try_for_each`'s shape).
    ///
    /// The entries seen are one consistent cut. A walk that stops after `n`
    /// entries costs O(n) plus the descent to the range's start, not O(range):
    /// with the default engine it read-locks only the leaves it reaches.
    ///
    /// # Deadlocks
    ///
    /// As [`for_each_in`](OrderedIndex::for_each_in): `f` must not call into
    /// this index.
    ///
    /// # Panics
    ///
    /// As [`for_each_in`](OrderedIndex::for_each_in).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::ops::ControlFlow;
    ///
    /// let index: larder::OrderedIndex<u32, u64> = (0..1_000).map(|k| (k, u64::from(k))).collect();
    /// // The first key from 500 on whose value is divisible by 7.
    /// let found = index.try_for_each_in(500.., |key, value| {
    ///     if value % 7 == 0 { ControlFlow::Break(*key) } else { ControlFlow::Continue(()) }
    /// });
    /// assert_eq!(found, ControlFlow::Break(504));
    /// ```
    pub fn try_for_each_in<Q, R, B, F>(&self, range: R, mut f: F) -> ControlFlow<B>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
        F: FnMut(&K, &V) -> ControlFlow<B>,
    {
        match &self.engine {
            Engine::Locked(core) => {
                let core = core.read();
                for (key, value) in core.map().range::<Q, R>(range) {
                    f(key, value)?;
                }
                ControlFlow::Continue(())
            }
            Engine::Partitioned(parts) => parts.visit_while(range, |key, value| f(key, value)),
        }
    }

    /// The first `n` entries of `range`, in key order, as one consistent cut
    /// (`BTreeMap::range(..).take(n)`): a page of entries after a cursor.
    ///
    /// Costs O(n) in the entries returned plus the descent to the range's
    /// start, however large the range: "the next 100 offsets after the
    /// cursor" of an index holding millions reads about 100 entries.
    ///
    /// # Panics
    ///
    /// As [`range_to_vec`](OrderedIndex::range_to_vec).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::ops::Bound::{Excluded, Unbounded};
    ///
    /// let offsets: larder::OrderedIndex<u64, ()> = (0..1_000_000).map(|k| (k, ())).collect();
    /// let mut cursor = 41;
    /// let page = offsets.range_take((Excluded(&cursor), Unbounded), 3);
    /// let keys: Vec<u64> = page.iter().map(|(k, _)| *k).collect();
    /// assert_eq!(keys, [42, 43, 44]);
    /// cursor = *keys.last().unwrap();
    /// assert_eq!(offsets.range_take((Excluded(&cursor), Unbounded), 1)[0].0, 45);
    /// assert!(offsets.range_take(.., 0).is_empty());
    /// ```
    pub fn range_take<Q, R>(&self, range: R, n: usize) -> Vec<(K, Arc<V>)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        let mut out = Vec::with_capacity(n.min(1024));
        if n == 0 {
            // Still checks the range, as every range read does.
            super::partitioned::check_range(range.start_bound(), range.end_bound());
            return out;
        }
        let full = |out: &Vec<(K, Arc<V>)>| {
            if out.len() == n {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        match &self.engine {
            Engine::Locked(core) => {
                let core = core.read();
                for (key, value) in core.map().range::<Q, R>(range).take(n) {
                    out.push((key.clone(), Arc::clone(value)));
                }
            }
            Engine::Partitioned(parts) => {
                let _ = parts.visit_while(range, |key, value| {
                    out.push((key.clone(), Arc::clone(value)));
                    full(&out)
                });
            }
        }
        out
    }

    /// Checks the structure: keys sorted and within their leaf's bounds,
    /// no leaf over capacity or left empty among others, and the
    /// point-lookup table holding exactly the ordered entries. For tests,
    /// with a consistent `Ord`, on a quiescent index.
    ///
    /// # Panics
    ///
    /// With a message starting "invariant violated" if anything disagrees.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn check_invariants(&self) {
        match &self.engine {
            Engine::Locked(core) => core.read().check_structure(),
            Engine::Partitioned(parts) => parts.check_invariants(),
        }
    }
}

/// [`OrderedIndex::range_to_vec`]'s step: the range copied out at one
/// consistent cut ([`OrderedIndex::range_inner`]).
#[inline(always)]
pub(super) fn range_at_once<K, V, S, Q, R>(
    index: &OrderedIndex<K, V, S>,
    range: R,
) -> Vec<(K, Arc<V>)>
where
    K: Ord + Clone + Borrow<Q>,
    Q: Ord + ?Sized,
    R: RangeBounds<Q>,
{
    index.range_inner(range)
}
