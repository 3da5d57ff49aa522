#!/usr/bin/env bash
# The static checks, from the repository root with the project's virtualenv: ruff (lint and format)
# over everything with the rule set pyproject.toml names, and mypy --strict over all of src/loom.
# scripts/test.sh runs it before the tests.
# Every step runs even when an earlier one fails; the script exits non-zero if any failed and names
# the failed steps last.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
failed=()

step() {
  local name=$1
  shift
  echo "==> $name"
  if ! "$@"; then
    failed+=("$name")
    echo "FAILED: $name" >&2
  fi
}

step "ruff check" "$bin/ruff" check .
step "ruff format --check" "$bin/ruff" format --check .
step "mypy --strict (all of src/loom)" "$bin/mypy" --strict src/loom
step "import contracts (lint-imports)" "$bin/lint-imports" --no-cache

if ((${#failed[@]})); then
  echo >&2
  echo "lint failed in ${#failed[@]} step(s):" >&2
  printf '  - %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "lint: all checks passed"
