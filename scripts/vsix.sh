#!/usr/bin/env bash
# Builds the VS Code extension (editors/vscode) into a .vsix with npm's @vscode/vsce:
# `scripts/vsix.sh [OUT]`, OUT a file or a folder (default: dist/, as dist/loom-VERSION.vsix).
# Install it with `code --install-extension dist/loom-VERSION.vsix` (docs/editors.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/dist}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
[ "${out%.vsix}" = "$out" ] && mkdir -p "$out"
bash "$root/scripts/npm-ci.sh" "$root/editors/vscode"
cd "$root/editors/vscode"
# the flags: the project's licence and repository are the repository's, not the extension folder's
exec node_modules/.bin/vsce package --skip-license --allow-missing-repository --out "$out"
