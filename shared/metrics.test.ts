import { createRequire } from 'node:module';
import type { monitorEventLoopDelay } from 'node:perf_hooks';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { createMetrics, EVENT_LOOP_SAMPLE_MS, histogramChildren } from './metrics.js';

describe('createMetrics', () => {
  it("samples the event-loop delay every 100 ms, not prom-client's 10 ms (whose timer wakes an idle process 100 times a second)", () => {
    // prom-client calls monitorEventLoopDelay on the module object that require gives it: the same one as here.
    const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as { monitorEventLoopDelay: typeof monitorEventLoopDelay };
    const monitor = vi.spyOn(perfHooks, 'monitorEventLoopDelay');
    try {
      createMetrics();
      expect(monitor).toHaveBeenCalledTimes(1);
      expect(monitor).toHaveBeenCalledWith({ resolution: 100 });
      expect(EVENT_LOOP_SAMPLE_MS).toBe(100);
    } finally {
      monitor.mockRestore();
    }
  });
});

const histogram = (registry: Registry) =>
  new Histogram({ name: 'took_seconds', help: 'h', labelNames: ['route', 'status'], buckets: [0.001, 0.01, 0.1, 1], registers: [registry] });

describe('histogramChildren', () => {
  it('reads as prom-client reads the same observations made through its own observe', async () => {
    const [ours, theirs] = [new Registry(), new Registry()];
    const [fast, plain] = [histogram(ours), histogram(theirs)];
    const child = histogramChildren(fast);
    // Bounds exactly, between, below, above every bound; two label sets, one seen by prom-client first.
    // Sums are compared as text: /b, folded onto a value prom-client holds, takes values whose sums are exact.
    const values = [0, 0.001, 0.0011, 0.01, 0.05, 0.1, 0.99, 1, 1.5, 30];
    const exact = [0.0009765625, 0.0078125, 0.0625, 0.5, 2, 8];
    fast.observe({ route: '/b', status: '404' }, 0.25);
    plain.observe({ route: '/b', status: '404' }, 0.25);
    for (const value of values) {
      child({ route: '/a', status: '302' }).observe(value);
      plain.observe({ route: '/a', status: '302' }, value);
    }
    for (const value of exact) {
      child({ route: '/b', status: '404' }).observe(value);
      plain.observe({ route: '/b', status: '404' }, value);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // Read again with more observations: folded once, not twice.
    child({ route: '/a', status: '302' }).observe(0.005);
    plain.observe({ route: '/a', status: '302' }, 0.005);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain('took_seconds_count{route="/a",status="302"} 11');
  });

  it('drops with reset and remove the observations not yet read, as prom-client does', async () => {
    const registry = new Registry();
    const metric = histogram(registry);
    const children = histogramChildren(metric);
    const child = children({ route: '/a', status: '200' });
    child.observe(0.5);
    await registry.metrics();
    child.observe(0.7);
    metric.reset();
    expect(await registry.metrics()).not.toContain('route="/a"');
    child.observe(0.002);
    children({ route: '/b', status: '500' }).observe(0.2);
    metric.remove({ route: '/b', status: '500' });
    const text = await registry.metrics();
    expect(text).toContain('took_seconds_count{route="/a",status="200"} 1');
    expect(text).toContain('took_seconds_bucket{le="0.01",route="/a",status="200"} 1');
    expect(text).not.toContain('route="/b"');
  });

  it('refuses a value that is not a number, as prom-client does', () => {
    const child = histogramChildren(histogram(new Registry()))({ route: '/a', status: '200' });
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY]) expect(() => child.observe(value)).toThrow(TypeError);
  });
});
