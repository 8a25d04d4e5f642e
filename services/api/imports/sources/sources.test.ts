import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '#shared/errors.js';
import { importedVisitId } from './history.js';
import { shlinkVisits } from './shlink-api.js';
import { yourlsDump } from './yourls-dump.js';

describe('importedVisitId', () => {
  it('gives the same source visit the same UUID, and another visit, slug, subdomain or source another', () => {
    const id = importedVisitId('yourls', 'acme', 'promo', '42');
    expect(z.uuid().safeParse(id).success).toBe(true);
    expect(importedVisitId('yourls', 'acme', 'promo', '42')).toBe(id);
    const others = [
      importedVisitId('yourls', 'acme', 'promo', '43'),
      importedVisitId('yourls', 'acme', 'other', '42'),
      importedVisitId('yourls', 'beta', 'promo', '42'),
      importedVisitId('shlink', 'acme', 'promo', '42'),
    ];
    expect(new Set([id, ...others]).size).toBe(5);
  });
});

describe('shlinkVisits', () => {
  const visit = (date: string, referer: string | null = null) => ({
    referer,
    date,
    userAgent: 'Mozilla/5.0',
    visitLocation: { countryCode: 'DE', cityName: 'Berlin', regionName: 'Berlin', latitude: 52.5, longitude: 13.4, isEmpty: false },
    potentialBot: false,
  });

  it('keys identical visits apart by their occurrence, and the same visits read again get the same keys', () => {
    const page = [visit('2024-01-01T10:00:00+02:00'), visit('2024-01-01T10:00:00+02:00'), visit('2024-01-01T09:00:00+02:00', 'https://t.co')];
    const keys = shlinkVisits(page).map((v) => v.key);
    expect(new Set(keys).size).toBe(3);
    expect(shlinkVisits(page).map((v) => v.key)).toEqual(keys);
    expect(new Set(shlinkVisits([...page].reverse()).map((v) => v.key))).toEqual(new Set(keys));
  });

  it('reads the time with its offset, a null referrer as none and an empty location as no place', () => {
    const [read] = shlinkVisits([{ ...visit('2024-01-01T10:00:00+02:00'), visitLocation: { countryCode: 'XX', isEmpty: true } }]);
    expect(read).toMatchObject({ ts: new Date('2024-01-01T08:00:00Z'), referrer: '', country: '', city: '', latitude: null, ip: '' });
  });
});

describe('yourlsDump', () => {
  it("reads MySQL's escapes, NULL, `direct`, and ignores `;` and `),(` inside strings and comments", async () => {
    const dump = [
      '-- a comment; with a semicolon and ),( in it',
      '/*!40101 SET NAMES utf8mb4 */;',
      "INSERT INTO `yourls_url` VALUES ('a1','https://example.com/?q=1;2','It\\'s \\\"quoted\\\"\\\\ and ),( here','2020-02-03 04:05:06','127.0.0.1',3),('b2','https://example.com/b',NULL,'2020-02-03 04:05:07','127.0.0.1',0);",
      "INSERT INTO `yourls_log` VALUES (7,'2021-03-04 05:06:07','a1','direct','Line\\nTwo','203.0.113.7','FR'),(8,'2021-03-04 05:06:08','a1','https://ref.example/','UA','203.0.113.8','');",
    ].join('\n');
    const links = await yourlsDump(dump).links();
    expect(links.map((l) => l.link)).toEqual([
      { slug: 'a1', target_url: 'https://example.com/?q=1;2', title: 'It\'s "quoted"\\ and ),( here', tags: [], created_at: new Date('2020-02-03T04:05:06Z') },
      { slug: 'b2', target_url: 'https://example.com/b', title: null, tags: [], created_at: new Date('2020-02-03T04:05:07Z') },
    ]);
    expect(await links[0]!.visits!()).toEqual([
      { key: '7', ts: new Date('2021-03-04T05:06:07Z'), referrer: '', user_agent: 'Line\nTwo', ip: '203.0.113.7', country: 'FR' },
      { key: '8', ts: new Date('2021-03-04T05:06:08Z'), referrer: 'https://ref.example/', user_agent: 'UA', ip: '203.0.113.8', country: '' },
    ]);
    expect(await links[1]!.visits!()).toEqual([]);
  });

  it('reads the tables of another YOURLS_DB_PREFIX, and refuses a dump without them', () => {
    const dump = "INSERT INTO `short_url` VALUES ('x','https://example.com/','t','2020-01-01 00:00:00','::1',0);";
    expect(() => yourlsDump(dump, 'short_')).not.toThrow();
    const refused = (() => {
      try {
        yourlsDump(dump);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('validation_error');
  });
});
