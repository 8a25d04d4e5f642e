import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisCache } from '../cache/cache.js';
import { loadConfig } from '../config.js';
import type { Context } from '../context.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { createRateLimiter, rateLimitHeaderList, setRateLimitHeaders, type RateLimiter } from './rate-limit.js';

let context: Context;

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  await closeContext(context);
});

/** A limiter over the suite's cache (memory or Redis) with the rules of `env`. */
function limiterWith(env: Record<string, string>, cache = context.cache): RateLimiter {
  return createRateLimiter({ cache, rules: loadConfig(env).rateLimits, metrics: context.metrics, log: context.log });
}

describe(`rate limiter on @fastify/rate-limit (${SERVICES_MODE ? 'Redis store' : 'memory store'})`, () => {
  it('counts exactly the limit in a window, refuses the next, and starts a new window after it', async () => {
    const limiter = limiterWith({ RATE_LIMIT_TRACK: '3:1' });
    const key = uniqueName('ip');
    const decisions = [];
    for (let n = 0; n < 4; n++) decisions.push(await limiter.check('track', key));
    expect(decisions.map((d) => [d.allowed, d.limit, d.remaining])).toEqual([
      [true, 3, 2],
      [true, 3, 1],
      [true, 3, 0],
      [false, 3, 0],
    ]);
    for (const decision of decisions) expect(decision.resetSec).toBe(1);
    // Across the window boundary the count starts again from the limit.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const next = await limiter.check('track', key);
    expect([next.allowed, next.remaining]).toEqual([true, 2]);
  });

  it('keeps one fixed window: the reset counts down, later requests do not restart it', async () => {
    const limiter = limiterWith({ RATE_LIMIT_API: '100:4' });
    const key = uniqueName('token');
    const first = await limiter.check('api', key);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const later = await limiter.check('api', key);
    expect(first.resetSec).toBe(4);
    expect(later.resetSec).toBeLessThanOrEqual(3);
    expect(later.remaining).toBe(98);
  });

  it('counts keys and buckets independently', async () => {
    const limiter = limiterWith({ RATE_LIMIT_DEFAULT: '1:60', RATE_LIMIT_API: '1:60' });
    const key = uniqueName('ip');
    expect((await limiter.check('default', key)).allowed).toBe(true);
    expect((await limiter.check('default', key)).allowed).toBe(false);
    expect((await limiter.check('default', uniqueName('other'))).allowed).toBe(true);
    expect((await limiter.check('api', key)).allowed).toBe(true);
  });

  it('counts concurrent requests of one key exactly once each', async () => {
    const limiter = limiterWith({ RATE_LIMIT_REDIRECT: '10:60' });
    const key = uniqueName('ip');
    const decisions = await Promise.all(Array.from({ length: 15 }, async () => limiter.check('redirect', key)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.map((d) => d.remaining).sort((a, b) => a - b)).toEqual([0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('counts in this process while the shared store is unreachable: no request waits for Redis, and the limit still holds per process', async () => {
    const unreachable = createRedisCache('redis://127.0.0.1:1');
    const limiter = limiterWith({ RATE_LIMIT_AUTH: '1:60' }, unreachable);
    try {
      const started = Date.now();
      const decisions = [await limiter.check('auth', 'k'), await limiter.check('auth', 'k'), await limiter.check('auth', 'other')];
      expect(decisions.map((decision) => decision.allowed)).toEqual([true, false, true]);
      expect(Date.now() - started).toBeLessThan(500);
    } finally {
      await unreachable.close();
    }
  });
});

describe('rate-limit headers', () => {
  const decision = { allowed: true, limit: 10, remaining: 7, resetSec: 42 };
  const now = 1_700_000_000_500;
  const expected = {
    'RateLimit-Limit': '10',
    'RateLimit-Remaining': '7',
    'RateLimit-Reset': '42',
    'X-RateLimit-Limit': '10',
    'X-RateLimit-Remaining': '7',
    'X-RateLimit-Reset': String(1_700_000_001 + 42),
  };

  it('gives seconds remaining in RateLimit-Reset and the Unix time of the reset in X-RateLimit-Reset', () => {
    const list = rateLimitHeaderList(decision, now);
    const headers: Record<string, string> = {};
    for (let i = 0; i < list.length; i += 2) headers[list[i]!] = list[i + 1]!;
    expect(headers).toEqual(expected);
  });

  it('sets the same six headers, lower-cased, on a reply', () => {
    const set: Record<string, string> = {};
    setRateLimitHeaders({ header: (name, value) => (set[name] = value) }, decision, now);
    expect(set).toEqual(Object.fromEntries(Object.entries(expected).map(([name, value]) => [name.toLowerCase(), value])));
  });
});
