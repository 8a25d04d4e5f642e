import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Cache } from '../cache/cache.js';
import type { RateBucket, RateRule } from '../config.js';
import { RATE_BUCKET_NAMES } from '../config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { IN_FLIGHT_REASONS } from './in-flight.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSec: number;
}

/** Fixed-window limits per bucket, counted by @fastify/rate-limit's stores (its LRU in memory, Redis when shared). */
export interface RateLimiter {
  rules: Record<RateBucket, RateRule>;
  /**
   * Counts one request of `key` in `bucket` (the key says who: an IP, a token, "ip|account"). The
   * memory store answers synchronously, Redis with a promise: callers await only what is pending.
   */
  check(bucket: RateBucket, key: string): RateDecision | Promise<RateDecision>;
}

/** Keys the in-memory store keeps per bucket before forgetting the least recently used. */
const MEMORY_KEYS = 100_000;

type Counted = { current: number; ttl: number };
interface Store {
  incr(key: string, callback: (error: Error | null, result?: Counted | null) => void, timeWindow: number, max: number): void;
}
const load = createRequire(import.meta.url);
// The stores @fastify/rate-limit counts with: the same fixed windows (starting on a key's first
// request), LRU-bounded memory or one Lua call in Redis. The plugin's request hooks are not used:
// each route's bucket and key are decided by the registrar, and going through the plugin's
// per-request wrapper cost about 10 µs a request for nothing (bench/auth-overhead.ts).
const LocalStore = load('@fastify/rate-limit/store/LocalStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, cache: number) => Store;
const RedisStore = load('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  key: string,
) => Store;

/**
 * Builds one store per bucket. Windows are fixed and start on a key's first request. While Redis is
 * not connected, buckets count in process memory (each node its own count); if the shared store
 * fails on a call, the request is let through and the failure counted and logged: a Redis blip must
 * not take the platform down with it.
 */
export function createRateLimiter(deps: { cache: Cache; rules: Record<RateBucket, RateRule>; metrics: Metrics; log: Logger }): RateLimiter {
  const { redis } = deps.cache;
  const shared = Object.fromEntries(
    RATE_BUCKET_NAMES.map((bucket) => [bucket, redis ? new RedisStore(false, false, redis, `lt:rl:${bucket}:`) : new LocalStore(false, false, MEMORY_KEYS)]),
  ) as Record<RateBucket, Store>;
  // While Redis is not connected, each bucket counts in this process (no request waits for a reconnect).
  const own = redis
    ? (Object.fromEntries(RATE_BUCKET_NAMES.map((bucket) => [bucket, new LocalStore(false, false, MEMORY_KEYS)])) as Record<RateBucket, Store>)
    : shared;
  const storeOf = (bucket: RateBucket): Store => (deps.cache.connected() ? shared[bucket] : own[bucket]);

  const decide = (rule: RateRule, counted: Counted): RateDecision => ({
    allowed: counted.current <= rule.limit,
    limit: rule.limit,
    remaining: Math.max(0, rule.limit - counted.current),
    resetSec: Math.max(1, Math.ceil(counted.ttl / 1000)),
  });
  const letThrough = (bucket: RateBucket, rule: RateRule, error: unknown): RateDecision => {
    deps.metrics.rateLimited.inc({ bucket: `${bucket}:store_error` });
    deps.log.warn({ err: error, bucket }, 'rate-limit store failed; request let through');
    return { allowed: true, limit: rule.limit, remaining: rule.limit, resetSec: rule.windowSec };
  };

  return {
    rules: deps.rules,
    check(bucket, key) {
      const rule = deps.rules[bucket];
      let settled: RateDecision | undefined;
      let resolveLater: ((decision: RateDecision) => void) | undefined;
      const settle = (decision: RateDecision) => (resolveLater ? resolveLater(decision) : (settled = decision));
      try {
        // The memory store calls back at once with its live counter object: the decision is taken
        // inside the callback, before another request can change the count.
        storeOf(bucket).incr(
          key,
          (error, counted) => settle(error || !counted ? letThrough(bucket, rule, error) : decide(rule, counted)),
          rule.windowSec * 1000,
          rule.limit,
        );
      } catch (error) {
        settle(letThrough(bucket, rule, error));
      }
      return settled ?? new Promise<RateDecision>((resolve) => (resolveLater = resolve));
    },
  };
}

/** The six rate-limit headers of the spec, in the order they are written. */
const HEADER_NAMES = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] as const;
/** The same names in the lower case Fastify keeps reply headers in (`reply.header` need not lower them). */
const LOWER_HEADER_NAMES = HEADER_NAMES.map((name) => name.toLowerCase());

/** The values of the six headers, in HEADER_NAMES' order. X-RateLimit-Reset is the Unix time (seconds) of the reset. */
function headerValues(decision: RateDecision, now: number): string[] {
  const limit = String(decision.limit);
  const remaining = String(decision.remaining);
  return [limit, remaining, String(decision.resetSec), limit, remaining, String(Math.ceil(now / 1000) + decision.resetSec)];
}

/** The six rate-limit headers as a flat `[name, value, …]` list (what Node's `writeHead` takes fastest). */
export function rateLimitHeaderList(decision: RateDecision, now = Date.now()): string[] {
  const values = headerValues(decision, now);
  const list: string[] = [];
  for (let i = 0; i < HEADER_NAMES.length; i++) list.push(HEADER_NAMES[i]!, values[i]!);
  return list;
}

/**
 * Sets the six rate-limit headers on a Fastify reply, one `header` call each with lower-case names:
 * building a list or an object first and handing it to `reply.headers` cost twice as much on every
 * limited request (bench/auth-overhead.ts).
 */
export function setRateLimitHeaders(reply: { header(name: string, value: string): unknown }, decision: RateDecision, now = Date.now()): void {
  const values = headerValues(decision, now);
  for (let i = 0; i < LOWER_HEADER_NAMES.length; i++) reply.header(LOWER_HEADER_NAMES[i]!, values[i]!);
}

/**
 * Accounts for a 429 about to be answered: counted in `rate_limited_total` under its bucket (the
 * bucket its error names, else the route's), with the six rate-limit headers of that bucket saying
 * nothing remains until Retry-After. For a counter's own refusal that is what the counter said; a
 * refusal taken beside the counter (the brute-force lock, `spam_detected`) had no headers, or the
 * counter's of a request it let through, which would promise requests the lock refuses. A refusal
 * for work in flight (shared/http/in-flight.ts, or a full render queue) is no window's: counted under
 * `in_flight`, it keeps the counter's headers, which stay true for the caller's other requests.
 */
export function accountRefusal(
  reply: { header(name: string, value: string): unknown },
  error: { details: Record<string, unknown> },
  routeBucket: RateBucket | null | undefined,
  deps: { rules: Record<RateBucket, RateRule>; metrics: Metrics },
): void {
  if (IN_FLIGHT_REASONS.has(String(error.details.reason))) {
    deps.metrics.rateLimited.inc({ bucket: 'in_flight' });
    return;
  }
  const named = error.details.bucket;
  const bucket = typeof named === 'string' && named in deps.rules ? (named as RateBucket) : (routeBucket ?? undefined);
  deps.metrics.rateLimited.inc({ bucket: bucket ?? 'none' });
  if (!bucket) return;
  const retryAfter = Number(error.details.retry_after);
  setRateLimitHeaders(reply, {
    allowed: false,
    limit: deps.rules[bucket].limit,
    remaining: 0,
    resetSec: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : deps.rules[bucket].windowSec,
  });
}
