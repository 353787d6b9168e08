//! The user's weigher: every entry weighs at least 1 (a weigher's 0 counts
//! as 1), so a shard's entry count never exceeds its weight, and the weight
//! never exceeds its capacity: the slot numbers keep their `u32` limit.

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
