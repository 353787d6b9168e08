//! Instruction counts and estimated cycles of every primitive's
//! single-thread hot paths, beside the same operations of the crates and
//! maps people would use instead.
//!
//! Run under callgrind, with its cache simulation, by gungraun
//! (`gungraun-runner` and valgrind must be installed):
//! `bash scripts/instructions.sh` builds and runs this bench and prints one
//! table per primitive, in instructions and estimated cycles per operation;
//! `bash scripts/instructions.sh --check` also compares larder's rows with
//! the committed `benches/instructions/baselines.json` and fails, naming the
//! row and the figure, when either grew more than 3%.
//!
//! Every benchmark performs [`OPS`] operations on inputs built by its setup
//! (not counted) from fixed seeds, with fixed-seed hashers and fixed shard
//! counts, so a count depends on the build alone: not on the machine's
//! speed, its load or its core count. The structure a benchmark used is
//! returned, so dropping it is not counted either.
//!
//! Row names are `group::function id`: `lru_get_hit larder_exact` is the
//! `get_hit` benchmark of the `lru` group on larder's exact-LRU cache.

use gungraun::main;

#[path = "../common/mod.rs"]
#[allow(unused_imports)]
mod common;
mod inputs;

// Each file defines one group, a module of the same name (what `main!`
// takes), so the files are compiled as modules of other names.
#[path = "indexed.rs"]
mod indexed_benches;
#[path = "lru.rs"]
mod lru_benches;
#[path = "ordered.rs"]
mod ordered_benches;
#[path = "snapshot.rs"]
mod snapshot_benches;
#[path = "typed.rs"]
mod typed_benches;

use indexed_benches::indexed;
use lru_benches::lru;
use ordered_benches::ordered;
use snapshot_benches::snapshot;
use typed_benches::typed;

main!(
    library_benchmark_groups = snapshot,
    indexed,
    ordered,
    lru,
    typed
);
