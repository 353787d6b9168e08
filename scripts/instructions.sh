#!/usr/bin/env bash
# Instructions and estimated cycles per operation of every primitive's
# single-thread hot paths, beside its peers, and of larder's Kubernetes store
# beside kube-runtime's (kube-compare/benches/instructions/kube.rs), from
# callgrind with its cache simulation (through gungraun). Both figures depend
# on the build alone, not on the machine's speed or load: the same on every
# run of the same build (but for rows whose code seeds a hasher from the
# OS: design/instruction-counts.md).
#
#   bash scripts/instructions.sh            # build, run, print the tables
#   bash scripts/instructions.sh --check    # ... and fail if a larder row grew > 3%
#                                           #     in instructions or in est. cycles
#   bash scripts/instructions.sh --update   # ... and rewrite the baselines
#   bash scripts/instructions.sh --check 'lru::*'   # only some rows (gungraun's filter)
#
# Needs valgrind (`apt-get install valgrind`) and gungraun-runner of the
# version Cargo.lock pins for the gungraun library (installed here with
# `cargo install` when missing). About 280 CPU-seconds after the build,
# spread over the cores (--parallel), and KUBE more for the kube rows.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=table
filter=
for arg in "$@"; do
  case "$arg" in
    --check) mode=check ;;
    --update) mode=update ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "unknown option $arg" >&2; exit 2 ;;
    *) filter="instructions::$arg" ;;
  esac
done

if ! command -v valgrind > /dev/null 2>&1; then
  echo "scripts/instructions.sh needs valgrind: apt-get install valgrind" >&2
  exit 2
fi
version=$(sed -n '/^name = "gungraun"$/{n;s/^version = "\(.*\)"$/\1/p;}' Cargo.lock)
if [ -z "$version" ]; then
  echo "no gungraun in Cargo.lock" >&2
  exit 2
fi
if [ "$(gungraun-runner --version 2> /dev/null)" != "gungraun-runner $version" ]; then
  echo "installing gungraun-runner $version (cargo install)"
  cargo install gungraun-runner --version "$version" --locked --quiet
fi

# The simulated caches, pinned (callgrind would otherwise read the host's):
# the per-core L1s and L2 of the machine the baselines come from (AMD EPYC:
# 32 KiB 8-way L1i and L1d, 512 KiB 8-way L2, 64-byte lines), the L2 in
# callgrind's last-level slot. design/instruction-counts.md says why.
cache="--I1=32768,8,64 --D1=32768,8,64 --LL=524288,8,64"

# Summaries go to ./target/gungraun whatever CARGO_TARGET_DIR says: that is
# where scripts/instructions.py reads them. Old ones would pass for this
# run's rows.
home="$PWD/target/gungraun"
rm -rf "$home/larder/instructions" "$home/kube-compare/instructions"
mkdir -p target
# Both benches in one cargo invocation, so the dependencies they share
# build once, with one set of features (larder's lib with its `kube`
# feature, which kube-compare turns on; larder's rows are recorded so).
cargo bench -p larder -p kube-compare --bench instructions -- --save-summary=json --home="$home" \
  --callgrind-args="--cache-sim=yes $cache" --callgrind-metrics=ir,EstimatedCycles \
  --parallel ${filter:+"$filter"} > target/instructions.log 2>&1 || {
  tail -40 target/instructions.log
  echo "the instruction benches failed (log: target/instructions.log)" >&2
  exit 1
}
python3 scripts/instructions.py "$mode" ${filter:+--partial}
