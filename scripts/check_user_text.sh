#!/usr/bin/env bash
# What users read carries no lab notes: the library's source (its rustdoc
# and comments), README.md and the guides in docs/ name no commit, date or
# machine. Figures with their commit, date, machine and command live in
# docs/benchmarks.md (exempt here); history in design/ (not packaged).
#
#   bash scripts/check_user_text.sh            # check the repository
#   bash scripts/check_user_text.sh FILE...    # check these files only
#
# Exits 1 and prints each offending line when one is found.
set -euo pipefail
cd "$(dirname "$0")/.."

if (( $# )); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'src/*.rs' 'src/**/*.rs' README.md 'docs/*.md' \
    | grep -v '^docs/benchmarks\.md$')
fi

# A date (2026-12-07), a commit (7 to 40 hex digits with a letter and a
# digit, not a 0x literal nor a part of a UUID), or a machine (CPU vendors and models, vCPUs,
# clock rates).
date='\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b'
commit='(?<![-0-9A-Za-z_])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![-0-9A-Za-z_])'
machine='\b(vCPUs?|Xeon|EPYC|Ryzen|Intel|AMD|Graviton|[0-9.]+ ?GHz)\b'
found=$(grep -nP "$date|$commit|$machine" "${files[@]}" || true)
if [ -n "$found" ]; then
  echo "user-facing text names a commit, date or machine (move the figure to docs/benchmarks.md, the history to design/):"
  echo "$found"
  exit 1
fi
echo "user-facing text: no commit, date or machine in ${#files[@]} files"

# The guides stay readable: README.md and docs/ together hold at most
# 25,000 words of prose (fenced code blocks, which are doctests, aside).
if (( $# == 0 )); then
  words=$(for page in README.md docs/*.md; do awk '/^```/ { code = !code; next } !code' "$page"; done | wc -w)
  if (( words > 25000 )); then
    echo "README.md and docs/ hold $words words of prose, over the 25,000 budget: trim"
    exit 1
  fi
  echo "README.md and docs/: $words words of prose (budget 25,000)"
fi
