#!/usr/bin/env bash
# Install the pnpm version pinned in package.json#packageManager when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p 'require("./package.json").packageManager.split("@")[1]')
if command -v pnpm >/dev/null 2>&1 && [ "$(pnpm --version)" = "$want" ]; then
  exit 0
fi
echo "ensure-pnpm: installing pnpm $want"
npm install --global --no-fund --no-audit "pnpm@$want"
