#!/usr/bin/env bash
# The whole test suite on a fresh machine of this kind (or a workstation): a Docker engine,
# the sandbox test image, dependencies from the lockfile, then build, typecheck, lint and
# every test. Fails when the tests leave any mediagate container behind.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-docker.sh
bash scripts/build-sandbox-image.sh mediagate-sandbox:test
bash scripts/ensure-pnpm.sh

pnpm install --frozen-lockfile --reporter=append-only
pnpm build
pnpm typecheck
pnpm lint

containers() { docker ps -aq --no-trunc --filter label=mediagate.agent=1 | sort; }
before=$(mktemp)
out=$(mktemp)
trap 'rm -f "$before" "$out"' EXIT
containers >"$before"

status=0
pnpm test 2>&1 | tee "$out" || status=$?

leaked=$(containers | comm -13 "$before" - || true)
if [ -n "$leaked" ]; then
  echo "test.sh: the tests left mediagate containers behind (removing them):" >&2
  docker ps -a --no-trunc --filter label=mediagate.agent=1 --format '{{.ID}} {{.Labels}} {{.Status}}' | grep -F "$leaked" >&2 || true
  echo "$leaked" | xargs -r docker rm -f >/dev/null
  status=1
fi

# One closing line over every package's vitest summary ("Tests  N passed | M failed (T)").
passed=$(sed -E 's/\x1b\[[0-9;]*m//g' "$out" | grep -E '^\S*\s*Tests\s' | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(sed -E 's/\x1b\[[0-9;]*m//g' "$out" | grep -E '^\S*\s*Tests\s' | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
echo
echo "${passed} passed, ${failed} failed"
exit "$status"
