#!/usr/bin/env bash
# Make sure a Docker engine answers. On a fresh Debian machine (as root) this installs
# docker.io and busybox-static, starts dockerd and waits for it (TESTING.md). When a daemon
# already answers (a workstation, or DOCKER_HOST pointing elsewhere) it changes nothing.
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"

log=${MEDIAGATE_DOCKERD_LOG:-/var/log/mediagate-dockerd.log}

answers() { docker info >/dev/null 2>&1; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "ensure-docker: $1 needs root; run as root or install/start Docker yourself" >&2
    exit 1
  fi
}

install_packages() {
  need_root "installing $*"
  echo "ensure-docker: installing $* from Debian packages (a minute or two the first time)"
  export DEBIAN_FRONTEND=noninteractive
  apt_update_once
  apt-get install -y -q "$@"
}

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
[ -x /bin/busybox ] || missing+=(busybox-static)
if ! command -v docker >/dev/null 2>&1; then missing+=(docker.io); fi

if answers; then
  # The engine is up; busybox is still needed to build the sandbox image.
  if [ ! -x /bin/busybox ]; then install_packages busybox-static; fi
  echo "ensure-docker: engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
  exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
  # shellcheck disable=SC2207
  uniq=($(printf '%s\n' "${missing[@]}" | sort -u))
  install_packages "${uniq[@]}"
fi

if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST#unix://}" = "$DOCKER_HOST" ]; then
  echo "ensure-docker: DOCKER_HOST=$DOCKER_HOST does not answer and is not a local socket; start that engine first" >&2
  exit 1
fi

need_root "starting dockerd"
echo "ensure-docker: starting dockerd (log: $log)"
nohup dockerd >"$log" 2>&1 </dev/null &
for _ in $(seq 1 120); do
  if answers; then
    echo "ensure-docker: engine answers ($(docker version --format '{{.Server.Version}}'))"
    exit 0
  fi
  sleep 0.5
done
echo "ensure-docker: dockerd did not answer within 60 s; last lines of $log:" >&2
tail -n 20 "$log" >&2 || true
exit 1
