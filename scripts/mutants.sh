#!/usr/bin/env bash
# Mutation testing of larder's concurrency-critical files with cargo-mutants
# (`cargo install cargo-mutants --locked`). Each file is mutated by its own
# cargo-mutants run, and each mutant is tested only by the tests that
# exercise that file (the table in `selection` below): the lib's unit tests
# of the modules involved (`cargo test --lib -- <filters>`), the `tests/`
# files that go through the file's code, and the loom models of its
# protocols (release, LOOM_MAX_PREEMPTIONS=2). scripts/mutants-cargo.sh
# runs that selection in place of the plain `cargo test` cargo-mutants asks
# for. Not part of .ci/run; see docs/mutation.md for the measured time
# per mutant.
#
#   scripts/mutants.sh                        # every file below, in order
#   scripts/mutants.sh src/typed/raw.rs       # only the files given
#   scripts/mutants.sh src/flight/            # a folder: its .rs files
#
# Options for cargo-mutants go in MUTANTS_ARGS (e.g. MUTANTS_ARGS="--list",
# or "--in-place" to mutate this tree instead of a copy). MUTANTS_TIMEOUT is
# the limit of one mutant's test phase in seconds (default 150: above the
# tests' watchdog, so a hang is caught by name or by the timeout).
# LARDER_WATCHDOG_SECS (default 30 here) lowers the tests' watchdog limits
# (tests/common/watchdog.rs), so a mutant that deadlocks a watched test
# fails in 30 s instead of 120.
# Results land in mutants.out/<file>/mutants.out/ (outcomes.json,
# caught.txt, missed.txt, unviable.txt, timeout.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

# The tests of one file, as "lib filters | tests/ targets | loom-tests
# targets" (space-separated within each part).
selection() {
  case "${1%/}" in
    src/typed | src/typed/*)
      echo "typed:: flight:: cache:: | typed typed_hostile typed_hostile_weigher typed_expiry conformance lru_hit_ratio cache_stats async_flight |
        typed typed_writes flight_async flight_waiters" ;;
    src/flight | src/flight/*)
      echo "flight:: typed:: lru:: | async_flight typed typed_hostile cache_stats lru_hostile lru |
        flight_async flight_waiters typed" ;;
    src/sync.rs)
      echo "sync:: flight:: snapshot:: | snapshot cache_stats lru_stress typed_hostile async_flight ordered indexed |
        flight_async flight_waiters typed" ;;
    src/lru/cache.rs | src/lru/write.rs)
      echo "lru:: | lru lru_hostile lru_weights lru_stress lru_hit_ratio cache_stats async_flight | lru lru_resize lru_weights flight_waiters" ;;
    src/lru/load.rs | src/lru/load_async.rs)
      echo "lru:: flight:: | async_flight cache_stats lru lru_hostile | flight_async flight_waiters lru" ;;
    src/cache | src/cache/*)
      # The engine under both faces: each face's tests and models.
      echo "cache:: lru:: typed:: | lru lru_hostile lru_weights lru_expiry lru_stress lru_hit_ratio lru_offline_refs conformance typed typed_expiry typed_hostile_weigher cache_stats |
        lru lru_resize lru_weights typed typed_writes" ;;
    src/indexed/core.rs)
      echo "indexed:: | indexed indexed_hostile indexed_drop_order | indexed indexed_revision" ;;
    src/indexed/core/plain.rs | src/indexed/write.rs)
      # Point writes, the lean one of a store without index included.
      echo "indexed:: | indexed indexed_hostile indexed_drop_order | indexed indexed_revision" ;;
    src/indexed/transaction.rs | src/indexed/burst.rs)
      # Transactions and the reflector's bursts: many writes, one lock a shard.
      echo "indexed:: | indexed indexed_hostile indexed_shards | indexed indexed_revision" ;;
    src/indexed/values.rs | src/indexed/index_fn.rs)
      # How an object's index values are computed and held.
      echo "indexed:: | indexed indexed_hostile | indexed" ;;
    src/table_room.rs | src/node_index.rs)
      # The tables of the cache engine's shards and of IndexedStore's.
      echo "table_room:: cache:: indexed:: | conformance indexed | " ;;
    src/snapshot | src/snapshot/*)
      echo "snapshot:: | snapshot misuse | snapshot misuse" ;;
    src/ordered/partitioned.rs)
      echo "ordered:: | ordered ordered_hostile ordered_wait | ordered ordered_drain ordered_wait ordered_reshape" ;;
    src/ordered/wait.rs)
      echo "ordered:: | ordered_wait ordered ordered_hostile | ordered_wait" ;;
    src/wait.rs)
      echo "ordered:: workqueue:: | ordered_wait workqueue | ordered_wait workqueue" ;;
    src/workqueue | src/workqueue/*)
      echo "workqueue:: | workqueue workqueue_drain workqueue_rate_limit misuse | workqueue" ;;
    src/reflector/run.rs | src/reflector/status.rs | src/reflector/registry.rs)
      # Needs MUTANTS_ARGS="--features reflector".
      echo "reflector:: | reflector reflector_model reflector_stats reflector_registry | " ;;
    *)
      echo "scripts/mutants.sh: no test selection for $1 (add it to \`selection\`)" >&2
      return 1 ;;
  esac
}

files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  files=(src/typed/ src/flight/ src/sync.rs src/lru/cache.rs src/lru/write.rs
    src/cache/ src/table_room.rs src/node_index.rs src/indexed/core.rs src/snapshot/
    src/ordered/partitioned.rs src/ordered/wait.rs src/wait.rs src/workqueue/)
fi

# A target directory of its own (MUTANTS_TARGET_DIR to choose another):
# cargo-mutants builds a copy of the tree, whose artifacts carry the same
# names as the working tree's, so a `cargo test` of the working tree into
# the same directory while mutants run would overwrite the mutants'
# binaries (and the other way round).
target="${MUTANTS_TARGET_DIR:-$PWD/target/mutants}"
export MUTANTS_REAL_CARGO="${MUTANTS_REAL_CARGO:-$(command -v cargo)}"
export MUTANTS_LOOM_TARGET="$target/loom"
export CARGO="$PWD/scripts/mutants-cargo.sh"
export CARGO_TARGET_DIR="$target"
export LARDER_WATCHDOG_SECS="${LARDER_WATCHDOG_SECS:-30}"

# The loom stand-ins in src/sync.rs (the `#[cfg(loom)]` hasher and
# `#[cfg(loom)] mod imp`) are test scaffolding that no normal build compiles:
# mutating them is not mutating the shipped code, so they are excluded by
# their line ranges.
sync_exclude() {
  local ranges=() start end
  while read -r start; do
    # An item starts on the line after its `#[cfg(loom)]` and ends at the
    # next line that closes at column 0.
    end=$(awk -v from="$start" 'NR > from && /^}/ { print NR; exit }' src/sync.rs)
    ranges+=("$(seq "$start" "$end" | paste -sd'|')")
  done < <(grep -n '^#\[cfg(loom)\]$' src/sync.rs | cut -d: -f1)
  local joined
  joined=$(IFS='|'; echo "${ranges[*]}")
  [[ -n "$joined" ]] && echo "^src/sync\\.rs:($joined):"
}

for file in "${files[@]}"; do
  spec=$(selection "$file")
  IFS='|' read -r lib tests loom <<<"$(echo "$spec" | tr '\n' ' ')"
  export MUTANTS_LIB_FILTERS="$(echo $lib)" MUTANTS_TESTS="$(echo $tests)" \
    MUTANTS_LOOM_TESTS="$(echo $loom)"
  file_args=()
  if [[ -d "$file" ]]; then
    file_args+=(--file "${file%/}/**/*.rs")
  else
    file_args+=(--file "$file")
  fi
  exclude=()
  if [[ "$file" == src/sync.rs ]]; then
    exclude=(--exclude-re "$(sync_exclude)")
  fi
  slug=$(echo "${file%/}" | sed 's|^src/||; s|\.rs$||; s|/|-|g')
  mkdir -p "mutants.out/$slug"
  echo "=== $file: lib [$MUTANTS_LIB_FILTERS] tests [$MUTANTS_TESTS] loom [$MUTANTS_LOOM_TESTS]"
  # shellcheck disable=SC2086 # MUTANTS_ARGS is a list of options
  # A folder's tests.rs is the module's unit tests (`#[cfg(test)]`), not
  # code under test.
  cargo-mutants mutants "${file_args[@]}" --exclude 'src/**/tests.rs' "${exclude[@]}" \
    --output "mutants.out/$slug" --test-package larder \
    --timeout "${MUTANTS_TIMEOUT:-150}" --build-timeout 900 --no-shuffle \
    ${MUTANTS_ARGS:-} || true
done
