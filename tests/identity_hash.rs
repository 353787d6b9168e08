//! Keys hashed by an identity hasher (the hash of a small integer is the
//! integer: its top bits are zero, as with `nohash-hasher`) spread over
//! over the shards: an `LruCache` fills to its capacity and an
//! `IndexedStore`'s keys use all of its shards. Taking shards from fixed
//! hash bits put every such key in one shard. (`TypedCache`'s shards are
//! counted by a unit test in src/typed/tests.rs.)

use std::hash::{BuildHasherDefault, Hasher};

use larder::{IndexedStore, LruCache};

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
