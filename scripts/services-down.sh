#!/usr/bin/env bash
# Stop the PostgreSQL, Redis and Kafka started by scripts/services-up.sh.
#   bash scripts/services-down.sh           # stop, keep data in $SERVICES_DIR
#   bash scripts/services-down.sh --purge   # stop and delete $SERVICES_DIR
#   bash scripts/services-down.sh --only kafka [--only redis|postgres]   # stop some (fault tests)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
SERVICES_DIR=${SERVICES_DIR:-$REPO_ROOT/.services}

log() { echo "services: $*" >&2; }
die() { echo "services: ERROR: $*" >&2; exit 1; }

purge=0
only=()
while [ "$#" -gt 0 ]; do
  case $1 in
    --purge) purge=1 ;;
    --only)
      case ${2:-} in
        kafka | redis | postgres) only+=("$2") ;;
        *) die "--only takes kafka, redis or postgres" ;;
      esac
      shift
      ;;
    -h | --help)
      sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument: $1 (usage: services-down.sh [--purge] [--only kafka|redis|postgres]...)" ;;
  esac
  shift
done
if [ "$purge" = 1 ] && [ "${#only[@]}" -gt 0 ]; then die "--purge stops everything: not with --only"; fi

if [ ! -d "$SERVICES_DIR" ]; then
  log "nothing to stop ($SERVICES_DIR does not exist)"
  exit 0
fi
SERVICES_DIR=$(cd "$SERVICES_DIR" && pwd)

# pid from file $1 if alive and its command line contains $2, else nothing
live_pid() {
  local pid
  [ -f "$1" ] || return 0
  pid=$(tr -dc '0-9' <"$1")
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"; then echo "$pid"; fi
}

# stop_pid NAME PIDFILE PATTERN TIMEOUT: SIGTERM, wait up to TIMEOUT s, then SIGKILL
stop_pid() {
  local name=$1 pidfile=$2 pattern=$3 timeout=$4 pid i
  pid=$(live_pid "$pidfile" "$pattern")
  if [ -z "$pid" ]; then
    log "$name: not running"
    rm -f "$pidfile"
    return 0
  fi
  log "$name: stopping (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name: still running after ${timeout}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "$pidfile"
  log "$name: stopped"
}

stop_kafka() {
  stop_pid kafka "$SERVICES_DIR/kafka/kafka.pid" kafka.Kafka 30
}

stop_redis() {
  # no save points and no AOF are configured, so SIGTERM exits without writing a dump
  # (equivalent to SHUTDOWN NOSAVE)
  stop_pid redis "$SERVICES_DIR/redis/redis.pid" redis-server 30
}

find_pg_bin() {
  local d
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return 0; fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    if [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  if command -v pg_ctl >/dev/null; then dirname "$(readlink -f "$(command -v pg_ctl)")"; return 0; fi
  return 1
}

stop_pg() {
  local data=$SERVICES_DIR/pg/data pid bin owner
  if [ ! -f "$data/postmaster.pid" ]; then
    log "postgres: not running"
    return 0
  fi
  pid=$(head -n 1 "$data/postmaster.pid" | tr -dc '0-9')
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null ||
    ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q postgres; then
    log "postgres: not running (stale postmaster.pid)"
    return 0
  fi
  log "postgres: stopping (pid $pid)"
  if bin=$(find_pg_bin); then
    owner=$(stat -c %U "$data")
    if [ "$(id -u)" = 0 ] && [ "$owner" != root ]; then
      if command -v runuser >/dev/null; then
        (cd / && runuser -u "$owner" -- "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null) || true
      else
        (cd / && su -s /bin/sh "$owner" -c "$(printf '%q ' "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop)" >/dev/null) || true
      fi
    else
      "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null || true
    fi
  fi
  if kill -0 "$pid" 2>/dev/null; then
    # pg_ctl missing or failed: SIGINT is PostgreSQL's "fast shutdown", then SIGQUIT ("immediate")
    kill -INT "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -QUIT "$pid" 2>/dev/null || true; sleep 2; fi
  fi
  if kill -0 "$pid" 2>/dev/null; then die "postgres: could not stop pid $pid"; fi
  log "postgres: stopped"
}

if [ "${#only[@]}" -gt 0 ]; then
  for name in "${only[@]}"; do
    case $name in
      kafka) stop_kafka ;;
      redis) stop_redis ;;
      postgres) stop_pg ;;
    esac
  done
  exit 0
fi

stop_kafka
stop_redis
stop_pg

if [ "$purge" = 1 ]; then
  case $SERVICES_DIR in
    / | "$REPO_ROOT" | "${HOME:-/}" | "") die "refusing to delete $SERVICES_DIR" ;;
  esac
  log "purging $SERVICES_DIR"
  rm -rf "$SERVICES_DIR"
fi
log "all services down"
