#!/usr/bin/env bash
# A private, throwaway PostgreSQL 15 cluster for the tests (CI and developers alike).
#
#   eval "$(scripts/pg-test-cluster.sh start)"   # start it (or reuse it) and export DATABASE_URL
#   npm test -- test/storage test/e2e            # the PostgreSQL variants now run too
#   scripts/pg-test-cluster.sh stop              # stop it and delete it
#
#   scripts/pg-test-cluster.sh url      prints the bare URL of the running cluster
#   scripts/pg-test-cluster.sh status   says whether it runs (exit 0) or not (exit 1)
#
# `start` prints `export DATABASE_URL='postgres://postgres@127.0.0.1:PORT/postgres'` on stdout (all
# progress goes to stderr) and also writes the bare URL to $PG_TEST_CLUSTER_DIR/database_url. It is
# idempotent: a cluster that already runs is reused, a stale one (say, after a reboot) is started again
# or made anew. `stop` is idempotent too.
#
# The cluster: initdb --locale=C --encoding=UTF8, superuser `postgres`, trust auth, listening only on
# 127.0.0.1 (plus a Unix socket inside its own folder, never /var/run/postgresql), fsync and synchronous
# commit off. It is for tests only: any local user can connect to it without a password, and a crash
# can lose its data. The Debian main cluster is neither used nor touched.
#
# Needs PostgreSQL 15's server binaries (Debian: `apt-get install postgresql`). initdb refuses to run as
# root, so as root the cluster is made and run as the `postgres` system user (PG_TEST_USER overrides).
#
# Environment (all optional):
#   PG_TEST_CLUSTER_DIR  where the cluster lives (default ${TMPDIR:-/tmp}/pg-test-cluster-<uid>-<repo hash>,
#                        /tmp when root; one per checkout, so `stop` finds what `start` made)
#   PG_TEST_PORT         first port to try (default 55432); the next free one up to +100 is taken
#   PG_BINDIR            server binaries (default /usr/lib/postgresql/15/bin)
#   PG_TEST_USER         system user to run the server as when invoked as root (default postgres)
set -euo pipefail

PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
FIRST_PORT=${PG_TEST_PORT:-55432}

log() { echo "pg-test-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
if [ -z "${PG_TEST_CLUSTER_DIR:-}" ]; then
  base=${TMPDIR:-/tmp}
  [ "$(id -u)" -eq 0 ] && base=/tmp # the postgres user must be able to reach it
  PG_TEST_CLUSTER_DIR="$base/pg-test-cluster-$(id -u)-$(printf '%s' "$repo_root" | cksum | cut -d' ' -f1)"
fi
dir=${PG_TEST_CLUSTER_DIR%/}
data="$dir/data"
logfile="$dir/postgres.log"
urlfile="$dir/database_url"

# As root, run the server tools as an unprivileged user; otherwise as ourselves.
if [ "$(id -u)" -eq 0 ]; then
  run_user=${PG_TEST_USER:-postgres}
  id -u "$run_user" >/dev/null 2>&1 ||
    die "running as root but user '$run_user' does not exist (install postgresql, or set PG_TEST_USER)"
  as_user() { (cd / && runuser -u "$run_user" -- "$@"); }
else
  run_user=$(id -un)
  as_user() { (cd / && "$@"); }
fi

url_for() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }
current_port() { sed -n "s/^port = \([0-9]*\)$/\1/p" "$data/port.conf" 2>/dev/null; }
is_running() { [ -f "$data/PG_VERSION" ] && as_user "$PG_BINDIR/pg_ctl" -D "$data" status >/dev/null 2>&1; }
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_ready() {
  local port=$1 i
  for i in $(seq 1 60); do
    "$PG_BINDIR/pg_isready" -q -h 127.0.0.1 -p "$port" -d postgres -U postgres -t 2 && return 0
    sleep 0.5
  done
  return 1
}

announce() {
  local url
  url=$(url_for "$1")
  echo "$url" >"$urlfile"
  log "ready: $url (data in $data, log in $logfile)"
  echo "export DATABASE_URL='$url'"
}

make_dir() {
  if [ -L "$dir" ] || { [ -e "$dir" ] && [ "$(stat -c %U "$dir")" != "$run_user" ]; }; then
    die "$dir exists and is not a folder owned by $run_user; remove it or set PG_TEST_CLUSTER_DIR"
  fi
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then chown "$run_user:" "$dir"; fi
  chmod 700 "$dir"
  as_user test -w "$dir" || die "$run_user cannot write to $dir; set PG_TEST_CLUSTER_DIR"
}

init_cluster() {
  log "initdb in $data"
  as_user "$PG_BINDIR/initdb" -D "$data" -U postgres --auth=trust --locale=C --encoding=UTF8 \
    --no-sync --no-instructions >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  as_user tee -a "$data/postgresql.conf" >/dev/null <<EOF

# --- throwaway test cluster (scripts/pg-test-cluster.sh) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_connections = 200
include_if_exists = 'port.conf'
EOF
}

start_on() { # start_on PORT: try to start the cluster on PORT
  echo "port = $1" | as_user tee "$data/port.conf" >/dev/null
  as_user "$PG_BINDIR/pg_ctl" -D "$data" -l "$logfile" -w -t 60 start >/dev/null 2>&1
}

cmd_start() {
  [ -x "$PG_BINDIR/initdb" ] || die "$PG_BINDIR/initdb not found (Debian: apt-get install postgresql)"

  if is_running; then
    local port
    port=$(current_port)
    if [ -n "$port" ] && wait_ready "$port"; then
      log "already running"
      announce "$port"
      return
    fi
    log "running but not answering; making it anew"
    cmd_stop
  fi

  make_dir
  if [ -f "$data/PG_VERSION" ]; then
    log "found a stopped cluster in $data; starting it again"
    rm -f "$data/postmaster.pid" # stale after a reboot or a kill -9; nothing runs (checked above)
  else
    rm -rf "$data"
    init_cluster
  fi

  local port=$FIRST_PORT last=$((FIRST_PORT + 100)) tries=0
  while [ "$port" -le "$last" ]; do
    if ! port_in_use "$port"; then
      if start_on "$port"; then
        wait_ready "$port" || { tail -n 30 "$logfile" >&2 || true; die "started on port $port but pg_isready never answered"; }
        announce "$port"
        return
      fi
      tries=$((tries + 1))
      log "could not start on port $port (see below); trying the next one"
      tail -n 5 "$logfile" >&2 || true
      [ "$tries" -ge 5 ] && die "PostgreSQL failed to start 5 times; full log: $logfile"
    fi
    port=$((port + 1))
  done
  die "no free port in $FIRST_PORT..$last"
}

cmd_stop() {
  if [ ! -e "$dir" ]; then
    log "nothing to stop ($dir does not exist)"
    return
  fi
  if is_running; then
    as_user "$PG_BINDIR/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      as_user "$PG_BINDIR/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
      log "warning: pg_ctl stop failed"
  fi
  rm -rf "$dir"
  log "stopped and removed $dir"
}

cmd_url() { [ -s "$urlfile" ] && is_running && cat "$urlfile" || die "no test cluster runs in $dir"; }

cmd_status() {
  if is_running; then
    echo "running: $(cat "$urlfile" 2>/dev/null || url_for "$(current_port)") (data in $data)"
  else
    echo "not running ($dir)"
    return 1
  fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  url) cmd_url ;;
  status) cmd_status ;;
  *) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
