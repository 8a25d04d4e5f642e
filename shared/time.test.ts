import { describe, expect, it } from 'vitest';
import { toClickHouseTime } from './analytics/analytics.js';
import { isoTimeAt, isTimeZone, isUtcZone, timeZoneVarNames } from './time.js';

describe('isoTimeAt', () => {
  it('formats as Date#toISOString does, across seconds, within one and at its edges', () => {
    const start = Date.parse('2026-12-31T23:59:58.990Z');
    for (let ms = start; ms < start + 2_100; ms += 7) expect(isoTimeAt(ms)).toBe(new Date(ms).toISOString());
    for (const ms of [0, 1, 10, 99, 100, 999, 1_000, Date.parse('2027-01-01T00:00:00.000Z'), Date.parse('2026-02-28T12:00:00.005Z')]) {
      expect(isoTimeAt(ms)).toBe(new Date(ms).toISOString());
    }
    // Outside the cached range: before 1970, from year 10000, fractions, and NaN (RangeError as Date's).
    for (const ms of [-1, -999, -1_001, 253_402_300_800_000, 8.64e15, 1.5]) expect(isoTimeAt(ms)).toBe(new Date(ms).toISOString());
    expect(() => isoTimeAt(Number.NaN)).toThrow(RangeError);
    // Back in time after a later second was cached.
    expect(isoTimeAt(start)).toBe(new Date(start).toISOString());
  });
});

describe('toClickHouseTime', () => {
  it('writes UTC as `YYYY-MM-DD hh:mm:ss.sss` from an ISO text (any offset), epoch ms or a Date', () => {
    expect(toClickHouseTime('2026-11-22T02:25:36.573Z')).toBe('2026-11-22 02:25:36.573');
    expect(toClickHouseTime('2026-11-22T03:25:36.5+01:00')).toBe('2026-11-22 02:25:36.500');
    expect(toClickHouseTime(Date.parse('2026-11-22T02:25:36.007Z'))).toBe('2026-11-22 02:25:36.007');
    expect(toClickHouseTime(new Date('1969-12-31T23:59:59.999Z'))).toBe('1969-12-31 23:59:59.999');
    expect(toClickHouseTime(253_402_300_800_000)).toBe('+010000-01-01 00:00:00.000');
    expect(() => toClickHouseTime('not a time')).toThrow(RangeError);
  });
});

describe('isTimeZone', () => {
  it('knows IANA names and UTC, and refuses names no zone has', () => {
    for (const name of ['Europe/Paris', 'America/New_York', 'UTC']) expect(isTimeZone(name)).toBe(true);
    for (const name of ['Mars/Olympus', 'Europe/Nowhere', '', 'not a zone']) expect(isTimeZone(name)).toBe(false);
  });
});

describe('isUtcZone', () => {
  // Node 20's ICU names UTC's offset `GMT+00:00`, not `GMT`: a test of the name made every report
  // in UTC sum quarter hours instead of reading the daily rollups (twice the time of a filtered one).
  it('is true for the zones whose clock is UTC all year, whatever ICU calls their offset', () => {
    for (const zone of ['UTC', 'Etc/UTC', 'Etc/GMT', 'GMT', 'Africa/Abidjan', 'Atlantic/Reykjavik']) expect(isUtcZone(zone), zone).toBe(true);
  });

  it('is false for a zone with an offset in summer or all year, and for names no zone has', () => {
    for (const zone of ['Europe/London', 'Europe/Lisbon', 'Asia/Kolkata', 'America/New_York', 'Etc/GMT+1', 'Asia/Kathmandu', 'Nowhere/Town', '']) {
      expect(isUtcZone(zone), zone).toBe(false);
    }
  });
});

describe('timeZoneVarNames', () => {
  it('names each zone as an upper-case identifier, the signs of the Etc zones spelled out', () => {
    expect(timeZoneVarNames(['Etc/GMT+0', 'Etc/GMT-0', 'Etc/GMT0', 'America/Port-au-Prince', 'GMT-0', 'UTC'])).toEqual([
      'ETC_GMT_PLUS_0',
      'ETC_GMT_MINUS_0',
      'ETC_GMT0',
      'AMERICA_PORT_AU_PRINCE',
      'GMT_MINUS_0',
      'UTC',
    ]);
  });

  it('numbers a name that would repeat an earlier one, so that none collide', () => {
    expect(timeZoneVarNames(['A/B_C', 'A/B-C', 'A/B.C'])).toEqual(['A_B_C', 'A_B_C_2', 'A_B_C_3']);
  });
});
