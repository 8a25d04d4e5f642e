import { createRequire } from 'node:module';
import { RATE_BUCKET_NAMES } from '../config.js';
/** Keys the in-memory store keeps per bucket before forgetting the least recently used. */
const MEMORY_KEYS = 100_000;
const load = createRequire(import.meta.url);
// The stores @fastify/rate-limit counts with: the same fixed windows (starting on a key's first
// request), LRU-bounded memory or one Lua call in Redis. The plugin's request hooks are not used:
// each route's bucket and key are decided by the registrar, and going through the plugin's
// per-request wrapper cost about 10 µs a request for nothing (bench/auth-overhead.ts).
const LocalStore = load('@fastify/rate-limit/store/LocalStore.js');
const RedisStore = load('@fastify/rate-limit/store/RedisStore.js');
/**
 * Builds one store per bucket. Windows are fixed and start on a key's first request. If the shared
 * store fails (Redis down), the request is let through and the failure counted and logged: a Redis
 * blip must not take the platform down with it.
 */
export function createRateLimiter(deps) {
    const stores = Object.fromEntries(RATE_BUCKET_NAMES.map((bucket) => [
        bucket,
        deps.cache.redis ? new RedisStore(false, false, deps.cache.redis, `lt:rl:${bucket}:`) : new LocalStore(false, false, MEMORY_KEYS),
    ]));
    const decide = (rule, counted) => ({
        allowed: counted.current <= rule.limit,
        limit: rule.limit,
        remaining: Math.max(0, rule.limit - counted.current),
        resetSec: Math.max(1, Math.ceil(counted.ttl / 1000)),
    });
    const letThrough = (bucket, rule, error) => {
        deps.metrics.rateLimited.inc({ bucket: `${bucket}:store_error` });
        deps.log.warn({ err: error, bucket }, 'rate-limit store failed; request let through');
        return { allowed: true, limit: rule.limit, remaining: rule.limit, resetSec: rule.windowSec };
    };
    return {
        rules: deps.rules,
        check(bucket, key) {
            const rule = deps.rules[bucket];
            let settled;
            let resolveLater;
            const settle = (decision) => (resolveLater ? resolveLater(decision) : (settled = decision));
            try {
                // The memory store calls back at once with its live counter object: the decision is taken
                // inside the callback, before another request can change the count.
                stores[bucket].incr(key, (error, counted) => settle(error || !counted ? letThrough(bucket, rule, error) : decide(rule, counted)), rule.windowSec * 1000, rule.limit);
            }
            catch (error) {
                settle(letThrough(bucket, rule, error));
            }
            return settled ?? new Promise((resolve) => (resolveLater = resolve));
        },
    };
}
/**
 * The six rate-limit headers of the spec as a flat `[name, value, …]` list (what Node's
 * `writeHead` takes fastest). X-RateLimit-Reset is the Unix time (seconds) of the reset.
 */
export function rateLimitHeaderList(decision, now = Date.now()) {
    const limit = String(decision.limit);
    const remaining = String(decision.remaining);
    return [
        'RateLimit-Limit', limit,
        'RateLimit-Remaining', remaining,
        'RateLimit-Reset', String(decision.resetSec),
        'X-RateLimit-Limit', limit,
        'X-RateLimit-Remaining', remaining,
        'X-RateLimit-Reset', String(Math.ceil(now / 1000) + decision.resetSec),
    ];
}
/** The six rate-limit headers of the spec, by name (for `reply.headers`). */
export function rateLimitHeaders(decision, now = Date.now()) {
    const list = rateLimitHeaderList(decision, now);
    const headers = {};
    for (let i = 0; i < list.length; i += 2)
        headers[list[i]] = list[i + 1];
    return headers;
}
//# sourceMappingURL=rate-limit.js.map