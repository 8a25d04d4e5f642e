import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';

/**
 * What nodes share: pub/sub in memory for one process, on Redis for many; and the Redis client the
 * rate-limit store counts on (undefined in memory, where @fastify/rate-limit keeps its own LRU).
 */
export interface Cache {
  kind: 'memory' | 'redis';
  redis: Redis | undefined;
  publish(channel: string, message: string): Promise<void>;
  /** Subscribes to a channel; resolves with a function that unsubscribes. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** In-process cache: pub/sub through an EventEmitter. */
export function createMemoryCache(): Cache {
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  return {
    kind: 'memory',
    redis: undefined,
    async publish(channel, message) {
      bus.emit(channel, message);
    },
    async subscribe(channel, handler) {
      bus.on(channel, handler);
      return async () => void bus.off(channel, handler);
    },
    async ping() {},
    async close() {
      bus.removeAllListeners();
    },
  };
}

/** Redis cache: one connection for commands (and the rate-limit store), a second for subscriptions. */
export function createRedisCache(url: string): Cache {
  // Few retries and a short connect timeout: a rate-limit check must fail fast, not hang a request.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2_000, enableOfflineQueue: true });
  redis.on('error', () => undefined); // reconnection is automatic; failures surface on the calls and in /health
  let subscriber: Redis | undefined;
  const handlers = new Map<string, Set<(message: string) => void>>();
  const prefix = 'lt:';
  return {
    kind: 'redis',
    redis,
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
