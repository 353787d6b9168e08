//! [`Transaction`]: inserts and removes recorded with no lock held, then
//! applied to the store in one critical section.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::ops::DerefMut;

use hashbrown::HashTable;

use super::core::{Core, Inserted, Removed};
use super::error::IndexError;
use super::index_fn::{AllValues, Schema};
use super::shards::ShardSet;
use super::store::IndexedStore;
use crate::sync::Arc;

/// One recorded write, with its index values computed.
pub(crate) enum Op<K, V> {
    Insert { key: K, value: V, values: AllValues },
    Remove { key: K },
}

impl<K, V> Op<K, V> {
    /// The key the write brought.
    #[inline]
    fn key(&self) -> &K {
        let (Op::Insert { key, .. } | Op::Remove { key }) = self;
        key
    }
}

/// What applying one operation handed back, to be dropped after unlock.
pub(crate) enum Garbage<K, V> {
    /// An insert's: [`Inserted::Updated`] holds the object it replaced, the
    /// key it brought (the store keeps its own) and the replaced index
    /// values; [`Inserted::New`] holds nothing (the key is stored).
    Inserted(Inserted<K, V>),
    /// A remove's: the key it brought, and what it took out if the key was
    /// there.
    Removed(K, Option<Removed<K, V>>),
}

/// The writes of one [`IndexedStore::transaction`](super::IndexedStore::transaction),
/// applied together, atomically, when the closure returns `Ok`.
///
/// Recording a write does not touch the store: the index functions run at
/// once (so their errors surface at the call) but no lock is taken until
/// the commit, and nothing recorded is visible before it.
///
/// # Examples
///
/// ```
/// use larder::{IndexError, IndexedStore};
///
/// let store = IndexedStore::<u32, &str>::new();
/// store.insert(1, "one").unwrap();
/// let recorded = store
///     .transaction(|tx| -> Result<usize, IndexError> {
///         tx.insert(2, "two")?;
///         tx.remove(&1);
///         assert!(store.contains_key(&1)); // not applied yet
///         Ok(tx.len())
///     })
///     .unwrap();
/// assert_eq!(recorded, 2);
/// assert_eq!(store.keys_to_vec(), [2]);
/// ```
pub struct Transaction<K, V> {
    schema: Arc<Schema<V>>,
    ops: Vec<Op<K, V>>,
}

impl<K: Clone, V> Transaction<K, V> {
    /// A transaction recording into `ops` (empty: a spare buffer).
    pub(crate) fn new(schema: Arc<Schema<V>>, ops: Vec<Op<K, V>>) -> Self {
        Self { schema, ops }
    }

    pub(crate) fn into_parts(self) -> (Arc<Schema<V>>, Vec<Op<K, V>>) {
        (self.schema, self.ops)
    }

    /// Records an insert (add or update) of `value` under `key`, running the
    /// index functions on it now.
    ///
    /// # Errors
    ///
    /// [`IndexError::IndexFunction`] if an index function fails; nothing is
    /// recorded. Return the error from the closure (`?`) to abandon the
    /// whole transaction, or carry on without this write.
    ///
    /// # Panics
    ///
    /// If an index function panics.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store
    ///     .transaction(|tx| -> Result<(), larder::IndexError> {
    ///         tx.insert(1, 10)?;
    ///         tx.insert(1, 11)?; // applied in order: the last one wins
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// assert_eq!(store.get(&1), Some(11));
    /// ```
    pub fn insert(&mut self, key: K, value: V) -> Result<(), IndexError> {
        let values = self.schema.compute(&value)?;
        self.ops.push(Op::Insert { key, value, values });
        Ok(())
    }

    /// Records a remove of `key` (a no-op at commit if it is absent then).
    ///
    /// Takes the key borrowed, as [`IndexedStore::remove`] does, and keeps
    /// an owned copy (`ToOwned`, which is `K::clone` when `Q` is `K`) until
    /// the commit: a transaction is a write, so it allocates anyway.
    ///
    /// `Q` must own back into `K` exactly (`Q: ToOwned<Owned = K>`): with
    /// `String` keys pass a `&str` or `&String`; with `u32` keys a `&u32`;
    /// with `&'static str` keys a `&&str` (`tx.remove(&"a")`), since a `str`
    /// owns into a `String`, not a `&str`.
    ///
    /// # Panics
    ///
    /// If `Q`'s `ToOwned` (`K::clone`) panics; nothing is recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<String, u32>::new();
    /// store.insert("a".to_string(), 10).unwrap();
    /// store
    ///     .transaction(|tx| -> Result<(), larder::IndexError> {
    ///         tx.remove("a");
    ///         tx.remove("b"); // absent: a no-op at commit
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// assert!(store.is_empty());
    /// ```
    ///
    /// [`IndexedStore::remove`]: crate::IndexedStore::remove
    pub fn remove<Q>(&mut self, key: &Q)
    where
        K: Borrow<Q>,
        Q: ?Sized + ToOwned<Owned = K>,
    {
        self.ops.push(Op::Remove {
            key: key.to_owned(),
        });
    }

    /// How many writes are recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// let n = store
    ///     .transaction(|tx| -> Result<usize, larder::IndexError> {
    ///         tx.remove(&1);
    ///         Ok(tx.len())
    ///     })
    ///     .unwrap();
    /// assert_eq!(n, 1);
    /// ```
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no write is recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// store
    ///     .transaction(|tx| -> Result<(), larder::IndexError> {
    ///         assert!(tx.is_empty());
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

impl<K, V> fmt::Debug for Transaction<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transaction")
            .field("writes", &self.ops.len())
            .finish_non_exhaustive()
    }
}

/// Recomputes every insert's index values for `schema` (an index was added
/// since they were computed). Runs user code: call with no lock held.
pub(crate) fn recompute<K, V>(schema: &Schema<V>, ops: &mut [Op<K, V>]) -> Result<(), IndexError> {
    for op in ops {
        if let Op::Insert { value, values, .. } = op {
            *values = schema.compute(value)?;
        }
    }
    Ok(())
}

/// Buffers of more than this many items are not kept as spares: a store
/// keeps at most this many operations' worth of them.
const SPARE_UP_TO: usize = 256;

/// The buffers of a write of many keys (a transaction or a burst), kept
/// empty by the store between two of them so that the next reuses their
/// allocations instead of asking the allocator for as many again.
pub(crate) struct Spare<K, V> {
    pub(crate) ops: Vec<Op<K, V>>,
    pub(crate) steps: Vec<Step>,
    pub(crate) garbage: Vec<Garbage<K, V>>,
}

impl<K, V> Default for Spare<K, V> {
    fn default() -> Self {
        Self {
            ops: Vec::new(),
            steps: Vec::new(),
            garbage: Vec::new(),
        }
    }
}

impl<K, V, S> IndexedStore<K, V, S> {
    /// The spare buffers, or new ones if another write holds them.
    pub(crate) fn take_spare(&self) -> Spare<K, V> {
        self.spare
            .try_lock()
            .map(|mut spare| std::mem::take(&mut *spare))
            .unwrap_or_default()
    }

    /// Keeps `spare`'s buffers, emptied, for the next write of many keys,
    /// unless one is too big to keep. Call with no lock held: what is left
    /// in them drops here.
    pub(crate) fn keep_spare(&self, spare: Spare<K, V>) {
        let Spare {
            mut ops,
            mut steps,
            mut garbage,
        } = spare;
        ops.clear();
        garbage.clear();
        steps.clear();
        if [ops.capacity(), steps.capacity(), garbage.capacity()]
            .iter()
            .any(|&capacity| capacity > SPARE_UP_TO)
        {
            return;
        }
        if let Some(mut slot) = self.spare.try_lock() {
            *slot = Spare {
                ops,
                steps,
                garbage,
            };
        }
    }
}

/// Transactions of up to this many writes group equal keys by a scan of
/// the earlier ones behind a filter of [`FILTER_BITS`] bits of their
/// hashes (no allocation); larger ones through a table (O(n) expected).
const SCAN_UP_TO: usize = 256;

/// The scan's filter: a sixteenth full at most, so that few keys scan.
const FILTER_BITS: usize = 4096;

/// Where one recorded write goes.
#[derive(Clone, Copy)]
pub(crate) struct Step {
    /// The key's hash.
    hash: u64,
    /// The position of the first recorded write with an equal key (the
    /// write's own if none).
    first: usize,
    /// The position of the key's shard among the shards the transaction
    /// locks (ascending).
    core: usize,
    /// For the first write of each key: the key's slot id in its shard,
    /// once probed, as the writes before the current one left it.
    found: Option<usize>,
}

/// What a transaction's keys are, worked out with no lock held: each
/// recorded write's [`Step`], and the set of shards they touch.
pub(crate) struct Plan {
    steps: Vec<Step>,
    touched: ShardSet,
}

impl Plan {
    /// The shards the recorded writes touch.
    pub(crate) fn touched(&self) -> &ShardSet {
        &self.touched
    }

    /// The steps' buffer, to keep as a spare.
    pub(crate) fn into_steps(self) -> Vec<Step> {
        self.steps
    }
}

/// Hashes every recorded key and groups equal keys: all of the
/// transaction's calls of `K`'s `Hash`, and its `Eq` among its own keys
/// (only between keys of equal hashes). Runs user code: call with no lock
/// held.
pub(crate) fn plan<K, V, S>(
    ops: &[Op<K, V>],
    mut steps: Vec<Step>,
    hasher: &S,
    shard_of: impl Fn(u64) -> usize,
) -> Plan
where
    K: Hash + Eq,
    S: BuildHasher,
{
    steps.clear();
    steps.reserve_exact(ops.len());
    let mut touched = ShardSet::default();
    for (i, op) in ops.iter().enumerate() {
        let hash = hasher.hash_one(op.key());
        let shard = shard_of(hash);
        touched.insert(shard);
        // `core` holds the shard until the set of shards is complete.
        steps.push(Step {
            hash,
            first: i,
            core: shard,
            found: None,
        });
    }
    if ops.len() <= SCAN_UP_TO {
        // A key whose hash's filter bit is clear has no equal before it;
        // only the others scan the earlier first writes.
        let mut filter = [0u64; FILTER_BITS / 64];
        for i in 0..steps.len() {
            let hash = steps[i].hash;
            let bit = hash as usize % FILTER_BITS;
            let (word, mask) = (bit / 64, 1 << (bit % 64));
            if filter[word] & mask == 0 {
                filter[word] |= mask;
                continue;
            }
            let key = ops[i].key();
            let equal = (0..i).find(|&j| {
                let step = &steps[j];
                step.first == j && step.hash == hash && ops[j].key() == key
            });
            if let Some(j) = equal {
                steps[i].first = j;
            }
        }
    } else {
        let mut seen: HashTable<usize> = HashTable::with_capacity(ops.len());
        for i in 0..steps.len() {
            let (hash, key) = (steps[i].hash, ops[i].key());
            let steps_now = &steps;
            match seen.find(hash, |&j| steps_now[j].hash == hash && ops[j].key() == key) {
                Some(&j) => steps[i].first = j,
                None => {
                    seen.insert_unique(hash, i, |&j| steps_now[j].hash);
                }
            }
        }
    }
    let positions = touched.positions();
    for step in &mut steps {
        step.core = usize::from(positions[step.core]);
    }
    Plan { steps, touched }
}

/// Applies `ops` in order to `cores` (the write-locked shards of
/// [`Plan::touched`], by shard position, in ascending order), whose schema
/// they were computed for; `plan` is [`plan`]'s answer for them. Pushes
/// one [`Garbage`] per operation, in order, on `garbage` (empty), and
/// leaves `ops` empty.
///
/// All of the transaction's user code under the locks comes first: one
/// probe (`K`'s `Eq`) per distinct key, before anything is modified, while
/// `ops` is still the caller's (so a panic drops them after the unlock).
/// The writes then run on slot ids alone, so a panic in `Eq`, at any call,
/// leaves every shard as it was: a transaction is applied whole or not at
/// all.
pub(crate) fn apply<K, V, C>(
    cores: &mut [C],
    plan: &mut Plan,
    ops: &mut Vec<Op<K, V>>,
    garbage: &mut Vec<Garbage<K, V>>,
) where
    K: Eq,
    C: DerefMut<Target = Core<K, V>>,
{
    // Slot ids for the probes to hand to the writes (`core/plain.rs`).
    for core in cores.iter_mut() {
        core.slot();
    }
    let steps = &mut plan.steps;
    // The probes: where each distinct key is now (user `Eq`).
    for (i, (op, step)) in ops.iter().zip(steps.iter_mut()).enumerate() {
        if step.first == i {
            step.found = cores[step.core].find(step.hash, op.key());
        }
    }
    // No user code from here on.
    garbage.reserve_exact(ops.len());
    for (i, op) in ops.drain(..).enumerate() {
        let Step {
            hash, first, core, ..
        } = steps[i];
        let core = &mut *cores[core];
        let found = &mut steps[first].found;
        garbage.push(match op {
            Op::Insert { key, value, values } => {
                let (inserted, id) = core.insert_at(hash, *found, key, value, values);
                *found = Some(id);
                Garbage::Inserted(inserted)
            }
            Op::Remove { key } => {
                let removed = found.take().map(|id| core.remove_at(hash, id));
                Garbage::Removed(key, removed)
            }
        });
    }
}
