import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisCache } from '../cache/cache.js';
import { loadConfig, type RateBucket } from '../config.js';
import type { Context } from '../context.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '../testing/context.js';
import { createRateLimiter, rateLimitHeaders, type RateDecision, type RateLimiter } from './rate-limit.js';

let context: Context;

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  await closeContext(context);
});

/** A bare Fastify app whose one route counts `?key=` in `?bucket=` and answers the decision. */
async function limiterApp(env: Record<string, string>, cache = context.cache): Promise<{ app: FastifyInstance; limiter: RateLimiter }> {
  const app = Fastify();
  const limiter = await createRateLimiter(app, { cache, rules: loadConfig(env).rateLimits, metrics: context.metrics, log: context.log });
  app.get('/check', async (request) => {
    const { bucket, key } = request.query as { bucket: RateBucket; key: string };
    return limiter.check(bucket, key, request);
  });
  await app.ready();
  return { app, limiter };
}

async function check(app: FastifyInstance, bucket: RateBucket, key: string): Promise<RateDecision> {
  return (await app.inject({ url: `/check?bucket=${bucket}&key=${encodeURIComponent(key)}` })).json();
}

describe(`rate limiter on @fastify/rate-limit (${SERVICES_MODE ? 'Redis store' : 'memory store'})`, () => {
  it('counts exactly the limit in a window, refuses the next, and starts a new window after it', async () => {
    const { app } = await limiterApp({ RATE_LIMIT_TRACK: '3:1' });
    try {
      const key = uniqueName('ip');
      const decisions = [];
      for (let n = 0; n < 4; n++) decisions.push(await check(app, 'track', key));
      expect(decisions.map((d) => [d.allowed, d.limit, d.remaining])).toEqual([
        [true, 3, 2],
        [true, 3, 1],
        [true, 3, 0],
        [false, 3, 0],
      ]);
      for (const decision of decisions) expect(decision.resetSec).toBe(1);
      // Across the window boundary the count starts again from the limit.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const next = await check(app, 'track', key);
      expect([next.allowed, next.remaining]).toEqual([true, 2]);
    } finally {
      await app.close();
    }
  });

  it('keeps one fixed window: the reset counts down, later requests do not restart it', async () => {
    const { app } = await limiterApp({ RATE_LIMIT_API: '100:4' });
    try {
      const key = uniqueName('token');
      const first = await check(app, 'api', key);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      const later = await check(app, 'api', key);
      expect(first.resetSec).toBe(4);
      expect(later.resetSec).toBeLessThanOrEqual(3);
      expect(later.remaining).toBe(98);
    } finally {
      await app.close();
    }
  });

  it('counts keys and buckets independently', async () => {
    const { app } = await limiterApp({ RATE_LIMIT_DEFAULT: '1:60', RATE_LIMIT_API: '1:60' });
    try {
      const key = uniqueName('ip');
      expect((await check(app, 'default', key)).allowed).toBe(true);
      expect((await check(app, 'default', key)).allowed).toBe(false);
      expect((await check(app, 'default', uniqueName('other'))).allowed).toBe(true);
      expect((await check(app, 'api', key)).allowed).toBe(true);
    } finally {
      await app.close();
    }
  });

  it('counts concurrent requests of one key exactly once each', async () => {
    const { app } = await limiterApp({ RATE_LIMIT_REDIRECT: '10:60' });
    try {
      const key = uniqueName('ip');
      const decisions = await Promise.all(Array.from({ length: 15 }, () => check(app, 'redirect', key)));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
      expect(decisions.map((d) => d.remaining).sort((a, b) => a - b)).toEqual([0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    } finally {
      await app.close();
    }
  });

  it('lets requests through when the shared store is unreachable, and counts the failure', async () => {
    const unreachable = createRedisCache('redis://127.0.0.1:1');
    const { app } = await limiterApp({ RATE_LIMIT_AUTH: '1:60' }, unreachable);
    try {
      const before = (await context.metrics.rateLimited.get()).values.find((v) => v.labels.bucket === 'auth:store_error')?.value ?? 0;
      const decisions = [await check(app, 'auth', 'k'), await check(app, 'auth', 'k')];
      expect(decisions.every((d) => d.allowed)).toBe(true);
      const after = (await context.metrics.rateLimited.get()).values.find((v) => v.labels.bucket === 'auth:store_error')?.value ?? 0;
      expect(after - before).toBe(2);
    } finally {
      await app.close();
      await unreachable.close();
    }
  });
});

describe('rateLimitHeaders', () => {
  it('gives seconds remaining in RateLimit-Reset and the Unix time of the reset in X-RateLimit-Reset', () => {
    const headers = rateLimitHeaders({ allowed: true, limit: 10, remaining: 7, resetSec: 42 }, 1_700_000_000_500);
    expect(headers).toEqual({
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '7',
      'RateLimit-Reset': '42',
      'X-RateLimit-Limit': '10',
      'X-RateLimit-Remaining': '7',
      'X-RateLimit-Reset': String(1_700_000_001 + 42),
    });
  });
});
