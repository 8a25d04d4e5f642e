import { describe, expect, it } from 'vitest';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { decodeVisit } from './visit-consumer.js';
import { enrich, type Enrichment } from '#shared/visits/enrichment.js';
import { encodeVisits, toVisitRow as visitRowOf, VISIT_ROW_COLUMNS, visitRowValues } from '#shared/visits/visit-rows.js';

/** The row of a visit enriched without geolocation (no address is known). */
const toVisitRow = (visit: RawVisit) => visitRowOf(visit, enrich(visit, { lookup: () => undefined }));

/** A person's browser (a bare `Mozilla/5.0` is a bot to isbot). */
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0';
const VISIT_ID = '01928f3c-7a6b-7c3d-9e4f-0a1b2c3d4e5f';

const minimal = { visit_id: VISIT_ID, ts: '2025-03-04T05:06:07.089Z', owner_id: 'owner-1', subdomain: 'acme', ip_public: '203.0.113.7' };

const decode = (value: unknown, headers?: Record<string, string>) =>
  decodeVisit({ key: 'link-1', value: typeof value === 'string' ? value : JSON.stringify(value), ...(headers ? { headers } : {}) });

function reasonOf(value: unknown): string {
  const outcome = decode(value);
  if (outcome.kind !== 'dlq') throw new Error(`expected a dead letter, got ${JSON.stringify(outcome)}`);
  return outcome.reason;
}

describe('decodeVisit', () => {
  it('accepts a minimal visit and fills the defaults', () => {
    expect(decode(minimal)).toEqual({
      kind: 'ok',
      visit: {
        ...minimal,
        kind: 'visit',
        link_id: '',
        slug: '',
        user_agent: '',
        referrer: '',
        accept_language: '',
        query: '',
        expects_beacon: false,
      },
    });
  });

  it('keeps every field of a complete visit', () => {
    const complete = {
      ...minimal,
      ts: '2025-03-04T07:06:07.089+02:00',
      kind: 'bot',
      link_id: 'link-1',
      slug: 'promo',
      user_agent: 'Googlebot/2.1',
      referrer: 'https://example.org/',
      accept_language: 'de-DE,de;q=0.9',
      query: 'utm_source=x',
      expects_beacon: true,
    };
    expect(decode(complete)).toEqual({ kind: 'ok', visit: complete });
  });

  it('ignores unknown fields', () => {
    const outcome = decode({ ...minimal, extra: 'ignored' });
    expect(outcome.kind).toBe('ok');
    expect(outcome.kind === 'ok' && 'extra' in outcome.visit).toBe(false);
  });

  it('dead-letters undecodable JSON with the message unchanged', () => {
    const message = { key: 'link-1', value: '{"visit_id": ', headers: { 'x-origin': 'edge' } };
    expect(decodeVisit(message)).toEqual({ kind: 'dlq', reason: 'undecodable JSON', message });
    expect(reasonOf('')).toBe('undecodable JSON');
    expect(reasonOf('not json at all')).toBe('undecodable JSON');
  });

  it('dead-letters JSON that is not an object', () => {
    for (const value of ['null', '42', '"text"', '[1,2]']) {
      expect(reasonOf(value)).toMatch(/^invalid visit: message: /);
    }
  });

  it('dead-letters a visit without its required fields, naming each', () => {
    const reason = reasonOf({ kind: 'visit' });
    expect(reason).toMatch(/^invalid visit: /);
    for (const field of ['visit_id', 'ts', 'owner_id', 'subdomain', 'ip_public']) expect(reason).toContain(`${field}:`);
  });

  it.each([
    ['a visit_id that is no UUID', 'visit_id', 'not-a-uuid'],
    ['a time without the T', 'ts', '2025-03-04 05:06:07'],
    ['a time without an offset', 'ts', '2025-03-04T05:06:07'],
    ['a date that does not exist', 'ts', '2025-02-30T00:00:00Z'],
    ['an unknown kind', 'kind', 'pageview'],
    ['an empty subdomain', 'subdomain', ''],
    ['a subdomain over 63 characters', 'subdomain', 'a'.repeat(64)],
    ['an owner_id over 64 characters', 'owner_id', 'o'.repeat(65)],
    ['an ip_public over 45 characters', 'ip_public', '1'.repeat(46)],
    ['a user_agent over 2000 characters', 'user_agent', 'u'.repeat(2001)],
    ['a query over 4000 characters', 'query', 'q'.repeat(4001)],
    ['a slug that is a number', 'slug', 42],
  ])('dead-letters a visit with %s, naming the field', (_label, field, value) => {
    expect(reasonOf({ ...minimal, [field]: value })).toMatch(new RegExp(`^invalid visit: ${field}: `));
  });

  it('accepts the longest allowed values', () => {
    expect(decode({ ...minimal, subdomain: 'a'.repeat(63), user_agent: 'u'.repeat(2000), query: 'q'.repeat(4000) }).kind).toBe('ok');
  });

  it('dead-letters a visit with text that is not well-formed Unicode, which ClickHouse would refuse', () => {
    expect(reasonOf({ ...minimal, user_agent: 'Mozilla \ud800' })).toMatch(/^invalid visit: user_agent: /);
    expect(reasonOf({ ...minimal, referrer: '\udfff' })).toMatch(/^invalid visit: referrer: /);
    // Paired surrogates (an emoji) are fine.
    expect(decode({ ...minimal, user_agent: 'Mozilla 😀' }).kind).toBe('ok');
  });

  it('finds a lone surrogate whether the JSON text escapes it or holds it raw, and passes escaped pairs', () => {
    const text = (userAgent: string) => JSON.stringify({ ...minimal, user_agent: 'UA' }).replace('"UA"', `"${userAgent}"`);
    expect(reasonOf(text('Mozilla \\ud800'))).toMatch(/^invalid visit: user_agent: not well-formed Unicode/);
    expect(reasonOf(text('Mozilla \\uDC00 tail'))).toMatch(/^invalid visit: user_agent: not well-formed Unicode/);
    expect(reasonOf(text('Mozilla \ud800'))).toMatch(/^invalid visit: user_agent: not well-formed Unicode/);
    expect(decode(text('Mozilla \\ud83d\\ude00')).kind).toBe('ok');
    // A backslash before a "u" that is not an escape is text, not a surrogate.
    expect(decode(text('C:\\\\users\\\\ud800')).kind).toBe('ok');
  });

  it("dead-letters a visit whose time is outside DateTime64's range, which made the enricher fail its batch for ever", () => {
    // Year 0000 is no Postgres date (the day's salt), and chDB stores it as another date; an offset can make year 10000.
    expect(reasonOf({ ...minimal, ts: '0000-01-01T00:00:00Z' })).toBe('invalid visit: ts: outside 1900-01-01T00:00:00Z … 2299-12-31T23:59:59.999Z');
    expect(reasonOf({ ...minimal, ts: '9999-12-31T23:30:00-01:00' })).toMatch(/^invalid visit: ts: outside /);
    expect(reasonOf({ ...minimal, ts: '1899-12-31T23:59:59.999Z' })).toMatch(/^invalid visit: ts: outside /);
    expect(reasonOf({ ...minimal, ts: '2299-12-31T23:59:59.999-00:01' })).toMatch(/^invalid visit: ts: outside /);
    // The range's ends, and any time with an offset that keeps it inside.
    expect(decode({ ...minimal, ts: '1900-01-01T00:00:00Z' }).kind).toBe('ok');
    expect(decode({ ...minimal, ts: '2299-12-31T23:59:59.999Z' }).kind).toBe('ok');
    expect(decode({ ...minimal, ts: '1900-01-01T00:30:00+00:30' }).kind).toBe('ok');
    expect(decode({ ...minimal, ts: '2400-01-01T00:00:00Z' }).kind).toBe('dlq');
  });

  it('dead-letters a visit whose link id holds U+0000, which Postgres text refuses (the max_visits check)', () => {
    expect(reasonOf({ ...minimal, link_id: 'a\u0000b' })).toBe('invalid visit: link_id: holds U+0000');
    expect(decode({ ...minimal, user_agent: 'a\u0000b' }).kind).toBe('ok');
  });

  it('keeps the reason within 500 characters', () => {
    const everythingWrong = Object.fromEntries(
      ['visit_id', 'ts', 'kind', 'owner_id', 'subdomain', 'link_id', 'slug', 'ip_public', 'user_agent', 'referrer', 'accept_language', 'query'].map((field) => [
        field,
        1,
      ]),
    );
    const reason = reasonOf(everythingWrong);
    expect(reason.length).toBe(500);
    expect(reason).toMatch(/^invalid visit: visit_id: /);
  });
});

const raw = (overrides: Partial<RawVisit> = {}): RawVisit => ({
  visit_id: VISIT_ID,
  ts: '2025-03-04T05:06:07.089Z',
  expects_beacon: false,
  kind: 'visit',
  owner_id: 'owner-1',
  subdomain: 'acme',
  link_id: 'link-1',
  slug: 'promo',
  ip_public: '203.0.113.7',
  user_agent: BROWSER,
  referrer: '',
  accept_language: 'en',
  query: '',
  ...overrides,
});

describe('toVisitRow', () => {
  it('names the columns VISIT_ROW_COLUMNS lists, in its order (what inserts and blocks inserted again name)', async () => {
    expect(Object.keys(toVisitRow(raw()))).toEqual([...VISIT_ROW_COLUMNS]);
    expect((await encodeVisits([raw()], (visit) => enrich(visit, { lookup: () => undefined }))).columns).toEqual([...VISIT_ROW_COLUMNS]);
  });

  it('copies the fields of the raw visit and writes the time as ClickHouse UTC text', () => {
    expect(toVisitRow(raw())).toMatchObject({
      visit_id: VISIT_ID,
      ts: '2025-03-04 05:06:07.089',
      kind: 'visit',
      owner_id: 'owner-1',
      subdomain: 'acme',
      link_id: 'link-1',
      slug: 'promo',
      ip_public: '203.0.113.7',
      user_agent: BROWSER,
      referrer: '',
      referrer_host: '',
      accept_language: 'en',
      query: '',
      is_bot: 0,
      is_attack: 0,
      utm_source: '',
      utm_medium: '',
      utm_campaign: '',
      utm_term: '',
      utm_content: '',
    });
  });

  it('converts a time with an offset to UTC, across a day boundary', () => {
    expect(toVisitRow(raw({ ts: '2025-03-04T01:00:00.5+02:00' })).ts).toBe('2025-03-03 23:00:00.500');
    expect(toVisitRow(raw({ ts: '2025-12-31T23:30:00-01:00' })).ts).toBe('2026-01-01 00:30:00.000');
    expect(toVisitRow(raw({ ts: '2025-03-04T05:06:07Z' })).ts).toBe('2025-03-04 05:06:07.000');
  });

  it('derives the five UTM fields from the query, decoded', () => {
    const row = toVisitRow(
      raw({ query: 'utm_source=newsletter&utm_medium=e-mail&utm_campaign=spring%20sale&utm_term=red+shoes&utm_content=banner%2Ftop&other=1' }),
    );
    expect(row).toMatchObject({
      utm_source: 'newsletter',
      utm_medium: 'e-mail',
      utm_campaign: 'spring sale',
      utm_term: 'red shoes',
      utm_content: 'banner/top',
    });
  });

  it('reads the UTM fields from a query with a leading question mark, the first of repeated ones, and none when absent', () => {
    expect(toVisitRow(raw({ query: '?utm_source=a&utm_source=b' }))).toMatchObject({ utm_source: 'a', utm_medium: '' });
    expect(toVisitRow(raw({ query: 'ref=x' }))).toMatchObject({ utm_source: '', utm_medium: '', utm_campaign: '', utm_term: '', utm_content: '' });
    expect(toVisitRow(raw({ query: 'UTM_SOURCE=upper' })).utm_source).toBe('');
  });

  it('cuts UTM values to 200 characters', () => {
    const row = toVisitRow(raw({ query: `utm_campaign=${'c'.repeat(500)}` }));
    expect(row.utm_campaign).toBe('c'.repeat(200));
  });

  it('derives referrer_host from the referrer, and leaves it empty for no or an unparsable referrer', () => {
    expect(toVisitRow(raw({ referrer: 'https://www.Example.com:8443/path?q=1#top' })).referrer_host).toBe('www.example.com');
    expect(toVisitRow(raw({ referrer: 'android-app://com.google.android.gm/' })).referrer_host).toBe('com.google.android.gm');
    expect(toVisitRow(raw({ referrer: 'not a url' })).referrer_host).toBe('');
    expect(toVisitRow(raw({ referrer: '' })).referrer_host).toBe('');
    const row = toVisitRow(raw({ referrer: 'not a url' }));
    expect(row.referrer).toBe('not a url');
  });

  it('has the same columns in the same order for every kind of visit (its values are the compact row)', () => {
    const columns = Object.keys(toVisitRow(raw()));
    for (const visit of [raw({ kind: 'bot' }), raw({ kind: 'attack', query: 'utm_source=x' }), raw({ kind: 'beacon', referrer: 'https://a.example/' })]) {
      expect(Object.keys(toVisitRow(visit))).toEqual(columns);
    }
    const judged = enrich(raw(), { lookup: () => undefined });
    Object.assign(judged, { kind: 'bot', is_bot: 1, bot_name: 'burst', is_unique: 1, visitor_hash: 'f'.repeat(32) });
    expect(Object.keys(visitRowOf(raw(), judged))).toEqual(columns);
  });

  it('puts each value under its own column: every column of a visit whose fields all differ', () => {
    const visit = raw({
      referrer: 'https://ref.example/x',
      query: 'utm_source=s&utm_medium=m&utm_campaign=c&utm_term=t&utm_content=n',
      accept_language: 'de',
      matched_rule: 2,
      variant: 1,
    });
    const enrichment: Enrichment = {
      kind: 'bot',
      country: 'DE',
      region: 'BE',
      city: 'Berlin',
      latitude: 52.5,
      longitude: 13.4,
      browser: 'Firefox',
      browser_version: '121',
      os: 'Linux',
      os_version: '6',
      device_type: 'desktop',
      is_bot: 1,
      bot_name: 'burst',
      is_attack: 0,
      attack_type: 'none-here',
      visitor_hash: 'h'.repeat(64),
      is_unique: 1,
    };
    const { kind: _kind, ...enrichedColumns } = enrichment;
    expect(visitRowOf(visit, enrichment)).toStrictEqual({
      visit_id: VISIT_ID,
      ts: '2025-03-04 05:06:07.089',
      kind: 'bot',
      owner_id: 'owner-1',
      subdomain: 'acme',
      link_id: 'link-1',
      slug: 'promo',
      ip_public: '203.0.113.7',
      user_agent: BROWSER,
      referrer: 'https://ref.example/x',
      referrer_host: 'ref.example',
      accept_language: 'de',
      query: 'utm_source=s&utm_medium=m&utm_campaign=c&utm_term=t&utm_content=n',
      utm_source: 's',
      utm_medium: 'm',
      utm_campaign: 'c',
      utm_term: 't',
      utm_content: 'n',
      // The enrichment's own fields, each under its own column.
      ...enrichedColumns,
      // Issue 40: the rule and variant the edge chose.
      matched_rule: 2,
      variant: 1,
    });
    expect(visitRowValues(visit, enrichment)).toEqual(Object.values(visitRowOf(visit, enrichment)));
  });

  it('flags bots and attacks from the kind', () => {
    expect(toVisitRow(raw({ kind: 'bot' }))).toMatchObject({ is_bot: 1, is_attack: 0 });
    expect(toVisitRow(raw({ kind: 'attack' }))).toMatchObject({ is_bot: 0, is_attack: 1 });
    expect(toVisitRow(raw({ kind: 'beacon' }))).toMatchObject({ kind: 'beacon', is_bot: 0, is_attack: 0 });
  });
});

describe('encodeVisits', () => {
  const plain = (visit: RawVisit) => enrich(visit, { lookup: () => undefined });

  it("writes one JSON array of the row values per line, in the columns' order, with the batch token", async () => {
    const visits = [raw(), raw({ visit_id: '01928f3c-7a6b-7c3d-9e4f-0a1b2c3d4e60', referrer: 'https://a.example/', query: 'utm_source=x' })];
    const encoded = await encodeVisits(visits, plain);
    expect(encoded.table).toBe('visits');
    expect(encoded.columns).toEqual(Object.keys(toVisitRow(visits[0]!)));
    expect(
      encoded.body
        .toString('utf8')
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual(visits.map((visit) => Object.values(toVisitRow(visit))));
    expect(encoded.settings).toEqual((await encodeVisits([...visits], plain)).settings);
    expect(encoded.settings).not.toEqual((await encodeVisits([visits[0]!], plain)).settings);
  });

  it('keeps multi-byte text whole when rows outgrow the space first set aside (1 KiB per visit)', async () => {
    const long = (n: number) =>
      raw({
        visit_id: `01928f3c-7a6b-7c3d-9e4f-0a1b2c3d4e${String(n).padStart(2, '0')}`,
        user_agent: `${BROWSER} ${'é'.repeat(900)}`,
        referrer: `https://exämple.test/${'😀'.repeat(500)}`,
        query: `utm_campaign=${'日本'.repeat(1000)}`,
      });
    const visits = Array.from({ length: 5 }, (_, n) => long(n));
    const encoded = await encodeVisits(visits, plain);
    expect(encoded.body.length).toBeGreaterThan(5 * 1024);
    expect(
      encoded.body
        .toString('utf8')
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual(visits.map((visit) => Object.values(toVisitRow(visit))));
  });

  it('refuses an empty batch', async () => {
    await expect(encodeVisits([], plain)).rejects.toThrow(RangeError);
  });
});
