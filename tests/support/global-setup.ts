import { migrateAnalytics } from '#shared/migrations/clickhouse.js';
import { createAnalytics } from '#shared/analytics/analytics.js';
import { createDatabase } from '#shared/db/database.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHDB_DIR_PREFIX, LOG_DIR_PREFIX, testConfig } from './context.js';

/** The run's own temporary folder, under the machine's. */
const RUN_DIR_PREFIX = 'linktrack-run-';

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
  // Every temporary folder of the run (test files' own, the platforms and browsers they start) goes
  // into one folder that the run's end removes: test files need not each clean up after a failure,
  // and a run no longer leaves its data folders in the machine's temporary directory. Searchable by
  // all: PostgreSQL runs as its own OS user when the faults suite starts one under it.
  const machineTmp = tmpdir();
  const runTmp = mkdtempSync(join(machineTmp, RUN_DIR_PREFIX));
  chmodSync(runTmp, 0o755);
  process.env.TMPDIR = runTmp;
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
  // The run's folder goes when the run ends; and the chDB and message-log folders that runs before this
  // change left directly in the machine's temporary directory: a folder whose process is still alive
  // belongs to another run on the same machine (its files must stay under its reads).
  return () => {
    rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
    for (const entry of readdirSync(machineTmp)) {
      const prefix = [CHDB_DIR_PREFIX, LOG_DIR_PREFIX].find((candidate) => entry.startsWith(candidate));
      if (prefix === undefined) continue;
      if (isAlive(Number(entry.slice(prefix.length)))) continue;
      rmSync(join(machineTmp, entry), { recursive: true, force: true });
    }
  };
}
