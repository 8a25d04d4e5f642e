import { createAnalytics, type Analytics } from './analytics/analytics.js';
import { createMemoryCache, createRedisCache, type Cache } from './cache/cache.js';
import type { Config } from './config.js';
import { createDatabase, type Database } from './db/database.js';
import { createBullmqJobs } from './jobs/bullmq.js';
import type { Jobs } from './jobs/jobs.js';
import { createLmdbJobs } from './jobs/lmdb.js';
import { createLogger, type Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { loadSecretBox } from './secrets/keys.js';
import type { SecretBox } from './secrets/secret-box.js';
import { createKafkaLog } from './message-log/kafka.js';
import { createDurableLog } from './message-log/lmdb.js';
import type { MessageLog } from './message-log/message-log.js';
import { createSpool, type Spool } from './message-log/spool.js';

/** Everything a role needs, built once per process from the validated config. */
export interface Context {
  config: Config;
  log: Logger;
  metrics: Metrics;
  db: Database;
  analytics: Analytics;
  messageLog: MessageLog;
  /**
   * With Kafka, in a process with the ingest role: the spool its visits and beacons are written to
   * first, forwarded to `messageLog` by the spool's forwarders. Absent otherwise (the edge publishes
   * to `messageLog` itself).
   */
  spool?: Spool;
  jobs: Jobs;
  cache: Cache;
  /** Seals and opens secrets at rest (webhook signing secrets) with the configured keys. */
  secrets: SecretBox;
  startedAt: Date;
}

/** The clients of the external stores, each with its `kind` and `ping` (what /health reports). */
export type Clients = Pick<Context, 'db' | 'analytics' | 'messageLog' | 'jobs' | 'cache'>;

/** The dependencies /health probes, by name. */
export const DEPENDENCIES = ['database', 'analytics', 'visit_log', 'jobs', 'cache'] as const;
export type Dependency = (typeof DEPENDENCIES)[number];

/** Describes which implementation backs each dependency (for /health and /status). */
export function dependencyKinds(context: Clients): Record<Dependency, string> {
  return {
    database: context.db.kind,
    analytics: context.analytics.kind,
    visit_log: context.messageLog.kind,
    jobs: context.jobs.kind,
    cache: context.cache.kind,
  };
}

/**
 * The composition root: the only place that constructs clients. Embedded defaults unless a
 * server URL is configured, dependency by dependency.
 */
export async function createContext(config: Config, overrides: { log?: Logger; analytics?: Analytics } = {}): Promise<Context> {
  const log = overrides.log ?? createLogger(config);
  // First: a key file that cannot be read stops the start before any client opens.
  const secrets = loadSecretBox(config.secrets, log);
  const metrics = createMetrics();
  const db = await createDatabase(config.database);
  const analytics = overrides.analytics ?? createAnalytics(config.analytics);
  const messageLog = config.messageLog.kind === 'kafka' ? createKafkaLog(config.messageLog, log, metrics) : createDurableLog(config.messageLog, log, metrics);
  // Only an edge on the production path spools: the one-process log is already durable, and other roles take no visits.
  const spool = config.messageLog.kind === 'kafka' && config.roles.includes('ingest') ? await createSpool(config.spool, messageLog, log, metrics) : undefined;
  const jobs = config.redisUrl ? createBullmqJobs(config.redisUrl, log, metrics, config.redisPrefix) : createLmdbJobs(log, metrics, config.jobs);
  const cache = config.redisUrl
    ? createRedisCache(config.redisUrl, config.redisPrefix, (error) => {
        if (error) log.warn({ err: error }, 'Redis unreachable: counters, flags and notices are kept in this process until it is back');
        else log.info('Redis reachable again: counters, flags and notices are shared again');
      })
    : createMemoryCache();
  return { config, log, metrics, db, analytics, messageLog, ...(spool ? { spool } : {}), jobs, cache, secrets, startedAt: new Date() };
}

/** Closes every client, in reverse order of need; failures are logged and the rest still close. */
export async function closeContext(context: Context): Promise<void> {
  for (const [name, close] of [
    ['jobs', () => context.jobs.close()],
    // Before the Kafka log its forwarders publish to.
    ['spool', () => context.spool?.close() ?? Promise.resolve()],
    ['visit_log', () => context.messageLog.close()],
    ['cache', () => context.cache.close()],
    ['analytics', () => context.analytics.close()],
    ['database', () => context.db.close()],
  ] as const) {
    await close().catch((error: unknown) => context.log.error({ err: error, dependency: name }, 'close failed'));
  }
}
