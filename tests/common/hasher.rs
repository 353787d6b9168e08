//! A deterministic hasher for hostile tests, so a sweep makes the same calls
//! on every run: FNV-1a over the bytes written, finished by a multiply. With
//! `one_shard`, every hash is one the crate maps to shard 0 (one table
//! grows, fills with tombstones and is rehashed in place). With `collide`,
//! distinct keys share their whole 64-bit hash: a legal but degenerate
//! hasher (equal keys still hash equal).

#![allow(dead_code)]

use std::hash::{BuildHasher, Hasher};

#[derive(Debug, Clone, Copy, Default)]
pub struct TestState {
    pub one_shard: bool,
    pub collide: Collide,
}

/// How many distinct hashes the keys get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Collide {
    /// As many as the keys (FNV-1a, mixed).
    #[default]
    Not,
    /// One: every key hashes to 0 (a hash table becomes a list; 0 is
    /// the hash a sentinel would most likely use).
    All,
    /// Two: 0 or [`SECOND_HASH`], by the low bit of the bytes' FNV state.
    Two,
}

/// The other hash of [`Collide::Two`].
pub const SECOND_HASH: u64 = 0x9E37_79B9_7F4A_7C15;

impl TestState {
    /// Keys spread over the shards.
    pub fn spread() -> Self {
        Self {
            one_shard: false,
            collide: Collide::Not,
        }
    }

    /// Every key in one shard (of `TypedCache` and of `LruCache`).
    pub fn one_shard() -> Self {
        Self {
            one_shard: true,
            collide: Collide::Not,
        }
    }

    /// Keys whose hashes collide as `collide` says.
    pub fn colliding(collide: Collide) -> Self {
        Self {
            one_shard: false,
            collide,
        }
    }
}

pub struct TestHasher {
    state: u64,
    one_shard: bool,
    collide: Collide,
}

impl Hasher for TestHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = (self.state ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        match self.collide {
            Collide::Not => {}
            Collide::All => return 0,
            Collide::Two => return if self.state & 1 == 0 { 0 } else { SECOND_HASH },
        }
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
            collide: self.collide,
        }
    }
}
