//! Weights: the user's weigher, and [`Evicted`], the entries one insert
//! evicts (as many as it takes to fit the new entry's weight).
//!
//! Every entry weighs at least 1 (a weigher's 0 counts as 1), so a core's
//! entry count never exceeds its weight, and the weight never exceeds its
//! capacity: the node tables keep their `u32` index limit.

use crate::sync::Arc;

/// The user's weigher, shared by the cache and its builder.
pub(crate) type Weigher<K, V> = Arc<dyn Fn(&K, &V) -> u32 + Send + Sync>;

/// The weight an entry counts for: the weigher's, 0 raised to 1; 1 without
/// a weigher. User code: call it with no lock held.
#[inline]
pub(crate) fn weigh<K, V>(weigher: Option<&Weigher<K, V>>, key: &K, value: &V) -> u32 {
    match weigher {
        None => 1,
        Some(weigher) => weigher(key, value).max(1),
    }
}

/// The entries an insert evicted, oldest victim first: the first inline, any
/// further ones in a `Vec` that stays empty (unallocated) when an insert
/// evicts at most one entry, as every insert of an unweighted cache does.
pub(crate) struct Evicted<K, V> {
    first: Option<(K, V)>,
    rest: Vec<(K, V)>,
}

impl<K, V> Evicted<K, V> {
    /// No entry.
    #[inline]
    pub(crate) fn none() -> Self {
        Self {
            first: None,
            rest: Vec::new(),
        }
    }

    /// Appends a victim.
    #[inline]
    pub(crate) fn push(&mut self, entry: (K, V)) {
        if self.first.is_none() {
            self.first = Some(entry);
        } else {
            self.rest.push(entry);
        }
    }

    /// How many entries were evicted.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// The only victim (or none), or `Err(self)` if there were several.
    #[inline]
    pub(crate) fn at_most_one(self) -> Result<Option<(K, V)>, Self> {
        if self.rest.is_empty() {
            Ok(self.first)
        } else {
            Err(self)
        }
    }

    /// The victims, oldest first.
    pub(crate) fn into_iter(self) -> impl Iterator<Item = (K, V)> {
        self.first.into_iter().chain(self.rest)
    }

    /// The only victim, if any; panics if there were several (unit tests of
    /// unweighted cores, which evict at most one entry per insert).
    #[cfg(test)]
    pub(crate) fn single(self) -> Option<(K, V)> {
        assert!(self.rest.is_empty(), "more than one entry evicted");
        self.first
    }
}
