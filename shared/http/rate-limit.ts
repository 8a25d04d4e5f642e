import type { Cache } from '../cache/cache.js';
import type { RateBucket, RateRule } from '../config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSec: number;
}

/** Fixed-window limiter over the shared cache: one counter per bucket and key. */
export interface RateLimiter {
  rules: Record<RateBucket, RateRule>;
  check(bucket: RateBucket, key: string): Promise<RateDecision>;
}

/**
 * Builds the limiter. If the counter store fails (Redis down), the request is let through and
 * the failure counted and logged: a Redis blip must not take redirects down with it.
 */
export function createRateLimiter(cache: Cache, rules: Record<RateBucket, RateRule>, metrics: Metrics, log: Logger): RateLimiter {
  return {
    rules,
    async check(bucket, key) {
      const rule = rules[bucket];
      try {
        const { count, resetMs } = await cache.hit(`${bucket}:${key}`, rule.windowSec);
        return {
          allowed: count <= rule.limit,
          limit: rule.limit,
          remaining: Math.max(0, rule.limit - count),
          resetSec: Math.max(1, Math.ceil(resetMs / 1000)),
        };
      } catch (error) {
        metrics.rateLimited.inc({ bucket: `${bucket}:store_error` });
        log.warn({ err: error, bucket }, 'rate-limit store failed; request let through');
        return { allowed: true, limit: rule.limit, remaining: rule.limit, resetSec: rule.windowSec };
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
