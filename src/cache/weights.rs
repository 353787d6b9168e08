//! [`Weights`]: the entries' weights of one shard, by slot.

/// The entries' weights by slot: empty (every entry weighs 1) until some
/// entry weighs otherwise. Kept apart from the entries so an unweighted
/// shard's entry stays 32 bytes for 8-byte keys and values.
#[derive(Default)]
pub(crate) struct Weights(Vec<u32>);

impl Weights {
    /// The weight of slot `i`.
    #[inline]
    pub(crate) fn get(&self, i: u32) -> u32 {
        self.0.get(i as usize).copied().unwrap_or(1)
    }

    /// Sets the weight of slot `i` of `len` slots, starting the table on
    /// the first weight other than 1.
    #[inline]
    pub(super) fn set(&mut self, i: u32, weight: u32, len: usize) {
        if self.0.is_empty() {
            if weight == 1 {
                return;
            }
            self.0 = vec![1; len];
        }
        self.0[i as usize] = weight;
    }

    /// The weight of the slot appended as the `len`th.
    #[inline]
    pub(super) fn push(&mut self, weight: u32, len: usize) {
        if !self.0.is_empty() {
            self.0.push(weight);
        } else {
            self.set(len as u32 - 1, weight, len);
        }
    }

    #[inline]
    pub(super) fn swap_remove(&mut self, i: u32) {
        if !self.0.is_empty() {
            self.0.swap_remove(i as usize);
        }
    }

    /// Room for `more` weights, if they are kept.
    pub(super) fn reserve_exact(&mut self, more: usize) {
        if !self.0.is_empty() {
            self.0.reserve_exact(more);
        }
    }

    /// Gives back the room beyond `capacity` weights, if they are kept.
    pub(super) fn shrink_to(&mut self, capacity: usize) {
        if !self.0.is_empty() {
            self.0.shrink_to(capacity);
        }
    }

    /// How many weights are kept: `None` while every entry weighs 1.
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn kept(&self) -> Option<usize> {
        (!self.0.is_empty()).then_some(self.0.len())
    }

    /// The room of the kept weights (0 while none are), for tests of
    /// memory.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.0.capacity()
    }
}
