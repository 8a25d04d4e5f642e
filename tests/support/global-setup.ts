import { migrateAnalytics } from '#shared/migrations/clickhouse.js';
import { createAnalytics } from '#shared/analytics/analytics.js';
import { createDatabase } from '#shared/db/database.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHDB_DIR_PREFIX, LOG_DIR_PREFIX, testConfig } from './context.js';

/** Whether a process of this machine is still running (signal 0 only checks). */
function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs once per test run: migrates the shared Postgres server (services run) so that test files
 * start on a ready schema, and proves the migrations apply from scratch on the embedded stores.
 */
export default async function setup(): Promise<() => void> {
  const config = testConfig();
  const database = await createDatabase(config.database);
  try {
    await migrateDatabase(database);
  } finally {
    await database.close();
  }
  if (config.analytics.kind === 'clickhouse') {
    const analytics = createAnalytics(config.analytics);
    try {
      await migrateAnalytics(analytics);
    } finally {
      await analytics.close();
    }
  }
  // The chDB and message-log folders of this run's test processes go when the run ends; a folder whose
  // process is still alive belongs to another run on the same machine (its files must stay under its reads).
  return () => {
    for (const entry of readdirSync(tmpdir())) {
      const prefix = [CHDB_DIR_PREFIX, LOG_DIR_PREFIX].find((candidate) => entry.startsWith(candidate));
      if (prefix === undefined) continue;
      if (isAlive(Number(entry.slice(prefix.length)))) continue;
      rmSync(join(tmpdir(), entry), { recursive: true, force: true });
    }
  };
}
