//! Ordered family: `OrderedIndex` against the ordered maps people would use
//! instead, and against the misuse it replaces (an unordered `DashMap`
//! collected and sorted for every range).
//!
//! Workloads over u64 keys (values are u64 too):
//!
//! - `point-read`: 98% `get`, 1% insert, 1% remove.
//! - `scan-mix`: 80% `get`, 10% ordered range of about 32 entries, 5%
//!   insert, 5% remove.
//! - `mixed`: 50% `get`, 25% insert, 25% remove.
//! - `write-heavy`: 10% `get`, 45% insert, 45% remove.
//! - `consumer`: insert at the tail (offsets from a shared counter), and one
//!   op in 32 drains everything more than `n` behind the tail, in order.
//! - `range-32 100K`: only ordered ranges of exactly 32 entries over 100K
//!   dense keys; the only workload with the DashMap misuse, whose every range
//!   collects and sorts the whole map.
//!
//! The random workloads prefill the even keys below `2n` and draw keys from
//! all of `0..2n`, so inserts and removes keep the map near `n` entries and
//! about half the gets hit. `scc::TreeIndex::insert_sync` does not replace an
//! existing key, so for it an insert of a present key is a failed insert (a
//! little cheaper than the others' replacement).
//!
//! Every map is built lazily, the first time its contender is started, so
//! listing the workloads costs nothing.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Background, Contender, Rng, Size, Workload};

/// Thread counts measured.
pub const THREADS: &[usize] = &[1, 2, 4];

/// A one-op-at-a-time view of each ordered map under test.
pub trait OrderedOps: Send + Sync + 'static {
    /// The name shown in reports.
    const NAME: &'static str;
    /// A map holding `keys` (each with itself as value).
    fn build(keys: &mut dyn Iterator<Item = u64>) -> Self;
    /// Point lookup; the value or 0.
    fn get(&self, key: u64) -> u64;
    /// Inserts (or replaces) `key`.
    fn insert(&self, key: u64, value: u64);
    /// Removes `key`.
    fn remove(&self, key: u64);
    /// The entries in `start..end`, collected in key order; a checksum.
    fn range(&self, start: u64, end: u64) -> u64;
    /// Removes, in order, every entry below `end`; how many it removed.
    fn drain_below(&self, end: u64) -> u64;
}

fn checksum(entries: &[(u64, u64)]) -> u64 {
    entries.len() as u64 + entries.first().map_or(0, |e| e.0)
}

/// larder's map, read the way the peers read theirs: closures copy values
/// out under the read lock (`get_with` for a point read, like TreeIndex's
/// `peek_with`; `for_each_in` for a range, like the peers' iterators).
impl OrderedOps for larder::OrderedIndex<u64, u64> {
    const NAME: &'static str = "larder OrderedIndex";
    fn build(keys: &mut dyn Iterator<Item = u64>) -> Self {
        keys.map(|k| (k, k)).collect()
    }
    #[inline]
    fn get(&self, key: u64) -> u64 {
        self.get_with(&key, |v| *v).unwrap_or(0)
    }
    fn insert(&self, key: u64, value: u64) {
        self.insert(key, value);
    }
    fn remove(&self, key: u64) {
        self.remove(&key);
    }
    fn range(&self, start: u64, end: u64) -> u64 {
        let mut entries: Vec<(u64, u64)> = Vec::new();
        self.for_each_in(start..end, |k, v| entries.push((*k, *v)));
        checksum(&entries)
    }
    fn drain_below(&self, end: u64) -> u64 {
        self.drain_to(Bound::Excluded(&end)).len() as u64
    }
}

/// larder's map read with `get` and `range`, which clone the values' `Arc`s
/// out: what a caller that keeps the values pays (every reader of a key
/// writes its reference count).
pub struct LarderArcGet(larder::OrderedIndex<u64, u64>);

impl OrderedOps for LarderArcGet {
    const NAME: &'static str = "larder OrderedIndex (get, range: Arc clones)";
    fn build(keys: &mut dyn Iterator<Item = u64>) -> Self {
        Self(keys.map(|k| (k, k)).collect())
    }
    #[inline]
    fn get(&self, key: u64) -> u64 {
        self.0.get(&key).map_or(0, |v| *v)
    }
    fn insert(&self, key: u64, value: u64) {
        OrderedOps::insert(&self.0, key, value);
    }
    fn remove(&self, key: u64) {
        OrderedOps::remove(&self.0, key);
    }
    fn range(&self, start: u64, end: u64) -> u64 {
        let entries = self.0.range_to_vec(start..end);
        entries.len() as u64 + entries.first().map_or(0, |e| e.0)
    }
    fn drain_below(&self, end: u64) -> u64 {
        OrderedOps::drain_below(&self.0, end)
    }
}

/// A larder contender built by a builder configuration, and read and written
/// as larder's main row is.
macro_rules! larder_configured {
    ($(#[$doc:meta])* $ty:ident, $name:expr, $build:expr) => {
        $(#[$doc])*
        pub struct $ty(larder::OrderedIndex<u64, u64>);

        impl OrderedOps for $ty {
            const NAME: &'static str = $name;
            fn build(keys: &mut dyn Iterator<Item = u64>) -> Self {
                let index: larder::OrderedIndex<u64, u64> = $build;
                for k in keys {
                    index.insert(k, k);
                }
                Self(index)
            }
            #[inline]
            fn get(&self, key: u64) -> u64 {
                OrderedOps::get(&self.0, key)
            }
            fn insert(&self, key: u64, value: u64) {
                OrderedOps::insert(&self.0, key, value);
            }
            fn remove(&self, key: u64) {
                OrderedOps::remove(&self.0, key);
            }
            fn range(&self, start: u64, end: u64) -> u64 {
                OrderedOps::range(&self.0, start, end)
            }
            fn drain_below(&self, end: u64) -> u64 {
                OrderedOps::drain_below(&self.0, end)
            }
        }
    };
}

larder_configured!(
    /// larder's map without the point-lookup table, as the docs suggest for a
    /// consumer that only inserts and drains.
    LarderNoTable,
    "larder OrderedIndex (no point table)",
    larder::OrderedIndex::builder().point_lookups(false).build().unwrap()
);

larder_configured!(
    /// larder's single-lock engine (`OrderedLock::Sharded`: one `BTreeMap` and
    /// its point-lookup table under crossbeam's `ShardedLock`), the default
    /// before the partitioned one.
    LarderOneLock,
    "larder OrderedIndex (one ShardedLock)",
    larder::OrderedIndex::builder()
        .lock(larder::OrderedLock::Sharded)
        .build().unwrap()
);

/// `BTreeMap` under a reader-writer lock: the Go documents' fix, as is.
macro_rules! locked_btree {
    ($ty:ident, $name:expr, $lock:ty, $new:expr, |$l:ident| read: $read:expr, write: $write:expr) => {
        /// A `BTreeMap` contender under one reader-writer lock.
        pub struct $ty($lock);
        impl OrderedOps for $ty {
            const NAME: &'static str = $name;
            fn build(keys: &mut dyn Iterator<Item = u64>) -> Self {
                let map: BTreeMap<u64, u64> = keys.map(|k| (k, k)).collect();
                Self($new(map))
            }
            #[inline]
            fn get(&self, key: u64) -> u64 {
                let $l = &self.0;
                $read.get(&key).copied().unwrap_or(0)
            }
            fn insert(&self, key: u64, value: u64) {
                let $l = &self.0;
                $write.insert(key, value);
            }
            fn remove(&self, key: u64) {
                let $l = &self.0;
                $write.remove(&key);
            }
            fn range(&self, start: u64, end: u64) -> u64 {
                let $l = &self.0;
                let entries: Vec<(u64, u64)> =
                    $read.range(start..end).map(|(k, v)| (*k, *v)).collect();
                checksum(&entries)
            }
            fn drain_below(&self, end: u64) -> u64 {
                let $l = &self.0;
                let mut map = $write;
                let mut out = Vec::new();
                while let Some(entry) = map.first_entry() {
                    if *entry.key() >= end {
                        break;
                    }
                    out.push(entry.remove_entry());
                }
                drop(map);
                out.len() as u64
            }
        }
    };
}

locked_btree!(
    ParkingLotBTree,
    "parking_lot::RwLock<BTreeMap>",
    parking_lot::RwLock<BTreeMap<u64, u64>>,
    parking_lot::RwLock::new,
    |l| read: l.read(), write: l.write()
);

locked_btree!(
    StdBTree,
    "std::sync::RwLock<BTreeMap>",
    std::sync::RwLock<BTreeMap<u64, u64>>,
    std::sync::RwLock::new,
    |l| read: l.read().unwrap(), write: l.write().unwrap()
);

locked_btree!(
    ShardedBTree,
    "crossbeam ShardedLock<BTreeMap>",
    crossbeam_utils::sync::ShardedLock<BTreeMap<u64, u64>>,
    crossbeam_utils::sync::ShardedLock::new,
    |l| read: l.read().unwrap(), write: l.write().unwrap()
);

impl OrderedOps for crossbeam_skiplist::SkipMap<u64, u64> {
    const NAME: &'static str = "crossbeam_skiplist::SkipMap";
    fn build(keys: &mut dyn Iterator<Item = u64>) -> Self {
        keys.map(|k| (k, k)).collect()
    }
    #[inline]
    fn get(&self, key: u64) -> u64 {
        self.get(&key).map_or(0, |e| *e.value())
    }
    fn insert(&self, key: u64, value: u64) {
        self.insert(key, value);
    }
    fn remove(&self, key: u64) {
        self.remove(&key);
    }
    fn range(&self, start: u64, end: u64) -> u64 {
        let entries: Vec<(u64, u64)> = self
            .range(start..end)
            .map(|e| (*e.key(), *e.value()))
            .collect();
        checksum(&entries)
    }
    fn drain_below(&self, end: u64) -> u64 {
        // Each entry goes to whoever's `Entry::remove` returns true.
        let mut out = Vec::new();
        while let Some(entry) = self.front() {
            if *entry.key() >= end {
                break;
            }
            if entry.remove() {
                out.push((*entry.key(), *entry.value()));
            }
        }
        out.len() as u64
    }
}

impl OrderedOps for scc::TreeIndex<u64, u64> {
    const NAME: &'static str = "scc::TreeIndex";
    fn build(keys: &mut dyn Iterator<Item = u64>) -> Self {
        let tree = scc::TreeIndex::new();
        for k in keys {
            let _ = tree.insert_sync(k, k);
        }
        tree
    }
    #[inline]
    fn get(&self, key: u64) -> u64 {
        self.peek_with(&key, |_, v| *v).unwrap_or(0)
    }
    fn insert(&self, key: u64, value: u64) {
        let _ = self.insert_sync(key, value);
    }
    fn remove(&self, key: u64) {
        self.remove_sync(&key);
    }
    fn range(&self, start: u64, end: u64) -> u64 {
        let guard = scc::Guard::new();
        let entries: Vec<(u64, u64)> = self
            .range(start..end, &guard)
            .map(|(k, v)| (*k, *v))
            .collect();
        checksum(&entries)
    }
    fn drain_below(&self, end: u64) -> u64 {
        // No atomic pop: read the head, then remove what was read; an entry
        // counts for whoever's `remove` succeeded.
        let seen: Vec<(u64, u64)> = {
            let guard = scc::Guard::new();
            self.range(..end, &guard).map(|(k, v)| (*k, *v)).collect()
        };
        seen.iter().filter(|(k, _)| self.remove_sync(k)).count() as u64
    }
}

/// The misuse: an unordered concurrent map, collected and sorted for every
/// ordered read.
pub struct DashMapSort(dashmap::DashMap<u64, u64>);

impl OrderedOps for DashMapSort {
    const NAME: &'static str = "DashMap + collect + sort (misuse)";
    fn build(keys: &mut dyn Iterator<Item = u64>) -> Self {
        Self(keys.map(|k| (k, k)).collect())
    }
    fn get(&self, key: u64) -> u64 {
        self.0.get(&key).map_or(0, |v| *v)
    }
    fn insert(&self, key: u64, value: u64) {
        self.0.insert(key, value);
    }
    fn remove(&self, key: u64) {
        self.0.remove(&key);
    }
    fn range(&self, start: u64, end: u64) -> u64 {
        let mut all: Vec<(u64, u64)> = self.0.iter().map(|e| (*e.key(), *e.value())).collect();
        all.sort_unstable();
        let entries: Vec<(u64, u64)> = all
            .into_iter()
            .filter(|(k, _)| (start..end).contains(k))
            .collect();
        checksum(&entries)
    }
    fn drain_below(&self, end: u64) -> u64 {
        let mut below: Vec<u64> = self
            .0
            .iter()
            .map(|e| *e.key())
            .filter(|k| *k < end)
            .collect();
        below.sort_unstable();
        below.iter().filter(|k| self.0.remove(k).is_some()).count() as u64
    }
}

/// The operation mix of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// 98% get, 1% insert, 1% remove.
    PointRead,
    /// 80% get, 10% range of ~32 entries, 5% insert, 5% remove.
    Scan,
    /// 50% get, 25% insert, 25% remove.
    Mixed,
    /// 10% get, 45% insert, 45% remove.
    WriteHeavy,
    /// Insert at the tail; one op in 32 drains what is `n` behind the tail.
    Consumer,
    /// Only ranges of exactly 32 entries over dense keys.
    Range32,
}

impl Mix {
    fn label(self) -> &'static str {
        match self {
            Mix::PointRead => "point-read",
            Mix::Scan => "scan-mix",
            Mix::Mixed => "mixed",
            Mix::WriteHeavy => "write-heavy",
            Mix::Consumer => "consumer",
            Mix::Range32 => "range-32",
        }
    }
    /// Per-mille thresholds: (get, range, insert); the rest removes.
    fn thresholds(self) -> (u64, u64, u64) {
        match self {
            Mix::PointRead => (980, 980, 990),
            Mix::Scan => (800, 900, 950),
            Mix::Mixed => (500, 500, 750),
            Mix::WriteHeavy => (100, 100, 550),
            Mix::Consumer | Mix::Range32 => (0, 0, 0),
        }
    }
}

/// One map under one mix, built on first start.
pub struct MapContender<M: OrderedOps> {
    map: OnceLock<M>,
    mix: Mix,
    n: u64,
    /// The consumer's tail: the next offset to insert.
    tail: AtomicU64,
    /// Varies the per-thread seeds from one run to the next.
    runs: AtomicU64,
}

impl<M: OrderedOps> MapContender<M> {
    /// A contender of `mix` over `n` keys.
    pub fn new(mix: Mix, n: u64) -> Self {
        Self {
            map: OnceLock::new(),
            mix,
            n,
            tail: AtomicU64::new(n),
            runs: AtomicU64::new(0),
        }
    }

    fn map(&self) -> &M {
        self.map.get_or_init(|| match self.mix {
            Mix::Consumer | Mix::Range32 => M::build(&mut (0..self.n)),
            _ => M::build(&mut (0..self.n).map(|k| 2 * k)),
        })
    }
}

impl<M: OrderedOps> Contender for MapContender<M> {
    fn name(&self) -> String {
        M::NAME.to_string()
    }

    fn start(&self) -> Option<Background> {
        self.map();
        None
    }

    fn run(&self, thread: usize, _threads: usize, ops: u64) -> u64 {
        let map = self.map();
        // Relaxed: only makes seeds differ between runs; orders nothing.
        let run = self.runs.fetch_add(1, Ordering::Relaxed);
        let mut rng = Rng::new((run << 8) ^ thread as u64 ^ 0x5eed);
        let mut sum = 0u64;
        match self.mix {
            Mix::Consumer => {
                for i in 0..ops {
                    // Relaxed: the counter only hands out distinct offsets.
                    let tail = self.tail.fetch_add(1, Ordering::Relaxed);
                    map.insert(tail, tail);
                    if i % 32 == 31 {
                        sum = sum.wrapping_add(map.drain_below(tail.saturating_sub(self.n)));
                    }
                }
            }
            Mix::Range32 => {
                for _ in 0..ops {
                    let start = rng.below(self.n - 32);
                    sum = sum.wrapping_add(map.range(start, start + 32));
                }
            }
            mix => {
                let (get, range, insert) = mix.thresholds();
                let space = 2 * self.n;
                for _ in 0..ops {
                    let dice = rng.below(1000);
                    let key = rng.below(space);
                    if dice < get {
                        sum = sum.wrapping_add(map.get(key));
                    } else if dice < range {
                        // 64 keys of a half-full key space: about 32 entries.
                        sum = sum.wrapping_add(map.range(key, key + 64));
                    } else if dice < insert {
                        map.insert(key, key);
                    } else {
                        map.remove(key);
                    }
                }
            }
        }
        sum
    }
}

fn boxed<M: OrderedOps>(mix: Mix, n: u64) -> Box<dyn Contender> {
    Box::new(MapContender::<M>::new(mix, n))
}

/// larder's contender and the usual peers for `mix` over `n` keys.
fn contenders(mix: Mix, n: u64) -> Vec<Box<dyn Contender>> {
    let mut all = vec![
        boxed::<larder::OrderedIndex<u64, u64>>(mix, n),
        boxed::<LarderOneLock>(mix, n),
    ];
    if matches!(mix, Mix::PointRead | Mix::Scan | Mix::Range32) {
        // Only the read-heavy mixes read often enough for the `Arc` clones
        // of `get` and `range` to show.
        all.push(boxed::<LarderArcGet>(mix, n));
    }
    if matches!(mix, Mix::Mixed | Mix::WriteHeavy | Mix::Consumer) {
        // The configuration the docs recommend for a consumer.
        all.push(boxed::<LarderNoTable>(mix, n));
    }
    all.extend([
        boxed::<ParkingLotBTree>(mix, n),
        boxed::<StdBTree>(mix, n),
        boxed::<ShardedBTree>(mix, n),
        boxed::<crossbeam_skiplist::SkipMap<u64, u64>>(mix, n),
        boxed::<scc::TreeIndex<u64, u64>>(mix, n),
    ]);
    all
}

fn size_label(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{}M", n >> 20)
    } else {
        format!("{}K", n >> 10)
    }
}

/// The family's workloads: each mix at 64K and 1M keys (8K when `Quick`),
/// plus the 32-entry range at 100K keys against the DashMap misuse.
pub fn workloads(size: Size) -> Vec<Workload> {
    let sizes: &[u64] = match size {
        Size::Full => &[64 << 10, 1 << 20],
        Size::Quick => &[8 << 10],
    };
    let mixes = [
        Mix::PointRead,
        Mix::Scan,
        Mix::Mixed,
        Mix::WriteHeavy,
        Mix::Consumer,
    ];
    let mut out = Vec::new();
    for &n in sizes {
        for mix in mixes {
            out.push(Workload {
                family: "ordered",
                name: format!("{} {}", mix.label(), size_label(n)),
                contenders: contenders(mix, n),
                threads: THREADS.to_vec(),
            });
        }
    }
    let n = match size {
        Size::Full => 100_000,
        Size::Quick => 8 << 10,
    };
    let mut range = contenders(Mix::Range32, n);
    range.push(boxed::<DashMapSort>(Mix::Range32, n));
    out.push(Workload {
        family: "ordered",
        name: format!(
            "range-32 {}",
            if n == 100_000 {
                "100K".into()
            } else {
                size_label(n)
            }
        ),
        contenders: range,
        threads: THREADS.to_vec(),
    });
    out
}

/// The size sweep's workload: point reads over `n` keys.
pub fn sweep(n: usize) -> Vec<Workload> {
    vec![Workload {
        family: "ordered",
        name: format!("{} {n}", Mix::PointRead.label()),
        contenders: contenders(Mix::PointRead, n as u64),
        threads: THREADS.to_vec(),
    }]
}
