#!/usr/bin/env bash
# The `cargo` that scripts/mutants.sh hands to cargo-mutants (through $CARGO):
# every command goes to the real cargo, except `cargo test`, which runs the
# test selection of the file being mutated instead (set by scripts/mutants.sh):
#
#   MUTANTS_LIB_FILTERS  the lib's unit tests whose names start with these
#   MUTANTS_TESTS        these tests/ targets
#   MUTANTS_LOOM_TESTS   these loom-tests targets, in release with
#                        --cfg loom and LOOM_MAX_PREEMPTIONS=2, in their own
#                        target folder (MUTANTS_LOOM_TARGET)
#
# The build phase (`cargo test --no-run`) builds the lib's unit tests and the
# tests/ targets, so a mutant that does not compile counts as unviable. The
# test phase runs the unit tests, then tests/, then builds and runs the loom
# models, each step stopping at its first failing test binary: a mutant
# survives only if every step passes, and a mutant the tests catch costs no
# loom build (about half of a mutant's build time). A mutant that compiles
# but fails the loom build (code that differs under --cfg loom) therefore
# counts as caught; its log says "loom build failed", and
# docs/mutation.md counts such mutants apart.
set -euo pipefail
real_cargo="${MUTANTS_REAL_CARGO:?set by scripts/mutants.sh}"
if [[ "${1:-}" != "test" ]]; then
  exec "$real_cargo" "$@"
fi
shift
# cargo-mutants' own options (--package, --manifest-path, --verbose, ...)
# are kept; anything after `--` (test-binary arguments) is dropped.
options=()
no_run=false
for arg in "$@"; do
  [[ "$arg" == "--" ]] && break
  if [[ "$arg" == "--no-run" ]]; then
    no_run=true
  else
    options+=("$arg")
  fi
done
read -r -a lib_filters <<<"${MUTANTS_LIB_FILTERS:-}"
read -r -a tests <<<"${MUTANTS_TESTS:-}"
read -r -a loom_tests <<<"${MUTANTS_LOOM_TESTS:-}"
test_args=()
for name in "${tests[@]}"; do test_args+=(--test "$name"); done
loom_args=()
for name in "${loom_tests[@]}"; do loom_args+=(--test "$name"); done

loom() {
  # Incremental: a mutant changes one file of larder, and the loom models'
  # release build is rebuilt for every mutant that reaches it.
  RUSTFLAGS="${RUSTFLAGS:-} --cfg loom" LOOM_MAX_PREEMPTIONS=2 \
    CARGO_PROFILE_RELEASE_INCREMENTAL="${CARGO_PROFILE_RELEASE_INCREMENTAL:-true}" \
    CARGO_TARGET_DIR="${MUTANTS_LOOM_TARGET:?set by scripts/mutants.sh}" \
    "$real_cargo" test -p loom-tests --release "${loom_args[@]}" "$@"
}

if $no_run; then
  exec "$real_cargo" test "${options[@]}" --no-run --lib "${test_args[@]}"
fi
echo "--- lib unit tests: ${lib_filters[*]}"
"$real_cargo" test "${options[@]}" --lib -- "${lib_filters[@]}"
if [[ ${#test_args[@]} -gt 0 ]]; then
  echo "--- tests/: ${tests[*]}"
  "$real_cargo" test "${options[@]}" "${test_args[@]}"
fi
if [[ ${#loom_args[@]} -gt 0 ]]; then
  echo "--- loom build: ${loom_tests[*]}"
  if ! loom --no-run; then
    echo "--- loom build failed (the mutant does not compile under --cfg loom)"
    exit 3
  fi
  echo "--- loom (LOOM_MAX_PREEMPTIONS=2): ${loom_tests[*]}"
  loom
fi
