#!/usr/bin/env bash
# The whole test suite on a fresh machine of this kind (or a workstation): a Docker engine,
# the sandbox test image, dependencies from the lockfile, then build, typecheck, lint and
# every test. Fails when the tests leave any mediagate container, slot disk or mg-* temp dir behind.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/suite.sh
. scripts/lib/suite.sh

suite_setup
suite_checks_start
suite_run test
