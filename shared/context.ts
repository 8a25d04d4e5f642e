import type { Analytics } from './analytics/analytics.js';
import { createMemoryCache, createRedisCache, type Cache } from './cache/cache.js';
import type { Config, Role } from './config.js';
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

/**
 * The roles that read or write visits in the analytics store: the API (stats, visit lists, exports,
 * public pages), the enricher (inserts) and the worker (raw-visit retention deletes). A process
 * running none of them (an ingest node) opens no analytics store.
 */
export const ANALYTICS_ROLES: readonly Role[] = ['api', 'enricher', 'worker'];

/** True when one of `roles` needs the analytics store. */
export function needsAnalytics(roles: readonly Role[]): boolean {
  return roles.some((role) => ANALYTICS_ROLES.includes(role));
}

/** The context of a process none of whose roles reads or writes visits: no analytics store at all. */
export type ThinContext = Omit<Context, 'analytics'> & { analytics?: undefined };

/**
 * A process's context: a full Context exactly when one of its roles needs the analytics store
 * (`needsAnalytics`); `context.analytics` tells the two apart, so code that reads visits must hold a
 * Context and the compiler refuses it a ThinContext.
 */
export type ProcessContext = Context | ThinContext;

/** The clients of the external stores, each with its `kind` and `ping` (what /health reports); the analytics store only where the process opened one. */
export type Clients = Pick<ProcessContext, 'db' | 'analytics' | 'messageLog' | 'jobs' | 'cache'>;

/** The dependencies /health probes, by name. */
export const DEPENDENCIES = ['database', 'analytics', 'visit_log', 'jobs', 'cache'] as const;
export type Dependency = (typeof DEPENDENCIES)[number];
/** What each process has, dependency by dependency: all but the analytics store, which only some roles open. */
export type PerDependency<T> = Record<Exclude<Dependency, 'analytics'>, T> & { analytics?: T };

/** Describes which implementation backs each dependency the process has (for /health and /status): no `analytics` in a thin process. */
export function dependencyKinds(context: Clients): PerDependency<string> {
  return {
    database: context.db.kind,
    ...(context.analytics ? { analytics: context.analytics.kind } : {}),
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
  const thin = await createThinContext(config, overrides);
  // Loaded here, not imported above: a thin process never loads the ClickHouse client (nor chDB).
  const analytics = overrides.analytics ?? (await import('./analytics/analytics.js')).createAnalytics(config.analytics);
  return { ...thin, analytics };
}

/**
 * The context of a process, by its roles (services/platform.ts): a Context with the analytics store
 * when one of them reads or writes visits, else a ThinContext that never constructs it.
 */
export async function createProcessContext(config: Config): Promise<ProcessContext> {
  return needsAnalytics(config.roles) ? createContext(config) : createThinContext(config);
}

/** Every client but the analytics store. */
async function createThinContext(config: Config, overrides: { log?: Logger } = {}): Promise<ThinContext> {
  const log = overrides.log ?? createLogger(config);
  // First: a key file that cannot be read stops the start before any client opens.
  const secrets = loadSecretBox(config.secrets, log);
  const metrics = createMetrics();
  const db = await createDatabase(config.database);
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
  return { config, log, metrics, db, messageLog, ...(spool ? { spool } : {}), jobs, cache, secrets, startedAt: new Date() };
}

/** Closes every client, in reverse order of need; failures are logged and the rest still close. */
export async function closeContext(context: ProcessContext): Promise<void> {
  for (const [name, close] of [
    ['jobs', () => context.jobs.close()],
    // Before the Kafka log its forwarders publish to.
    ['spool', () => context.spool?.close() ?? Promise.resolve()],
    ['visit_log', () => context.messageLog.close()],
    ['cache', () => context.cache.close()],
    ['analytics', async () => context.analytics?.close()],
    ['database', () => context.db.close()],
  ] as const) {
    await close().catch((error: unknown) => context.log.error({ err: error, dependency: name }, 'close failed'));
  }
}
