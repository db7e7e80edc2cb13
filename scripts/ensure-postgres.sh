#!/usr/bin/env bash
# Debian's PostgreSQL server binaries (initdb, pg_ctl, postgres) for the store's tests, which
# run a private cluster (scripts/lib/postgres.sh). Only the binaries: the package's own
# cluster is dropped and no system service is left running.
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
if pg_bin_dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1) && [ -x "$pg_bin_dir/initdb" ]; then
  exit 0
fi
echo "ensure-postgres: installing postgresql from Debian packages (the store's tests)"
export DEBIAN_FRONTEND=noninteractive
apt_update_once
apt-get install -y -q --no-install-recommends postgresql
# The package creates and starts a cluster of its own; the tests use a private one.
if command -v pg_lsclusters >/dev/null 2>&1; then
  pg_lsclusters --no-header 2>/dev/null | while read -r version name _; do
    pg_dropcluster --stop "$version" "$name" || true
  done
fi
