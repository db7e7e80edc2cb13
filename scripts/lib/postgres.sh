#!/usr/bin/env bash
# A private PostgreSQL cluster for one test run: initdb and pg_ctl on a temporary directory,
# listening on loopback only, owned and run by an unprivileged user (the `postgres` account of
# Debian's package when the suite runs as root). Its URL goes to the tests as
# MEDIAGATE_TEST_POSTGRES_URL (test-support/postgres.ts); pg_cluster_stop removes it all.

PG_CLUSTER_DIR=""
PG_CLUSTER_USER=""

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$dir" ] && command -v pg_ctl >/dev/null 2>&1; then
    dir=$(dirname "$(command -v pg_ctl)")
  fi
  if [ -z "$dir" ]; then
    echo "postgres: no initdb/pg_ctl found; run scripts/ensure-postgres.sh (Debian's postgresql)" >&2
    return 1
  fi
  echo "$dir"
}

# Runs a command as the cluster's owner (PostgreSQL refuses to run as root).
pg_as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$PG_CLUSTER_USER" -- "$@"
  else
    "$@"
  fi
}

# A free loopback TCP port, chosen by the kernel.
pg_free_port() {
  node -e 'const s=require("node:net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

pg_cluster_start() {
  local bin port
  bin=$(pg_bin)
  if [ "$(id -u)" = 0 ]; then
    PG_CLUSTER_USER=postgres
    id -u "$PG_CLUSTER_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$PG_CLUSTER_USER"
  else
    PG_CLUSTER_USER=$(id -un)
  fi
  PG_CLUSTER_DIR=$(mktemp -d /tmp/mediagate-pg.XXXXXX)
  chown "$PG_CLUSTER_USER" "$PG_CLUSTER_DIR"
  chmod 700 "$PG_CLUSTER_DIR"
  # trust on loopback: the cluster lives for one run, listens on 127.0.0.1 only, and its
  # socket directory is private to its owner.
  pg_as_owner "$bin/initdb" -D "$PG_CLUSTER_DIR/data" -U mediagate --auth=trust \
    --encoding=UTF8 --locale=C.UTF-8 >"$PG_CLUSTER_DIR/initdb.log" 2>&1 || {
    cat "$PG_CLUSTER_DIR/initdb.log" >&2
    return 1
  }
  # In the cluster's own configuration, not on pg_ctl's command line: a `pg_ctl start` after
  # a stop (an outage test) must come back on the same port (port.conf, written below).
  # max_connections: the suites run test files in parallel, each with its own pool.
  cat >>"$PG_CLUSTER_DIR/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PG_CLUSTER_DIR'
max_connections = 300
fsync = on
include = 'port.conf'
EOF
  # The port was free when the kernel named it, but another process may bind it (or take it
  # as an outgoing connection's local port) before the server does, as a busy test run did
  # once: then a new one is tried, up to five in all.
  local tries=0
  while :; do
    port=$(pg_free_port)
    echo "port = $port" >"$PG_CLUSTER_DIR/data/port.conf"
    chown "$PG_CLUSTER_USER" "$PG_CLUSTER_DIR/data/port.conf"
    if pg_as_owner "$bin/pg_ctl" -D "$PG_CLUSTER_DIR/data" -l "$PG_CLUSTER_DIR/server.log" -w \
      start >/dev/null; then
      break
    fi
    tries=$((tries + 1))
    if [ "$tries" -ge 5 ] || ! grep -q "Address already in use" "$PG_CLUSTER_DIR/server.log"; then
      cat "$PG_CLUSTER_DIR/server.log" >&2
      return 1
    fi
    : >"$PG_CLUSTER_DIR/server.log"
  done
  export MEDIAGATE_TEST_POSTGRES_URL="postgres://mediagate@127.0.0.1:$port/postgres"
  # The data directory and pg_ctl, for tests that restart or stop the server mid-run.
  export MEDIAGATE_TEST_POSTGRES_DATA="$PG_CLUSTER_DIR/data"
  export MEDIAGATE_TEST_POSTGRES_BIN="$bin"
  export MEDIAGATE_TEST_POSTGRES_OWNER="$PG_CLUSTER_USER"
  echo "postgres: private cluster on 127.0.0.1:$port ($PG_CLUSTER_DIR)"
}

pg_cluster_stop() {
  [ -n "$PG_CLUSTER_DIR" ] || return 0
  local bin
  bin=$(pg_bin) || true
  if [ -n "$bin" ] && [ -f "$PG_CLUSTER_DIR/data/postmaster.pid" ]; then
    pg_as_owner "$bin/pg_ctl" -D "$PG_CLUSTER_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$PG_CLUSTER_DIR"
  PG_CLUSTER_DIR=""
}
