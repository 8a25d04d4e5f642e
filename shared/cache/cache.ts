import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';

/** Fixed-window counters and pub/sub shared by every node: in memory for one process, Redis for many. */
export interface Cache {
  kind: 'memory' | 'redis';
  /** Counts one hit in the fixed window of `key`; the window starts on the first hit. */
  hit(key: string, windowSec: number): Promise<{ count: number; resetMs: number }>;
  publish(channel: string, message: string): Promise<void>;
  /** Subscribes to a channel; resolves with a function that unsubscribes. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** In-process cache: counters in a Map swept of expired windows, pub/sub through an EventEmitter. */
export function createMemoryCache(maxKeys = 1_000_000): Cache {
  const windows = new Map<string, { count: number; resetAt: number }>();
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, window] of windows) if (window.resetAt <= now) windows.delete(key);
  }, 30_000);
  sweep.unref();
  return {
    kind: 'memory',
    async hit(key, windowSec) {
      const now = Date.now();
      let window = windows.get(key);
      if (!window || window.resetAt <= now) {
        // Bounded: when full, the oldest window is forgotten rather than memory growing without end.
        if (!window && windows.size >= maxKeys) windows.delete(windows.keys().next().value as string);
        window = { count: 0, resetAt: now + windowSec * 1000 };
        windows.set(key, window);
      }
      window.count += 1;
      return { count: window.count, resetMs: window.resetAt - now };
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
      windows.clear();
    },
  };
}

const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}`;

/** Redis cache: one Lua round trip per hit, a second connection for subscriptions. */
export function createRedisCache(url: string): Cache {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
  redis.on('error', () => undefined); // reconnection is automatic; failures surface on the calls and in /health
  let subscriber: Redis | undefined;
  const handlers = new Map<string, Set<(message: string) => void>>();
  const prefix = 'lt:';
  return {
    kind: 'redis',
    async hit(key, windowSec) {
      const [count, ttl] = (await redis.eval(HIT_SCRIPT, 1, prefix + 'rl:' + key, String(windowSec * 1000))) as [number, number];
      return { count, resetMs: ttl };
    },
    async publish(channel, message) {
      await redis.publish(prefix + channel, message);
    },
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
