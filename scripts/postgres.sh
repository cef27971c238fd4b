#!/usr/bin/env bash
# A throw-away PostgreSQL server for tests and local runs, listening only on 127.0.0.1.
#
#   scripts/postgres.sh start [DIR]   initialise DIR (if new), start the server, print its SQLAlchemy URL
#   scripts/postgres.sh url   [DIR]   print the URL of the server running in DIR
#   scripts/postgres.sh halt  [DIR]   stop the server and keep DIR (a later start brings it back, same URL)
#   scripts/postgres.sh stop  [DIR]   stop the server and delete DIR
#
# DIR defaults to $DELTACC_PG_DIR or /tmp/deltacc-postgres. It holds the data directory, the server
# log, a Unix socket and the generated password. Installs Debian's postgresql package with apt-get if no
# server binaries are found. As root, the server runs as the `postgres` OS user (it refuses root).
set -euo pipefail

cmd="${1:-}"
DIR="${2:-${DELTACC_PG_DIR:-/tmp/deltacc-postgres}}"
DB_USER=deltacc
DB_NAME=deltacc

die() { echo "postgres.sh: $*" >&2; exit 1; }

find_bindir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$dir/pg_ctl" ] && { echo "$dir"; return 0; }
  done
  command -v pg_ctl >/dev/null 2>&1 && { dirname "$(command -v pg_ctl)"; return 0; }
  return 1
}

ensure_installed() {
  find_bindir >/dev/null && return 0
  command -v apt-get >/dev/null 2>&1 || die "no PostgreSQL server binaries and no apt-get; install PostgreSQL"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "postgres.sh: installing postgresql with apt-get" >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
  find_bindir >/dev/null || die "apt-get installed postgresql but pg_ctl was not found"
}

# Run a server binary as the OS user that owns the data (postgres when we are root).
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Whether nothing listens on port $1 (connections the last server left in TIME_WAIT do not count).
port_free() {
  python3 -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$1" 2>/dev/null
}

print_url() {
  [ -f "$DIR/port" ] && [ -f "$DIR/password" ] || die "no server in $DIR (run: $0 start $DIR)"
  echo "postgresql+psycopg2://$DB_USER:$(cat "$DIR/password")@127.0.0.1:$(cat "$DIR/port")/$DB_NAME"
}

running() {
  [ -d "$DIR/data" ] && as_owner "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

start() {
  ensure_installed
  BIN="$(find_bindir)"
  if running; then print_url; return 0; fi
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  [ "$(id -u)" = 0 ] && chown postgres: "$DIR"
  if [ ! -f "$DIR/data/PG_VERSION" ]; then
    python3 -c 'import secrets; print(secrets.token_hex(16))' >"$DIR/password.tmp"
    chmod 600 "$DIR/password.tmp"
    [ "$(id -u)" = 0 ] && chown postgres: "$DIR/password.tmp"
    # Password (scram) over TCP; the Unix socket lives in the private DIR, so trust is safe there.
    as_owner "$BIN/initdb" -D "$DIR/data" -U "$DB_USER" --pwfile="$DIR/password.tmp" \
      --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
      || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
    mv "$DIR/password.tmp" "$DIR/password"
  fi
  local port=""
  # A restarted server keeps its port, and so its URL, while the port is free.
  if [ -f "$DIR/port" ] && port_free "$(cat "$DIR/port")"; then port="$(cat "$DIR/port")"; fi
  [ -n "$port" ] || port="$(free_port)"
  echo "$port" >"$DIR/port"
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -k $DIR -c fsync=off -c max_connections=200" \
    >/dev/null || { tail -n 20 "$DIR/server.log" >&2; die "the server did not start"; }
  as_owner "$BIN/psql" -h "$DIR" -p "$port" -U "$DB_USER" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'" | grep -q 1 \
    || as_owner "$BIN/createdb" -h "$DIR" -p "$port" -U "$DB_USER" "$DB_NAME"
  print_url
}

halt() {
  BIN="$(find_bindir)" || die "no PostgreSQL server binaries"
  if running; then as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null; fi
}

stop() {
  halt
  case "$DIR" in
    /tmp/*|*/.cache/*) rm -rf "$DIR" ;;
    *) echo "postgres.sh: stopped; leaving $DIR in place (only /tmp and .cache dirs are deleted)" >&2 ;;
  esac
}

case "$cmd" in
  start) start ;;
  halt) halt ;;
  stop) stop ;;
  url) print_url ;;
  *) die "usage: $0 start|halt|stop|url [DIR]" ;;
esac
