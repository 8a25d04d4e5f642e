import { describe, expect, it } from 'vitest';
import { uuidv7At } from './ids.js';

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
