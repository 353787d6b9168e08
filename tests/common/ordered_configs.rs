//! The `OrderedIndex` configurations the public-API tests run under.
#![allow(dead_code)] // each test file uses its own part

use larder::{OrderedIndex, OrderedLock};

/// Every configuration of the builder: (lock, point lookups).
pub const CONFIGS: [(OrderedLock, bool); 6] = [
    (OrderedLock::Sharded, true),
    (OrderedLock::Sharded, false),
    (OrderedLock::Single, true),
    (OrderedLock::Single, false),
    (OrderedLock::Partitioned, true),
    (OrderedLock::Partitioned, false),
];

/// The partitioned configuration with its point-lookup table.
pub const PARTITIONED: (OrderedLock, bool) = CONFIGS[4];

/// An index of `config`; a partitioned one gets leaves of at most four
/// entries, so that small tests split, merge and trim leaves.
pub fn configured<K, V>(config: (OrderedLock, bool)) -> OrderedIndex<K, V> {
    configured_with(config, ahash::RandomState::new())
}

/// [`configured`], hashing keys (for the point-lookup table) with `hasher`.
pub fn configured_with<K, V, S>(
    (lock, point_lookups): (OrderedLock, bool),
    hasher: S,
) -> OrderedIndex<K, V, S> {
    OrderedIndex::builder()
        .hasher(hasher)
        .lock(lock)
        .point_lookups(point_lookups)
        .leaf_size(4)
        .build()
        .unwrap()
}

/// `configured(config)` holding `entries`.
pub fn filled<K: Ord + Clone + std::hash::Hash, V>(
    config: (OrderedLock, bool),
    entries: impl IntoIterator<Item = (K, V)>,
) -> OrderedIndex<K, V> {
    let index = configured(config);
    for (key, value) in entries {
        index.insert(key, value);
    }
    index
}
