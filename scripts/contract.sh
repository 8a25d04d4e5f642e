#!/usr/bin/env bash
# Contract tests (`make contract`): the generated clients (contract/clients/run.sh: a Python client from
# openapi-python-client and TypeScript types for openapi-fetch, generated from the platform's own
# document, compiled and driven through a scripted tour), then Schemathesis, pinned in
# contract/requirements.txt and installed into .contract/venv, against the platform's own
# GET /api/v1/openapi.json, every phase (examples, coverage, fuzzing, stateful) and every check, over
# every operation but the swarm routes' 501s (contract/schemathesis.toml says why). The platform runs in
# this process's child on embedded stores in a throw-away data folder, with the rate limits lifted so
# that every operation is reached. A failure of either part fails the run; both always run.
#
# Settings (environment): CONTRACT_SEED (default 23: the same cases every run; any integer replays
# another run), CONTRACT_MAX_EXAMPLES (default 30 per operation), CONTRACT_REPORT_DIR (default
# .contract/report: JUnit, NDJSON events and a pytest file reproducing failures, plus platform.log).
# Replay one failure: .contract/venv/bin/st replay <test case id> (from the report's cassette).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SEED=${CONTRACT_SEED:-23}
MAX_EXAMPLES=${CONTRACT_MAX_EXAMPLES:-30}
REPORT_DIR=${CONTRACT_REPORT_DIR:-$ROOT/.contract/report}
VENV=$ROOT/.contract/venv

# 1. Schemathesis and openapi-python-client, once per change of the pinned requirements.
if [ ! -f "$VENV/.installed" ] || [ contract/requirements.txt -nt "$VENV/.installed" ]; then
  echo "== installing Schemathesis and openapi-python-client into .contract/venv" >&2
  if ! python3 -m venv --help > /dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-venv > /dev/null
  fi
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r contract/requirements.txt
  touch "$VENV/.installed"
fi

# 2. The platform on embedded stores, in a throw-away data folder, on a free loopback port.
rm -rf "$REPORT_DIR" && mkdir -p "$REPORT_DIR"
DATA=$(mktemp -d "${TMPDIR:-/tmp}/linktrack-contract.XXXXXX")
PORT=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
BASE=http://127.0.0.1:$PORT
PASSWORD=$(node -e 'console.log(require("crypto").randomBytes(18).toString("base64url"))')
platform_pid=
cleanup() {
  if [ -n "$platform_pid" ]; then kill "$platform_pid" 2> /dev/null || true; wait "$platform_pid" 2> /dev/null || true; fi
  rm -rf "$DATA"
}
trap cleanup EXIT
echo "== starting the platform on $BASE (data in a temporary folder, log in $REPORT_DIR/platform.log)" >&2
(
  unset DATABASE_URL CLICKHOUSE_URL KAFKA_BROKERS REDIS_URL
  export DATA_DIR=$DATA HOST=127.0.0.1 PORT PUBLIC_URL=$BASE LOG_LEVEL=warn
  export ADMIN_EMAIL=contract@example.com ADMIN_PASSWORD=$PASSWORD
  # Lifted limits: the run sends thousands of requests from one address and one token.
  for bucket in DEFAULT AUTH API SWARM_REGISTER SWARM_READ SWARM_WRITE TRACK REDIRECT; do export "RATE_LIMIT_$bucket=1000000:60"; done
  export BRUTEFORCE_MAX_ATTEMPTS=1000 SPAM_IDENTITIES_PER_IP=100000 SPAM_TOKENS_PER_ACCOUNT=1000
  exec node dist/services/main.js
) > "$REPORT_DIR/platform.log" 2>&1 &
platform_pid=$!
for _ in $(seq 1 120); do
  if curl -fsS "$BASE/api/v1/health" > /dev/null 2>&1; then break; fi
  if ! kill -0 "$platform_pid" 2> /dev/null; then echo "the platform did not start:" >&2; tail -30 "$REPORT_DIR/platform.log" >&2; exit 1; fi
  sleep 0.5
done

# 3. A full-scope token of the staff account the first start created.
curl -fsS -c "$DATA/cookies" -H 'content-type: application/json' -H "origin: $BASE" \
  -d "{\"email\":\"contract@example.com\",\"password\":\"$PASSWORD\"}" "$BASE/auth/login" > /dev/null
TOKEN=$(curl -fsS -b "$DATA/cookies" -H 'content-type: application/json' -H "origin: $BASE" \
  -d '{"name":"contract tests","scopes":["links:read","links:write","stats:read","subdomain:write","team:read","admin"]}' \
  "$BASE/api/v1/tokens" | node -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>console.log(JSON.parse(s).data.token))')

# 4. The generated clients (contract/clients/run.sh): a Python and a TypeScript client generated from the
# document the platform serves, compiled, and driven through the same tour, as the staff account.
echo "== generated clients" >&2
clients=0
bash contract/clients/run.sh "$BASE" contract@example.com "$PASSWORD" "$VENV" || clients=$?

# 5. Schemathesis: all phases, all checks, the pinned seed. One worker: with two, Hypothesis describes
# its filters with ast.parse from two threads at once, which CPython 3.11 can fail ("AST constructor
# recursion depth mismatch"), an error of the tool, not of the API.
echo "== Schemathesis $("$VENV/bin/schemathesis" --version | awk '{print $NF}'), seed $SEED, $MAX_EXAMPLES examples per operation" >&2
status=0
"$VENV/bin/schemathesis" --no-color --config-file contract/schemathesis.toml run "$BASE/api/v1/openapi.json" \
  --url "$BASE" -H "Authorization: Bearer $TOKEN" \
  --phases examples,coverage,fuzzing,stateful --checks all \
  --seed "$SEED" --max-examples "$MAX_EXAMPLES" --workers 1 \
  --report junit,ndjson,pytest,vcr --report-dir "$REPORT_DIR" --output-sanitize true || status=$?
echo "contract tests: seed $SEED; reports in ${REPORT_DIR#"$ROOT"/}" >&2
if [ "$clients" -ne 0 ]; then echo "contract tests: the generated clients failed (above)" >&2; exit "$clients"; fi
exit "$status"
