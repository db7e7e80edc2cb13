#!/usr/bin/env bash
# Install and start the gateway on a fresh machine of this kind: a Docker engine, the default
# sandbox image (built locally from busybox: no registry is reachable), dependencies from the
# lockfile, a build, the `mediagate` command on PATH (scripts/link-bin.sh), then
# `mediagate start`. Arguments are passed to `mediagate start` (e.g. --config mediagate.yaml).
# With no bot token configured it opens the console chat. Every set-up step reports on stderr
# (the console chat owns stdout); on a machine already set up each is a line or two.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "start: [$1/6] $2" >&2; }

step 1 "Docker engine"
bash scripts/ensure-docker.sh >&2
step 2 "sandbox image"
bash scripts/build-sandbox-image.sh "${MEDIAGATE_IMAGE:-mediagate-sandbox:local}" >&2
step 3 "pnpm"
bash scripts/ensure-pnpm.sh >&2
step 4 "dependencies (pnpm install)"
pnpm install --frozen-lockfile >&2
step 5 "build (pnpm build)"
pnpm build --output-logs=new-only >&2
step 6 "the mediagate command"
bash scripts/link-bin.sh >&2
exec node apps/gateway/bin/mediagate.js start "$@"
