import { describe, expect, it } from 'vitest';
import { isoTimeAt, uuidv7At } from './ids.js';

describe('uuidv7At', () => {
  it('lays out a UUIDv7 of the given time with random bits, distinct across pool refills', () => {
    const at = Date.parse('2026-11-21T10:00:00.123Z');
    const ids = Array.from({ length: 5_000 }, () => uuidv7At(at));
    for (const id of ids.slice(0, 50)) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('isoTimeAt', () => {
  it('formats as Date#toISOString does, across seconds, within one and at its edges', () => {
    const start = Date.parse('2026-12-31T23:59:58.990Z');
    for (let ms = start; ms < start + 2_100; ms += 7) expect(isoTimeAt(ms)).toBe(new Date(ms).toISOString());
    for (const ms of [0, 1, 10, 99, 100, 999, 1_000, Date.parse('2027-01-01T00:00:00.000Z'), Date.parse('2026-02-28T12:00:00.005Z')]) {
      expect(isoTimeAt(ms)).toBe(new Date(ms).toISOString());
    }
    // Back in time after a later second was cached.
    expect(isoTimeAt(start)).toBe(new Date(start).toISOString());
  });
});
