import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../context.js';
import { createRedisCache } from './cache.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';

let context: Context;

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  await closeContext(context);
});

describe(`cache (${SERVICES_MODE ? 'redis' : 'memory'})`, () => {
  it('is the implementation the mode asks for and answers ping', async () => {
    expect(context.cache.kind).toBe(SERVICES_MODE ? 'redis' : 'memory');
    await expect(context.cache.ping()).resolves.toBeUndefined();
  });

  describe('counters and flags', () => {
    it('counts increments within a window and starts again after it', async () => {
      const key = uniqueName('count');
      expect([await context.cache.increment(key, 1), await context.cache.increment(key, 1), await context.cache.increment(key, 1)]).toEqual([1, 2, 3]);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await context.cache.increment(key, 1)).toBe(1);
    });

    it('gives each of many parallel increments its own count (the login attempts are reserved with it)', async () => {
      const key = uniqueName('parallel');
      const counts = await Promise.all(Array.from({ length: 50 }, () => context.cache.increment(key, 60)));
      expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, n) => n + 1));
    });

    it('expire moves the end of a live counter and leaves a missing key missing', async () => {
      const key = uniqueName('expire');
      await context.cache.increment(key, 1);
      await context.cache.expire(key, 60);
      expect(await context.cache.ttlMs(key)).toBeGreaterThan(59_000);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await context.cache.increment(key, 1)).toBe(2);
      await context.cache.expire(key, 0.05);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await context.cache.ttlMs(key)).toBe(0);
      const missing = uniqueName('missing');
      await context.cache.expire(missing, 60);
      expect(await context.cache.ttlMs(missing)).toBe(0);
    });

    it('keeps a flag for its time to live, then forgets it; remove drops it at once', async () => {
      const key = uniqueName('flag');
      expect(await context.cache.ttlMs(key)).toBe(0);
      await context.cache.flag(key, 60);
      const ttl = await context.cache.ttlMs(key);
      expect(ttl).toBeGreaterThan(59_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
      await context.cache.remove(key);
      expect(await context.cache.ttlMs(key)).toBe(0);
    });

    it('bumps a version counter that starts at 0', async () => {
      const key = uniqueName('version');
      expect(await context.cache.read(key)).toBe(0);
      expect(await context.cache.bump(key)).toBe(1);
      expect(await context.cache.bump(key)).toBe(2);
      expect(await context.cache.read(key)).toBe(2);
    });
  });

  describe('publish/subscribe', () => {
    it('delivers a published message to a subscriber of the channel only', async () => {
      const channel = uniqueName('chan');
      const other = uniqueName('other');
      const received: string[] = [];
      const elsewhere: string[] = [];
      const unsubscribe = await context.cache.subscribe(channel, (message) => received.push(message));
      const unsubscribeOther = await context.cache.subscribe(other, (message) => elsewhere.push(message));
      try {
        await context.cache.publish(channel, 'hello');
        await context.cache.publish(channel, 'world');
        await waitFor(() => received.length >= 2, 5_000, { message: 'two messages' });
        expect(received).toEqual(['hello', 'world']);
        expect(elsewhere).toEqual([]);
      } finally {
        await unsubscribe();
        await unsubscribeOther();
      }
    });

    it('delivers to every subscriber of a channel', async () => {
      const channel = uniqueName('fanout');
      const first: string[] = [];
      const second: string[] = [];
      const stopFirst = await context.cache.subscribe(channel, (message) => first.push(message));
      const stopSecond = await context.cache.subscribe(channel, (message) => second.push(message));
      try {
        await context.cache.publish(channel, 'both');
        await waitFor(() => first.length === 1 && second.length === 1, 5_000, { message: 'both subscribers' });
        expect([first, second]).toEqual([['both'], ['both']]);
      } finally {
        await stopFirst();
        await stopSecond();
      }
    });

    it('stops delivering to a handler after it unsubscribed, while other subscribers still receive', async () => {
      const channel = uniqueName('unsub');
      const gone: string[] = [];
      const staying: string[] = [];
      const unsubscribeGone = await context.cache.subscribe(channel, (message) => gone.push(message));
      const unsubscribeStaying = await context.cache.subscribe(channel, (message) => staying.push(message));
      try {
        await context.cache.publish(channel, 'before');
        await waitFor(() => gone.length === 1 && staying.length === 1, 5_000, { message: 'the first message' });
        await unsubscribeGone();
        await context.cache.publish(channel, 'after');
        // Both handlers share one delivery path: once the remaining one saw the message, the other would have too.
        await waitFor(() => staying.length === 2, 5_000, { message: 'the second message' });
        expect(staying).toEqual(['before', 'after']);
        expect(gone).toEqual(['before']);
      } finally {
        await unsubscribeStaying();
      }
    });

    it('stops delivering on a channel whose last subscriber left', async () => {
      const channel = uniqueName('last');
      const sentinelChannel = uniqueName('sentinel');
      const gone: string[] = [];
      const sentinel: string[] = [];
      const unsubscribe = await context.cache.subscribe(channel, (message) => gone.push(message));
      const unsubscribeSentinel = await context.cache.subscribe(sentinelChannel, (message) => sentinel.push(message));
      try {
        await context.cache.publish(channel, 'before');
        await waitFor(() => gone.length === 1, 5_000, { message: 'the first message' });
        await unsubscribe();
        await context.cache.publish(channel, 'after');
        // Messages arrive in publish order on one subscription connection: the sentinel marks that 'after' has passed.
        await context.cache.publish(sentinelChannel, 'mark');
        await waitFor(() => sentinel.length === 1, 5_000, { message: 'the sentinel message' });
        expect(gone).toEqual(['before']);
      } finally {
        await unsubscribeSentinel();
      }
    });

    it('an unsubscribe called twice leaves a newer subscription to the channel alone', async () => {
      const channel = uniqueName('twice');
      const received: string[] = [];
      const stale = await context.cache.subscribe(channel, () => undefined);
      await stale();
      const unsubscribe = await context.cache.subscribe(channel, (message) => received.push(message));
      try {
        await stale();
        await context.cache.publish(channel, 'still here');
        await waitFor(() => received.length === 1, 5_000, { message: 'the message to the newer subscriber' });
        expect(received).toEqual(['still here']);
      } finally {
        await unsubscribe();
      }
    });

    it('subscribes again to a channel after its last subscriber left', async () => {
      const channel = uniqueName('again');
      const first: string[] = [];
      const second: string[] = [];
      await (
        await context.cache.subscribe(channel, (message) => first.push(message))
      )();
      const unsubscribe = await context.cache.subscribe(channel, (message) => second.push(message));
      try {
        await context.cache.publish(channel, 'back');
        await waitFor(() => second.length === 1, 5_000, { message: 'the message after resubscribing' });
        expect(second).toEqual(['back']);
        expect(first).toEqual([]);
      } finally {
        await unsubscribe();
      }
    });
  });
});

describe('caches built directly', () => {
  it('falls back to this process at once while its Redis is unreachable: counters, flags, publishes; versions never one Redis gave; ping rejects', async () => {
    const reasons: unknown[] = [];
    const cache = createRedisCache('redis://127.0.0.1:1', 'lt-test', (reason) => reasons.push(reason));
    try {
      const started = Date.now();
      await cache.publish(uniqueName('chan'), 'x');
      expect(await cache.increment('k', 60)).toBe(1);
      expect(await cache.increment('k', 60)).toBe(2);
      expect(await cache.flagIfAbsent('f', 60)).toBe(true);
      expect(await cache.flagIfAbsent('f', 60)).toBe(false);
      expect(await cache.ttlMs('f')).toBeGreaterThan(0);
      expect(await cache.addToSet('s', 'a', 60)).toBe(1);
      // A version read now is no version Redis ever gave (>= 0): what was cached under one is read again.
      expect(await cache.read('v')).toBeLessThan(0);
      await cache.bump('v');
      expect(await cache.read('v')).toBeLessThan(0);
      await expect(cache.ping()).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(10_000);
      // Told once for the outage.
      expect(reasons).toHaveLength(1);
    } finally {
      await cache.close();
    }
  });
});
