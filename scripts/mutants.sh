#!/usr/bin/env bash
# Mutation testing of larder's concurrency-critical files with cargo-mutants
# (`cargo install cargo-mutants`). The test command is the lib's unit tests and
# the integration tests (`cargo test --lib --tests`), then the whole loom suite
# (scripts/mutants-cargo.sh). Slow: see docs/verification.md for the measured
# time per mutant; not part of .ci/run.
#
#   scripts/mutants.sh                      # every file below
#   scripts/mutants.sh src/flight.rs        # only the files given
#
# Extra cargo-mutants options go in MUTANTS_ARGS (e.g. MUTANTS_ARGS="--list").
# Results land in mutants.out/ (outcomes.json, caught.txt, missed.txt, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  files=(src/flight.rs src/sync.rs src/snapshot/ src/indexed/core.rs src/lru/cache.rs
    src/typed/raw.rs src/ordered/partitioned.rs)
fi
file_args=()
for file in "${files[@]}"; do
  if [[ -d "$file" ]]; then
    file_args+=(--file "${file%/}/**/*.rs")
  else
    file_args+=(--file "$file")
  fi
done
target="${CARGO_TARGET_DIR:-$PWD/target}"
export MUTANTS_REAL_CARGO="${CARGO:-$(command -v cargo)}"
export MUTANTS_LOOM_TARGET="$target/mutants-loom"
export CARGO="$PWD/scripts/mutants-cargo.sh"
export CARGO_TARGET_DIR="$target/mutants"
# The loom stand-ins in src/sync.rs (the `#[cfg(loom)] mod imp`) are test
# scaffolding that no normal build compiles: mutating them is not mutating the
# shipped code, so they are excluded by their line range.
loom_start=$(grep -n '^#\[cfg(loom)\]$' src/sync.rs | awk -F: 'NR==FNR{print $1}' | tail -1)
loom_end=$(grep -n '^pub(crate) use imp::\*;$' src/sync.rs | cut -d: -f1)
exclude=()
if [[ -n "$loom_start" && -n "$loom_end" ]]; then
  lines=$(seq "$loom_start" "$loom_end" | paste -sd'|')
  exclude=(--exclude-re "^src/sync\\.rs:($lines):")
fi
# shellcheck disable=SC2086 # MUTANTS_ARGS is a list of options
cargo-mutants mutants "${file_args[@]}" "${exclude[@]}" \
  --test-package larder --cargo-test-arg=--lib --cargo-test-arg=--tests \
  --jobs 1 --timeout "${MUTANTS_TIMEOUT:-300}" --build-timeout 900 --no-shuffle \
  ${MUTANTS_ARGS:-}
