import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import { unavailableDependency } from '../unavailable.js';

/**
 * What nodes share: pub/sub in memory for one process, on Redis for many; and the Redis client the
 * rate-limit store counts on (undefined in memory, where @fastify/rate-limit keeps its own LRU).
 */
export interface Cache {
  kind: 'memory' | 'redis';
  redis: Redis | undefined;
  /**
   * What begins every key this cache writes on Redis (REDIS_PREFIX and a colon): callers that write
   * keys on `redis` themselves (the rate limiter) begin theirs with it too, so that environments
   * sharing one Redis never share a count. Empty in memory.
   */
  keyPrefix: string;
  /** Whether what this cache counts is shared with the other nodes now (Redis connected); in memory, always: it is the only store. */
  connected(): boolean;
  /**
   * Adds one to a counter whose window (`windowSec`) starts at its first increment; returns the count.
   * Atomic: concurrent callers, on one node or many, each get a different count (a reservation).
   */
  increment(key: string, windowSec: number): Promise<number>;
  /** Makes an existing key expire `ttlSec` from now, whatever its window; no effect on a missing key. */
  expire(key: string, ttlSec: number): Promise<void>;
  /** Sets a flag that expires after `ttlSec`. */
  flag(key: string, ttlSec: number): Promise<void>;
  /** Sets such a flag only when none is set, atomically; true when this call set it ("do once per window"). */
  flagIfAbsent(key: string, ttlSec: number): Promise<boolean>;
  /** Milliseconds until a key expires, or 0 when it does not exist. */
  ttlMs(key: string): Promise<number>;
  remove(key: string): Promise<void>;
  /** Adds a member to a set whose window starts with its first member; returns the set's size. */
  addToSet(key: string, member: string, windowSec: number): Promise<number>;
  /** Adds one to a counter that never expires (a version number); returns the new value. */
  bump(key: string): Promise<number>;
  /** The value of such a counter, 0 before its first bump (at once in memory, a promise from Redis). */
  read(key: string): number | Promise<number>;
  publish(channel: string, message: string): Promise<void>;
  /** Subscribes to a channel; resolves with a function that unsubscribes. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** In-process cache: expiring counters in a Map (swept), pub/sub through an EventEmitter. */
export function createMemoryCache(): Cache {
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  const entries = new Map<string, { count: number; expiresAt: number }>();
  const versions = new Map<string, number>();
  const sets = new Map<string, { members: Set<string>; expiresAt: number }>();
  const live = (key: string) => {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= Date.now()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  };
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, entry] of entries) if (entry.expiresAt <= now) entries.delete(key);
    for (const [key, entry] of sets) if (entry.expiresAt <= now) sets.delete(key);
  }, 60_000);
  sweep.unref();
  return {
    kind: 'memory',
    redis: undefined,
    keyPrefix: '',
    connected: () => true,
    async increment(key, windowSec) {
      const entry = live(key) ?? { count: 0, expiresAt: Date.now() + windowSec * 1000 };
      entry.count += 1;
      entries.set(key, entry);
      return entry.count;
    },
    async expire(key, ttlSec) {
      const entry = live(key);
      if (entry) entry.expiresAt = Date.now() + ttlSec * 1000;
    },
    async flag(key, ttlSec) {
      entries.set(key, { count: 1, expiresAt: Date.now() + ttlSec * 1000 });
    },
    async flagIfAbsent(key, ttlSec) {
      if (live(key)) return false;
      entries.set(key, { count: 1, expiresAt: Date.now() + ttlSec * 1000 });
      return true;
    },
    async ttlMs(key) {
      const entry = live(key);
      return entry ? entry.expiresAt - Date.now() : 0;
    },
    async remove(key) {
      entries.delete(key);
    },
    async addToSet(key, member, windowSec) {
      let entry = sets.get(key);
      if (!entry || entry.expiresAt <= Date.now()) {
        entry = { members: new Set(), expiresAt: Date.now() + windowSec * 1000 };
        sets.set(key, entry);
      }
      entry.members.add(member);
      return entry.members.size;
    },
    async bump(key) {
      const value = (versions.get(key) ?? 0) + 1;
      versions.set(key, value);
      return value;
    },
    read(key) {
      return versions.get(key) ?? 0;
    },
    async publish(channel, message) {
      bus.emit(channel, message);
    },
    async subscribe(channel, handler) {
      bus.on(channel, handler);
      return async () => void bus.off(channel, handler);
    },
    async ping() {},
    async close() {
      clearInterval(sweep);
      bus.removeAllListeners();
      entries.clear();
      sets.clear();
    },
  };
}

/**
 * Redis cache: one connection for commands (and the rate-limit store), a second for subscriptions.
 *
 * While Redis cannot be reached, every operation falls back to an in-process cache at once (no
 * request waits for a reconnect): counters count per process (login lockouts, spam signals), flags
 * and version numbers are this process's own (a version read from it differs from what caches were
 * filled under, so they read the database again), and a message published reaches this process's
 * subscribers only. Nothing that Redis holds is lost to this: when it is back, its own values count
 * again. `onFallback` is told once per outage (and with `null` when Redis is back).
 */
export function createRedisCache(url: string, keyPrefix = 'lt', onFallback: (error: unknown) => void = () => undefined): Cache {
  // Few retries and a short connect timeout: a rate-limit check must fail fast, not hang a request.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2_000, enableOfflineQueue: true });
  redis.on('error', () => undefined); // reconnection is automatic; failures surface on the calls and in /health
  let subscriber: Redis | undefined;
  const handlers = new Map<string, Set<(message: string) => void>>();
  const prefix = `${keyPrefix}:`;
  const local = createMemoryCache();
  let fallingBack = false;
  redis.on('ready', () => {
    if (!fallingBack) return;
    fallingBack = false;
    onFallback(null);
  });
  const connected = () => redis.status === 'ready';
  /** Runs `remote` on Redis, or `fallback` in process while Redis is not connected or the call fails for want of a connection. */
  const either = async <T>(remote: () => Promise<T>, fallback: () => Promise<T> | T): Promise<T> => {
    if (connected()) {
      try {
        return await remote();
      } catch (error) {
        if (connected() && unavailableDependency(error) !== 'cache') throw error;
        if (!fallingBack) onFallback(error);
      }
    } else if (!fallingBack) onFallback(new Error(`Redis is ${redis.status}`));
    fallingBack = true;
    return fallback();
  };
  return {
    kind: 'redis',
    redis,
    keyPrefix: prefix,
    connected,
    increment: (key, windowSec) =>
      either(
        async () => {
          const [[, count]] = (await redis
            .multi()
            .incr(prefix + key)
            .pexpire(prefix + key, windowSec * 1000, 'NX')
            .exec()) as [[unknown, number]];
          return count;
        },
        () => local.increment(key, windowSec),
      ),
    expire: (key, ttlSec) =>
      either(
        async () => void (await redis.pexpire(prefix + key, Math.max(1, Math.ceil(ttlSec * 1000)))),
        () => local.expire(key, ttlSec),
      ),
    flag: (key, ttlSec) =>
      either(
        async () => void (await redis.set(prefix + key, '1', 'PX', ttlSec * 1000)),
        () => local.flag(key, ttlSec),
      ),
    flagIfAbsent: (key, ttlSec) =>
      either(
        async () => (await redis.set(prefix + key, '1', 'PX', Math.max(1, Math.ceil(ttlSec * 1000)), 'NX')) === 'OK',
        () => local.flagIfAbsent(key, ttlSec),
      ),
    ttlMs: (key) =>
      either(
        async () => Math.max(0, await redis.pttl(prefix + key)),
        () => local.ttlMs(key),
      ),
    remove: (key) =>
      either(
        async () => void (await redis.del(prefix + key)),
        () => local.remove(key),
      ),
    addToSet: (key, member, windowSec) =>
      either(
        async () => {
          const results = (await redis
            .multi()
            .sadd(prefix + key, member)
            .pexpire(prefix + key, windowSec * 1000, 'NX')
            .scard(prefix + key)
            .exec()) as [unknown, unknown][];
          return Number(results[2]![1]);
        },
        () => local.addToSet(key, member, windowSec),
      ),
    bump: (key) =>
      either(
        () => redis.incr(prefix + key),
        () => local.bump(key),
      ),
    read: (key) =>
      either(
        async () => Number((await redis.get(prefix + key)) ?? 0),
        // Never a version Redis gave out: whatever was cached under one is read again.
        () => -1 - (local.read(key) as number),
      ),
    publish: (channel, message) =>
      either(
        async () => void (await redis.publish(prefix + channel, message)),
        // This process's own subscribers still hear it (Redis would have told them too).
        () => {
          for (const fn of handlers.get(prefix + channel) ?? []) fn(message);
        },
      ),
    async subscribe(channel, handler) {
      if (!subscriber) {
        subscriber = redis.duplicate();
        subscriber.on('error', () => undefined);
        subscriber.on('message', (ch: string, message: string) => {
          for (const fn of handlers.get(ch) ?? []) fn(message);
        });
      }
      const full = prefix + channel;
      let set = handlers.get(full);
      if (!set) {
        set = new Set();
        handlers.set(full, set);
        await subscriber.subscribe(full);
      }
      set.add(handler);
      let subscribed = true;
      return async () => {
        if (!subscribed) return;
        subscribed = false;
        set.delete(handler);
        // Only the set still registered for the channel may unsubscribe it (a later subscribe may
        // have replaced an emptied one).
        if (set.size === 0 && handlers.get(full) === set) {
          handlers.delete(full);
          await subscriber?.unsubscribe(full);
        }
      };
    },
    async ping() {
      await redis.ping();
    },
    async close() {
      await subscriber?.quit().catch(() => subscriber?.disconnect());
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
