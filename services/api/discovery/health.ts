import type { Role } from '#shared/config.js';
import { DEPENDENCIES, dependencyKinds, type Clients, type Context, type Dependency, type PerDependency } from '#shared/context.js';
import type { ConsumerStatus } from '#shared/message-log/message-log.js';
import { SPOOL_BEHIND_SECONDS, type SpoolStatus } from '#shared/message-log/spool.js';

export interface Check {
  status: 'ok' | 'down';
  kind: string;
  latency_ms: number;
  error?: string;
}

/** Longest a single probe may take before its dependency counts as down. */
const PROBE_TIMEOUT_MS = 2_000;

/** The promise's value, or a rejection with `message` once PROBE_TIMEOUT_MS have passed. */
async function withinProbeTime<T>(promise: Promise<T>, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), PROBE_TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function probe(name: Dependency, ping: () => Promise<void>, kind: string): Promise<Check> {
  const started = performance.now();
  const latency = () => Math.round((performance.now() - started) * 100) / 100;
  try {
    await withinProbeTime(ping(), `${name} did not answer within ${PROBE_TIMEOUT_MS} ms`);
    return { status: 'ok', kind, latency_ms: latency() };
  } catch (error) {
    return { status: 'down', kind, latency_ms: latency(), error: error instanceof Error ? error.message : String(error) };
  }
}

/** The message-log consumers of this process (the enricher role's), bounded in time like the probes. */
export async function consumerReport({ messageLog }: Pick<Context, 'messageLog'>): Promise<ConsumerStatus[]> {
  return withinProbeTime(messageLog.consumers(), 'consumer report timed out').catch(() => []);
}

/** The checks of a process: one per dependency it has (no `analytics` where no role of it reads or writes visits). */
export type Checks = PerDependency<Check>;

/** Probes every dependency the context has, in parallel, each bounded in time. */
export async function probeDependencies(context: Clients): Promise<Checks> {
  const { analytics } = context;
  const kinds = dependencyKinds(context);
  const [database, visitLog, jobs, cache, analyticsCheck] = await Promise.all([
    probe('database', () => context.db.ping(), kinds.database),
    probe('visit_log', () => context.messageLog.ping(), kinds.visit_log),
    probe('jobs', () => context.jobs.ping(), kinds.jobs),
    probe('cache', () => context.cache.ping(), kinds.cache),
    analytics ? probe('analytics', () => analytics.ping(), analytics.kind) : undefined,
  ]);
  return { database, ...(analyticsCheck ? { analytics: analyticsCheck } : {}), visit_log: visitLog, jobs, cache };
}

/**
 * What each role cannot do its work without. Down, the process answers 503 (it cannot serve what it
 * is there for); any other dependency down, or a consumer failing its batches, answers 200 with
 * `status: "degraded"`: an ingest node whose Kafka is down still answers every redirect (visits wait
 * in its buffer), so a load balancer must keep sending it traffic.
 */
export const CRITICAL_DEPENDENCIES: Record<Role, readonly Dependency[]> = {
  api: ['database'],
  ingest: [],
  enricher: ['database', 'analytics', 'visit_log'],
  worker: ['database', 'jobs'],
};

/** What a dependency being down means for the platform while it lasts (health's `degraded[].effect`). */
const EFFECTS: Record<Dependency, string> = {
  database:
    'API requests answer 503 service_unavailable; redirects of links in the edge cache keep answering; the enricher and the webhook worker wait (nothing is consumed, nothing lost)',
  analytics: 'statistics, visit lists and exports answer 503; visits wait in the message log and are stored once it is back',
  visit_log:
    "redirects keep answering; visits wait on the edge's spool on disk (VISIT_SPOOL_MAX_BYTES) and are forwarded once it is back; past the budget, visits are counted in visits_dropped_total",
  jobs: 'webhook deliveries wait: their events stay in the events topic until jobs can be queued again',
  cache: 'rate limits count per process and fail open; link-change notices to other nodes wait (their link caches expire on their own)',
};

export interface Degradation {
  component: string;
  effect: string;
}

/** The degradations the checks, the consumers and the spool (an ingest node's, with Kafka) show, and whether a role of this process cannot work. */
export function assessHealth(
  roles: readonly Role[],
  checks: Checks,
  consumers: ConsumerStatus[],
  spool: SpoolStatus[] = [],
): { down: Dependency[]; critical: boolean; degraded: Degradation[] } {
  const down = DEPENDENCIES.filter((name) => checks[name]?.status === 'down');
  const critical = down.some((name) => roles.some((role) => CRITICAL_DEPENDENCIES[role].includes(name)));
  const degraded: Degradation[] = down.map((name) => ({ component: name, effect: EFFECTS[name] }));
  for (const consumer of consumers) {
    if (consumer.last_error !== null) {
      degraded.push({
        component: `consumer ${consumer.group} (${consumer.topic})`,
        effect: `batches fail and are redelivered, nothing committed past them: ${consumer.last_error}`,
      });
    }
  }
  for (const topic of spool) {
    // Kafka refusing the forwarded batches, or the forwarder behind: the visits wait on disk.
    if (topic.messages > 0 && (topic.last_error !== null || topic.oldest_age_s > SPOOL_BEHIND_SECONDS)) {
      degraded.push({
        component: `spool ${topic.topic}`,
        effect: `${topic.messages} messages (${topic.bytes} bytes) wait on this node's spool, the oldest for ${topic.oldest_age_s} s; forwarded to Kafka once it takes them${topic.last_error ? ` (last refusal: ${topic.last_error})` : ''}`,
      });
    }
  }
  return { down, critical, degraded };
}
