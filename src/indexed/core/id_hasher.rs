//! The hasher of the sets of slot ids a core builds (`matching`).

use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for slot ids: Fibonacci hashing. Slot ids are dense integers
/// chosen by the store, not by users, so no flooding protection is needed;
/// the multiplication spreads consecutive ids over the table's low bits and
/// mixes the high bits hashbrown uses as tags.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) type IdBuild = BuildHasherDefault<IdHasher>;
