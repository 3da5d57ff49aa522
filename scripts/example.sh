#!/usr/bin/env bash
# Installs Loom and serves the banking example on SQLite at http://127.0.0.1:8000 (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/loom run examples/banking/banking.loom "$@"
