import { createAnalytics } from './analytics/analytics.js';
import { createMemoryCache, createRedisCache } from './cache/cache.js';
import { createDatabase } from './db/database.js';
import { createBullmqJobs } from './jobs/bullmq.js';
import { createMemoryJobs } from './jobs/memory.js';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics.js';
import { createKafkaVisitLog } from './visit-log/kafka.js';
import { createMemoryVisitLog } from './visit-log/memory.js';
/** The dependencies /health probes, by name. */
export const DEPENDENCIES = ['database', 'analytics', 'visit_log', 'jobs', 'cache'];
/** Describes which implementation backs each dependency (for /health and /status). */
export function dependencyKinds(context) {
    return {
        database: context.db.kind,
        analytics: context.analytics.kind,
        visit_log: context.visitLog.kind,
        jobs: context.jobs.kind,
        cache: context.cache.kind,
    };
}
/**
 * The composition root: the only place that constructs clients. Embedded defaults unless a
 * server URL is configured, dependency by dependency.
 */
export async function createContext(config, overrides = {}) {
    const log = overrides.log ?? createLogger(config);
    const metrics = createMetrics();
    const db = await createDatabase(config.database);
    const analytics = overrides.analytics ?? createAnalytics(config.analytics);
    const visitLog = config.visitLog.kind === 'kafka' ? createKafkaVisitLog(config.visitLog, log, metrics) : createMemoryVisitLog(metrics);
    const jobs = config.redisUrl ? createBullmqJobs(config.redisUrl, log, metrics) : createMemoryJobs(log, metrics);
    const cache = config.redisUrl ? createRedisCache(config.redisUrl) : createMemoryCache();
    return { config, log, metrics, db, analytics, visitLog, jobs, cache, startedAt: new Date() };
}
/** Closes every client, in reverse order of need; failures are logged and the rest still close. */
export async function closeContext(context) {
    for (const [name, close] of [
        ['jobs', () => context.jobs.close()],
        ['visit_log', () => context.visitLog.close()],
        ['cache', () => context.cache.close()],
        ['analytics', () => context.analytics.close()],
        ['database', () => context.db.close()],
    ]) {
        await close().catch((error) => context.log.error({ err: error, dependency: name }, 'close failed'));
    }
}
//# sourceMappingURL=context.js.map