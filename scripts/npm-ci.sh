#!/usr/bin/env bash
# `scripts/npm-ci.sh DIR`: installs DIR's npm packages from its package-lock.json with `npm ci`,
# once per lockfile (DIR/node_modules/.installed-lock is the lockfile it was installed from: a
# changed lock reinstalls). Node and npm are Debian's (scripts/setup.sh test installs them).
set -euo pipefail
dir="$1"
stamp="$dir/node_modules/.installed-lock"
if cmp -s "$dir/package-lock.json" "$stamp"; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "npm is missing: run \`bash scripts/setup.sh test\` (it installs Node.js and npm)" >&2
  exit 1
fi
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
cp "$dir/package-lock.json" "$stamp"
