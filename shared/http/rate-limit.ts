import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { LruMap } from 'toad-cache';
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

/**
 * Fixed-window limits per bucket, counted by @fastify/rate-limit's stores (its LRU in memory, Redis
 * per request when shared), except the edge's hot buckets, which count in process and share their
 * counts with Redis in batches (`SharedTally`).
 */
export interface RateLimiter {
  rules: Record<RateBucket, RateRule>;
  /**
   * Counts one request of `key` in `bucket` (the key says who: an IP, a token, "ip|account"). The
   * memory store and the batched buckets answer synchronously, Redis with a promise: callers await
   * only what is pending.
   */
  check(bucket: RateBucket, key: string): RateDecision | Promise<RateDecision>;
}

/** Keys the in-memory store keeps per bucket before forgetting the least recently used. */
export const MEMORY_KEYS = 100_000;
/** How often a batched bucket's counts go to Redis (ms): a node sees the other nodes' requests this late. */
export const RATE_SHARE_INTERVAL_MS = 100;
/**
 * The buckets counted in process and shared with Redis in batches: the edge's, one check on every
 * redirect and beacon, where a Redis call per request cost about 8 µs of the edge's CPU and made
 * Redis the bottleneck. The others (auth above all: brute force) stay exact across nodes.
 */
export const BATCHED_BUCKETS: readonly RateBucket[] = ['redirect', 'track'];
/** Keys per Lua call of a flush (a flush sends all its calls in one pipeline). */
const SHARE_CHUNK = 500;

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

// Adds each key's requests since the last flush and, on a key new in Redis, sets its expiry to what
// remains of the window its first node opened. ARGV: the bucket's key prefix, then per key its name,
// its count and that remainder (ms). The prefix goes once, not with each key: what a flush writes to
// the socket was most of its CPU (bench/rate-limit.ts, 1.7 → 1.4 µs a key). The keys are therefore
// not declared, which a Redis cluster would refuse: the cache's Redis is one server. Answers each
// key's total and time left, or -1 for a key Redis refused (a value of another type): the other
// keys still count.
const SHARE_LUA = `
local prefix = ARGV[1]
local out = {}
for i = 2, #ARGV, 3 do
  local key = prefix .. ARGV[i]
  local total = redis.pcall('INCRBY', key, ARGV[i + 1])
  if type(total) == 'table' then
    out[#out + 1] = -1
    out[#out + 1] = -1
  else
    local ttl = redis.call('PTTL', key)
    if ttl < 0 then
      ttl = tonumber(ARGV[i + 2])
      redis.call('PEXPIRE', key, ttl)
    end
    out[#out + 1] = total
    out[#out + 1] = ttl
  end
end
return out
`;
type SharingRedis = Redis & { rateLimitShare(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number[]> };
interface ShareChain {
  rateLimitShare(keyCount: number, ...keysThenArgs: (string | number)[]): ShareChain;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** One key's count in a batched bucket. */
interface Tally {
  key: string;
  /** Requests counted here and not yet sent to Redis. */
  unsent: number;
  /** Requests sent by the flush under way. */
  sending: number;
  /** The key's total in Redis (every node's requests) as this node's last flush of it read it back. */
  shared: number;
  /** When the window ends (epoch ms): a window opened here, or the key's expiry in Redis once read. */
  endsAt: number;
}

/**
 * A bucket counted in process and shared with Redis in batches. Each request is decided at once on
 * this node's count plus the key's total last read back from Redis; every RATE_SHARE_INTERVAL_MS,
 * the keys counted since go to Redis in one pipeline (INCRBY, and an expiry on a key new there),
 * whose answer is each key's new total and the time left of its window. Exact on one node; across
 * nodes, a node learns the others' requests of a key at its next flush of that key.
 */
class SharedTally {
  /** The keys, at most MEMORY_KEYS (the least recently used forgotten first), in the LRU the memory store uses. */
  private readonly tallies = new LruMap<Tally>(MEMORY_KEYS);
  /** Tallies with requests to send; the next flush takes them all (at MEMORY_KEYS of them, a flush starts at once). */
  private readonly dirty = new Set<Tally>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly redis: SharingRedis,
    private readonly prefix: string,
    private readonly windowMs: number,
    private readonly connected: () => boolean,
    private readonly failed: (error: unknown) => void,
  ) {}

  count(key: string, now: number): Counted {
    let tally = this.tallies.get(key);
    if (tally === undefined || tally.endsAt <= now) {
      // A new window: what the old one left unsent is dropped (a flush skips ended windows).
      tally = { key, unsent: 0, sending: 0, shared: 0, endsAt: now + this.windowMs };
      this.tallies.set(key, tally);
    }
    tally.unsent++;
    // While Redis is not connected this node counts alone; the key's requests go with its next
    // request's flush after Redis is back (unless the key was forgotten or its window ended).
    if (this.connected()) {
      this.dirty.add(tally);
      if (this.dirty.size >= MEMORY_KEYS) void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), RATE_SHARE_INTERVAL_MS).unref();
    }
    return { current: tally.shared + tally.sending + tally.unsent, ttl: tally.endsAt - now };
  }

  /** Sends the counts of every dirty key to Redis and reads back their totals; resolves when done. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing ??= this.send().finally(() => {
      this.flushing = undefined;
      if (this.dirty.size > 0) this.timer ??= setTimeout(() => void this.flush(), RATE_SHARE_INTERVAL_MS).unref();
    });
    return this.flushing;
  }

  private async send(): Promise<void> {
    const now = Date.now();
    const batch: Tally[] = [];
    for (const tally of this.dirty) if (tally.endsAt > now && tally.unsent > 0) batch.push(tally);
    this.dirty.clear();
    if (batch.length === 0 || !this.connected()) return;
    const pipeline = this.redis.pipeline() as unknown as ShareChain;
    for (let from = 0; from < batch.length; from += SHARE_CHUNK) {
      const chunk = batch.slice(from, from + SHARE_CHUNK);
      const args: (string | number)[] = [this.prefix];
      for (const tally of chunk) args.push(tally.key, tally.unsent, Math.max(1, tally.endsAt - now));
      pipeline.rateLimitShare(0, ...args);
    }
    for (const tally of batch) {
      tally.sending = tally.unsent;
      tally.unsent = 0;
    }
    let results: [Error | null, unknown][] | null;
    try {
      results = await pipeline.exec();
    } catch (error) {
      results = null;
      this.failed(error);
    }
    const at = Date.now();
    let failure: unknown;
    for (let index = 0; index < batch.length; index++) {
      const tally = batch[index]!;
      const [error, reply] = results?.[Math.floor(index / SHARE_CHUNK)] ?? [null, undefined];
      const answer = reply as number[] | undefined;
      const total = error || !answer ? -1 : answer[2 * (index % SHARE_CHUNK)]!;
      if (total < 0) {
        // Not counted in Redis: the requests stay this node's own and go with the key's next flush.
        tally.unsent += tally.sending;
        if (results) failure ??= error ?? new Error(`Redis refused to count ${this.prefix}${tally.key}`);
      } else {
        tally.shared = total;
        tally.endsAt = at + answer![2 * (index % SHARE_CHUNK) + 1]!;
      }
      tally.sending = 0;
    }
    if (failure) this.failed(failure);
  }
}

/**
 * Builds one store per bucket. Windows are fixed and start on a key's first request. With Redis,
 * BATCHED_BUCKETS count in process and share their counts every RATE_SHARE_INTERVAL_MS (decided
 * synchronously, exact on one node), the others in Redis per request. While Redis is not connected,
 * buckets count in process memory (each node its own count); if the shared store fails, the request
 * is let through (a batched bucket: counted on this node alone) and the failure counted and logged:
 * a Redis blip must not take the platform down with it.
 */
export function createRateLimiter(deps: {
  cache: Cache;
  rules: Record<RateBucket, RateRule>;
  metrics: Metrics;
  log: Logger;
  /** The buckets to count in batches (BATCHED_BUCKETS unless given: a bench compares with none). */
  batched?: readonly RateBucket[];
}): RateLimiter {
  const { redis } = deps.cache;
  const shared = Object.fromEntries(
    RATE_BUCKET_NAMES.map((bucket) => [
      bucket,
      redis ? new RedisStore(false, false, redis, `${deps.cache.keyPrefix}rl:${bucket}:`) : new LocalStore(false, false, MEMORY_KEYS),
    ]),
  ) as Record<RateBucket, Store>;
  // While Redis is not connected, each bucket counts in this process (no request waits for a reconnect).
  const own = redis
    ? (Object.fromEntries(RATE_BUCKET_NAMES.map((bucket) => [bucket, new LocalStore(false, false, MEMORY_KEYS)])) as Record<RateBucket, Store>)
    : shared;
  const storeOf = (bucket: RateBucket): Store => (deps.cache.connected() ? shared[bucket] : own[bucket]);
  const storeError = (bucket: RateBucket, error: unknown): void => {
    deps.metrics.rateLimited.inc({ bucket: `${bucket}:store_error` });
    deps.log.warn({ err: error, bucket }, 'rate-limit store failed; request let through');
  };
  const tallies: Partial<Record<RateBucket, SharedTally>> = {};
  if (redis) {
    const sharing = redis as SharingRedis;
    if (!('rateLimitShare' in sharing)) redis.defineCommand('rateLimitShare', { lua: SHARE_LUA });
    const connected = () => deps.cache.connected();
    for (const bucket of deps.batched ?? BATCHED_BUCKETS) {
      tallies[bucket] = new SharedTally(sharing, `${deps.cache.keyPrefix}rl:${bucket}:`, deps.rules[bucket].windowSec * 1000, connected, (error) =>
        storeError(bucket, error),
      );
    }
  }

  const decide = (rule: RateRule, counted: Counted): RateDecision => ({
    allowed: counted.current <= rule.limit,
    limit: rule.limit,
    remaining: Math.max(0, rule.limit - counted.current),
    resetSec: Math.max(1, Math.ceil(counted.ttl / 1000)),
  });
  const letThrough = (bucket: RateBucket, rule: RateRule, error: unknown): RateDecision => {
    storeError(bucket, error);
    return { allowed: true, limit: rule.limit, remaining: rule.limit, resetSec: rule.windowSec };
  };

  return {
    rules: deps.rules,
    check(bucket, key) {
      const rule = deps.rules[bucket];
      const tally = tallies[bucket];
      if (tally) return decide(rule, tally.count(key, Date.now()));
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
