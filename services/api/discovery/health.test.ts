import { describe, expect, it } from 'vitest';
import { assessHealth, type Check } from './health.js';

const ok: Check = { status: 'ok', kind: 'x', latency_ms: 1 };
const down: Check = { status: 'down', kind: 'x', latency_ms: 2_000, error: 'connect ECONNREFUSED' };
const checks = (overrides: Partial<Record<'database' | 'analytics' | 'visit_log' | 'jobs' | 'cache', Check>> = {}) => ({
  database: ok,
  analytics: ok,
  visit_log: ok,
  jobs: ok,
  cache: ok,
  ...overrides,
});

describe('assessHealth', () => {
  it('is ok with every dependency up and no consumer failing', () => {
    expect(assessHealth(['api', 'ingest', 'enricher', 'worker'], checks(), [])).toEqual({ down: [], critical: false, degraded: [] });
  });

  it('keeps an ingest node serving (degraded, not 503) while Kafka or Redis is down, and says what it means', () => {
    const health = assessHealth(['ingest'], checks({ visit_log: down, cache: down }), []);
    expect(health.critical).toBe(false);
    expect(health.down).toEqual(['visit_log', 'cache']);
    expect(health.degraded.map((entry) => entry.component)).toEqual(['visit_log', 'cache']);
    expect(health.degraded[0]!.effect).toContain('redirects keep answering');
  });

  it('is critical when a role cannot work: the database for the api, the analytics store for the enricher, jobs for the worker', () => {
    expect(assessHealth(['api'], checks({ database: down }), []).critical).toBe(true);
    expect(assessHealth(['api'], checks({ analytics: down }), []).critical).toBe(false);
    expect(assessHealth(['api', 'enricher'], checks({ analytics: down }), []).critical).toBe(true);
    expect(assessHealth(['worker'], checks({ jobs: down }), []).critical).toBe(true);
    expect(assessHealth(['ingest'], checks({ database: down }), []).critical).toBe(false);
  });

  it('reports a consumer failing its batches as degraded, with its error', () => {
    const health = assessHealth(['enricher'], checks(), [
      { group: 'enricher', topic: 'visits.raw', running: true, lag: 120, last_batch_at: null, last_error: 'insert refused' },
      { group: 'enricher-beacons', topic: 'tracker.raw', running: true, lag: 0, last_batch_at: null, last_error: null },
    ]);
    expect(health.critical).toBe(false);
    expect(health.degraded).toEqual([{ component: 'consumer enricher (visits.raw)', effect: expect.stringContaining('insert refused') }]);
  });

  it("says degraded while an ingest node's spool is not forwarded (Kafka refusing, or the oldest message past 10 s), with the count and the age; a spool that keeps up is ok", () => {
    const spooled = {
      topic: 'visits.raw' as const,
      messages: 12_000,
      bytes: 4_800_000,
      oldest_age_s: 3.2,
      last_error: 'Connection error: connect ECONNREFUSED',
    };
    const refusing = assessHealth(['ingest'], checks(), [], [spooled]);
    expect(refusing.critical).toBe(false);
    expect(refusing.degraded).toEqual([
      { component: 'spool visits.raw', effect: expect.stringMatching(/^12000 messages \(4800000 bytes\).*oldest for 3\.2 s.*ECONNREFUSED/) },
    ]);
    const behind = assessHealth(['ingest'], checks(), [], [{ ...spooled, last_error: null, oldest_age_s: 11 }]);
    expect(behind.degraded.map((entry) => entry.component)).toEqual(['spool visits.raw']);
    const keepingUp = assessHealth(['ingest'], checks(), [], [{ ...spooled, messages: 300, last_error: null, oldest_age_s: 0.1 }]);
    expect(keepingUp.degraded).toEqual([]);
  });
});
