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
  # Debian's Chromium, which the console's browser tests drive with Playwright
  # (tests/e2e/console; never a browser Playwright downloads)
  if ! [ -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "Chromium missing: installing it with apt-get" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
  fi
  # The Node tools above (scripts/node) and the VS Code extension's packages (editors/vscode: its
  # client's vscode-languageclient; @vscode/vsce, which scripts/vsix.sh builds the .vsix with;
  # vscode-textmate and vscode-oniguruma, which tests/editors tokenise with), each from its
  # lockfile, once per lockfile (scripts/npm-ci.sh)
  if command -v npm >/dev/null; then
    bash scripts/npm-ci.sh scripts/node
    bash scripts/npm-ci.sh editors/vscode
  fi
fi
