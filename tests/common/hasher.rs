//! A deterministic hasher for hostile tests, so a sweep makes the same calls
//! on every run: FNV-1a over the bytes written, finished by a multiply. With
//! `one_shard`, the bits the caches pick shards from are cleared, so every
//! key lands in one shard (one table grows, fills with tombstones and is
//! rehashed in place).

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
        if self.one_shard {
            // TypedCache picks shards from bits 40..44, LruCache from bits
            // 24..56; the table uses the low bits and the top seven.
            h & 0xFF00_0000_00FF_FFFF
        } else {
            h
        }
    }
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
