#!/usr/bin/env bash
# Instruction counts per operation of every primitive's single-thread hot
# paths, beside its peers, counted by callgrind (benches/instructions/,
# through gungraun). Counts depend on the build alone, not on the machine's
# speed or load: the same on every run of the same build.
#
#   bash scripts/instructions.sh            # build, run, print the tables
#   bash scripts/instructions.sh --check    # ... and fail if a larder row grew > 3%
#   bash scripts/instructions.sh --update   # ... and rewrite the baselines
#   bash scripts/instructions.sh --check 'lru::*'   # only some rows (gungraun's filter)
#
# Needs valgrind (`apt-get install valgrind`) and gungraun-runner of the
# version Cargo.lock pins for the gungraun library (installed here with
# `cargo install` when missing). About two minutes on two cores after the
# build.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=table
filter=
for arg in "$@"; do
  case "$arg" in
    --check) mode=check ;;
    --update) mode=update ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
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

# Old summaries would pass for this run's rows.
rm -rf target/gungraun/larder/instructions
cargo bench --bench instructions -- --save-summary=json --callgrind-metrics=ir \
  --parallel ${filter:+"$filter"} > target/instructions.log 2>&1 || {
  tail -40 target/instructions.log
  echo "the instruction benches failed (log: target/instructions.log)" >&2
  exit 1
}
python3 scripts/instructions.py "$mode" ${filter:+--partial}
