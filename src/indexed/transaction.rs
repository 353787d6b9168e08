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
use crate::sync::Arc;

/// One recorded write, with its index values computed.
pub(crate) enum Op<K, V> {
    Insert {
        key: K,
        /// The copy the store keeps (`key` is dropped after the commit).
        key_copy: K,
        value: Arc<V>,
        values: AllValues,
    },
    Remove {
        key: K,
    },
}

/// What applying the operations replaced or removed; dropped after unlock.
pub(crate) enum Garbage<K, V> {
    Inserted(Inserted<K, V>),
    Removed(Option<Removed<K, V>>),
    Key(K),
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
/// assert_eq!(store.keys(), [2]);
/// ```
pub struct Transaction<K, V> {
    schema: Arc<Schema<V>>,
    ops: Vec<Op<K, V>>,
}

impl<K: Clone, V> Transaction<K, V> {
    pub(crate) fn new(schema: Arc<Schema<V>>) -> Self {
        Self {
            schema,
            ops: Vec::new(),
        }
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
    /// assert_eq!(*store.get(&1).unwrap(), 11);
    /// ```
    pub fn insert(&mut self, key: K, value: V) -> Result<(), IndexError> {
        self.insert_arc(key, Arc::new(value))
    }

    /// [`insert`](Transaction::insert) of an object already in an `Arc`.
    ///
    /// # Errors
    ///
    /// [`IndexError::IndexFunction`] if an index function fails; nothing is
    /// recorded.
    ///
    /// # Panics
    ///
    /// If an index function panics.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let store = larder::IndexedStore::<u32, u32>::new();
    /// let shared = Arc::new(7);
    /// store
    ///     .transaction(|tx| tx.insert_arc(1, Arc::clone(&shared)))
    ///     .unwrap();
    /// assert!(Arc::ptr_eq(&store.get(&1).unwrap(), &shared));
    /// ```
    pub fn insert_arc(&mut self, key: K, value: Arc<V>) -> Result<(), IndexError> {
        let values = self.schema.compute(&value)?;
        let key_copy = key.clone();
        self.ops.push(Op::Insert {
            key,
            key_copy,
            value,
            values,
        });
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

/// What a transaction's keys are, worked out with no lock held: each
/// recorded key's hash and shard, and for each write the position of the
/// first recorded write with an equal key (its own position if none).
pub(crate) struct Plan {
    hashes: Vec<u64>,
    shards: Vec<usize>,
    first: Vec<usize>,
}

impl Plan {
    /// The shard of each recorded write, in order.
    pub(crate) fn shards(&self) -> &[usize] {
        &self.shards
    }
}

/// Hashes every recorded key and groups equal keys: all of the
/// transaction's calls of `K`'s `Hash`, and its `Eq` among its own keys.
/// Runs user code: call with no lock held.
pub(crate) fn plan<K, V, S>(ops: &[Op<K, V>], hasher: &S, shard_of: impl Fn(u64) -> usize) -> Plan
where
    K: Hash + Eq,
    S: BuildHasher,
{
    let keys: Vec<&K> = ops
        .iter()
        .map(|op| {
            let (Op::Insert { key, .. } | Op::Remove { key }) = op;
            key
        })
        .collect();
    let hashes: Vec<u64> = keys.iter().map(|key| hasher.hash_one(key)).collect();
    let mut seen: HashTable<usize> = HashTable::with_capacity(keys.len());
    let mut first = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        let hash = hashes[i];
        match seen.find(hash, |&j| hashes[j] == hash && keys[j] == *key) {
            Some(&j) => first.push(j),
            None => {
                seen.insert_unique(hash, i, |&j| hashes[j]);
                first.push(i);
            }
        }
    }
    let shards = hashes.iter().map(|&hash| shard_of(hash)).collect();
    Plan {
        hashes,
        shards,
        first,
    }
}

/// Applies `ops` in order to `cores` (the write-locked shards the
/// operations touch, by shard position, in ascending order), whose schema
/// they were computed for; `plan` is [`plan`]'s answer for them.
///
/// All of the transaction's user code under the locks comes first: one
/// probe (`K`'s `Eq`) per distinct key, before anything is modified. The
/// writes then run on slot ids alone, so a panic in `Eq`, at any call,
/// leaves every shard as it was: a transaction is applied whole or not at
/// all.
pub(crate) fn apply<K, V, C>(
    cores: &mut [(usize, C)],
    plan: &Plan,
    ops: Vec<Op<K, V>>,
) -> Vec<Garbage<K, V>>
where
    K: Eq,
    C: DerefMut<Target = Core<K, V>>,
{
    let position = |shard: usize| {
        cores
            .binary_search_by_key(&shard, |(at, _)| *at)
            .expect("larder: a transaction's shards are locked")
    };
    let at_of: Vec<usize> = plan.shards.iter().map(|&shard| position(shard)).collect();
    // The probes: where each distinct key is now (user `Eq`).
    let mut at: Vec<Option<usize>> = vec![None; ops.len()];
    for (i, op) in ops.iter().enumerate() {
        if plan.first[i] == i {
            let (Op::Insert { key, .. } | Op::Remove { key }) = op;
            at[i] = cores[at_of[i]].1.find(plan.hashes[i], key);
        }
    }
    // No user code from here on.
    let mut garbage = Vec::with_capacity(ops.len());
    for (i, op) in ops.into_iter().enumerate() {
        let (hash, group) = (plan.hashes[i], plan.first[i]);
        let core = &mut *cores[at_of[i]].1;
        match op {
            Op::Insert {
                key,
                key_copy,
                value,
                values,
            } => {
                let (inserted, id) = core.insert_at(hash, at[group], key_copy, value, values);
                at[group] = Some(id);
                garbage.push(Garbage::Inserted(inserted));
                garbage.push(Garbage::Key(key));
            }
            Op::Remove { key } => {
                let removed = at[group].take().map(|id| core.remove_at(hash, id));
                garbage.push(Garbage::Removed(removed));
                garbage.push(Garbage::Key(key));
            }
        }
    }
    garbage
}
