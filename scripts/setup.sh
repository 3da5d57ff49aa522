#!/usr/bin/env bash
# Creates .venv (once) and installs Loom into it, with the test extras when asked: `setup.sh test`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
extras=""
[ "${1:-}" = "test" ] && extras="[test]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}" 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
# The test suite's Node tools (scripts/node/package.json: openapi-typescript, which
# tests/e2e/test_generated_clients.py runs on every example's OpenAPI document, and mermaid, which
# tests/codegen/diagrams/test_mermaid.py parses the diagrams with), from the lockfile,
# once: Node and npm are Debian's, installed with apt-get as root when missing.
if [ "${1:-}" = "test" ]; then
  if ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "Node.js and npm missing: installing them with apt-get" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    fi
  fi
  # Graphviz's `dot` (Debian's graphviz), which `loom diagram --format svg` runs and the diagram
  # tests draw every DOT golden file with (tests/codegen/diagrams)
  if ! command -v dot >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "Graphviz missing: installing it with apt-get" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null
    fi
  fi
  # node_modules/.installed-lock: the lockfile it was installed from (a changed lock reinstalls)
  stamp=scripts/node/node_modules/.installed-lock
  if command -v npm >/dev/null && ! cmp -s scripts/node/package-lock.json "$stamp"; then
    npm ci --prefix scripts/node --no-audit --no-fund --loglevel=error >/dev/null
    cp scripts/node/package-lock.json "$stamp"
  fi
fi
