#!/usr/bin/env bash
# The `cargo` that scripts/mutants.sh hands to cargo-mutants (through $CARGO):
# every command goes to the real cargo, and `cargo test` additionally runs the
# loom suite (bounded by LOOM_MAX_PREEMPTIONS=2, as in CI) once the tests pass,
# so a mutant survives only if both the tests and the loom models miss it.
set -euo pipefail
real_cargo="${MUTANTS_REAL_CARGO:?set by scripts/mutants.sh}"
if [[ "${1:-}" != "test" ]]; then
  exec "$real_cargo" "$@"
fi
args=("$@")
loom_args=()
for arg in "$@"; do
  if [[ "$arg" == "--no-run" ]]; then
    # cargo-mutants' build phase: build what the test phase runs (the lib's
    # unit tests, tests/ and the loom suite), not the examples and benches,
    # so that a mutant that does not compile counts as unviable.
    args+=(--lib --tests)
    loom_args=(--no-run)
  fi
done
"$real_cargo" "${args[@]}"
echo "--- loom suite (LOOM_MAX_PREEMPTIONS=2) ${loom_args[*]}"
RUSTFLAGS="${RUSTFLAGS:-} --cfg loom" LOOM_MAX_PREEMPTIONS=2 \
  CARGO_TARGET_DIR="${MUTANTS_LOOM_TARGET:?set by scripts/mutants.sh}" \
  "$real_cargo" test -p loom-tests --release "${loom_args[@]}"
