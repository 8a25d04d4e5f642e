#!/usr/bin/env bash
# Start real PostgreSQL, Redis and Kafka (KRaft, single node) on 127.0.0.1 for the
# integration tests, without Docker. Idempotent: services that already run are left alone.
#
#   bash scripts/services-up.sh          # progress on stderr, export lines on stdout
#   source .services/env                 # DATABASE_URL, REDIS_URL, KAFKA_BROKERS, SECRETS_KEY
#   eval "$(bash scripts/services-up.sh)" # same, in one step
#   bash scripts/services-down.sh [--purge]
#
# Settings (environment): SERVICES_DIR (default <repo>/.services), PG_PORT (55432),
# REDIS_PORT (56379), KAFKA_PORT (59092), KAFKA_CONTROLLER_PORT (59093),
# SERVICES_TIMEOUT (readiness timeout per service, seconds, default 90),
# KAFKA_HEAP_OPTS (default "-Xmx512m -Xms256m"), PG_BIN (PostgreSQL server bin dir),
# KAFKA_LIBS (folder of the broker's jars, default $SERVICES_DIR/kafka/libs: a second set of
# services, such as the fault tests', can share the jars another set fetched).
# REDIS_APPENDONLY=yes (default no): Redis keeps an append-only file (fsync every second), as a
# production Redis under BullMQ must, so that a Redis restarted keeps its queued jobs.
# Run again, it starts whatever of the three is not running (how the fault tests restart one).
# Missing software (postgresql, redis-server, a JRE, maven) is installed with apt-get (root).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
SERVICES_DIR=${SERVICES_DIR:-$REPO_ROOT/.services}
PG_PORT=${PG_PORT:-55432}
REDIS_PORT=${REDIS_PORT:-56379}
KAFKA_PORT=${KAFKA_PORT:-59092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-59093}
SERVICES_TIMEOUT=${SERVICES_TIMEOUT:-90}
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m}
HOST=127.0.0.1

DB_NAME=linktrack
DB_USER=linktrack
DB_PASSWORD=linktrack

log() { echo "services: $*" >&2; }
die() { echo "services: ERROR: $*" >&2; exit 1; }

# print the last lines of a log file to stderr
show_log() {
  if [ -f "$1" ]; then
    echo "services: ---- last lines of $1 ----" >&2
    tail -n "${2:-40}" "$1" >&2 || true
    echo "services: ----" >&2
  fi
}

# true if something accepts TCP connections on 127.0.0.1:$1
port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# true if the pid in file $1 is alive and its command line contains $2
pid_alive() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(tr -dc '0-9' <"$1")
  [ -n "$pid" ] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

mkdir -p "$SERVICES_DIR"
SERVICES_DIR=$(cd "$SERVICES_DIR" && pwd)

# ---------------------------------------------------------------------------
# software
# ---------------------------------------------------------------------------
find_pg_bin() {
  local d
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return 0; fi
  # newest Debian server install that really has the server binaries
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then echo "$d"; return 0; fi
  done
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null && command -v postgres >/dev/null; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  return 1
}

# shellcheck source=lib/apt.sh
source "$SCRIPT_DIR/lib/apt.sh"

missing=()
PG_BIN_DIR=$(find_pg_bin || true)
[ -n "$PG_BIN_DIR" ] || missing+=(postgresql)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v java >/dev/null || missing+=(default-jre-headless)
command -v mvn >/dev/null || missing+=(maven)
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}"
  hash -r
fi
if [ -z "$PG_BIN_DIR" ]; then
  PG_BIN_DIR=$(find_pg_bin) || die "PostgreSQL server binaries not found after install"
fi
command -v redis-server >/dev/null || die "redis-server not found after install"
command -v java >/dev/null || die "java not found after install"
command -v mvn >/dev/null || die "mvn not found after install"

pg_tool() { # path of a PostgreSQL client tool: the server's bin dir first, then PATH
  if [ -x "$PG_BIN_DIR/$1" ]; then echo "$PG_BIN_DIR/$1"; else command -v "$1"; fi
}
PSQL=$(pg_tool psql) || die "psql not found"
PG_ISREADY=$(pg_tool pg_isready) || die "pg_isready not found"

# ---------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------
PG_ROOT=$SERVICES_DIR/pg
PG_DATA=$PG_ROOT/data
PG_LOG=$PG_ROOT/postgres.log

mkdir -p "$PG_ROOT"
if [ "$(id -u)" = 0 ]; then
  # initdb/postgres refuse to run as root: use the data dir's owner, else postgres, else a system user
  if [ -d "$PG_DATA" ] && [ "$(stat -c %u "$PG_DATA")" != 0 ]; then
    PG_OS_USER=$(stat -c %U "$PG_DATA")
  elif id -u postgres >/dev/null 2>&1; then
    PG_OS_USER=postgres
  else
    PG_OS_USER=linktrack-pg
    if ! id -u "$PG_OS_USER" >/dev/null 2>&1; then
      log "creating system user $PG_OS_USER for PostgreSQL"
      useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$PG_OS_USER"
    fi
  fi
  chown "$PG_OS_USER:" "$PG_ROOT"
  as_pg() {
    if command -v runuser >/dev/null; then
      (cd / && runuser -u "$PG_OS_USER" -- "$@")
    else
      (cd / && su -s /bin/sh "$PG_OS_USER" -c "$(printf '%q ' "$@")")
    fi
  }
  as_pg test -w "$PG_ROOT" ||
    die "OS user $PG_OS_USER cannot write $PG_ROOT (a parent directory is not searchable?); set SERVICES_DIR elsewhere"
else
  as_pg() { "$@"; }
fi
chmod 700 "$PG_ROOT"

psql_admin() {
  "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PG_PORT" -U postgres -d postgres "$@"
}

# running = the postmaster named in postmaster.pid is alive (and not a zombie / reused pid)
pg_running() {
  local pid
  [ -f "$PG_DATA/postmaster.pid" ] || return 1
  pid=$(head -n 1 "$PG_DATA/postmaster.pid" | tr -dc '0-9')
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q postgres
}

wait_pg() {
  local deadline=$((SECONDS + SERVICES_TIMEOUT))
  until "$PG_ISREADY" -q -h "$HOST" -p "$PG_PORT" -U postgres -d postgres -t 2; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      show_log "$PG_LOG"
      die "PostgreSQL not ready on $HOST:$PG_PORT after ${SERVICES_TIMEOUT}s"
    fi
    sleep 0.5
  done
}

start_pg() {
  if [ ! -s "$PG_DATA/PG_VERSION" ]; then
    log "postgres: initdb $PG_DATA ($("$PG_BIN_DIR/postgres" --version))"
    rm -rf "$PG_DATA"
    as_pg "$PG_BIN_DIR/initdb" -D "$PG_DATA" -U postgres --auth=trust --encoding=UTF8 \
      --no-locale --no-sync >"$PG_ROOT/initdb.log" 2>&1 || { show_log "$PG_ROOT/initdb.log"; die "initdb failed"; }
    echo "include 'linktrack.conf'" >>"$PG_DATA/postgresql.conf"
    printf '%s\n' \
      "# written by scripts/services-up.sh: trust on the unix socket and loopback only" \
      "local all all trust" \
      "host  all all 127.0.0.1/32 trust" >"$PG_DATA/pg_hba.conf"
  fi

  # settings (rewritten on every start, so PG_PORT changes apply)
  local sock_dir=$PG_DATA
  if [ "$((${#PG_DATA} + 20))" -ge 107 ]; then
    log "postgres: data dir path too long for a unix socket; TCP only"
    sock_dir=
  fi
  printf '%s\n' \
    "# written by scripts/services-up.sh (test instance: durability traded for speed)" \
    "listen_addresses = '$HOST'" \
    "port = $PG_PORT" \
    "unix_socket_directories = '${sock_dir//\'/\'\'}'" \
    "max_connections = 200" \
    "fsync = off" \
    "synchronous_commit = off" \
    "full_page_writes = off" >"$PG_DATA/linktrack.conf"
  [ "$(id -u)" != 0 ] || chown "$PG_OS_USER:" "$PG_DATA/linktrack.conf" "$PG_DATA/pg_hba.conf" "$PG_DATA/postgresql.conf"

  # after a crash the dead postmaster may linger as a zombie for a moment, and postgres
  # refuses to start while the pid in postmaster.pid still exists
  local old_pid i
  old_pid=$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null | tr -dc '0-9' || true)
  if [ -n "$old_pid" ]; then
    for ((i = 0; i < 100; i++)); do kill -0 "$old_pid" 2>/dev/null || break; sleep 0.2; done
  fi
  if port_open "$PG_PORT"; then die "port $HOST:$PG_PORT is already in use by another process"; fi
  log "postgres: starting on $HOST:$PG_PORT"
  : >"$PG_LOG"
  [ "$(id -u)" != 0 ] || chown "$PG_OS_USER:" "$PG_LOG"
  # setsid: detach from the caller's session/process group so the server outlives it
  as_pg setsid "$PG_BIN_DIR/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$SERVICES_TIMEOUT" start >/dev/null ||
    { show_log "$PG_LOG"; die "PostgreSQL failed to start"; }
}

if pg_running; then
  log "postgres: already running ($PG_DATA)"
else
  start_pg
fi
wait_pg

# role and database (idempotent)
psql_admin -c "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASSWORD';
  ELSE
    ALTER ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASSWORD';
  END IF;
END \$\$;" || die "could not create role $DB_USER"
if [ "$(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != 1 ]; then
  psql_admin -c "CREATE DATABASE $DB_NAME OWNER $DB_USER" || die "could not create database $DB_NAME"
fi
log "postgres: ready (database $DB_NAME, role $DB_USER)"

# ---------------------------------------------------------------------------
# Redis
# ---------------------------------------------------------------------------
REDIS_DIR=$SERVICES_DIR/redis
REDIS_PID=$REDIS_DIR/redis.pid
REDIS_LOG=$REDIS_DIR/redis.log
mkdir -p "$REDIS_DIR"

redis_ping() {
  if command -v redis-cli >/dev/null; then
    [ "$(redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]
  else
    (
      exec 3<>"/dev/tcp/$HOST/$REDIS_PORT" || exit 1
      printf 'PING\r\n' >&3
      IFS= read -r -t 2 reply <&3 || exit 1
      [[ $reply == +PONG* ]]
    ) 2>/dev/null
  fi
}

if pid_alive "$REDIS_PID" redis-server; then
  log "redis: already running (pid $(cat "$REDIS_PID"))"
else
  if port_open "$REDIS_PORT"; then die "port $HOST:$REDIS_PORT is already in use by another process"; fi
  rm -f "$REDIS_PID"
  log "redis: starting on $HOST:$REDIS_PORT"
  (cd "$REDIS_DIR" && setsid redis-server --bind "$HOST" --port "$REDIS_PORT" --protected-mode yes \
    --daemonize yes --save "" --appendonly "${REDIS_APPENDONLY:-no}" --appendfsync everysec --dir "$REDIS_DIR" \
    --pidfile "$REDIS_PID" --logfile "$REDIS_LOG") ||
    { show_log "$REDIS_LOG"; die "redis-server failed to start"; }
fi
deadline=$((SECONDS + SERVICES_TIMEOUT))
until redis_ping; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    show_log "$REDIS_LOG"
    die "Redis not answering PING on $HOST:$REDIS_PORT after ${SERVICES_TIMEOUT}s"
  fi
  sleep 0.2
done
log "redis: ready"

# ---------------------------------------------------------------------------
# Kafka (KRaft, combined broker + controller, node 1)
# ---------------------------------------------------------------------------
KAFKA_DIR=$SERVICES_DIR/kafka
KAFKA_LIBS=${KAFKA_LIBS:-$KAFKA_DIR/libs}
KAFKA_DATA=$KAFKA_DIR/data
KAFKA_PID=$KAFKA_DIR/kafka.pid
KAFKA_LOG=$KAFKA_DIR/kafka.log
KAFKA_CONF=$KAFKA_DIR/server.properties
KAFKA_POM=$SCRIPT_DIR/kafka/pom.xml
mkdir -p "$KAFKA_DIR"

# JVM for the command-line tools: quiet logging, small heap, fast start
KAFKA_TOOL=(java -Xmx256m -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
  -Dlog4j.configuration="file:$KAFKA_DIR/tools-log4j.properties" -cp "$KAFKA_LIBS/*")

fetch_kafka() {
  local stamp
  stamp=$(sha256sum "$KAFKA_POM" | cut -c1-64)
  if [ "$(cat "$KAFKA_LIBS/.pom.sha256" 2>/dev/null || true)" = "$stamp" ] &&
    compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null; then
    return 0
  fi
  log "kafka: fetching jars with Maven (first run or pom changed)"
  rm -rf "$KAFKA_LIBS"
  if ! mvn -B -q -f "$KAFKA_POM" -Dkafka.build.dir="$KAFKA_DIR/target" \
    dependency:copy-dependencies -DoutputDirectory="$KAFKA_LIBS" -DincludeScope=runtime \
    >"$KAFKA_DIR/maven.log" 2>&1; then
    show_log "$KAFKA_DIR/maven.log"
    rm -rf "$KAFKA_LIBS" "$KAFKA_DIR/target"
    die "Maven could not fetch the Kafka jars"
  fi
  rm -rf "$KAFKA_DIR/target"
  compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null || die "no kafka_2.13 jar in $KAFKA_LIBS"
  echo "$stamp" >"$KAFKA_LIBS/.pom.sha256"
}

write_kafka_config() {
  cat >"$KAFKA_CONF" <<EOF
# written by scripts/services-up.sh
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=3
auto.create.topics.enable=true
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
group.initial.rebalance.delay.ms=0
EOF
  cat >"$KAFKA_DIR/log4j.properties" <<'EOF'
# broker logging: stdout, which services-up.sh redirects to kafka.log
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka=INFO
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
EOF
  cat >"$KAFKA_DIR/tools-log4j.properties" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
  # convenience wrapper for developers: .services/kafka/kafka-topics.sh --list
  cat >"$KAFKA_DIR/kafka-topics.sh" <<EOF
#!/usr/bin/env bash
exec java -Xmx256m -XX:TieredStopAtLevel=1 -Dlog4j.configuration="file:$KAFKA_DIR/tools-log4j.properties" \\
  -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.TopicCommand --bootstrap-server $HOST:$KAFKA_PORT "\$@"
EOF
  chmod 755 "$KAFKA_DIR/kafka-topics.sh"
}

start_kafka() {
  local port cluster_id
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    if port_open "$port"; then die "port $HOST:$port is already in use by another process"; fi
  done
  fetch_kafka
  write_kafka_config
  if [ ! -f "$KAFKA_DATA/meta.properties" ]; then
    cluster_id=$("${KAFKA_TOOL[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
    [ -n "$cluster_id" ] || die "kafka: could not generate a cluster id"
    log "kafka: formatting storage $KAFKA_DATA (cluster $cluster_id)"
    "${KAFKA_TOOL[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_CONF" --ignore-formatted \
      >"$KAFKA_DIR/format.log" 2>&1 || { show_log "$KAFKA_DIR/format.log"; die "kafka: storage format failed"; }
  fi
  log "kafka: starting on $HOST:$KAFKA_PORT (controller $HOST:$KAFKA_CONTROLLER_PORT)"
  [ ! -f "$KAFKA_LOG" ] || mv -f "$KAFKA_LOG" "$KAFKA_LOG.prev"
  # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM options
  nohup setsid java $KAFKA_HEAP_OPTS -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$KAFKA_DIR/log4j.properties" -Dkafka.logs.dir="$KAFKA_DIR" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_CONF" >"$KAFKA_LOG" 2>&1 </dev/null &
  KAFKA_STARTED_PID=$!
  echo "$KAFKA_STARTED_PID" >"$KAFKA_PID"
}

# The broker's process is there (not exited, not a zombie). Right after start_kafka, the pid may
# still be the forked shell that has not yet exec'ed nohup → setsid → java (a loaded machine delays
# the exec): its command line does not name kafka.Kafka yet, so pid_alive would call it exited.
# A broker found running (pid file from an earlier run) is checked by pid_alive, which guards
# against a reused pid.
kafka_running() {
  local pid state
  if [ -n "${KAFKA_STARTED_PID:-}" ]; then
    pid=$KAFKA_STARTED_PID
    kill -0 "$pid" 2>/dev/null || return 1
    state=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
    [ "$state" != Z ]
  else
    pid_alive "$KAFKA_PID" kafka.Kafka
  fi
}

wait_kafka() {
  local deadline=$((SECONDS + SERVICES_TIMEOUT))
  # ready = the broker answers a metadata request (topic list)
  until port_open "$KAFKA_PORT" &&
    timeout 30 "${KAFKA_TOOL[@]}" org.apache.kafka.tools.TopicCommand \
      --bootstrap-server "$HOST:$KAFKA_PORT" --list >/dev/null 2>"$KAFKA_DIR/readiness.log"; do
    if ! kafka_running; then
      show_log "$KAFKA_LOG" 60
      die "Kafka process exited"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      show_log "$KAFKA_DIR/readiness.log" 20
      show_log "$KAFKA_LOG" 60
      die "Kafka not ready on $HOST:$KAFKA_PORT after ${SERVICES_TIMEOUT}s"
    fi
    sleep 1
  done
}

if pid_alive "$KAFKA_PID" kafka.Kafka; then
  log "kafka: already running (pid $(cat "$KAFKA_PID"))"
else
  start_kafka
fi
wait_kafka
log "kafka: ready"

# ---------------------------------------------------------------------------
# environment for the tests
# ---------------------------------------------------------------------------
# The key of the webhook secrets in this Postgres (required with DATABASE_URL for the api and worker
# roles): made once with the services' data, so every process and every run shares it.
if [ ! -s "$SERVICES_DIR/secrets.key" ]; then
  (umask 077 && head -c 32 /dev/urandom | base64 >"$SERVICES_DIR/secrets.key")
fi
cat >"$SERVICES_DIR/env" <<EOF
export DATABASE_URL=postgres://$DB_USER:$DB_PASSWORD@$HOST:$PG_PORT/$DB_NAME
export REDIS_URL=redis://$HOST:$REDIS_PORT
export KAFKA_BROKERS=$HOST:$KAFKA_PORT
export SECRETS_KEY=$(cat "$SERVICES_DIR/secrets.key")
EOF
log "all services up; source $SERVICES_DIR/env"
cat "$SERVICES_DIR/env"
