//! Hostile user types for panic-sweep tests: a key and a value whose `Hash`,
//! `Eq`, `Ord`, `Clone` and `Drop` count their calls and can be told to
//! panic at the Nth call.
//!
//! A sweep runs one operation again and again on fresh copies of a
//! structure, with the panic planted at call 0, 1, 2, ... of one trait,
//! until a run completes without reaching the planted call: then every
//! call the operation makes has been a panic site once. After each caught
//! panic the test checks the structure's invariants and that every entry
//! the operation did not touch is still there.
//!
//! The plan is per thread (sweeps run their operation on the test's own
//! thread), so tests running in parallel do not disturb each other.

#![allow(dead_code)]

use std::cell::Cell;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The user trait a plan makes panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trait {
    Hash,
    Eq,
    Ord,
    Clone,
    Drop,
}

const TRAITS: usize = 5;

thread_local! {
    /// The armed plan: which trait panics, at which call (counted from 0
    /// since arming).
    static PLAN: Cell<Option<(Trait, u64)>> = const { Cell::new(None) };
    /// Calls of each trait since arming.
    static CALLS: Cell<[u64; TRAITS]> = const { Cell::new([0; TRAITS]) };
}

/// Counts a call of `t`; panics if the plan says this call panics.
fn tick(t: Trait) {
    let mut calls = CALLS.with(Cell::get);
    let n = calls[t as usize];
    calls[t as usize] += 1;
    CALLS.with(|c| c.set(calls));
    if PLAN.with(Cell::get) == Some((t, n)) && !std::thread::panicking() {
        // Disarm first: the unwinding drops further hostile values, and a
        // second panic during unwinding would abort the test process.
        PLAN.with(|p| p.set(None));
        panic!("hostile {t:?} panics at call {n}");
    }
}

/// Disarms the plan when dropped.
#[must_use = "the plan is disarmed when the guard is dropped"]
pub struct Armed(());

impl Drop for Armed {
    fn drop(&mut self) {
        PLAN.with(|p| p.set(None));
    }
}

/// Plans a panic at call `n` (from 0) of `t` on this thread, and resets
/// the call counts. With `n == u64::MAX` nothing panics: the counts alone
/// are kept (see [`calls`]).
pub fn arm(t: Trait, n: u64) -> Armed {
    CALLS.with(|c| c.set([0; TRAITS]));
    PLAN.with(|p| p.set(Some((t, n))));
    Armed(())
}

/// Calls of `t` on this thread since the last [`arm`].
pub fn calls(t: Trait) -> u64 {
    CALLS.with(Cell::get)[t as usize]
}

/// Whether a plan is still armed (it disarms itself when it fires).
pub fn armed() -> bool {
    PLAN.with(Cell::get).is_some()
}

/// Runs `op` with a panic planted at call 0, 1, 2, ... of `t`, each time on
/// a structure made fresh by `setup`, and calls `check` after every run with
/// the structure and whether the planted panic fired (`op`'s panic is
/// caught). Stops after the first run in which the plan did not fire, and
/// returns how many runs panicked. Panics if `op` never completes within
/// `limit` runs.
pub fn sweep<T>(
    t: Trait,
    limit: u64,
    mut setup: impl FnMut() -> T,
    mut op: impl FnMut(&T),
    mut check: impl FnMut(&T, bool),
) -> u64 {
    for n in 0..limit {
        let structure = setup();
        let guard = arm(t, n);
        let outcome = catch_unwind(AssertUnwindSafe(|| op(&structure)));
        let fired = !armed();
        drop(guard);
        match (outcome, fired) {
            (Ok(()), false) => {
                check(&structure, false);
                return n;
            }
            (Err(_), true) => check(&structure, true),
            (Err(payload), false) => std::panic::resume_unwind(payload),
            // The plan fired, but the operation caught the panic itself
            // (a structure that catches user panics internally).
            (Ok(()), true) => check(&structure, true),
        }
    }
    panic!("sweep of {t:?}: the operation still made a {limit}th call");
}

/// A key whose traits count their calls and obey the armed plan. `Hash`,
/// `Eq` and `Ord` look at `id` only.
#[derive(Debug)]
pub struct Key {
    pub id: u64,
}

impl Key {
    pub fn new(id: u64) -> Self {
        Self { id }
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        tick(Trait::Hash);
        self.id.hash(state);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        tick(Trait::Eq);
        self.id == other.id
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        tick(Trait::Ord);
        self.id.cmp(&other.id)
    }
}

impl Clone for Key {
    fn clone(&self) -> Self {
        tick(Trait::Clone);
        Self { id: self.id }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        tick(Trait::Drop);
    }
}

/// A value whose `Clone` and `Drop` count their calls and obey the plan.
#[derive(Debug, PartialEq, Eq)]
pub struct Value {
    pub id: u64,
}

impl Value {
    pub fn new(id: u64) -> Self {
        Self { id }
    }
}

impl Clone for Value {
    fn clone(&self) -> Self {
        tick(Trait::Clone);
        Self { id: self.id }
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        tick(Trait::Drop);
    }
}
