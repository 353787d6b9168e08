//! What one insert displaces: [`Displaced`] (the replaced value, the
//! unused key) and [`Evicted`] (the entries evicted to make room, as many
//! as it takes to fit the new entry's weight).

/// What a [`Shard::insert`](super::Shard::insert) displaced; the caller
/// drops it unlocked.
pub(crate) struct Displaced<K, V> {
    /// The previous value of the same key.
    pub(crate) replaced: Option<V>,
    /// Whether the replaced value had expired.
    pub(crate) replaced_expired: bool,
    /// The entries evicted to make room, oldest victim first (at most one
    /// in an unweighted cache); or the new entry itself, if it weighs more
    /// than the whole shard.
    pub(crate) evicted: Evicted<K, V>,
    /// How many of `evicted`, the first ones, had expired (released by the
    /// insert's sweep) rather than made room.
    pub(crate) expired: usize,
    /// The key passed in when the key was already present (the stored key
    /// is kept, as `std::collections::HashMap::insert` does).
    pub(crate) unused_key: Option<K>,
}

impl<K, V> Displaced<K, V> {
    /// Nothing displaced.
    #[inline]
    pub(crate) fn nothing() -> Self {
        Self {
            replaced: None,
            replaced_expired: false,
            evicted: Evicted::none(),
            expired: 0,
            unused_key: None,
        }
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

    /// Puts a victim at position `at` (at most the length), the later ones
    /// moving back.
    pub(crate) fn insert(&mut self, at: usize, entry: (K, V)) {
        match (at, self.first.take()) {
            (_, None) => self.first = Some(entry),
            (0, Some(old)) => {
                self.first = Some(entry);
                self.rest.insert(0, old);
            }
            (at, Some(old)) => {
                self.first = Some(old);
                self.rest.insert(at - 1, entry);
            }
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
