import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisCache } from '../cache/cache.js';
import { loadConfig } from '../config.js';
import type { Context } from '../context.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { createRateLimiter, MEMORY_KEYS, RATE_SHARE_INTERVAL_MS, rateLimitHeaderList, setRateLimitHeaders, type RateLimiter } from './rate-limit.js';

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

/** Long enough for a flush started now and the next one to be answered (a loaded machine included). */
const afterFlushes = () => new Promise((resolve) => setTimeout(resolve, 4 * RATE_SHARE_INTERVAL_MS));
const storeErrors = async (bucket: string) =>
  (await context.metrics.rateLimited.get()).values.find((value) => value.labels.bucket === `${bucket}:store_error`)?.value ?? 0;

describe('the edge buckets (redirect, track): counted in process, shared with the other nodes in batches', () => {
  it('decides synchronously and exactly on one node: the limit+1-th request is refused at once', () => {
    const limiter = limiterWith({ RATE_LIMIT_REDIRECT: '5:60' });
    const key = uniqueName('ip');
    const decisions = Array.from({ length: 6 }, () => limiter.check('redirect', key));
    for (const decision of decisions) expect(decision).not.toBeInstanceOf(Promise);
    expect(decisions.map((d) => d as { allowed: boolean; remaining: number }).map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 4],
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
  });

  it('forgets the least recently used keys beyond MEMORY_KEYS, and remembers the recent ones', () => {
    const limiter = limiterWith({ RATE_LIMIT_REDIRECT: '1:60' });
    const prefix = uniqueName('lru');
    const check = (key: string) => (limiter.check('redirect', key) as { allowed: boolean }).allowed;
    expect(check(`${prefix}-first`)).toBe(true);
    for (let n = 0; n < MEMORY_KEYS; n++) check(`${prefix}-${n}`);
    // The first key was pushed out: counted anew. The last one is still counted.
    expect(check(`${prefix}-first`)).toBe(true);
    expect(check(`${prefix}-${MEMORY_KEYS - 1}`)).toBe(false);
  });

  it.runIf(SERVICES_MODE)(
    'two nodes on one Redis: each counts alone until its flush, then both see the shared total and refuse the client over the limit',
    async () => {
      const other = createRedisCache(process.env.REDIS_URL!, context.config.redisPrefix);
      try {
        await other.ping();
        const nodeA = limiterWith({ RATE_LIMIT_REDIRECT: '5:60' });
        const nodeB = limiterWith({ RATE_LIMIT_REDIRECT: '5:60' }, other);
        const key = uniqueName('ip');
        const allowed = (limiter: RateLimiter) => (limiter.check('redirect', key) as { allowed: boolean }).allowed;
        expect([allowed(nodeA), allowed(nodeA), allowed(nodeA)]).toEqual([true, true, true]);
        await afterFlushes();
        expect(Number(await context.cache.redis!.get(`${context.cache.keyPrefix}rl:redirect:${key}`))).toBe(3);
        // Node B has not flushed this key yet: it counts its own 3 (within one interval, 6 > 5 get through).
        expect([allowed(nodeB), allowed(nodeB), allowed(nodeB)]).toEqual([true, true, true]);
        await afterFlushes();
        // B's flush read back the shared 6: refused on B at once.
        expect(allowed(nodeB)).toBe(false);
        // A learns the total at its next flush of the key: its next request after that is refused.
        allowed(nodeA);
        await afterFlushes();
        expect(allowed(nodeA)).toBe(false);
        const decision = nodeA.check('redirect', key) as { remaining: number; resetSec: number };
        expect(decision.remaining).toBe(0);
        expect(decision.resetSec).toBeGreaterThan(55);
        await afterFlushes();
        expect(Number(await context.cache.redis!.get(`${context.cache.keyPrefix}rl:redirect:${key}`))).toBe(10);
        const ttl = await context.cache.redis!.pttl(`${context.cache.keyPrefix}rl:redirect:${key}`);
        expect(ttl).toBeGreaterThan(55_000);
        expect(ttl).toBeLessThanOrEqual(60_000);
      } finally {
        await other.close();
      }
    },
  );

  it.runIf(SERVICES_MODE)('counts apart from an environment with another REDIS_PREFIX on the same Redis', async () => {
    // Two environments sharing one Redis (staging and production, or the test files of one run) each
    // have their own counts: a client refused in one is not refused in the other.
    const otherEnvironment = createRedisCache(process.env.REDIS_URL!, `${context.config.redisPrefix}-other`);
    try {
      await otherEnvironment.ping();
      const here = limiterWith({ RATE_LIMIT_REDIRECT: '2:60' });
      const there = limiterWith({ RATE_LIMIT_REDIRECT: '2:60' }, otherEnvironment);
      const key = uniqueName('ip');
      const allowed = (limiter: RateLimiter) => (limiter.check('redirect', key) as { allowed: boolean }).allowed;
      expect([allowed(here), allowed(here), allowed(here)]).toEqual([true, true, false]);
      await afterFlushes();
      expect([allowed(there), allowed(there)]).toEqual([true, true]);
      await afterFlushes();
      expect(allowed(there)).toBe(false);
      // Each environment's key holds its own requests: here the three flushed, there the two flushed before its third.
      expect(Number(await context.cache.redis!.get(`${context.config.redisPrefix}:rl:redirect:${key}`))).toBe(3);
      expect(Number(await context.cache.redis!.get(`${context.config.redisPrefix}-other:rl:redirect:${key}`))).toBe(2);
      expect(await context.cache.redis!.exists(`lt:rl:redirect:${key}`)).toBe(0);
    } finally {
      await otherEnvironment.close();
    }
  });

  it.runIf(SERVICES_MODE)('keeps the window its first request opened, in Redis too, and starts a new one after it', async () => {
    const limiter = limiterWith({ RATE_LIMIT_REDIRECT: '3:1' });
    const key = uniqueName('ip');
    const allowed = () => (limiter.check('redirect', key) as { allowed: boolean }).allowed;
    const opened = Date.now();
    expect([allowed(), allowed(), allowed(), allowed()]).toEqual([true, true, true, false]);
    await afterFlushes();
    // The key expires in Redis when the window its first request opened ends, not a window after the flush.
    const ttl = await context.cache.redis!.pttl(`${context.cache.keyPrefix}rl:redirect:${key}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1_000 - (Date.now() - opened) + 50);
    expect(allowed()).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const next = limiter.check('redirect', key) as { allowed: boolean; remaining: number };
    expect([next.allowed, next.remaining]).toEqual([true, 2]);
    await afterFlushes();
    expect(Number(await context.cache.redis!.get(`${context.cache.keyPrefix}rl:redirect:${key}`))).toBe(1);
  });

  it.runIf(SERVICES_MODE)(
    'a key Redis refuses to count is counted as a store error and decided on this node alone; the other keys are still shared',
    async () => {
      const limiter = limiterWith({ RATE_LIMIT_REDIRECT: '2:60' });
      const broken = uniqueName('ip');
      const fine = uniqueName('ip');
      await context.cache.redis!.lpush(`${context.cache.keyPrefix}rl:redirect:${broken}`, 'not a counter');
      const errorsBefore = await storeErrors('redirect');
      const allowed = (key: string) => (limiter.check('redirect', key) as { allowed: boolean }).allowed;
      expect([allowed(broken), allowed(fine)]).toEqual([true, true]);
      await afterFlushes();
      expect(await storeErrors('redirect')).toBeGreaterThan(errorsBefore);
      expect(Number(await context.cache.redis!.get(`${context.cache.keyPrefix}rl:redirect:${fine}`))).toBe(1);
      // The broken key keeps its count here: the limit still holds on this node.
      expect([allowed(broken), allowed(broken)]).toEqual([true, false]);
      await context.cache.redis!.del(`${context.cache.keyPrefix}rl:redirect:${broken}`);
    },
  );

  it.runIf(SERVICES_MODE)('counts alone while Redis is unreachable: every decision synchronous, the limit held on this node', async () => {
    const unreachable = createRedisCache('redis://127.0.0.1:1');
    try {
      const limiter = limiterWith({ RATE_LIMIT_REDIRECT: '1:60' }, unreachable);
      const decisions = [limiter.check('redirect', 'k'), limiter.check('redirect', 'k'), limiter.check('redirect', 'other')];
      for (const decision of decisions) expect(decision).not.toBeInstanceOf(Promise);
      expect(decisions.map((decision) => (decision as { allowed: boolean }).allowed)).toEqual([true, false, true]);
      await afterFlushes();
      expect((limiter.check('redirect', 'other') as { allowed: boolean }).allowed).toBe(false);
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
