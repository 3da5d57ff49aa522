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
