//! Instructions and estimated cycles of larder's Kubernetes store beside
//! kube-runtime's reflector store, on the same 100,000 pods: a watch event
//! and a read of the pods on one node (the `kube` group,
//! [`kube.rs`](kube_benches)).
//!
//! Run under callgrind, with its cache simulation, by gungraun, beside
//! larder's own instruction bench (`benches/instructions/` of the main
//! crate): `bash scripts/instructions.sh` builds and runs both and prints
//! this one's rows as the `kube` table, with the goals' ratios;
//! `--check` holds its larder rows to the baselines of
//! `benches/instructions/baselines.json` as it does larder's others.

use gungraun::main;

// The group is a module named `kube` (what `main!` takes), so the file is
// compiled as a module of another name.
#[path = "kube.rs"]
mod kube_benches;

use kube_benches::kube;

main!(library_benchmark_groups = kube);
