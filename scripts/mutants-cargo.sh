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
for arg in "$@"; do
  if [[ "$arg" == "--no-run" ]]; then
    # cargo-mutants' build phase: build what the test phase runs (the lib's
    # unit tests and tests/), not the examples and benches too.
    args+=(--lib --tests)
  fi
done
"$real_cargo" "${args[@]}"
# The build phase (`cargo test --no-run`) builds the loom suite too, so a
# mutant that does not compile there counts as unviable, not as caught.
no_run=()
for arg in "$@"; do
  if [[ "$arg" == "--no-run" ]]; then
    no_run=(--no-run)
  fi
done
echo "--- loom suite (LOOM_MAX_PREEMPTIONS=2) ${no_run[*]}"
RUSTFLAGS="${RUSTFLAGS:-} --cfg loom" LOOM_MAX_PREEMPTIONS=2 \
  CARGO_TARGET_DIR="${MUTANTS_LOOM_TARGET:?set by scripts/mutants.sh}" \
  "$real_cargo" test -p loom-tests --release "${no_run[@]}"
