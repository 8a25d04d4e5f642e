#!/usr/bin/env bash
# Builds the dashboard (dist/web): the platform's own OpenAPI document (as GET /api/v1/openapi.json
# answers it) → its TypeScript types (openapi-typescript) → a type-check of the dashboard against
# them, so an API change that breaks the dashboard fails here → the Vite build (hashed assets).
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsx scripts/openapi-document.ts web/src/api/openapi.generated.json
npx openapi-typescript web/src/api/openapi.generated.json --output web/src/api/schema.generated.d.ts --enum-values=false >/dev/null
npx tsc -p web/tsconfig.json
npx vite build --config web/vite.config.ts --logLevel warn
# Each script and stylesheet also pre-compressed (brotli, gzip), served by Accept-Encoding.
node -e '
  const fs = require("fs"), path = require("path"), zlib = require("zlib");
  const dir = "dist/web/assets";
  for (const name of fs.readdirSync(dir)) {
    if (!/\.(js|css|svg)$/.test(name)) continue;
    const body = fs.readFileSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name + ".br"), zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }));
    fs.writeFileSync(path.join(dir, name + ".gz"), zlib.gzipSync(body, { level: 9 }));
  }'
