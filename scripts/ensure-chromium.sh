#!/usr/bin/env bash
# Debian's chromium for the web console's browser tests (test/e2e/web-console.test.ts), driven
# by playwright-core with this executable: no browser is downloaded from anywhere else.
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "ensure-chromium: installing chromium from Debian packages (the web console's browser tests)"
export DEBIAN_FRONTEND=noninteractive
apt_update_once
apt-get install -y -q --no-install-recommends chromium
