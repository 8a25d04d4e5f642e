#!/usr/bin/env bash
# Runs a benchmark as production runs the platform: compiled by tsc and started with node (not
# through tsx, whose per-function helpers cost the hot paths several µs a request and so
# misstate the figures).
#   bash bench/run.sh <name> [arguments…]     e.g. bash bench/run.sh redirect 4 3
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: bash bench/run.sh <name> [arguments…] (names: $(cd bench && ls *.ts | sed 's/\.ts$//' | tr '\n' ' '))}"
shift
[ -f "bench/$name.ts" ] || { echo "no benchmark bench/$name.ts" >&2; exit 1; }
[ -d node_modules ] || npm install --no-audit --no-fund --loglevel=error
rm -rf dist-bench
npx tsc -p tsconfig.bench.json
npx tsx scripts/dist-package.ts dist-bench
exec node "dist-bench/bench/$name.js" "$@"
