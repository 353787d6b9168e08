//! Keys hashed by an identity hasher (the hash of a small integer is the
//! integer: its top bits are zero, as with `nohash-hasher`) spread over
//! over the shards: an `LruCache` fills to its capacity and an
//! `IndexedStore`'s keys use all of its shards. Taking shards from fixed
//! hash bits put every such key in one shard. (`TypedCache`'s shards are
//! counted by a unit test in src/typed/tests.rs.) A hash of 0 is a key
//! like any other: `TypedCache::resize` evicts it.

use std::hash::{BuildHasherDefault, Hasher};

use larder::{IndexedStore, LruCache, TypedCache};

/// The hash of a `u64` is the `u64`.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type IdentityState = BuildHasherDefault<Identity>;

const KEYS: u64 = 4_096;

#[test]
fn an_lru_cache_of_small_integer_keys_fills_every_shard() {
    let cache: LruCache<u64, u64, IdentityState> = LruCache::builder()
        .capacity(KEYS as usize)
        .shards(16)
        .hasher(IdentityState::default())
        .build()
        .unwrap();
    for key in 0..KEYS {
        cache.insert(key, key);
    }
    // One shard would hold 256 of them; an even spread nearly all.
    assert!(
        cache.len() as u64 > KEYS * 9 / 10,
        "{} of {KEYS}",
        cache.len()
    );
}

#[test]
fn an_indexed_store_of_small_integer_keys_uses_every_shard() {
    let store: IndexedStore<u64, u64, IdentityState> = IndexedStore::builder()
        .shards(16)
        .hasher(IdentityState::default())
        .build()
        .unwrap();
    let mut used = [0u64; 16];
    for key in 0..KEYS {
        store.insert(key, key).unwrap();
        used[store.shard_of(&key)] += 1;
    }
    let even = KEYS / 16;
    assert!(
        used.iter().all(|&n| n > even / 2 && n < even * 2),
        "{used:?}"
    );
    store.check_invariants();
}

/// Eviction spares the entry being stored by its hash; a resize stores
/// nothing, so the entry whose hash is 0 (key 0 here) must still go when
/// the others are not enough.
#[test]
fn a_typed_resize_evicts_the_key_whose_hash_is_zero() {
    let cache: TypedCache<u64, u64, IdentityState> = TypedCache::builder()
        .capacity(6)
        .shards(1)
        .weigher(|_, value: &u64| *value as u32)
        .hasher(IdentityState::default())
        .build()
        .unwrap();
    cache.insert(0, 5);
    cache.insert(1, 1);
    cache.resize(4).unwrap();
    assert!(
        !cache.contains_key(&0),
        "key 0 (weight 5) outlived a bound of 4"
    );
    assert_eq!(cache.stats().capacity, Some(4));
    cache.check_invariants();
}
