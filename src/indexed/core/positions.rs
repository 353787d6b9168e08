//! [`Positions`]: where each slot's id sits in the buckets of its values,
//! so that taking it out of a bucket (a swap-remove) is O(1).
//!
//! One arena for the whole core: a slot's positions are one run of `u32`s,
//! in the order of its values (index by index, each index's values
//! sorted), found through the slot's `(start, len)`. A run that changes
//! length moves to the arena's end; the runs left behind are reclaimed by
//! compacting once they outweigh the live ones (O(1) amortized). So an
//! object costs 8 bytes plus 4 per value, with no allocation of its own.

use smallvec::SmallVec;

/// One slot's positions, copied out of the arena (no allocation for up to
/// eight values).
pub(crate) type Run = SmallVec<[u32; 8]>;

/// Every slot's bucket positions (see the module).
#[derive(Default)]
pub(crate) struct Positions {
    arena: Vec<u32>,
    /// Slot id -> its run: start in `arena`, length.
    runs: Vec<(u32, u32)>,
    /// The total length of the runs (the rest of `arena` is dead).
    live: usize,
}

impl Positions {
    /// How many slots have a run (empty or not).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.runs.len()
    }

    pub(crate) fn try_reserve(&mut self, slots: usize) -> Option<()> {
        self.runs.try_reserve(slots).ok()
    }

    pub(crate) fn reserve(&mut self, slots: usize) {
        self.runs.reserve(slots);
    }

    /// A new slot, with an empty run.
    #[inline]
    pub(crate) fn push_slot(&mut self) {
        self.runs.push((0, 0));
    }

    /// Empty runs up to `slots` slots.
    pub(crate) fn resize(&mut self, slots: usize) {
        self.runs.resize(slots, (0, 0));
    }

    /// Slot `id`'s positions.
    #[inline]
    pub(crate) fn get(&self, id: usize) -> &[u32] {
        let (start, len) = self.runs[id];
        &self.arena[start as usize..start as usize + len as usize]
    }

    /// Slot `id`'s position number `nth`.
    #[inline]
    pub(crate) fn set_one(&mut self, id: usize, nth: usize, at: u32) {
        let (start, len) = self.runs[id];
        assert!(
            nth < len as usize,
            "invariant violated: a position past a slot's run"
        );
        self.arena[start as usize + nth] = at;
    }

    /// Takes slot `id`'s positions out, leaving it an empty run.
    pub(crate) fn take(&mut self, id: usize) -> Run {
        let run = Run::from_slice(self.get(id));
        self.release(id);
        run
    }

    /// Sets slot `id`'s positions: in place if the length is the same,
    /// else as a new run at the arena's end.
    pub(crate) fn set(&mut self, id: usize, positions: &[u32]) {
        let (start, len) = self.runs[id];
        if len as usize == positions.len() {
            let start = start as usize;
            self.arena[start..start + positions.len()].copy_from_slice(positions);
            return;
        }
        self.release(id);
        if positions.is_empty() {
            return;
        }
        let start = u32::try_from(self.arena.len()).expect("larder: positions fit in u32");
        self.arena.extend_from_slice(positions);
        self.runs[id] = (start, positions.len() as u32);
        self.live += positions.len();
    }

    /// Appends `at` to slot `id`'s run, which must be the arena's last
    /// or empty: how a core being built lays its runs out in slot order.
    #[inline]
    pub(crate) fn append(&mut self, id: usize, at: u32) {
        let (start, len) = &mut self.runs[id];
        if *len == 0 {
            *start = u32::try_from(self.arena.len()).expect("larder: positions fit in u32");
        }
        debug_assert_eq!(*start as usize + *len as usize, self.arena.len());
        self.arena.push(at);
        *len += 1;
        self.live += 1;
    }

    /// Marks slot `id`'s run dead; compacts the arena once the dead runs
    /// outweigh the live ones.
    fn release(&mut self, id: usize) {
        let (_, len) = std::mem::take(&mut self.runs[id]);
        self.live -= len as usize;
        if self.arena.len() > 2 * self.live + 64 {
            self.compact();
        }
    }

    /// Moves every live run to the front, in slot order.
    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(self.live * 3 / 2);
        for (start, len) in &mut self.runs {
            let from = *start as usize;
            *start = arena.len() as u32;
            arena.extend_from_slice(&self.arena[from..from + *len as usize]);
        }
        self.arena = arena;
    }

    /// The arena's length and its live part (for tests of memory release).
    #[cfg(test)]
    pub(crate) fn lengths(&self) -> (usize, usize) {
        (self.arena.len(), self.live)
    }
}
