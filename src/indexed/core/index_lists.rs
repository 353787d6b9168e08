//! One index of a [`Core`](super::Core): a bucket per value, each a dense
//! list of the slot ids having that value, and the positions that make
//! taking an id out of a bucket O(1).
//!
//! A bucket is a `Vec<u32>`: a lookup walks it as a slice (no hash-set
//! groups to scan), an add is a push. Removal swap-removes, so each slot
//! keeps, for every value it has, the position of its id in that value's
//! bucket ([`Positions`]). The id that a swap-remove moves is another
//! slot's; which of that slot's positions to update is found from its
//! interned values (a pointer comparison each).

use hashbrown::HashTable;

use super::super::index_fn::AllValues;
use super::positions::Positions;
use crate::sync::Arc;

/// A slot id as the table and buckets hold it (a core never has more than
/// `u32::MAX` slots: see [`Core::insert_unindexed`](super::Core::insert_unindexed)).
pub(crate) type Id = u32;

/// One bucket: the slot ids of the objects having one index value, in no
/// particular order, each once.
pub(crate) type Bucket = Vec<Id>;

/// One index: a bucket per value, keyed by the interned value that slots
/// hold clones of. Every shard of a store hashes values with the same
/// hasher (the schema's), so a whole-store lookup hashes its value once
/// and probes each shard with that hash ([`get_hashed`](Self::get_hashed)).
pub(crate) struct Buckets {
    table: HashTable<(Arc<str>, Bucket)>,
    hasher: ahash::RandomState,
}

impl Buckets {
    /// No bucket; values hashed with `hasher`.
    pub(crate) fn with_hasher(hasher: ahash::RandomState) -> Self {
        Self {
            table: HashTable::new(),
            hasher,
        }
    }

    /// The bucket of `value`, if any object has it.
    #[inline]
    pub(crate) fn get(&self, value: &str) -> Option<&Bucket> {
        self.get_hashed(self.hasher.hash_one(value), value)
    }

    /// The bucket of `value`, whose hash (by this index's hasher) is `hash`.
    #[inline]
    pub(crate) fn get_hashed(&self, hash: u64, value: &str) -> Option<&Bucket> {
        self.table
            .find(hash, |(key, _)| **key == *value)
            .map(|(_, bucket)| bucket)
    }

    /// The interned value and the bucket of `value`, mutable.
    #[inline]
    fn get_key_value_mut(&mut self, value: &str) -> Option<(&Arc<str>, &mut Bucket)> {
        let hash = self.hasher.hash_one(value);
        self.table
            .find_mut(hash, |(key, _)| **key == *value)
            .map(|(key, bucket)| (&*key, bucket))
    }

    /// Every value some object has, with its bucket.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Bucket)> {
        self.table.iter().map(|(key, bucket)| (key, bucket))
    }

    /// Every value some object has.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Arc<str>> {
        self.table.iter().map(|(key, _)| key)
    }

    /// A new bucket holding `id` alone, for `value`, which has none.
    fn insert_new(&mut self, value: Arc<str>, id: Id) {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(&*value);
        self.table
            .insert_unique(hash, (value, vec![id]), |(key, _)| hasher.hash_one(&**key));
    }

    /// Drops the bucket of `value`.
    fn remove(&mut self, value: &str) {
        let hash = self.hasher.hash_one(value);
        if let Ok(found) = self.table.find_entry(hash, |(key, _)| **key == *value) {
            drop(found.remove());
        }
    }
}

impl std::fmt::Debug for Buckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The bucket position `len` as stored (below `u32::MAX`: a bucket holds
/// at most one id per slot).
#[inline]
fn position(len: usize) -> u32 {
    len as u32
}

/// Puts slot `id` in the bucket of `value`, creating the bucket if needed,
/// and interns `value`: afterwards it is the bucket's own key. Returns the
/// id's position in the bucket.
#[inline]
pub(super) fn bucket(buckets: &mut Buckets, value: &mut Arc<str>, id: Id) -> u32 {
    match buckets.get_key_value_mut(value) {
        Some((interned, bucket)) => {
            bucket.push(id);
            if !Arc::ptr_eq(interned, value) {
                *value = Arc::clone(interned);
            }
            position(bucket.len() - 1)
        }
        None => {
            buckets.insert_new(Arc::clone(value), id);
            0
        }
    }
}

/// Takes `id`, at position `at`, out of the bucket of `value` (index
/// `index`), dropping the bucket if it empties and shrinking it if it is
/// mostly empty. The id that moves into `at` has its position updated in
/// `positions`, found through its slot's `values`. The bucket's key dropped
/// with an empty bucket is never the last reference to it (the slot's
/// values, returned to the caller, still hold one).
#[inline]
pub(super) fn unbucket(
    buckets: &mut Buckets,
    index: usize,
    value: &str,
    id: Id,
    at: u32,
    values: &[AllValues],
    positions: &mut Positions,
) {
    let Some((interned, bucket)) = buckets.get_key_value_mut(value) else {
        panic!("invariant violated: a slot's value has no bucket");
    };
    let at_usize = at as usize;
    assert!(
        bucket.get(at_usize) == Some(&id),
        "invariant violated: a slot's bucket position holds another id"
    );
    bucket.swap_remove(at_usize);
    if let Some(&moved) = bucket.get(at_usize) {
        let slot = values.get(moved as usize).map_or(&[][..], |slot| &slot[..]);
        let (Some(before), Some(held)) = (slot.get(..index), slot.get(index)) else {
            panic!("invariant violated: a bucket lists a slot without values");
        };
        let offset: usize = before.iter().map(|values| values.len()).sum();
        let nth = held
            .iter()
            .position(|held| Arc::ptr_eq(held, interned))
            .expect("invariant violated: a bucket lists a slot without its value");
        positions.set_one(moved as usize, offset + nth, at);
    }
    if bucket.is_empty() {
        buckets.remove(value);
    } else if bucket.capacity() > 64 && bucket.len() * 8 < bucket.capacity() {
        // A bucket that shrank to an eighth of its capacity gives memory
        // back; halving at most once per `len` removals keeps this O(1)
        // amortized.
        bucket.shrink_to(bucket.len() * 2);
    }
}
