#!/usr/bin/env bash
# Debian package lists, fetched once for every ensure-* script of one set-up: each of them
# (the engine, compose, PostgreSQL, chromium) ran its own `apt-get update` on a fresh machine,
# four downloads of the same lists where one does.

# The lists are taken as fresh for this long after a successful update (minutes).
APT_FRESH_MINUTES=60
APT_STAMP=/var/lib/apt/lists/.mediagate-updated

apt_update_once() {
  if [ -n "$(find "$APT_STAMP" -mmin "-$APT_FRESH_MINUTES" 2>/dev/null)" ]; then
    return 0
  fi
  apt-get update -q
  touch "$APT_STAMP"
}
