// Writes the platform's own OpenAPI document, as `GET /api/v1/openapi.json` answers it, to a file:
// the dashboard's typed API client is generated from it at build time (`make build`), so a contract
// change that breaks the dashboard fails the build. The app is built on throw-away embedded stores
// (in-memory PGlite, migrated: the edge warms its link cache from it; a temporary chDB folder, left
// empty: describing routes reads no analytics) with every role, and asked over `inject`: the same
// route declarations, the same generator, no server listening.
//
//   tsx scripts/openapi-document.ts <output.json>
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '#services/app.js';
import { loadConfig } from '#shared/config.js';
import { closeContext, createContext } from '#shared/context.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';

const output = process.argv[2];
if (!output) {
  process.stderr.write('usage: tsx scripts/openapi-document.ts <output.json>\n');
  process.exit(2);
}

const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-openapi-'));
try {
  // Only what the document depends on comes from the environment (PUBLIC_URL names its server);
  // the stores are always embedded and thrown away, whatever DATABASE_URL or KAFKA_BROKERS say.
  const config = loadConfig({
    PUBLIC_URL: process.env.PUBLIC_URL,
    BASE_DOMAIN: process.env.BASE_DOMAIN,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'development',
  });
  config.database = { kind: 'pglite', dir: 'memory://' };
  const context = await createContext(config);
  try {
    await migrateDatabase(context.db);
    const { app } = await buildApp(context);
    const answer = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    if (answer.statusCode !== 200) throw new Error(`GET /api/v1/openapi.json answered ${answer.statusCode}: ${answer.body.slice(0, 500)}`);
    writeFileSync(output, `${JSON.stringify(answer.json(), null, 2)}\n`);
    await app.close();
  } finally {
    await closeContext(context);
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
