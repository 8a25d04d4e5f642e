import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, defineJob } from './jobs.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('backoffDelay', () => {
  it('waits about the base before the first retry and doubles for each later one', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5); // the middle of the jitter range: no jitter
    const definition = { backoffMs: 100 };
    expect([2, 3, 4, 5, 6].map((next) => backoffDelay(definition, next))).toEqual([100, 200, 400, 800, 1600]);
  });

  it('keeps the jitter within -20 % and +20 % of the exponential delay', () => {
    const definition = { backoffMs: 1000 };
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(backoffDelay(definition, 2)).toBe(800);
    expect(backoffDelay(definition, 3)).toBe(1600);
    vi.spyOn(Math, 'random').mockReturnValue(0.999_999_999);
    expect(backoffDelay(definition, 2)).toBe(1200);
    expect(backoffDelay(definition, 3)).toBe(2400);
  });

  it('spreads real random delays over the jitter range and never outside it', () => {
    const definition = { backoffMs: 1000 };
    for (const next of [2, 3, 4]) {
      const base = 1000 * 2 ** (next - 2);
      const delays = Array.from({ length: 2000 }, () => backoffDelay(definition, next));
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(base * 0.8);
      expect(Math.max(...delays)).toBeLessThanOrEqual(base * 1.2);
      expect(delays.every(Number.isInteger)).toBe(true);
      // Jitter is real: the delays differ and cover both halves of the range.
      expect(new Set(delays).size).toBeGreaterThan(100);
      expect(delays.some((delay) => delay < base * 0.95)).toBe(true);
      expect(delays.some((delay) => delay > base * 1.05)).toBe(true);
    }
  });

  it("grows by the definition's factor when it has one (webhooks: 4)", () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    expect([2, 3, 4, 5].map((next) => backoffDelay({ backoffMs: 60_000, backoffFactor: 4 }, next))).toEqual([60_000, 240_000, 960_000, 3_840_000]);
  });

  it('is a whole number of milliseconds for a small base', () => {
    const delays = Array.from({ length: 200 }, () => backoffDelay({ backoffMs: 20 }, 2));
    expect(delays.every(Number.isInteger)).toBe(true);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(16);
    expect(Math.max(...delays)).toBeLessThanOrEqual(24);
  });
});

describe('defineJob', () => {
  it('returns the definition as given', () => {
    const definition = defineJob<{ id: string }>({ name: 'send-webhook', attempts: 5, backoffMs: 1000, concurrency: 4 });
    expect(definition).toEqual({ name: 'send-webhook', attempts: 5, backoffMs: 1000, concurrency: 4 });
  });
});
