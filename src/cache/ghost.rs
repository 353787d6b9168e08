//! S3-FIFO's ghost queue: fingerprints of the hashes of keys recently
//! evicted from the small queue, in a set-associative table of ring
//! buckets.
//!
//! # Layout
//!
//! The ghost is a flat array of buckets, each one 64-byte line of [`WAYS`]
//! 32-bit fingerprints, 0 marking a free place, and beside it a byte per
//! bucket: its write cursor. A fingerprint (the hash's low 32 bits,
//! independent of the bits that chose the shard) picks its bucket, and
//! within the bucket the ghost is a ring, an exact FIFO:
//!
//! - **remembering** a hash writes its fingerprint at the cursor, over the
//!   bucket's oldest, and moves the cursor on: one place and one byte
//!   written, no search;
//! - **taking** a hash (its key is readmitted, to main) tests the line for
//!   its fingerprint and clears the places holding it: one line read (and
//!   written if the hash was there). The freed place stays free until the
//!   cursor comes round to it.
//!
//! A ghost of fewer than [`WAYS`] places is one bucket of that many places:
//! an exact FIFO.
//!
//! So the ghost as a whole is a FIFO whose order is kept per bucket: a
//! fingerprint lives for as many evictions into its bucket as the bucket
//! has places, so for about as many evictions as the ghost has places,
//! give or take the spread of evictions over buckets (with 16 places a
//! bucket, about a quarter either way). A queue in a deque with a hash set
//! of members beside it keeps the order exactly but costs three probes of
//! scattered memory per eviction (remember, trim the oldest, and test the
//! incoming key) and 17 bytes or more per place; the buckets cost a line
//! read per test, a place and a cursor byte written per eviction, and a
//! little over 4 bytes a place, for the queue's hit ratios (the figures
//! are in `design/lru.md`).
//!
//! A fingerprint is the low 32 bits of the hash (0 read as 1): two keys
//! whose hashes share them are one member, so the ghost may send to main a
//! key it never saw; with 16 places a bucket that is about one lookup in
//! 270 million. A key remembered twice (a shared fingerprint, or a key that
//! left small again without passing the ghost) holds two places; taking it
//! clears both.
//!
//! # Size
//!
//! The ghost holds about two thirds as many fingerprints as the core holds
//! entries when it evicts ([`ghost_target`]): its capacity in an
//! unweighted cache, fewer keys than that in a weighted one. It is sized
//! at the first eviction, not before (a cache that never fills allocates
//! no ghost), and rebuilt, keeping what it remembers, when that target
//! moves by more than an eighth, or when the cache's capacity falls so far
//! that two thirds of it are more than an eighth below the ghost's size.

/// Fingerprints per bucket: one 64-byte line.
pub(crate) const WAYS: usize = 16;

/// A free place.
const FREE: u32 = 0;

/// One line of places, oldest at the bucket's cursor.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct GhostBucket([u32; WAYS]);

const EMPTY_BUCKET: GhostBucket = GhostBucket([FREE; WAYS]);

impl GhostBucket {
    /// A bit per place holding `print`, place 0 in bit 0, without a branch
    /// per place. The compiler vectorizes the compares but assembles the
    /// mask lane by lane, several times the work of the test in
    /// [`holds`](Self::holds), so callers ask that first.
    #[inline]
    fn matches(&self, print: u32) -> u32 {
        self.0
            .iter()
            .enumerate()
            .fold(0, |mask, (i, &p)| mask | (u32::from(p == print) << i))
    }

    /// Whether any place holds `print`: the cheap first test. The compiler
    /// reduces this fold to four vector compares and one mask extraction,
    /// where [`matches`](Self::matches) builds its mask lane by lane;
    /// most tests find nothing, so the mask is built only once this says
    /// there is a place to find. Out of line on purpose: inlined, the same
    /// fold compiled to scalar compares (`design/lru.md` has the counts).
    #[inline(never)]
    fn holds(&self, print: u32) -> bool {
        self.0.iter().fold(0, |any, &p| any | u32::from(p == print)) != 0
    }

    /// Writes `print` at place `at`, the oldest of the first `ways`;
    /// returns the cursor's next place.
    #[inline]
    fn push(&mut self, print: u32, at: u8, ways: usize) -> u8 {
        // The mask keeps the index in bounds without a check; `at` is
        // below `ways` <= WAYS anyway.
        self.0[usize::from(at) & (WAYS - 1)] = print;
        let next = at + 1;
        if usize::from(next) >= ways { 0 } else { next }
    }

    /// Clears every place holding `print`; whether there was one. Inline
    /// down to the [`holds`](Self::holds) call: most tests find nothing.
    #[inline(always)]
    fn take(&mut self, print: u32) -> bool {
        if !self.holds(print) {
            return false;
        }
        self.clear(print);
        true
    }

    /// Clears every place holding `print` (there is one). Out of line: a
    /// rare branch of the insert it is part of.
    #[cold]
    #[inline(never)]
    fn clear(&mut self, print: u32) {
        let mut found = self.matches(print);
        while found != 0 {
            self.0[found.trailing_zeros() as usize & (WAYS - 1)] = FREE;
            found &= found - 1;
        }
    }

    /// The remembered fingerprints of the first `ways` places, newest
    /// first, for a cursor at `at`.
    fn newest_first(&self, at: u8, ways: usize) -> impl Iterator<Item = u32> + '_ {
        let at = usize::from(at);
        (1..=ways)
            .map(move |back| self.0[(at + ways - back) % ways])
            .filter(|&p| p != FREE)
    }
}

/// The ghost's target in fingerprints for a core holding `entries`: two
/// thirds of them, rounded down.
///
/// Chosen on a grid (small queue 1/16 to 1/64 of the capacity, ghost 0.35
/// to 1.5 capacities) over Zipf 0.9, Zipf 1.1 and a scan-polluted Zipf 0.9
/// trace at 1% and 10% of 1M keys: a ghost as large as main hit less on
/// the Zipf traces at 1%, half the capacity less on the scan trace at 10%
/// (`design/lru.md` has the figures).
pub(crate) fn ghost_target(entries: usize) -> usize {
    // 2n/3 without overflowing for counts near usize::MAX.
    entries / 3 * 2 + entries % 3 * 2 / 3
}

/// The fingerprint of a hash: its low 32 bits, never [`FREE`].
#[inline]
pub(crate) fn fingerprint(hash: u64) -> u32 {
    (hash as u32).max(1)
}

/// The bucket of fingerprint `print` among `buckets`: the high half of a
/// multiplicative remix of the fingerprint, reduced by multiply-shift (no
/// division). A fingerprint alone decides its bucket, so a rebuilt ghost
/// files what it remembers where lookups will look.
///
/// `buckets` stays below 2^32 (a shard holds at most `u32::MAX - 1`
/// entries, so its ghost at most 2^28 buckets): the product cannot
/// overflow.
#[inline]
pub(crate) fn bucket_of(print: u32, buckets: usize) -> usize {
    debug_assert!(buckets as u64 <= u64::from(u32::MAX));
    let mixed = u64::from(print).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    ((mixed * buckets as u64) >> 32) as usize
}

/// The number of buckets and the places used in each for a target of
/// `target` fingerprints: full buckets of [`WAYS`] places, as many as come
/// nearest the target; one bucket of `target` places below [`WAYS`].
pub(crate) fn shape(target: usize) -> (usize, usize) {
    if target == 0 {
        (0, 0)
    } else if target < WAYS {
        (1, target)
    } else {
        ((target + WAYS / 2) / WAYS, WAYS)
    }
}

/// The ghost (see the module docs).
pub(crate) struct Ghost {
    buckets: Vec<GhostBucket>,
    /// Each bucket's cursor: the place its next fingerprint goes to.
    cursors: Vec<u8>,
    /// Places used in each bucket (`WAYS`, or fewer in a one-bucket ghost).
    ways: usize,
    /// The target the ghost was sized for.
    target: usize,
    /// The entry count the size was last checked against (`usize::MAX`
    /// when it must be checked again): a full shard evicts at one count,
    /// so the check runs once, not at every eviction.
    checked: usize,
}

impl Ghost {
    /// An empty ghost; it allocates at its first [`Ghost::remember`].
    pub(crate) fn new() -> Self {
        Self {
            buckets: Vec::new(),
            cursors: Vec::new(),
            ways: 0,
            target: 0,
            checked: usize::MAX,
        }
    }

    /// Whether `hash` is remembered; if so, forgets it (its key is being
    /// readmitted, to main). One line read.
    #[inline(always)]
    pub(crate) fn take(&mut self, hash: u64) -> bool {
        let print = fingerprint(hash);
        let n = self.buckets.len();
        n != 0 && self.buckets[bucket_of(print, n)].take(print)
    }

    /// Remembers `hash`, evicted from a core holding `entries` entries (the
    /// ghost's size follows that count, see the module docs).
    #[inline]
    pub(crate) fn remember(&mut self, hash: u64, entries: usize) {
        if entries != self.checked {
            self.check_size(entries);
        }
        let print = fingerprint(hash);
        self.file(print);
    }

    /// Writes `print` at its bucket's cursor (nothing in an empty ghost).
    #[inline]
    fn file(&mut self, print: u32) {
        let n = self.buckets.len();
        if n == 0 {
            return;
        }
        let b = bucket_of(print, n);
        if let (Some(bucket), Some(cursor)) = (self.buckets.get_mut(b), self.cursors.get_mut(b)) {
            *cursor = bucket.push(print, *cursor, self.ways);
        }
    }

    /// Resizes the ghost if the target of a core holding `entries` moved by
    /// more than an eighth. Out of line: a full shard evicts at one count,
    /// so this runs once per change of it.
    #[inline(never)]
    fn check_size(&mut self, entries: usize) {
        let want = ghost_target(entries);
        // An empty ghost has a target of 0: any want sizes it.
        if want.abs_diff(self.target) > self.target / 8 {
            self.resize(want);
        }
        self.checked = entries;
    }

    /// Caps the ghost at the target of a core holding at most `entries`
    /// (the cache's capacity fell) if it holds room for more: the memory
    /// follows.
    pub(crate) fn cap(&mut self, entries: usize) {
        let target = ghost_target(entries);
        if target < self.target && self.target - target > self.target / 8 {
            self.resize(target);
        }
    }

    /// Rebuilds the ghost for `target` fingerprints, remembering what it
    /// remembered as far as the new size allows: refiled by age, every old
    /// bucket's oldest first and its newest last (buckets fill at about the
    /// same rate, so a place's rank from the newest stands for its age).
    fn resize(&mut self, target: usize) {
        let (buckets, ways) = shape(target);
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY_BUCKET; buckets]);
        let old_cursors = std::mem::replace(&mut self.cursors, vec![0; buckets]);
        let old_ways = std::mem::replace(&mut self.ways, ways);
        self.target = target;
        self.checked = usize::MAX;
        if buckets == 0 {
            return;
        }
        // Ranks count remembered fingerprints only: newest first, the free
        // places closed.
        let ranked: Vec<Vec<u32>> = old
            .iter()
            .zip(&old_cursors)
            .map(|(bucket, &at)| bucket.newest_first(at, old_ways).collect())
            .collect();
        for rank in (0..old_ways).rev() {
            for bucket in &ranked {
                if let Some(&print) = bucket.get(rank) {
                    self.file(print);
                }
            }
        }
    }

    /// Forgets everything and frees the memory.
    pub(crate) fn clear(&mut self) {
        *self = Self::new();
    }

    /// Fingerprints remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.0[..self.ways].iter().filter(|&&p| p != FREE).count())
            .sum()
    }

    /// Places the ghost has room for.
    #[cfg(test)]
    pub(crate) fn room(&self) -> usize {
        self.buckets.len() * self.ways
    }

    /// Bytes allocated.
    #[cfg(test)]
    pub(crate) fn allocated(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<GhostBucket>() + self.cursors.capacity()
    }

    /// Whether `hash` is remembered (looked at, not taken).
    #[cfg(test)]
    pub(crate) fn remembers(&self, hash: u64) -> bool {
        let (n, print) = (self.buckets.len(), fingerprint(hash));
        n > 0 && self.buckets[bucket_of(print, n)].0[..self.ways].contains(&print)
    }

    /// Checks the ghost's invariants; panics with a description if one
    /// fails.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check_invariants(&self) {
        assert_eq!(
            (self.buckets.len(), self.ways),
            shape(self.target),
            "ghost shaped for another target"
        );
        assert_eq!(
            self.cursors.len(),
            self.buckets.len(),
            "ghost: a cursor per bucket"
        );
        for (b, (bucket, &cursor)) in self.buckets.iter().zip(&self.cursors).enumerate() {
            assert!(
                usize::from(cursor) < self.ways,
                "ghost: cursor {cursor} outside the bucket's places"
            );
            for &p in &bucket.0[..self.ways] {
                assert!(
                    p == FREE || bucket_of(p, self.buckets.len()) == b,
                    "ghost: fingerprint {p:#x} in the wrong bucket"
                );
            }
            assert!(
                bucket.0[self.ways..].iter().all(|&p| p == FREE),
                "ghost: a place beyond the bucket's ways is used"
            );
        }
    }
}

// `cfg(test)` alone (the loom suite builds the crate as a dependency, never
// with `test`), so that cargo-mutants skips the module.
#[cfg(test)]
mod tests {
    use super::*;

    /// A hash of its own fingerprint (`2p + 1`) for each `p` below 2^31,
    /// in bits that vary.
    fn h(p: u32) -> u64 {
        (u64::from(p) << 32 ^ 0xABCD_0000_0000) | u64::from(p << 1 | 1)
    }

    /// A ghost sized for `target` fingerprints (`entries` chosen so).
    fn sized(target: usize) -> Ghost {
        let mut ghost = Ghost::new();
        ghost.resize(target);
        ghost
    }

    #[test]
    fn shapes_come_nearest_the_target() {
        assert_eq!(shape(0), (0, 0));
        assert_eq!(shape(1), (1, 1));
        assert_eq!(shape(15), (1, 15));
        assert_eq!(shape(16), (1, 16));
        assert_eq!(shape(23), (1, 16));
        assert_eq!(shape(24), (2, 16));
        assert_eq!(shape(2000), (125, 16));
        assert_eq!(ghost_target(3), 2);
        assert_eq!(ghost_target(10), 6);
        assert_eq!(ghost_target(usize::MAX), usize::MAX / 3 * 2);
    }

    #[test]
    fn a_bucket_is_a_fifo() {
        let mut ghost = sized(4);
        for p in 1..=4 {
            ghost.remember(h(p), 6);
        }
        assert!((1..=4).all(|p| ghost.remembers(h(p))));
        ghost.remember(h(5), 6);
        assert!(!ghost.remembers(h(1)), "the oldest outlived its place");
        assert!((2..=5).all(|p| ghost.remembers(h(p))));
        ghost.check_invariants();
    }

    #[test]
    fn a_taken_place_stays_free_until_the_cursor_comes_round() {
        let mut ghost = sized(4);
        for p in 1..=4 {
            ghost.remember(h(p), 6);
        }
        assert!(ghost.take(h(3)));
        assert!(!ghost.take(h(3)), "taken twice");
        assert_eq!(ghost.len(), 3);
        // The next goes over the oldest, 1, not into 3's place.
        ghost.remember(h(5), 6);
        assert!(!ghost.remembers(h(1)));
        assert!([2, 4, 5].iter().all(|&p| ghost.remembers(h(p))));
        assert_eq!(ghost.len(), 3);
        // 6 goes over 2, then 7 into 3's free place: 4 stays.
        ghost.remember(h(6), 6);
        ghost.remember(h(7), 6);
        assert!([4, 5, 6, 7].iter().all(|&p| ghost.remembers(h(p))));
        assert_eq!(ghost.len(), 4);
        ghost.check_invariants();
    }

    #[test]
    fn a_print_remembered_twice_is_taken_at_once() {
        let mut ghost = sized(3);
        for p in [1, 2, 1] {
            ghost.remember(h(p), 5);
        }
        assert_eq!(ghost.len(), 3);
        assert!(ghost.take(h(1)));
        assert!(!ghost.remembers(h(1)), "a second place kept 1");
        assert_eq!(ghost.len(), 1);
        ghost.check_invariants();
    }

    #[test]
    fn a_zero_fingerprint_reads_as_one() {
        let mut ghost = sized(3);
        ghost.remember(0, 5);
        assert!(ghost.remembers(1));
        assert!(ghost.take(1 << 40));
        assert_eq!(ghost.len(), 0);
    }

    #[test]
    fn it_is_sized_at_the_first_eviction_and_follows_the_entries_by_eighths() {
        let mut ghost = Ghost::new();
        assert_eq!(ghost.allocated(), 0);
        assert!(!ghost.take(h(1)));
        ghost.remember(h(1), 3000);
        assert_eq!(ghost.room(), 2000);
        assert_eq!(ghost.allocated(), 2000 * 4 + 125);
        // 3300 entries want 2200, within an eighth of 2000: kept.
        ghost.remember(h(2), 3300);
        assert_eq!(ghost.room(), 2000);
        // 3400 want 2266: rebuilt, remembering what it did.
        ghost.remember(h(3), 3400);
        assert_eq!(ghost.room(), shape(2266).0 * WAYS);
        assert!((1..=3).all(|p| ghost.remembers(h(p))));
        // Fewer entries shrink it the same way.
        ghost.remember(h(4), 600);
        assert_eq!(ghost.room(), 400);
        assert!((1..=4).all(|p| ghost.remembers(h(p))));
        ghost.check_invariants();
    }

    #[test]
    fn a_smaller_rebuild_keeps_the_newest() {
        let mut ghost = sized(16);
        for p in 1..=16 {
            ghost.remember(h(p), 24);
        }
        ghost.take(h(12));
        ghost.cap(12);
        assert_eq!(ghost.room(), 8);
        assert!(
            (8..=16).all(|p| ghost.remembers(h(p)) == (p != 12)),
            "a rebuild lost the newest"
        );
        assert!((1..8).all(|p| !ghost.remembers(h(p))));
        ghost.check_invariants();
        // Cap only shrinks, and only by more than an eighth.
        ghost.cap(150);
        ghost.cap(11);
        assert_eq!(ghost.room(), 8);
    }

    #[test]
    fn a_rebuild_files_by_age_across_buckets() {
        // Two full buckets' worth in 2 buckets of 16 (bucket choice is the
        // hash's): shrunk to 16 places in one bucket, what survives is the
        // newest half of each old bucket, by rank.
        let mut ghost = sized(32);
        // Bounded, so a broken ghost that never fills fails, not hangs.
        for p in 1..10_000 {
            if ghost.len() == 32 {
                break;
            }
            ghost.remember(h(p), 48);
        }
        assert_eq!(ghost.len(), 32, "the ghost never filled");
        let ranks: Vec<Vec<u32>> = ghost
            .buckets
            .iter()
            .zip(&ghost.cursors)
            .map(|(b, &at)| b.newest_first(at, WAYS).collect())
            .collect();
        ghost.cap(24);
        assert_eq!(ghost.room(), 16);
        // Fingerprint `q` is `h(q >> 1)`'s.
        for bucket in &ranks {
            assert!(bucket[..8].iter().all(|&q| ghost.remembers(h(q >> 1))));
            assert!(bucket[8..].iter().all(|&q| !ghost.remembers(h(q >> 1))));
        }
        ghost.check_invariants();
    }

    #[test]
    fn buckets_spread_evenly() {
        let buckets = 125;
        let mut counts = vec![0u32; buckets];
        for p in 1..=125_000u32 {
            // Consecutive prints, and prints differing only in high bits.
            counts[bucket_of(p, buckets)] += 1;
            counts[bucket_of(p << 20, buckets)] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min > 1700 && *max < 2300, "buckets from {min} to {max}");
    }

    /// The checker catches what the ghost must never hold.
    #[test]
    #[should_panic(expected = "outside the bucket's places")]
    fn the_checker_catches_a_cursor_beyond_the_places() {
        let mut ghost = sized(4);
        ghost.cursors[0] = 4;
        ghost.check_invariants();
    }

    #[test]
    #[should_panic(expected = "beyond the bucket's ways")]
    fn the_checker_catches_a_place_beyond_the_ways() {
        let mut ghost = sized(4);
        ghost.buckets[0].0[4] = 7;
        ghost.check_invariants();
    }

    #[test]
    #[should_panic(expected = "in the wrong bucket")]
    fn the_checker_catches_a_misfiled_fingerprint() {
        let mut ghost = sized(32);
        let print = (1..).find(|&p| bucket_of(p, 2) == 1).unwrap();
        ghost.buckets[0].0[0] = print;
        ghost.check_invariants();
    }

    #[test]
    fn matches_marks_each_place() {
        let mut bucket = EMPTY_BUCKET;
        bucket.0[3] = 7;
        bucket.0[15] = 7;
        assert_eq!(bucket.matches(7), 1 << 3 | 1 << 15);
        assert_eq!(bucket.matches(FREE), 0xFFFF & !(1 << 3 | 1 << 15));
    }

    #[test]
    fn an_identity_hash_s_keys_of_one_shard_use_every_ghost_bucket() {
        // A fingerprint is the hash's low 32 bits: under an identity hash,
        // the keys of one shard (`shard_index.rs`) must still reach every
        // bucket.
        let mut buckets = std::collections::HashSet::new();
        for key in (0..200_000u64).filter(|&key| crate::shard_index::shard_index(key, 16) == 5) {
            buckets.insert(bucket_of(key as u32, 1_024));
        }
        assert_eq!(buckets.len(), 1_024);
    }
}
