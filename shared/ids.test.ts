import { describe, expect, it } from 'vitest';
import { validate, version } from 'uuid';
import { uuidv7At, uuidv7Derived } from './ids.js';

const LAYOUT = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('uuidv7At', () => {
  it('lays out a UUIDv7 of the given time with random bits, distinct across pool refills', () => {
    const at = Date.parse('2026-11-21T10:00:00.123Z');
    const ids = Array.from({ length: 5_000 }, () => uuidv7At(at));
    for (const id of ids) {
      expect(id).toMatch(LAYOUT);
      expect(timeOf(id)).toBe(at);
    }
    expect(validate(ids[0]!) && version(ids[0]!)).toBe(7);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('rewrites the time when it changes, and ids sort by time', () => {
    const times = [0, 1, 255, Date.parse('2026-11-21T10:00:00.123Z'), Date.parse('2026-11-21T10:00:00.124Z'), 2 ** 48 - 1];
    const ids = times.map((at) => uuidv7At(at));
    expect(ids.map(timeOf)).toEqual(times);
    expect([...ids].sort()).toEqual(ids);
    expect(ids[0]!.startsWith('00000000-0000-7')).toBe(true);
    expect(ids.at(-1)!.startsWith('ffffffff-ffff-7')).toBe(true);
  });

  it('spreads the random bits over every value a digit can take (variant digit 8–b)', () => {
    const ids = Array.from({ length: 2_000 }, () => uuidv7At(1_000));
    for (const at of [15, 16, 17, 20, 21, 22, 24, 35]) expect(new Set(ids.map((id) => id[at])).size).toBe(16);
    expect(new Set(ids.map((id) => id[19]))).toEqual(new Set(['8', '9', 'a', 'b']));
  });

  it('leaves times outside 48 bits of whole milliseconds to the uuid package', () => {
    for (const at of [1.5, -1, 2 ** 48, Number.NaN]) expect(uuidv7At(at)).toMatch(LAYOUT);
  });
});

describe('uuidv7Derived', () => {
  const mask = Buffer.alloc(32, 0xa5);
  it("takes the time given and the source UUID's random bits XOR the mask: stable, and a UUIDv7", () => {
    const source = uuidv7At(1_000);
    const at = Date.parse('2026-11-21T10:00:00.123Z');
    const id = uuidv7Derived(at, source, mask)!;
    expect(id).toMatch(LAYOUT);
    expect(timeOf(id)).toBe(at);
    expect(uuidv7Derived(at, source, mask)).toBe(id);
    // Masking twice gives the source's random bits back (the variant digit keeps its top bits).
    const back = uuidv7Derived(1_000, id, mask)!;
    expect(back.slice(14)).toBe(source.slice(14));
    expect(uuidv7Derived(at, source, Buffer.alloc(32, 0x5a))).not.toBe(id);
  });

  it('derives nothing from a source that is not a lower-case UUID, or for a time outside 48 bits', () => {
    const source = uuidv7At(1_000);
    // Version 1, 5 and 8 UUIDs are not random where a UUIDv7's bits are.
    const versioned = (version: string) => `${source.slice(0, 14)}${version}${source.slice(15)}`;
    for (const bad of ['', 'visit-1', source.toUpperCase(), `${source}0`, source.replace(/-/g, ''), versioned('1'), versioned('5'), versioned('8')]) {
      expect(uuidv7Derived(1_000, bad, mask)).toBeUndefined();
    }
    expect(uuidv7Derived(1_000, versioned('4'), mask)).toMatch(LAYOUT);
    expect(uuidv7Derived(-1, source, mask)).toBeUndefined();
    expect(() => uuidv7Derived(1_000, source, Buffer.alloc(18))).toThrow(RangeError);
  });
});
