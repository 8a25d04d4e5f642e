#!/usr/bin/env bash
# The generated clients of `make contract` (scripts/contract.sh runs this against the platform it
# started): the platform's own GET /api/v1/openapi.json → a Python client (openapi-python-client,
# default settings, pinned in contract/requirements.txt) and TypeScript types (openapi-typescript)
# for openapi-fetch, each generated into the throw-away .contract/clients/, compiled and driven
# through the same scripted tour (tour.py, tour.ts): sign in, a token, a subdomain, links CRUD,
# statistics, a webhook and its delivery log, exports. The tours also check that the clients type
# `meta.next_cursor` as a string or null (tour.ts does not compile otherwise).
#
#   bash contract/clients/run.sh <base URL> <e-mail> <password> <venv>
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=$1
EMAIL=$2
PASSWORD=$3
VENV=$4
OUT=.contract/clients
rm -rf "$OUT" && mkdir -p "$OUT/typescript"
curl -fsS "$BASE/api/v1/openapi.json" -o "$OUT/openapi.json"
started=$SECONDS

# Python: generate (ruff, from the venv, formats the package), install it into the venv, run the tour.
echo "== Python client: openapi-python-client $("$VENV/bin/openapi-python-client" --version | awk '{print $NF}')" >&2
PATH="$VENV/bin:$PATH" "$VENV/bin/openapi-python-client" generate --path "$OUT/openapi.json" --output-path "$OUT/python" > "$OUT/python-generate.log" 2>&1 ||
  { cat "$OUT/python-generate.log" >&2; exit 1; }
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall "./$OUT/python"
"$VENV/bin/python" contract/clients/tour.py "$BASE" "$EMAIL" "$PASSWORD"

# TypeScript: the types, a strict type-check of them and of the tour, its lint (eslint.config.js leaves it
# out: its types exist only here), then the tour under tsx.
echo "== TypeScript client: openapi-typescript $(npx openapi-typescript --version | awk '{print $NF}') + openapi-fetch" >&2
npx openapi-typescript "$OUT/openapi.json" --output "$OUT/typescript/schema.d.ts" > /dev/null
npx tsc -p contract/clients/tsconfig.json
npx eslint --no-ignore contract/clients/tour.ts
npx tsx --tsconfig contract/clients/tsconfig.json contract/clients/tour.ts "$BASE" "$EMAIL" "$PASSWORD"
echo "generated clients: both tours passed in $((SECONDS - started)) s" >&2
