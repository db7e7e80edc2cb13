#!/usr/bin/env bash
# Shared by scripts/test.sh and scripts/test-long.sh: set-up of what the tests need, and one
# run of a pnpm test script with a leak check and a closing "N passed, N failed" line.

# shellcheck source=postgres.sh
. "$(dirname "${BASH_SOURCE[0]}")/postgres.sh"
# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

# The Docker engine, the sandbox images (test, and the default one) and the locked dependencies, built.
suite_setup() {
  local chromium_log chromium_pid
  bash scripts/ensure-docker.sh
  suite_ensure_compose
  bash scripts/ensure-postgres.sh
  # Chromium (the web console's browser tests) installs from Debian packages while the images
  # and the workspace build: on a fresh machine that download takes most of a minute, and
  # nothing below needs apt or the browser. The apt steps above stay in front (one dpkg lock).
  chromium_log=$(mktemp)
  bash scripts/ensure-chromium.sh >"$chromium_log" 2>&1 &
  chromium_pid=$!
  bash scripts/build-sandbox-image.sh mediagate-sandbox:test
  # The image mediagate.example.yaml names: an e2e test runs the example unedited.
  bash scripts/build-sandbox-image.sh mediagate-sandbox:local
  bash scripts/ensure-pnpm.sh
  pnpm install --frozen-lockfile --reporter=append-only
  pnpm build
  if ! wait "$chromium_pid"; then
    cat "$chromium_log" >&2
    rm -f "$chromium_log"
    echo "suite: installing chromium failed (output above); the web console's tests need it" >&2
    return 1
  fi
  cat "$chromium_log"
  rm -f "$chromium_log"
  # The store's tests run against a private PostgreSQL cluster, removed when the script exits.
  pg_cluster_start
  trap pg_cluster_stop EXIT
}

# A compose tool (`docker compose` or Debian's docker-compose): a test validates
# docker/compose.yaml with it.
suite_ensure_compose() {
  if docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1; then
    return 0
  fi
  echo "suite: installing docker-compose from Debian packages (it validates docker/compose.yaml)"
  export DEBIAN_FRONTEND=noninteractive
  apt_update_once
  apt-get install -y -q docker-compose
}

# Typecheck, lint and the import rules, in the background at the lowest priority while the
# tests run: the e2e suite, most of whose time is spent waiting on the engine and child
# processes, leaves a core idle for minutes. Niced, they take only what the tests leave.
# suite_run waits for them and reports their failure with their output.
# The typecheck is one `tsc -b` over the root tsconfig.json: `pnpm build` has already checked
# every package's src (its dist/.tsbuildinfo says so), so only the tests, the client and bench
# are checked, against the built declarations, in one process that parses the Node and ES
# declarations once instead of once per package: half the CPU of `pnpm -r typecheck` (53 s
# against 107 s, measured one after the other on this 2-core machine).
SUITE_CHECKS_PID=""
SUITE_CHECKS_LOG=""
suite_checks_start() {
  SUITE_CHECKS_LOG=$(mktemp)
  nice -n 19 bash -c 'pnpm exec tsc -b && pnpm lint && pnpm check:imports' \
    >"$SUITE_CHECKS_LOG" 2>&1 &
  SUITE_CHECKS_PID=$!
}

# Waits for suite_checks_start's checks (if started): 0 when they passed, else their output and 1.
suite_checks_wait() {
  local status=0
  [ -n "$SUITE_CHECKS_PID" ] || return 0
  wait "$SUITE_CHECKS_PID" || status=$?
  if [ "$status" = 0 ]; then
    echo "checks: typecheck, lint and import rules passed"
  else
    cat "$SUITE_CHECKS_LOG" >&2
    echo "checks: typecheck, lint or the import rules failed (output above)" >&2
  fi
  rm -f "$SUITE_CHECKS_LOG"
  SUITE_CHECKS_PID=""
  return "$status"
}

# Every container the sandbox makes: slot containers and the throwaway delete and kill
# containers (packages/sandbox/src/labels.ts), which carry no agent label. One query per label:
# the engine ANDs label filters.
SUITE_CONTAINER_LABELS="mediagate.agent=1 mediagate.slot-delete=1 mediagate.process-kill=1"
suite_containers() {
  local label
  for label in $SUITE_CONTAINER_LABELS; do
    docker ps -aq --no-trunc --filter "label=$label"
  done | sort -u
}
# The /run/mediagate volumes of sandbox containers no container uses any more (a container
# removed without its volumes).
suite_volumes() { docker volume ls -q --filter label=mediagate.install --filter dangling=true | sort; }
# Slot disks (loop-mounted images on <home>/sandboxes/docker/<slot>) a test left mounted.
suite_slot_mounts() { awk '$2 ~ /\/sandboxes\/docker\// { print $2 }' /proc/self/mounts | sort; }
# The tests' temporary homes and clones (`mg-*` in the temp directory, test-support/temp-dir.ts
# and the suites' own mkdtemp calls). A run whose workers were killed (turbo stops the other
# packages when one fails) leaves those of the tests it cut short.
suite_temp_dirs() { find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'mg-*' 2>/dev/null | sort; }

# Whether the engine still starts a container within 30 s. Debian bookworm's docker.io
# (20.10.24) can deadlock in libnetwork when containers exit while others are removed
# (getSvcRecords against processEndpointDelete, moby/moby#46661, fixed in 20.10.27): `docker ps`
# still answers, but every start, stop and removal waits forever. A long-suite run here hit it.
# When it does not answer, dockerd's goroutines are dumped (SIGUSR1) and the dump named.
suite_engine_answers() {
  local pid dump
  if timeout 30 docker run --rm --network none mediagate-sandbox:test true >/dev/null 2>&1; then
    return 0
  fi
  echo "suite: the Docker engine started no container within 30 s; the leak checks are skipped" >&2
  pid=$(pgrep -xo dockerd || true)
  [ -n "$pid" ] || return 1
  kill -USR1 "$pid" || return 1
  sleep 2
  dump=$(ls -t /var/run/docker/goroutine-stacks-*.log 2>/dev/null | head -1 || true)
  [ -n "$dump" ] || return 1
  if grep -q processEndpointDelete "$dump" && grep -q getSvcRecords "$dump"; then
    echo "suite: dockerd is deadlocked in libnetwork (moby/moby#46661); its goroutines: $dump" >&2
  else
    echo "suite: dockerd's goroutines: $dump" >&2
  fi
  return 1
}

# suite_run <pnpm script>: runs it, fails when it leaves mediagate containers, their volumes or
# mounted slot disks behind (and removes them), and prints one closing line over every vitest summary.
suite_run() {
  local script=$1 before mounts_before volumes_before temps_before out status=0 leaked
  local leaked_mounts leaked_volumes leaked_temps
  before=$(mktemp)
  mounts_before=$(mktemp)
  volumes_before=$(mktemp)
  temps_before=$(mktemp)
  out=$(mktemp)
  suite_containers >"$before"
  suite_slot_mounts >"$mounts_before"
  suite_volumes >"$volumes_before"
  suite_temp_dirs >"$temps_before"
  pnpm "$script" 2>&1 | tee "$out" || status=$?

  # A wedged engine would hold the removals below until CI's own limit: they are skipped.
  local engine=ok
  suite_engine_answers || engine=wedged
  [ "$engine" = ok ] || status=1

  leaked=$(suite_containers | comm -13 "$before" - || true)
  if [ "$engine" = ok ] && [ -n "$leaked" ]; then
    echo "$script: the tests left mediagate containers behind (removing them):" >&2
    echo "$leaked" | xargs -r docker inspect --format '{{.Id}} {{.Config.Labels}} {{.State.Status}}' >&2 || true
    echo "$leaked" | xargs -r docker rm -f -v >/dev/null
    status=1
  fi

  leaked_volumes=$(suite_volumes | comm -13 "$volumes_before" - || true)
  if [ "$engine" = ok ] && [ -n "$leaked_volumes" ]; then
    echo "$script: the tests removed sandbox containers without their volumes (removing them):" >&2
    echo "$leaked_volumes" >&2
    echo "$leaked_volumes" | xargs -r docker volume rm >/dev/null || true
    status=1
  fi

  # A mounted slot disk holds a loop device, a finite resource of the machine.
  leaked_mounts=$(suite_slot_mounts | comm -13 "$mounts_before" - || true)
  if [ -n "$leaked_mounts" ]; then
    echo "$script: the tests left slot disks mounted (unmounting them, loop devices go with them):" >&2
    echo "$leaked_mounts" >&2
    echo "$leaked_mounts" | sort -r | xargs -r -n1 umount || true
    status=1
  fi

  # After the unmounts: a slot disk's mount point lies inside a test's temporary home.
  leaked_temps=$(suite_temp_dirs | comm -13 "$temps_before" - || true)
  if [ -n "$leaked_temps" ]; then
    echo "$script: the tests left temporary directories behind (removing them):" >&2
    echo "$leaked_temps" >&2
    echo "$leaked_temps" | xargs -r rm -rf
    status=1
  fi

  suite_checks_wait || status=1

  # vitest prints "Tests  N passed | M failed (T)" per package. awk alone: a grep matching
  # nothing (no failures) would end the script under pipefail.
  count() {
    sed -E 's/\x1b\[[0-9;]*m//g' "$out" | awk -v what="$1" '
      $0 ~ /^[^ ]*[ ]+Tests[ ]/ {
        for (i = 2; i <= NF; i++) if ($i == what) s += $(i - 1)
      }
      END { print s + 0 }'
  }
  local passed failed
  passed=$(count passed)
  failed=$(count failed)
  rm -f "$before" "$mounts_before" "$volumes_before" "$temps_before" "$out"
  echo
  echo "${passed} passed, ${failed} failed"
  return "$status"
}
