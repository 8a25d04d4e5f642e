// CPU of the redirect bucket's check per request: the edge's own CPU (process.cpuUsage of this
// process) and Redis's (INFO cpu), for the three ways the limiter can count, side by side in one run
// (alternating their order each round, as machine noise drifts):
//   memory   — one process, no Redis: the in-memory store (the one-process mode's cost);
//   per-call — one Redis Lua call per request (@fastify/rate-limit's RedisStore, the other buckets);
//   batched  — counted in process, shared with Redis in one pipeline every RATE_SHARE_INTERVAL_MS.
//   REDIS_URL=redis://… bash bench/run.sh rate-limit [requests-per-round] [rounds] [keys]
// Requests come 64 at a time (the edge's concurrent requests) and the event loop turns between
// groups, as it does between network reads; keys are drawn in turn from 10 000 IP|link pairs (a
// third argument as large as the requests makes every check of a round a key of its own: Redis then
// counts each key once per flush, and batching saves it the least). A batched
// round ends once its last flush is answered, so that flush's CPU is in the round.
import { pino } from 'pino';
import { createMemoryCache, createRedisCache, type Cache } from '#shared/cache/cache.js';
import { loadConfig } from '#shared/config.js';
import { RATE_SHARE_INTERVAL_MS, createRateLimiter, type RateLimiter } from '#shared/http/rate-limit.js';
import { createMetrics } from '#shared/metrics.js';
import { median } from './lib/load.js';

const requests = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 5);
const KEYS = Number(process.argv[4] ?? 10_000);
const IN_FLIGHT = 64;
if (!Number.isInteger(requests) || requests < IN_FLIGHT || !Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(KEYS) || KEYS < 1) {
  console.error('usage: REDIS_URL=redis://… bash bench/run.sh rate-limit [requests-per-round ≥ 64] [rounds ≥ 1] [keys ≥ 1]');
  process.exit(1);
}
const url = process.env.REDIS_URL;
if (!url) {
  console.error('REDIS_URL must name a Redis to measure against');
  process.exit(1);
}

const rules = loadConfig({ RATE_LIMIT_REDIRECT: '1000000000:60' }).rateLimits;
const metrics = createMetrics();
const log = pino({ level: 'silent' });
const redisCache = createRedisCache(url);
await redisCache.ping();
const memoryCache = createMemoryCache();
const variants: { name: string; cache: Cache; limiter: RateLimiter; settle: () => Promise<void> }[] = [
  { name: 'memory', cache: memoryCache, limiter: createRateLimiter({ cache: memoryCache, rules, metrics, log }), settle: async () => undefined },
  { name: 'per-call', cache: redisCache, limiter: createRateLimiter({ cache: redisCache, rules, metrics, log, batched: [] }), settle: async () => undefined },
  {
    name: 'batched',
    cache: redisCache,
    limiter: createRateLimiter({ cache: redisCache, rules, metrics, log }),
    settle: () => new Promise((resolve) => setTimeout(resolve, 3 * RATE_SHARE_INTERVAL_MS)),
  },
];
const keys = Array.from({ length: KEYS }, (_, n) => `10.${(n >> 8) & 255}.${n & 255}.1|link-${n % 97}`);
const turn = () => new Promise((resolve) => setImmediate(resolve));

const redisCpuUs = async (): Promise<number> => {
  const info = await redisCache.redis!.info('cpu');
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
};

async function round(variant: (typeof variants)[number]): Promise<{ edge: number; redis: number }> {
  const redisBefore = await redisCpuUs();
  const before = process.cpuUsage();
  let n = 0;
  while (n < requests) {
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < IN_FLIGHT; i++, n++) {
      const decision = variant.limiter.check('redirect', keys[n % KEYS]!);
      if (decision instanceof Promise) pending.push(decision);
      else if (!decision.allowed) throw new Error('refused: the limit is meant to be out of reach');
    }
    if (pending.length > 0) await Promise.all(pending);
    await turn();
  }
  await variant.settle();
  const used = process.cpuUsage(before);
  const redisAfter = await redisCpuUs();
  return { edge: (used.user + used.system) / n, redis: (redisAfter - redisBefore) / n };
}

const results = new Map(variants.map((variant) => [variant.name, [] as { edge: number; redis: number }[]]));
for (const variant of variants) await round(variant); // warm-up
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? variants : [...variants].reverse();
  for (const variant of order) results.get(variant.name)!.push(await round(variant));
}

console.log(`node ${process.version}; ${requests} checks per round, ${rounds} rounds, ${KEYS} keys, ${IN_FLIGHT} in flight; µs per check (median of rounds)`);
const baseline = median(results.get('memory')!.map((run) => run.edge));
for (const [name, runs] of results) {
  const edge = median(runs.map((run) => run.edge));
  const redis = median(runs.map((run) => run.redis));
  console.log(`${name.padEnd(9)} edge ${edge.toFixed(2)} µs (${(edge / baseline).toFixed(2)}× memory)   redis ${redis.toFixed(2)} µs`);
}
await redisCache.close();
