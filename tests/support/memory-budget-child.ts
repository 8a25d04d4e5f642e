// A process that opens the platform's stores as services/platform.ts does (loadConfig from its
// environment, then the composition root) and prints, as one JSON line, what the engines took of
// the memory budget: chDB's server and query settings, PGlite's shared_buffers, and the process's
// peak resident memory (VmHWM, MiB) so far. Used by tests/memory-budget.int.test.ts.
//   MEMORY_LIMIT_MB=512 DATA_DIR=<dir> node --import tsx tests/support/memory-budget-child.ts
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { selectRows } from '#shared/analytics/analytics.js';
import { loadConfig } from '#shared/config.js';
import { closeContext, createContext } from '#shared/context.js';

const context = await createContext(loadConfig(process.env));
try {
  const server = await selectRows<{ name: string; value: string }>(
    context.analytics.client,
    `SELECT name, value FROM system.server_settings WHERE name IN ('primary_index_cache_size', 'mark_cache_size', 'background_pool_size')`,
    {},
  );
  const query = await selectRows<{ name: string; value: string }>(
    context.analytics.client,
    `SELECT name, value FROM system.settings WHERE name IN ('max_threads')`,
    {},
  );
  const { rows } = await sql<{ shared_buffers: string }>`SHOW shared_buffers`.execute(context.db.db);
  const peakMb = Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
  const settings = Object.fromEntries([...server, ...query].map(({ name, value }) => [name, value]));
  process.stdout.write(`${JSON.stringify({ settings, sharedBuffers: rows[0]?.shared_buffers, peakMb })}\n`);
} finally {
  await closeContext(context);
}
