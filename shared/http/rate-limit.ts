import { createRequire } from 'node:module';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Cache } from '../cache/cache.js';
import type { RateBucket, RateRule } from '../config.js';
import { RATE_BUCKET_NAMES } from '../config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSec: number;
}

/** Fixed-window limits per bucket, counted by @fastify/rate-limit (its LRU in memory, Redis when shared). */
export interface RateLimiter {
  rules: Record<RateBucket, RateRule>;
  /** Counts one request of `key` in `bucket` (the key says who: an IP, a token, "ip|account"). */
  check(bucket: RateBucket, key: string, request: FastifyRequest): Promise<RateDecision>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The bucket-qualified key the next rate-limit check counts (set by RateLimiter.check). */
    rateLimitKey?: string;
  }
}

/** Keys the in-memory store keeps per bucket before forgetting the least recently used. */
const MEMORY_KEYS = 100_000;

type Counted = { current: number; ttl: number };
type PluginLocalStore = {
  incr(key: string, callback: (error: Error | null, result?: Counted) => void, timeWindow: number, max: number): void;
};
const PluginLocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache: number,
) => PluginLocalStore;

/**
 * The plugin's own in-memory store, handing out a copy of the count. Its LocalStore passes every
 * caller the same live counter object, so requests counted in one tick all read the final count
 * (a burst of 15 against a limit of 10 was refused whole); a snapshot taken in the callback is exact.
 */
class SnapshotLocalStore implements FastifyRateLimitStore {
  private readonly inner = new PluginLocalStore(false, false, MEMORY_KEYS);
  incr(key: string, callback: (error: Error | null, result?: Counted) => void, timeWindow: number, max: number): void {
    this.inner.incr(key, (error, result) => callback(error, result && { current: result.current, ttl: result.ttl }), timeWindow, max);
  }
  child(): FastifyRateLimitStore {
    return new SnapshotLocalStore();
  }
}

/**
 * Registers @fastify/rate-limit (no global hook: each route's bucket is checked by the registrar)
 * and builds one limiter per bucket. Windows are fixed and start on a key's first request. If the
 * shared store fails (Redis down), the request is let through and the failure counted and logged:
 * a Redis blip must not take the platform down with it.
 */
export async function createRateLimiter(
  app: FastifyInstance,
  deps: { cache: Cache; rules: Record<RateBucket, RateRule>; metrics: Metrics; log: Logger },
): Promise<RateLimiter> {
  await app.register(rateLimit, {
    global: false,
    ...(deps.cache.redis ? { redis: deps.cache.redis, nameSpace: 'lt:rl:' } : { store: SnapshotLocalStore }),
    skipOnError: false,
  });
  const checkers = Object.fromEntries(
    RATE_BUCKET_NAMES.map((bucket) => [
      bucket,
      app.createRateLimit({
        max: deps.rules[bucket].limit,
        timeWindow: deps.rules[bucket].windowSec * 1000,
        keyGenerator: (request: FastifyRequest) => request.rateLimitKey ?? `${bucket}:${request.ip}`,
      }),
    ]),
  ) as Record<RateBucket, ReturnType<FastifyInstance['createRateLimit']>>;
  return {
    rules: deps.rules,
    async check(bucket, key, request) {
      const rule = deps.rules[bucket];
      request.rateLimitKey = `${bucket}:${key}`;
      try {
        const result = await checkers[bucket](request);
        if (result.isAllowed) return { allowed: true, limit: rule.limit, remaining: rule.limit, resetSec: rule.windowSec };
        return {
          allowed: !result.isExceeded,
          limit: result.max,
          remaining: result.remaining,
          resetSec: Math.max(1, result.ttlInSeconds),
        };
      } catch (error) {
        deps.metrics.rateLimited.inc({ bucket: `${bucket}:store_error` });
        deps.log.warn({ err: error, bucket }, 'rate-limit store failed; request let through');
        return { allowed: true, limit: rule.limit, remaining: rule.limit, resetSec: rule.windowSec };
      } finally {
        request.rateLimitKey = undefined;
      }
    },
  };
}

/** The six rate-limit headers of the spec. X-RateLimit-Reset is the Unix time (seconds) of the reset. */
export function rateLimitHeaders(decision: RateDecision, now = Date.now()): Record<string, string> {
  return {
    'RateLimit-Limit': String(decision.limit),
    'RateLimit-Remaining': String(decision.remaining),
    'RateLimit-Reset': String(decision.resetSec),
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(Math.ceil(now / 1000) + decision.resetSec),
  };
}
