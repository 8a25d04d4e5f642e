import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAnalytics, type Analytics } from '#shared/analytics/analytics.js';
import { migrateAnalytics } from '#shared/migrations/clickhouse.js';
import { loadConfig, type Config } from '#shared/config.js';
import { closeContext, createContext, type Context } from '#shared/context.js';
import type { Logger } from '#shared/logger.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';

/** True when the suite runs against real services (DATABASE_URL, REDIS_URL, KAFKA_BROKERS set by .ci/run). */
export const SERVICES_MODE = Boolean(process.env.DATABASE_URL || process.env.REDIS_URL || process.env.KAFKA_BROKERS);

/** Prefix of the per-process chDB folders; the global teardown removes them. */
export const CHDB_DIR_PREFIX = 'linktrack-test-chdb-';

/** chDB is one engine per process: every test context of a process shares one data path. */
const CHDB_DIR = join(tmpdir(), `${CHDB_DIR_PREFIX}${process.pid}`);

/** Prefix of the per-process folders of the test contexts' durable message logs and job queues; the global teardown removes them. */
export const LOG_DIR_PREFIX = 'linktrack-test-log-';

/** The secrets key of the test configuration (not a secret: tests only). */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/** A unique suffix so that tests sharing Kafka or Redis never see each other's topics, groups or queues. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}

/**
 * The configuration of a test: the environment (so the services run picks up the service URLs),
 * an in-memory PGlite, this process's chDB path and a fresh folder for the durable message log when
 * embedded, silent logs, and overrides.
 */
export function testConfig(overrides: Record<string, string | undefined> = {}): Config {
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Embedded tests use an in-memory PGlite and this process's chDB path (below): nothing is written here.
    DATA_DIR: join(tmpdir(), 'linktrack-test-unused'),
    KAFKA_TOPIC_PREFIX: uniqueName('t') + '.',
    // Test files run in parallel processes sharing one Redis: each process keeps its own keys and
    // queues (two contexts of one process, playing two nodes, share theirs).
    REDIS_PREFIX: `lt-t${process.pid}`,
    // Tests present many accounts and tokens from loopback on purpose; the anti-spam tests set
    // their own thresholds.
    SPAM_IDENTITIES_PER_IP: '100000',
    // Tests wait for rows: batches fill for a moment only.
    ENRICHER_BATCH_WAIT_MS: '20',
    // One key for every test process (they share the Postgres of the services run); the tests of
    // the key file set their own DATA_DIR and unset this.
    SECRETS_KEY: process.env.SECRETS_KEY || TEST_SECRETS_KEY,
    ...overrides,
  });
  if (config.database.kind === 'pglite') config.database = { kind: 'pglite', dir: 'memory://' };
  // The memory budget as the platform's (MEMORY_LIMIT_MB, else this machine's cgroup or the default).
  if (config.analytics.kind === 'chdb') config.analytics = { kind: 'chdb', dir: CHDB_DIR, budget: config.analytics.budget };
  // Each context its own durable message log, job queue and spool (a context plays one process), unless the test names its DATA_DIR.
  if (overrides.DATA_DIR === undefined) {
    const root = join(tmpdir(), `${LOG_DIR_PREFIX}${process.pid}`);
    mkdirSync(root, { recursive: true });
    const own = mkdtempSync(join(root, 'context-'));
    if (config.messageLog.kind === 'lmdb') config.messageLog = { ...config.messageLog, dir: join(own, 'log') };
    config.jobs = { ...config.jobs, dir: join(own, 'jobs') };
    config.spool = { ...config.spool, dir: join(own, 'spool') };
  }
  return config;
}

let sharedChdb: Promise<Analytics> | undefined;

/**
 * The process's one chDB engine, migrated once. Two chDB connections on one data path are two
 * engines over the same files: one merges parts away under the other's reads. Every test context of
 * the process (several per file when a test plays a second node) uses this one; closing a context
 * leaves it open, and the process's exit ends it.
 */
function processChdb(config: Config): Promise<Analytics> {
  sharedChdb ??= (async () => {
    const analytics = createAnalytics(config.analytics);
    await migrateAnalytics(analytics);
    return { ...analytics, close: async () => undefined };
  })();
  return sharedChdb;
}

/** Builds a migrated context for a test file (with `log`, a logger the test reads); close it in afterAll. */
export async function createTestContext(overrides: Record<string, string | undefined> = {}, options: { log?: Logger } = {}): Promise<Context> {
  const config = testConfig(overrides);
  const analytics = config.analytics.kind === 'chdb' ? await processChdb(config) : undefined;
  const context = await createContext(config, { analytics, log: options.log });
  await migrateDatabase(context.db);
  if (!analytics) await migrateAnalytics(context.analytics);
  return context;
}

export { closeContext };
