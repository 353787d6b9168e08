//! [`KeyShard`]: one key shard of a [`TypedCache`](super::TypedCache) or
//! [`AnyCache`](super::AnyCache), an engine shard (see [`crate::cache`])
//! under the cache's policy, with the count of user writes an init checks.
//!
//! Each shard is unbounded: the cache's bound is global, kept by its
//! wrapper (`raw.rs`), which evicts through [`KeyShard::evict_one`].

use std::borrow::Borrow;

use crate::EvictionPolicy;
use crate::cache::{Expiry, Lookup, MAX_SHARD_CAPACITY};
use crate::lru::PolicyShard;
use crate::removal::{Removal, RemovalCause};

/// A removed key and value, and why.
pub(crate) type Removed<K, V> = Removal<K, V>;

/// Appends `entries` to `out`, each with `cause`.
pub(crate) fn tagged<K, V>(
    out: &mut Vec<Removed<K, V>>,
    entries: impl IntoIterator<Item = (K, V)>,
    cause: RemovalCause,
) {
    out.extend(entries.into_iter().map(|(k, v)| (k, v, cause)));
}

/// One key shard: its entries, and the count of user writes to it.
pub(crate) struct KeyShard<K, V> {
    pub(crate) entries: PolicyShard<K, V>,
    /// Bumped by every user write (insert, remove, clear). An init that
    /// started before a bump does not cache its value.
    pub(crate) generation: u64,
}

impl<K, V> KeyShard<K, V> {
    /// An empty shard; its slab's growth and its policy's own structures
    /// (S3-FIFO's queues and ghost) sized for `share` entries, if the
    /// cache is bounded.
    pub(crate) fn new(
        policy: EvictionPolicy,
        share: Option<usize>,
        expiry: Option<Expiry>,
    ) -> Self {
        let mut entries = PolicyShard::new(policy, MAX_SHARD_CAPACITY, expiry);
        if let Some(share) = share {
            entries.size_for(share);
        }
        Self {
            entries,
            generation: 0,
        }
    }

    pub(crate) fn bump_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// A hit under the shared lock, or `None` under `Exact` (whose hits
    /// need the write lock); the default policy (CLOCK, no expiry) with no
    /// dispatch. `now` is called only when entries can expire.
    #[inline(always)]
    pub(crate) fn get_shared<Q>(
        &self,
        hash: u64,
        key: &Q,
        now: impl FnOnce() -> u64,
    ) -> Option<Lookup<&V>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Eq,
    {
        match &self.entries {
            PolicyShard::Clock(entries) => Some(entries.get_shared(hash, key, 0, true)),
            PolicyShard::Exact(_) | PolicyShard::ExactExpiring(_) => None,
            entries => Some(entries.get_shared(hash, key, now)),
        }
    }

    /// The locked half of storing a value heavier than the capacity (not
    /// stored): removes the key's entry (`K: Eq` runs first, before any
    /// change) into `garbage` (`Replaced`, or `Expired`), bumps the
    /// generation for a user write, sweeps up to `budget` expired entries.
    /// Returns whether the removed entry was live.
    pub(crate) fn reject(
        &mut self,
        hash: u64,
        key: &K,
        now: u64,
        budget: usize,
        user_write: bool,
        garbage: &mut Vec<Removed<K, V>>,
    ) -> bool
    where
        K: Eq,
    {
        let old = self.entries.remove(hash, key, now);
        if user_write {
            self.bump_generation();
        }
        let live = matches!(old, Some((_, _, false)));
        if let Some((key, value, expired)) = old {
            let cause = if expired {
                RemovalCause::Expired
            } else {
                RemovalCause::Replaced
            };
            garbage.push((key, value, cause));
        }
        let mut swept = Vec::new();
        self.entries.sweep(now, budget, &mut swept);
        tagged(garbage, swept, RemovalCause::Expired);
        live
    }

    /// Evicts the policy's next victim other than the entry of hash `keep`
    /// into `garbage` (as `Expired` if it had, else `Evicted`); `false` if
    /// there was none.
    pub(crate) fn evict_one(
        &mut self,
        keep: u64,
        now: u64,
        garbage: &mut Vec<Removed<K, V>>,
    ) -> bool {
        let Some((key, value, expired)) = self.entries.evict_one(now, keep) else {
            return false;
        };
        let cause = if expired {
            RemovalCause::Expired
        } else {
            RemovalCause::Evicted
        };
        garbage.push((key, value, cause));
        true
    }
}
