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
# Slot disks (loop-mounted images on <home>/sandboxes/docker/<slot>) a test left mounted.
slot_mounts() { awk '$2 ~ /\/sandboxes\/docker\// { print $2 }' /proc/self/mounts | sort; }
before=$(mktemp)
mounts_before=$(mktemp)
out=$(mktemp)
trap 'rm -f "$before" "$mounts_before" "$out"' EXIT
containers >"$before"
slot_mounts >"$mounts_before"

status=0
pnpm test 2>&1 | tee "$out" || status=$?

leaked=$(containers | comm -13 "$before" - || true)
if [ -n "$leaked" ]; then
  echo "test.sh: the tests left mediagate containers behind (removing them):" >&2
  docker ps -a --no-trunc --filter label=mediagate.agent=1 --format '{{.ID}} {{.Labels}} {{.Status}}' | grep -F "$leaked" >&2 || true
  echo "$leaked" | xargs -r docker rm -f >/dev/null
  status=1
fi

leaked_mounts=$(slot_mounts | comm -13 "$mounts_before" - || true)
if [ -n "$leaked_mounts" ]; then
  echo "test.sh: the tests left slot disks mounted (unmounting them, loop devices go with them):" >&2
  echo "$leaked_mounts" >&2
  echo "$leaked_mounts" | sort -r | xargs -r -n1 umount || true
  status=1
fi

# One closing line over every package's vitest summary ("Tests  N passed | M failed (T)").
# awk alone: a grep that matches nothing (no failures) would end the script under pipefail.
count() {
  sed -E 's/\x1b\[[0-9;]*m//g' "$out" | awk -v what="$1" '
    $0 ~ /^[^ ]*[ ]+Tests[ ]/ {
      for (i = 2; i <= NF; i++) if ($i == what) s += $(i - 1)
    }
    END { print s + 0 }'
}
passed=$(count passed)
failed=$(count failed)
echo
echo "${passed} passed, ${failed} failed"
exit "$status"
