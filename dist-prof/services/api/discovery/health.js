import { DEPENDENCIES, dependencyKinds } from '../../../shared/context.js';
/** Longest a single probe may take before its dependency counts as down. */
const PROBE_TIMEOUT_MS = 2_000;
/** The promise's value, or a rejection with `message` once PROBE_TIMEOUT_MS have passed. */
async function withinProbeTime(promise, message) {
    let timer;
    try {
        return await Promise.race([
            promise,
            new Promise((_, reject) => {
                timer = setTimeout(() => reject(new Error(message)), PROBE_TIMEOUT_MS);
            }),
        ]);
    }
    finally {
        clearTimeout(timer);
    }
}
async function probe(name, ping, kind) {
    const started = performance.now();
    const latency = () => Math.round((performance.now() - started) * 100) / 100;
    try {
        await withinProbeTime(ping(), `${name} did not answer within ${PROBE_TIMEOUT_MS} ms`);
        return { status: 'ok', kind, latency_ms: latency() };
    }
    catch (error) {
        return { status: 'down', kind, latency_ms: latency(), error: error instanceof Error ? error.message : String(error) };
    }
}
/** The visit-log consumers of this process (the enricher role's), bounded in time like the probes. */
export async function consumerReport(context) {
    return withinProbeTime(context.visitLog.consumers(), 'consumer report timed out').catch(() => []);
}
/** Probes every dependency of the context in parallel, each bounded in time. */
export async function probeDependencies(context) {
    const kinds = dependencyKinds(context);
    const pings = {
        database: () => context.db.ping(),
        analytics: () => context.analytics.ping(),
        visit_log: () => context.visitLog.ping(),
        jobs: () => context.jobs.ping(),
        cache: () => context.cache.ping(),
    };
    const results = await Promise.all(DEPENDENCIES.map((name) => probe(name, pings[name], kinds[name])));
    return Object.fromEntries(DEPENDENCIES.map((name, index) => [name, results[index]]));
}
//# sourceMappingURL=health.js.map