//! Which shard a key's hash belongs to: one mapping for every sharded
//! table in the crate (the cache engine's shards under `LruCache`,
//! `TypedCache` and `AnyCache`, `IndexedStore`, `OrderedIndex`'s point
//! table, the single-flight table).
//!
//! The hash is multiplied by an odd constant and the top half of the
//! product is scaled to the shard count. Every bit of the hash can
//! move the result, so a hasher that leaves some bits constant still
//! spreads keys over every shard (an identity hash of small integers
//! leaves the top bits zero: taking shards from fixed bits put every such
//! key in one shard). Within a shard, the keys' own hash bits (the low
//! bits a table's bucket index takes, the top seven that are hashbrown's
//! tag) stay as varied as the hasher made them. The constant is not the
//! one S3-FIFO's ghost spreads fingerprints with (`cache/ghost.rs`): with
//! the same one, an identity hash's keys of one shard would use a
//! sixteenth of the ghost's buckets in each of 16 shards.
//!
//! Costs one multiplication more than taking bits.

/// The multiplier (odd, so no two hashes share a product).
const SPREAD: u64 = 0xD1B5_4A32_D192_ED03;

/// The shard of `hash` among `shards` (1 to 2^32).
#[inline]
pub(crate) fn shard_index(hash: u64, shards: usize) -> usize {
    let mixed = hash.wrapping_mul(SPREAD) >> 32;
    ((mixed * shards as u64) >> 32) as usize
}

#[cfg(test)]
mod tests {
    use super::{SPREAD, shard_index};

    #[test]
    fn every_shard_count_gets_indexes_in_range_and_all_of_them() {
        for shards in [1usize, 2, 3, 8, 16, 100, 128, 4096] {
            let mut used = vec![0u32; shards];
            for key in 0..(shards as u64 * 64) {
                let index = shard_index(key, shards);
                assert!(index < shards, "{key} -> {index} of {shards}");
                used[index] += 1;
            }
            assert!(used.iter().all(|&n| n > 0), "{shards}: {used:?}");
        }
    }

    #[test]
    fn an_identity_hash_of_small_keys_spreads_evenly() {
        // Keys 0..4096 hashed to themselves: their top 52 bits are zero.
        for shards in [8usize, 16, 128] {
            let mut used = vec![0u32; shards];
            for key in 0..4096u64 {
                used[shard_index(key, shards)] += 1;
            }
            let even = 4096 / shards as u32;
            let (least, most) = (used.iter().min().unwrap(), used.iter().max().unwrap());
            assert!(
                *least >= even / 2 && *most <= even * 2,
                "{shards} shards: {least}..{most} keys, even is {even}"
            );
        }
    }

    #[test]
    fn keys_of_one_shard_keep_varied_low_and_top_bits() {
        // A shard's keys must not share the bits a table uses inside it.
        let shard = |hash: u64| shard_index(hash, 16);
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut low = std::collections::HashSet::new();
        let mut top = std::collections::HashSet::new();
        // About 12,500 of 200,000 pseudo-random hashes land in shard 5.
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if shard(state) == 5 {
                low.insert(state & 63);
                top.insert(state >> 57);
            }
        }
        assert_eq!((low.len(), top.len()), (64, 128));
        assert_eq!(SPREAD % 2, 1);
    }
}
