#!/usr/bin/env bash
# Install and start the gateway on a fresh machine of this kind: a Docker engine, the default
# sandbox image (built locally from busybox: no registry is reachable), dependencies from the
# lockfile, a build, then `mediagate start`. Arguments are passed to `mediagate start`
# (e.g. --config mediagate.yaml). With no bot token configured it opens the console chat.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-docker.sh >&2
bash scripts/build-sandbox-image.sh "${MEDIAGATE_IMAGE:-mediagate-sandbox:local}" >&2
bash scripts/ensure-pnpm.sh >&2
pnpm install --frozen-lockfile --reporter=silent >&2
pnpm build --output-logs=errors-only >&2
exec node apps/gateway/dist/cli.js start "$@"
