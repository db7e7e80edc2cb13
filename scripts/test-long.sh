#!/usr/bin/env bash
# The long suite (test/long: races repeated a thousand times, crash loops, soaks) with the
# same set-up as scripts/test.sh. Too slow for the everyday command; .ci/run runs both.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/suite.sh
. scripts/lib/suite.sh

suite_setup
suite_run test:long
