//! A deterministic hasher for hostile tests, so a sweep makes the same calls
//! on every run: FNV-1a over the bytes written, finished by a multiply. With
//! `one_shard`, every hash is one the crate maps to shard 0 (one table
//! grows, fills with tombstones and is rehashed in place).

#![allow(dead_code)]

use std::hash::{BuildHasher, Hasher};

#[derive(Debug, Clone, Copy, Default)]
pub struct TestState {
    pub one_shard: bool,
}

impl TestState {
    /// Keys spread over the shards.
    pub fn spread() -> Self {
        Self { one_shard: false }
    }

    /// Every key in one shard (of `TypedCache` and of `LruCache`).
    pub fn one_shard() -> Self {
        Self { one_shard: true }
    }
}

pub struct TestHasher {
    state: u64,
    one_shard: bool,
}

impl Hasher for TestHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = (self.state ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        let h = self.state.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h = h ^ (h >> 29);
        if self.one_shard { in_shard_zero(h) } else { h }
    }
}

/// A hash that every sharded table of the crate puts in shard 0, whatever
/// its shard count, made from `bits`' low 32 bits. The crate takes a
/// shard from the top half of `hash * 0xD1B5_4A32_D192_ED03`
/// (src/shard_index.rs); this is the hash whose product is those 32 bits,
/// so the low bits and the top seven (what a table uses inside a shard)
/// still vary.
pub fn in_shard_zero(bits: u64) -> u64 {
    // The multiplier's inverse modulo 2^64.
    (bits & 0xFFFF_FFFF).wrapping_mul(0x0610_6CCF_A448_E5AB)
}

impl BuildHasher for TestState {
    type Hasher = TestHasher;
    fn build_hasher(&self) -> TestHasher {
        TestHasher {
            state: 0xcbf2_9ce4_8422_2325,
            one_shard: self.one_shard,
        }
    }
}
