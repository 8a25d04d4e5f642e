import { DEPENDENCIES, dependencyKinds, type Context, type Dependency } from '../../../shared/context.js';
import type { ConsumerStatus } from '../../../shared/visit-log/visit-log.js';

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

/** The visit-log consumers of this process (the enricher role's), bounded in time like the probes. */
export async function consumerReport(context: Context): Promise<ConsumerStatus[]> {
  return withinProbeTime(context.visitLog.consumers(), 'consumer report timed out').catch(() => []);
}

/** Probes every dependency of the context in parallel, each bounded in time. */
export async function probeDependencies(context: Context): Promise<Record<Dependency, Check>> {
  const kinds = dependencyKinds(context);
  const pings: Record<Dependency, () => Promise<void>> = {
    database: () => context.db.ping(),
    analytics: () => context.analytics.ping(),
    visit_log: () => context.visitLog.ping(),
    jobs: () => context.jobs.ping(),
    cache: () => context.cache.ping(),
  };
  const results = await Promise.all(DEPENDENCIES.map((name) => probe(name, pings[name], kinds[name])));
  return Object.fromEntries(DEPENDENCIES.map((name, index) => [name, results[index]!])) as Record<Dependency, Check>;
}
