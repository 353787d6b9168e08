//! `OrderedIndex` (its default engine, leaves under a lock each) against a
//! `BTreeMap` under a `parking_lot::RwLock` and `scc::TreeIndex`, over
//! 100,000 `u64 -> u64` entries, each built by the same 100,000 inserts in
//! the same shuffled order: a point read, an insert of a new key, and the
//! 32 entries from a key on.
//!
//! Values are read the way each is read in place: larder's `get` hands out
//! an `Arc<V>` (a reference count written per read) and `get_with` copies the
//! `u64` out under the lock, as the peers' reads do.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::ops::ControlFlow;

use gungraun::{library_benchmark, library_benchmark_group};
use larder::OrderedIndex;
use parking_lot::RwLock;

use crate::inputs::{OPS, drawn, fresh, hasher, scattered};

/// Entries in every index.
const ENTRIES: usize = 100_000;

/// Entries a range read takes.
const RANGE: usize = 32;

type Larder = OrderedIndex<u64, u64, ahash::RandomState>;

trait Ordered: Sized {
    fn build(keys: &[u64]) -> Self;
    fn read(&self, key: u64) -> u64;
    fn put(&self, key: u64);
    fn range_from(&self, key: u64) -> u64;
}

/// larder's `get`: an `Arc<V>` out.
struct Get(Larder);
/// larder's `get_with`: the value copied out under the lock.
struct View(Larder);
struct Locked(RwLock<BTreeMap<u64, u64>>);
struct Tree(scc::TreeIndex<u64, u64>);

fn larder(keys: &[u64]) -> Larder {
    let index = OrderedIndex::builder().hasher(hasher()).build().unwrap();
    for &k in keys {
        index.insert(k, k);
    }
    index
}

impl Ordered for Get {
    fn build(keys: &[u64]) -> Self {
        Self(larder(keys))
    }
    #[inline]
    fn read(&self, key: u64) -> u64 {
        self.0.get(&key).map_or(0, |v| *v)
    }
    #[inline]
    fn put(&self, key: u64) {
        black_box(self.0.insert(key, key));
    }
    /// `range_take`: a `Vec` of `(K, Arc<V>)`.
    #[inline]
    fn range_from(&self, key: u64) -> u64 {
        let entries = self.0.range_take(key.., RANGE);
        entries.iter().map(|(k, v)| k ^ **v).sum()
    }
}

impl Ordered for View {
    fn build(keys: &[u64]) -> Self {
        Self(larder(keys))
    }
    #[inline]
    fn read(&self, key: u64) -> u64 {
        self.0.get_with(&key, |v| *v).unwrap_or(0)
    }
    fn put(&self, key: u64) {
        black_box(self.0.insert(key, key));
    }
    /// `try_for_each_in`: each entry visited in place, stopping after 32.
    #[inline]
    fn range_from(&self, key: u64) -> u64 {
        let mut sum = 0;
        let mut left = RANGE;
        let _ = self.0.try_for_each_in(key.., |k, v| {
            sum += k ^ *v;
            left -= 1;
            if left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        sum
    }
}

impl Ordered for Locked {
    /// Built by inserts in the keys' (shuffled) order, as the other
    /// contenders are: a `BTreeMap` collected from an iterator is
    /// bulk-loaded with every node full, so that every insert after it
    /// splits a leaf and its parents, a state that a map kept by inserts
    /// and removes is not in (design/instruction-counts.md).
    fn build(keys: &[u64]) -> Self {
        let mut map = BTreeMap::new();
        for &k in keys {
            map.insert(k, k);
        }
        Self(RwLock::new(map))
    }
    #[inline]
    fn read(&self, key: u64) -> u64 {
        self.0.read().get(&key).copied().unwrap_or(0)
    }
    #[inline]
    fn put(&self, key: u64) {
        black_box(self.0.write().insert(key, key));
    }
    #[inline]
    fn range_from(&self, key: u64) -> u64 {
        let entries: Vec<(u64, u64)> = self
            .0
            .read()
            .range(key..)
            .take(RANGE)
            .map(|(k, v)| (*k, *v))
            .collect();
        entries.iter().map(|(k, v)| k ^ v).sum()
    }
}

impl Ordered for Tree {
    fn build(keys: &[u64]) -> Self {
        let tree = scc::TreeIndex::new();
        for &k in keys {
            let _ = tree.insert_sync(k, k);
        }
        Self(tree)
    }
    #[inline]
    fn read(&self, key: u64) -> u64 {
        self.0.peek_with(&key, |_, v| *v).unwrap_or(0)
    }
    #[inline]
    fn put(&self, key: u64) {
        black_box(self.0.insert_sync(key, key).is_ok());
    }
    #[inline]
    fn range_from(&self, key: u64) -> u64 {
        let guard = scc::Guard::new();
        let entries: Vec<(u64, u64)> = self
            .0
            .range(key.., &guard)
            .take(RANGE)
            .map(|(k, v)| (*k, *v))
            .collect();
        entries.iter().map(|(k, v)| k ^ v).sum()
    }
}

/// An index of [`ENTRIES`] entries and [`OPS`] of its keys, drawn uniformly.
fn present<O: Ordered>() -> (O, Vec<u64>) {
    let keys = scattered(ENTRIES, 10);
    let reads = drawn(&keys, 11);
    (O::build(&keys), reads)
}

/// An index of [`ENTRIES`] entries and [`OPS`] keys it does not hold.
fn absent<O: Ordered>() -> (O, Vec<u64>) {
    let keys = scattered(ENTRIES, 10);
    (O::build(&keys), fresh(ENTRIES, OPS, 12))
}

#[library_benchmark]
#[bench::larder_get(setup = present::<Get>)]
#[bench::larder_get_with(setup = present::<View>)]
#[bench::rwlock_btreemap(setup = present::<Locked>)]
#[bench::scc_treeindex(setup = present::<Tree>)]
fn get<O: Ordered>((index, keys): (O, Vec<u64>)) -> O {
    let mut sum = 0;
    for &key in &keys {
        sum += index.read(key);
    }
    black_box(sum);
    index
}

#[library_benchmark]
#[bench::larder(setup = absent::<Get>)]
#[bench::rwlock_btreemap(setup = absent::<Locked>)]
#[bench::scc_treeindex(setup = absent::<Tree>)]
fn insert<O: Ordered>((index, keys): (O, Vec<u64>)) -> O {
    for &key in &keys {
        index.put(key);
    }
    index
}

#[library_benchmark]
#[bench::larder_range_take(setup = present::<Get>)]
#[bench::larder_try_for_each_in(setup = present::<View>)]
#[bench::rwlock_btreemap(setup = present::<Locked>)]
#[bench::scc_treeindex(setup = present::<Tree>)]
fn range_32<O: Ordered>((index, keys): (O, Vec<u64>)) -> O {
    let mut sum = 0;
    for &key in &keys {
        sum += index.range_from(key);
    }
    black_box(sum);
    index
}

library_benchmark_group!(name = ordered; benchmarks = get, insert, range_32);
