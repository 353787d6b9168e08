//! Index functions and the schema (the ordered list of named indexes), plus
//! the one place where user index functions are called.
//!
//! Index functions are user code: they may be slow, fail or panic. They are
//! only ever called by [`Schema::compute`] and [`IndexDef::compute`], and
//! those are only ever called with no lock held.

use std::error::Error;
use std::fmt;
use std::hash::BuildHasher;

use super::error::IndexError;
pub(crate) use super::values::Values;
use crate::sync::Arc;

/// The values one object has for every index of a schema, by position.
pub(crate) type AllValues = Box<[Values]>;

/// Drops `values`. The values of a store without indexes are an empty list,
/// which owns no memory: forgotten, it skips a call to the drop glue on
/// every write, a visible share of a plain `u64` insert's work
/// (`design/indexed.md`).
#[inline]
pub(crate) fn discard(values: AllValues) {
    if values.is_empty() {
        // An empty boxed slice holds no allocation: nothing leaks.
        #[allow(clippy::mem_forget)]
        std::mem::forget(values);
    } else {
        drop(values);
    }
}

/// The boxed error a fallible index function returns.
pub(crate) type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// A type-erased index function.
pub(crate) type DynIndexFn<V> = dyn Fn(&V) -> Result<Values, BoxError> + Send + Sync;

/// One named index: its name and its function.
pub(crate) struct IndexDef<V> {
    pub(crate) name: Arc<str>,
    pub(crate) func: Arc<DynIndexFn<V>>,
}

impl<V> Clone for IndexDef<V> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            func: Arc::clone(&self.func),
        }
    }
}

impl<V> IndexDef<V> {
    /// Wraps an infallible index function.
    pub(crate) fn infallible<F, I>(name: &str, func: F) -> Self
    where
        F: Fn(&V) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: Into<Arc<str>>,
    {
        Self {
            name: Arc::from(name),
            func: Arc::new(move |value: &V| Ok(normalize(func(value)))),
        }
    }

    /// Wraps a fallible index function.
    pub(crate) fn fallible<F, I, E>(name: &str, func: F) -> Self
    where
        F: Fn(&V) -> Result<I, E> + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: Into<Arc<str>>,
        E: Into<BoxError>,
    {
        Self {
            name: Arc::from(name),
            func: Arc::new(move |value: &V| func(value).map(normalize).map_err(Into::into)),
        }
    }

    /// Calls the index function (user code: call it with no lock held).
    pub(crate) fn compute(&self, value: &V) -> Result<Values, IndexError> {
        (self.func)(value).map_err(|source| IndexError::IndexFunction {
            index: self.name.to_string(),
            source,
        })
    }
}

/// Sorts and de-duplicates an object's values for one index, so that an
/// object is in each bucket at most once and updates can be diffed by a merge.
fn normalize<I>(values: I) -> Values
where
    I: IntoIterator,
    I::Item: Into<Arc<str>>,
{
    // One value (the common case) is held with no list; a list is sized
    // from the iterator's lower bound (exact for the common collections):
    // `collect` would reuse a `Vec<String>`'s buffer, whose size is no
    // multiple of an `Arc<str>`'s, and the boxing would then shrink it with
    // a `realloc`.
    let mut values = values.into_iter();
    let Some(first) = values.next() else {
        return Values::default();
    };
    let Some(second) = values.next() else {
        return Values::One(first.into());
    };
    let mut collected: Vec<Arc<str>> = Vec::with_capacity(values.size_hint().0 + 2);
    collected.push(first.into());
    collected.push(second.into());
    collected.extend(values.map(Into::into));
    collected.sort_unstable();
    collected.dedup();
    Values::from_sorted(collected)
}

/// The indexes of a store, in the order they were added.
///
/// Immutable once shared: adding an index publishes a new `Arc<Schema>`, so a
/// write can tell whether the values it computed (outside the lock) still
/// match the store's indexes by comparing `Arc` pointers under the lock.
pub(crate) struct Schema<V> {
    pub(crate) defs: Vec<IndexDef<V>>,
    /// The hasher of index values, shared by every shard's buckets (and
    /// kept by [`with`](Self::with)): a whole-store lookup hashes its
    /// value once for all the shards.
    pub(crate) value_hasher: ahash::RandomState,
}

impl<V> Schema<V> {
    /// A schema with the given indexes; `Err(name)` if a name repeats.
    pub(crate) fn new(defs: Vec<IndexDef<V>>) -> Result<Self, Arc<str>> {
        for (i, def) in defs.iter().enumerate() {
            if defs[..i].iter().any(|earlier| earlier.name == def.name) {
                return Err(Arc::clone(&def.name));
            }
        }
        Ok(Self {
            defs,
            value_hasher: crate::sync::default_hasher(),
        })
    }

    /// This schema with its value hasher seeded from the store's key
    /// hasher: random when that is (the default), fixed when the user fixed
    /// it, so that a store built with a fixed-seed hasher hashes its index
    /// values the same way on every run too.
    pub(crate) fn seeded_from(mut self, keys: &impl BuildHasher) -> Self {
        let [a, b, c, d] = [0u64, 1, 2, 3].map(|i| keys.hash_one(i));
        self.value_hasher = ahash::RandomState::with_seeds(a, b, c, d);
        self
    }

    /// The hash of index value `value`, as every shard's buckets hash it.
    #[inline]
    pub(crate) fn hash_value(&self, value: &str) -> u64 {
        self.value_hasher.hash_one(value)
    }

    /// The position of index `name`.
    #[inline]
    pub(crate) fn position(&self, name: &str) -> Result<usize, IndexError> {
        self.defs
            .iter()
            .position(|def| &*def.name == name)
            .ok_or_else(|| IndexError::UnknownIndex {
                name: name.to_string(),
            })
    }

    /// This schema plus `def`, or the clash error.
    pub(crate) fn with(&self, def: IndexDef<V>) -> Result<Self, IndexError> {
        if self.defs.iter().any(|existing| existing.name == def.name) {
            return Err(IndexError::DuplicateIndex {
                name: def.name.to_string(),
            });
        }
        let mut defs = self.defs.clone();
        defs.push(def);
        Ok(Self {
            defs,
            value_hasher: self.value_hasher.clone(),
        })
    }

    /// Calls every index function on `value` (user code: no lock held).
    ///
    /// # Errors
    ///
    /// The first index function that fails, as [`IndexError::IndexFunction`].
    pub(crate) fn compute(&self, value: &V) -> Result<AllValues, IndexError> {
        // Sized up front: collecting a `Result` iterator cannot see its
        // length, so it would over-allocate and shrink (a `realloc`).
        let mut all = Vec::with_capacity(self.defs.len());
        for def in &self.defs {
            all.push(def.compute(value)?);
        }
        Ok(all.into_boxed_slice())
    }
}

impl<V> fmt::Debug for Schema<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.defs.iter().map(|def| &*def.name))
            .finish()
    }
}
