#!/usr/bin/env bash
# The static checks, from the repository root with the project's virtualenv: ruff (lint and format)
# over everything with the rule set pyproject.toml names, mypy --strict over all of src/loom and
# bench/, mypy over tests/ with the strict flags its [[tool.mypy.overrides]] in pyproject.toml
# keeps, and `loom fmt --check` over the .loom files.
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
# its own cache: the two runs check src/loom under different flags, so one shared cache would be
# rewritten by each in turn and neither would ever start warm (about 15 s each instead of 1)
step "mypy (tests/)" "$bin/mypy" --cache-dir .mypy_cache/tests tests
step "mypy --strict (bench/)" "$bin/mypy" --strict --cache-dir .mypy_cache/bench bench
# every .loom file of the repository in `loom fmt`'s layout, but those scripts/fmt-skip.txt names
loom_fmt_check() {
  local skip=scripts/fmt-skip.txt
  { git ls-files -z '*.loom' 2>/dev/null || true; } |
    { if [[ -f $skip ]]; then grep -zvEf <(grep -v '^#' "$skip") || true; else cat; fi; } |
    xargs -0 -r "$bin/loom" fmt --check
}
step "loom fmt --check (*.loom)" loom_fmt_check
step "import contracts (lint-imports)" "$bin/lint-imports" --no-cache

if ((${#failed[@]})); then
  echo >&2
  echo "lint failed in ${#failed[@]} step(s):" >&2
  printf '  - %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "lint: all checks passed"
