import type { FastifyInstance } from 'fastify';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { mintToken } from '#tests/support/accounts.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { buildApp } from '#services/app.js';

type Json = Record<string, any>;

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;
let sub: string;
let linkA: Json;
let linkB: Json;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** 10:00 UTC, three days ago: the fixture's visits lie between it and two days later. */
const base = Math.floor((Date.now() - 3 * DAY) / DAY) * DAY + 10 * HOUR;
const at = (ms: number) => new Date(base + ms).toISOString();

interface FixtureVisit {
  offset: number;
  kind: 'visit' | 'bot' | 'attack' | 'beacon';
  link?: 'A' | 'B';
  country?: string;
  city?: string;
  browser?: string;
  os?: string;
  device_type?: string;
  referrer_host?: string;
  utm_source?: string;
  visitor: string;
  version?: number;
}

/**
 * The hand-computed fixture. Human visits (visit, beacon): #1 #2 #3 #4 #7, three visitors (h1 h2 h3);
 * one bot (#5, link B), one attack attempt (#6, no link); #8 is a newer version of #1 (a beacon's
 * signals merged in) and counts nothing.
 */
const FIXTURE: FixtureVisit[] = [
  {
    offset: 5 * 60_000,
    kind: 'visit',
    link: 'A',
    country: 'FR',
    city: 'Paris',
    browser: 'Chrome',
    os: 'Windows',
    device_type: 'desktop',
    referrer_host: 'google.com',
    utm_source: 'newsletter',
    visitor: 'h1',
  },
  { offset: 20 * 60_000, kind: 'visit', link: 'A', country: 'FR', city: 'Paris', browser: 'Firefox', os: 'Linux', device_type: 'desktop', visitor: 'h2' },
  {
    offset: 70 * 60_000,
    kind: 'visit',
    link: 'A',
    country: 'DE',
    city: 'Berlin',
    browser: 'Chrome',
    os: 'Android',
    device_type: 'mobile',
    referrer_host: 't.co',
    visitor: 'h1',
  },
  {
    offset: DAY,
    kind: 'visit',
    link: 'B',
    country: 'FR',
    city: 'Lyon',
    browser: 'Safari',
    os: 'iOS',
    device_type: 'mobile',
    referrer_host: 'google.com',
    utm_source: 'newsletter',
    visitor: 'h3',
  },
  { offset: DAY + 10 * 60_000, kind: 'bot', link: 'B', country: 'US', browser: 'curl', visitor: 'h4' },
  { offset: 2 * HOUR, kind: 'attack', visitor: 'h5' },
  { offset: DAY + 2 * HOUR, kind: 'beacon', link: 'B', country: 'GB', city: 'London', browser: 'Chrome', os: 'macOS', device_type: 'desktop', visitor: 'h3' },
];

async function insertFixture(owner: TestOwner, subdomain: string, links: Record<'A' | 'B', Json>, visits: FixtureVisit[], token: string) {
  const rows = visits.map((visit) => ({
    visit_id: v7({ msecs: base + visit.offset }),
    ts: toClickHouseTime(base + visit.offset),
    kind: visit.kind,
    owner_id: owner.id,
    subdomain,
    link_id: visit.link ? links[visit.link].id : '',
    slug: visit.link ? links[visit.link].slug : '',
    ip_public: '203.0.113.7',
    country: visit.country ?? '',
    city: visit.city ?? '',
    browser: visit.browser ?? '',
    os: visit.os ?? '',
    device_type: visit.device_type ?? '',
    referrer_host: visit.referrer_host ?? '',
    utm_source: visit.utm_source ?? '',
    visitor_hash: visit.visitor,
    is_bot: visit.kind === 'bot' ? 1 : 0,
    is_attack: visit.kind === 'attack' ? 1 : 0,
    version: visit.version ?? 0,
  }));
  await context.analytics.client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(token) });
  return rows;
}

const get = (owner: TestOwner | undefined, url: string) => app.inject({ method: 'GET', url, headers: owner?.auth ?? {} });
const range = `since=${encodeURIComponent(at(-HOUR))}&until=${encodeURIComponent(at(3 * DAY))}`;

async function report(owner: TestOwner | undefined, url: string): Promise<Json> {
  const response = await get(owner, url);
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  return response.json().data;
}

async function createLink(owner: TestOwner, subdomain: string, slug: string): Promise<Json> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, slug, target_url: 'https://example.com/' },
  });
  if (response.statusCode !== 201) throw new Error(response.body);
  return response.json().data;
}

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  sub = await claimSubdomain(app, alice);
  [linkA, linkB] = [await createLink(alice, sub, 'alpha'), await createLink(alice, sub, 'beta')];
  const rows = await insertFixture(alice, sub, { A: linkA, B: linkB }, FIXTURE, `stats-fixture-${sub}`);
  // #8: a newer version of #1 (the beacon merge writes one): the same visit, counted once.
  const merged = { ...rows[0]!, version: 2, browser: 'Chrome' };
  await context.analytics.client.insert({
    table: 'visits',
    values: [merged],
    format: 'JSONEachRow',
    clickhouse_settings: deduplicatedBy(`stats-merge-${sub}`),
  });
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const zero = { visits: 0, unique_visitors: 0, bots: 0, attacks: 0 };

describe('GET /api/v1/stats/subdomain/{name}', () => {
  it('answers the hand-computed totals, daily series and breakdowns', async () => {
    const data = await report(alice, `/api/v1/stats/subdomain/${sub}?${range}`);
    expect(data.scope).toBe('subdomain');
    expect(data.id).toBe(sub);
    expect(data.range).toEqual({ since: at(-HOUR), until: at(3 * DAY), tz: 'UTC', granularity: 'day' });
    expect(data.totals).toEqual({ visits: 5, unique_visitors: 3, bots: 1, attacks: 1 });
    const day = (n: number) => new Date(base - 10 * HOUR + n * DAY).toISOString();
    expect(data.series).toEqual([
      { t: day(0), visits: 3, unique_visitors: 2, bots: 0, attacks: 1 },
      { t: day(1), visits: 2, unique_visitors: 1, bots: 1, attacks: 0 },
      { t: day(2), ...zero },
      { t: day(3), ...zero },
    ]);
    expect(data.top.country).toEqual([
      { value: 'FR', visits: 3 },
      { value: 'DE', visits: 1 },
      { value: 'GB', visits: 1 },
    ]);
    expect(data.top.city).toEqual([
      { value: 'Paris', country: 'FR', visits: 2 },
      { value: 'Berlin', country: 'DE', visits: 1 },
      { value: 'Lyon', country: 'FR', visits: 1 },
      { value: 'London', country: 'GB', visits: 1 },
    ]);
    expect(data.top.browser).toEqual([
      { value: 'Chrome', visits: 3 },
      { value: 'Firefox', visits: 1 },
      { value: 'Safari', visits: 1 },
    ]);
    expect(data.top.os.map((item: Json) => [item.value, item.visits])).toEqual([
      ['Android', 1],
      ['Linux', 1],
      ['Windows', 1],
      ['iOS', 1],
      ['macOS', 1],
    ]);
    expect(data.top.device_type).toEqual([
      { value: 'desktop', visits: 3 },
      { value: 'mobile', visits: 2 },
    ]);
    expect(data.top.referrer_host).toEqual([
      { value: '', visits: 2 },
      { value: 'google.com', visits: 2 },
      { value: 't.co', visits: 1 },
    ]);
    expect(data.top.utm_source).toEqual([
      { value: '', visits: 3 },
      { value: 'newsletter', visits: 2 },
    ]);
    expect(data.top.link).toEqual([
      { value: linkA.id, link_id: linkA.id, slug: 'alpha', visits: 3 },
      { value: linkB.id, link_id: linkB.id, slug: 'beta', visits: 2 },
    ]);
  });

  it('groups hours in the asked time zone, half-hour offsets included', async () => {
    const since = encodeURIComponent(at(0));
    const until = encodeURIComponent(at(3 * HOUR));
    const data = await report(alice, `/api/v1/stats/subdomain/${sub}?since=${since}&until=${until}&granularity=hour&tz=Asia/Kolkata`);
    // 10:05 and 10:20 UTC are 15:35 and 15:50 in Kolkata: the hour starting 15:00 there, 09:30 UTC.
    expect(data.series).toEqual([
      { t: at(-30 * 60_000), visits: 2, unique_visitors: 2, bots: 0, attacks: 0 },
      { t: at(30 * 60_000), visits: 1, unique_visitors: 1, bots: 0, attacks: 0 },
      { t: at(90 * 60_000), visits: 0, unique_visitors: 0, bots: 0, attacks: 1 },
      { t: at(150 * 60_000), ...zero },
    ]);
    expect(data.totals).toEqual({ visits: 3, unique_visitors: 2, bots: 0, attacks: 1 });
  });

  it('rounds the bounds to quarter hours and says which applied', async () => {
    const data = await report(alice, `/api/v1/stats/subdomain/${sub}?since=${encodeURIComponent(at(7 * 60_000))}&until=${encodeURIComponent(at(16 * 60_000))}`);
    expect(data.range.since).toBe(at(0));
    expect(data.range.until).toBe(at(30 * 60_000));
    expect(data.totals.visits).toBe(2);
  });

  it('cuts each breakdown to `limit`', async () => {
    const data = await report(alice, `/api/v1/stats/subdomain/${sub}?${range}&limit=1`);
    for (const items of Object.values<Json[]>(data.top)) expect(items.length).toBe(1);
    expect(data.top.country).toEqual([{ value: 'FR', visits: 3 }]);
  });

  it('does not count a batch delivered twice', async () => {
    const again = FIXTURE.slice(0, 1);
    const other = await claimSubdomain(app, alice);
    const links = { A: await createLink(alice, other, 'again'), B: linkB };
    await insertFixture(alice, other, links, again, `stats-twice-${other}`);
    await insertFixture(alice, other, links, again, `stats-twice-${other}`);
    const data = await report(alice, `/api/v1/stats/subdomain/${other}?${range}`);
    expect(data.totals).toEqual({ visits: 1, unique_visitors: 1, bots: 0, attacks: 0 });
    expect(data.top.country).toEqual([{ value: 'FR', visits: 1 }]);
  });
});

describe('unique visitors beyond the exact range', () => {
  it('estimates them within 5 %, and the totals merge the same sketches as the counters since ever', async () => {
    const many = await claimSubdomain(app, alice);
    const link = await createLink(alice, many, 'many');
    // 3 000 visits over two days: visitors 0–1 199 on the first, 800–1 999 on the second (2 000 in all).
    const visits: FixtureVisit[] = Array.from({ length: 3_000 }, (_, i) =>
      i < 1_500
        ? { offset: i * 20_000, kind: 'visit', link: 'A', visitor: `u${i % 1_200}` }
        : { offset: DAY + (i - 1_500) * 20_000, kind: 'visit', link: 'A', visitor: `u${800 + ((i - 1_500) % 1_200)}` },
    );
    await insertFixture(alice, many, { A: link, B: link }, visits, `stats-many-${many}`);
    const data = await report(alice, `/api/v1/stats/subdomain/${many}?${range}`);
    const near = (value: number, exact: number) => expect(Math.abs(value - exact) / exact).toBeLessThan(0.05);
    expect(data.totals.visits).toBe(3_000);
    near(data.totals.unique_visitors, 2_000);
    expect(data.series.map((point: Json) => point.visits)).toEqual([1_500, 1_500, 0, 0]);
    near(data.series[0].unique_visitors, 1_200);
    near(data.series[1].unique_visitors, 1_200);
    const counters = await app.inject({ method: 'GET', url: `/api/rest.php/stats?subdomain=${many}`, headers: alice.auth });
    expect(counters.json().data.unique_visitors).toBe(data.totals.unique_visitors);
  });
});

describe('GET /api/v1/stats/link/{id} and /user/{id}', () => {
  it("answers a link's figures and breakdowns, without a link breakdown", async () => {
    const data = await report(alice, `/api/v1/stats/link/${linkA.id}?${range}`);
    expect(data.totals).toEqual({ visits: 3, unique_visitors: 2, bots: 0, attacks: 0 });
    expect(data.top.country).toEqual([
      { value: 'FR', visits: 2 },
      { value: 'DE', visits: 1 },
    ]);
    expect(data.top.city).toEqual([
      { value: 'Paris', country: 'FR', visits: 2 },
      { value: 'Berlin', country: 'DE', visits: 1 },
    ]);
    expect(data.top.link).toBeUndefined();
    const b = await report(alice, `/api/v1/stats/link/${linkB.id}?${range}`);
    expect(b.totals).toEqual({ visits: 2, unique_visitors: 1, bots: 1, attacks: 0 });
  });

  it("answers the caller's own figures as a user, over all their subdomains", async () => {
    const mine = await report(alice, `/api/v1/stats/user/me?${range}`);
    const byId = await report(alice, `/api/v1/stats/user/${alice.id}?${range}`);
    expect(byId.totals).toEqual(mine.totals);
    // The fixture's subdomain, plus the one visit of the delivered-twice test when it ran first.
    expect(mine.totals.visits).toBeGreaterThanOrEqual(5);
    expect(mine.totals.bots).toBe(1);
    expect(mine.totals.attacks).toBe(1);
  });

  it('answers nothing but zeros for an owner without visits', async () => {
    const data = await report(bob, `/api/v1/stats/user/me?${range}`);
    expect(data.totals).toEqual(zero);
    expect(data.top.country).toEqual([]);
  });
});

describe('filters (a filtered report reads the raw visits)', () => {
  const filtered = (query: string, scope = `subdomain/${sub}`) => report(alice, `/api/v1/stats/${scope}?${range}&${query}`);

  it('narrows totals, series and breakdowns to one value, and says which filters applied', async () => {
    const data = await filtered('country=fr');
    expect(data.filters).toEqual({ country: 'FR' });
    // #1, #2 (day 0) and #4 (day 1): the bot is from the US, the attack attempt has no country.
    expect(data.totals).toEqual({ visits: 3, unique_visitors: 3, bots: 0, attacks: 0 });
    expect(data.series.map((point: Json) => point.visits)).toEqual([2, 1, 0, 0]);
    expect(data.top.browser).toEqual([
      { value: 'Chrome', visits: 1 },
      { value: 'Firefox', visits: 1 },
      { value: 'Safari', visits: 1 },
    ]);
    expect(data.top.country).toEqual([{ value: 'FR', visits: 3 }]);
    expect(data.top.link).toEqual([
      { value: linkA.id, link_id: linkA.id, slug: 'alpha', visits: 2 },
      { value: linkB.id, link_id: linkB.id, slug: 'beta', visits: 1 },
    ]);
  });

  it('stacks filters: each narrows what the others left', async () => {
    expect((await filtered('country=FR&browser=Chrome')).totals).toEqual({ visits: 1, unique_visitors: 1, bots: 0, attacks: 0 });
    const mobileB = await filtered(`link_id=${linkB.id}&device=mobile`);
    expect(mobileB.totals).toEqual({ visits: 1, unique_visitors: 1, bots: 0, attacks: 0 });
    expect(mobileB.top.referrer_host).toEqual([{ value: 'google.com', visits: 1 }]);
    expect((await filtered('utm_source=newsletter&os=iOS')).totals.visits).toBe(1);
    expect((await filtered('utm_source=newsletter&os=Linux')).totals).toEqual(zero);
    // An empty value is "none": direct traffic (#2 and the beacon #7; the bot and the attack attempt had no referrer either).
    const direct = await filtered('referrer_host=');
    expect(direct.totals).toEqual({ visits: 2, unique_visitors: 2, bots: 1, attacks: 1 });
    expect(direct.top.referrer_host).toEqual([{ value: '', visits: 2 }]);
    expect((await filtered('kind=bot')).totals).toEqual({ visits: 0, unique_visitors: 0, bots: 1, attacks: 0 });
  });

  it('agrees with the rollups: each breakdown row, used as a filter, counts what the row says', async () => {
    const whole = await report(alice, `/api/v1/stats/subdomain/${sub}?${range}`);
    const checks: [string, string, Json[]][] = [
      ['country', 'country', whole.top.country],
      ['browser', 'browser', whole.top.browser],
      ['os', 'os', whole.top.os],
      ['device', 'device_type', whole.top.device_type],
      ['referrer_host', 'referrer_host', whole.top.referrer_host],
      ['utm_source', 'utm_source', whole.top.utm_source],
      ['link_id', 'link', whole.top.link],
    ];
    for (const [filter, dim, rows] of checks) {
      for (const row of rows) {
        const data = await filtered(`${filter}=${encodeURIComponent(row.value)}`);
        expect([filter, row.value, data.totals.visits]).toEqual([filter, row.value, row.visits]);
        // Its own breakdown is that one row.
        expect(data.top[dim]).toEqual([dim === 'link' ? row : { value: row.value, visits: row.visits }]);
      }
    }
  });

  it("filters a link's report and a user's, compares with the same filters, and refuses another link's id in a link's report", async () => {
    const linkReport = await filtered('country=FR', `link/${linkA.id}`);
    expect(linkReport.totals.visits).toBe(2);
    expect(linkReport.top).not.toHaveProperty('link');
    expect((await filtered('os=iOS', 'user/me')).totals.visits).toBe(1);
    const compared = await filtered('country=FR&compare=previous');
    expect(compared.previous.totals).toEqual(zero);
    expect(compared.change).toEqual({ visits: null, unique_visitors: null, bots: null, attacks: null });
    const wrong = await get(alice, `/api/v1/stats/link/${linkA.id}?link_id=${linkB.id}`);
    expect(wrong.statusCode).toBe(422);
    expect(Object.keys(wrong.json().error.details)).toEqual(['link_id']);
    expect((await get(alice, `/api/v1/stats/subdomain/${sub}?country=France`)).statusCode).toBe(422);
    expect((await get(alice, `/api/v1/stats/subdomain/${sub}?device=${'x'.repeat(201)}`)).statusCode).toBe(422);
    // Another owner's subdomain stays 403 with filters, and tells nothing.
    const foreign = await get(bob, `/api/v1/stats/subdomain/${sub}?country=FR`);
    expect(foreign.statusCode).toBe(403);
    expect(foreign.body).not.toContain('totals');
  });

  it('filters the visit list and the CSV export the same way; the public list takes none of the new filters', async () => {
    const listed = await get(alice, `/api/v1/visits?subdomain=${sub}&browser=Firefox`);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.visits.map((visit: Json) => [visit.browser, visit.os])).toEqual([['Firefox', 'Linux']]);
    const newsletter = await get(alice, `/api/v1/visits?subdomain=${sub}&utm_source=newsletter&device=mobile`);
    expect(newsletter.json().data.visits.map((visit: Json) => visit.city)).toEqual(['Lyon']);
    const csv = await get(alice, `/api/v1/export?format=csv&subdomain=${sub}&utm_source=newsletter&bom=false`);
    expect(csv.statusCode).toBe(200);
    expect(csv.body.trim().split('\n')).toHaveLength(3);
    const open = await claimSubdomain(app, alice, { stats_show_visits_list: true, stats_show_ua: true });
    expect((await get(undefined, `/api/v1/visits?subdomain=${open}`)).statusCode).toBe(200);
    for (const filter of ['browser=Firefox', 'referrer_host=t.co', 'utm_campaign=x', 'device=mobile']) {
      const refused = await get(undefined, `/api/v1/visits?subdomain=${open}&${filter}`);
      expect(refused.statusCode).toBe(400);
      expect(refused.body).not.toContain('"visits"');
    }
  });
});

describe('compare=previous', () => {
  it("adds the previous period of the same length, its series point for point, and each total's change", async () => {
    const other = await claimSubdomain(app, alice);
    const link = await createLink(alice, other, 'cmp');
    const until = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
    const since = until - DAY;
    const visit = (ts: number, kind: string, visitor: string) => ({
      visit_id: v7({ msecs: ts }),
      ts: toClickHouseTime(ts),
      kind,
      owner_id: alice.id,
      subdomain: other,
      link_id: link.id,
      slug: link.slug,
      visitor_hash: visitor,
      is_bot: kind === 'bot' ? 1 : 0,
    });
    await context.analytics.client.insert({
      table: 'visits',
      values: [
        // This period: 3 visits of 3 visitors; the one before: 2 visits of 1 visitor and a bot.
        visit(until - HOUR, 'visit', 'c1'),
        visit(until - 2 * HOUR, 'visit', 'c2'),
        visit(since + 10 * 60_000, 'visit', 'c3'),
        visit(since - HOUR, 'visit', 'p1'),
        visit(since - 3 * HOUR, 'visit', 'p1'),
        visit(since - 5 * HOUR, 'bot', 'p2'),
        // Before the previous period: counted in neither.
        visit(since - DAY - HOUR, 'visit', 'old'),
      ],
      format: 'JSONEachRow',
      clickhouse_settings: deduplicatedBy(`stats-compare-${other}`),
    });
    const bounds = `since=${encodeURIComponent(new Date(since).toISOString())}&until=${encodeURIComponent(new Date(until).toISOString())}`;
    for (const granularity of ['hour', 'day']) {
      const data = await report(alice, `/api/v1/stats/subdomain/${other}?${bounds}&granularity=${granularity}&compare=previous`);
      expect(data.totals).toEqual({ visits: 3, unique_visitors: 3, bots: 0, attacks: 0 });
      expect(data.previous.range).toEqual({ since: new Date(since - DAY).toISOString(), until: new Date(since).toISOString() });
      expect(data.previous.totals).toEqual({ visits: 2, unique_visitors: 1, bots: 1, attacks: 0 });
      expect(data.change).toEqual({ visits: 0.5, unique_visitors: 2, bots: -1, attacks: null });
      expect(data.previous.series.map((point: Json) => point.visits).reduce((a: number, b: number) => a + b, 0)).toBe(2);
      if (granularity === 'hour') {
        expect(data.series).toHaveLength(24);
        expect(data.previous.series).toHaveLength(24);
        expect(data.previous.series[0].t).toBe(new Date(since - DAY).toISOString());
        // Point for point: the nth hour of the previous day beside the nth of this one.
        expect(data.previous.series[21].visits).toBe(1);
        expect(data.previous.series[23].visits).toBe(1);
      }
    }
    const link1 = await report(alice, `/api/v1/stats/link/${link.id}?${bounds}&compare=previous`);
    expect(link1.change.visits).toBe(0.5);

    // Without compare, the report is as it was; an unknown comparison is 422; the public report knows no such parameter (400).
    const plain = await report(alice, `/api/v1/stats/subdomain/${other}?${bounds}`);
    expect(plain).not.toHaveProperty('previous');
    expect(plain).not.toHaveProperty('change');
    expect((await get(alice, `/api/v1/stats/subdomain/${other}?${bounds}&compare=year`)).statusCode).toBe(422);
    const pub = await get(undefined, `/api/v1/stats?subdomain=${other}&compare=previous`);
    expect(pub.statusCode).toBe(400);
    expect(pub.json().error.details).toEqual({ unknown: ['compare'], in: 'query' });
  });
});

describe('GET /api/v1/stats/live', () => {
  it("counts the last 5 minutes' people of each subdomain and of all, from raw visits, quiet subdomains at 0", async () => {
    const carol = await createOwner(context, app);
    const [busy, quiet] = [await claimSubdomain(app, carol), await claimSubdomain(app, carol)];
    const now = Date.now();
    const visit = (ts: number, kind: string, visitor: string) => ({
      visit_id: v7({ msecs: ts }),
      ts: toClickHouseTime(ts),
      kind,
      owner_id: carol.id,
      subdomain: busy,
      visitor_hash: visitor,
      is_bot: kind === 'bot' ? 1 : 0,
    });
    await context.analytics.client.insert({
      table: 'visits',
      // Two people (one twice) and a bot in the window; one person 10 minutes ago, outside it.
      values: [
        visit(now - 60_000, 'visit', 'a'),
        visit(now - 30_000, 'visit', 'a'),
        visit(now - 90_000, 'beacon', 'b'),
        visit(now - 20_000, 'bot', 'c'),
        visit(now - 600_000, 'visit', 'd'),
      ],
      format: 'JSONEachRow',
      clickhouse_settings: deduplicatedBy(`live-${busy}`),
    });
    const all = await report(carol, '/api/v1/stats/live');
    expect(all).toMatchObject({ window_sec: 300, visitors: 2, visits: 3 });
    expect(Date.parse(all.since)).toBeGreaterThan(now - 301_000);
    expect(all.subdomains).toEqual(
      expect.arrayContaining([
        { name: busy, visitors: 2, visits: 3 },
        { name: quiet, visitors: 0, visits: 0 },
      ]),
    );
    expect(all.subdomains).toHaveLength(2);
    const one = await report(carol, `/api/v1/stats/live?subdomain=${quiet}`);
    expect(one).toMatchObject({ visitors: 0, visits: 0, subdomains: [{ name: quiet, visitors: 0, visits: 0 }] });
    expect((await get(bob, `/api/v1/stats/live?subdomain=${busy}`)).statusCode).toBe(403);
    expect((await get(carol, '/api/v1/stats/live?subdomain=nosuchsubdomain9')).statusCode).toBe(404);
    expect((await get(undefined, '/api/v1/stats/live')).statusCode).toBe(401);
    const { token } = await mintToken(app, carol.cookie, new URL(context.config.publicUrl).origin, { name: 'links-only', scopes: ['links:read'] });
    expect((await app.inject({ method: 'GET', url: '/api/v1/stats/live', headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(403);
  });
});

describe('stats refusals', () => {
  it("refuses another owner's objects with 403 not_owner", async () => {
    for (const url of [`/api/v1/stats/subdomain/${sub}`, `/api/v1/stats/link/${linkA.id}`, `/api/v1/stats/user/${alice.id}`]) {
      const response = await get(bob, url);
      expect(response.statusCode, url).toBe(403);
      expect(response.json().error.code).toBe('not_owner');
    }
  });

  it('answers 404 for unknown objects, 401 without credentials, 403 without stats:read', async () => {
    expect((await get(alice, '/api/v1/stats/subdomain/no-such-subdomain')).json().error.code).toBe('not_found');
    expect((await get(alice, '/api/v1/stats/link/l_nothing')).json().error.code).toBe('not_found');
    const anonymous = await get(undefined, `/api/v1/stats/subdomain/${sub}`);
    expect(anonymous.statusCode).toBe(401);
    const { token } = await mintToken(app, alice.cookie, new URL(context.config.publicUrl).origin, { name: 'links only', scopes: ['links:read'] });
    const narrow = await app.inject({ method: 'GET', url: `/api/v1/stats/subdomain/${sub}`, headers: { authorization: `Bearer ${token}` } });
    expect(narrow.statusCode).toBe(403);
    expect(narrow.json().error.code).toBe('forbidden');
  });

  // Rules a schema can state are 422; a reversed range counts nothing and a series past 2000 points
  // keeps its last ones (no schema could state either rule, so neither is refused).
  it('answers 422 for a bad scope, an unknown time zone or granularity; counts nothing in a reversed range; keeps the last 2000 points', async () => {
    const reversed = await get(alice, `/api/v1/stats/subdomain/${sub}?since=${encodeURIComponent(at(DAY))}&until=${encodeURIComponent(at(0))}`);
    expect(reversed.statusCode).toBe(200);
    expect(reversed.json().data.series).toEqual([]);
    const long = await get(alice, `/api/v1/stats/subdomain/${sub}?granularity=hour&since=2020-01-01T00:00:00Z`);
    expect(long.statusCode).toBe(200);
    expect(long.json().data.series.length).toBeLessThanOrEqual(2000);
    expect(Date.parse(long.json().data.range.since)).toBeGreaterThan(Date.parse('2020-01-01T00:00:00Z'));
    const cases: [string, string][] = [
      [`/api/v1/stats/team/${sub}`, 'scope'],
      [`/api/v1/stats/subdomain/${sub}?tz=Mars/Olympus`, 'tz'],
      [`/api/v1/stats/subdomain/${sub}?tz=US/Pacific-New`, 'tz'],
      [`/api/v1/stats/subdomain/${sub}?granularity=week`, 'granularity'],
      [`/api/v1/stats/subdomain/${sub}?limit=0`, 'limit'],
    ];
    for (const [url, field] of cases) {
      const response = await get(alice, url);
      expect(response.statusCode, url).toBe(422);
      expect(response.json().error.code, url).toBe('validation_error');
      expect(Object.keys(response.json().error.details), url).toContain(field);
    }
  });
});

describe('GET /api/v1/stats?subdomain= (public)', () => {
  const setPolicy = async (policy: Json) => {
    const response = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${sub}`, headers: alice.auth, payload: policy });
    expect(response.statusCode).toBe(200);
  };
  const closed = {
    stats_public: false,
    stats_show_geo: false,
    stats_show_ua: false,
    stats_show_referrer: false,
    stats_show_links: false,
    stats_publish_delay_sec: 0,
    stats_max_items: 50,
  };

  it('answers 403 forbidden unless the policy makes statistics public, and 404 for an unknown subdomain', async () => {
    await setPolicy(closed);
    const response = await get(undefined, `/api/v1/stats?subdomain=${sub}`);
    expect(response.statusCode).toBe(403);
    expect(response.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'stats_not_public' } });
    expect((await get(undefined, '/api/v1/stats?subdomain=no-such-subdomain')).statusCode).toBe(404);
  });

  it('shows totals and the series only, until a switch opens a breakdown', async () => {
    await setPolicy({ ...closed, stats_public: true });
    const data = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    expect(data.totals).toEqual({ visits: 5, unique_visitors: 3, bots: 1, attacks: 1 });
    expect(data.top).toEqual({});
    await setPolicy({ ...closed, stats_public: true, stats_show_geo: true });
    const geo = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    expect(Object.keys(geo.top).sort()).toEqual(['city', 'country']);
    await setPolicy({ ...closed, stats_public: true, stats_show_ua: true, stats_show_referrer: true });
    const ua = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    expect(Object.keys(ua.top).sort()).toEqual(['browser', 'device_type', 'os', 'referrer_host', 'utm_source']);
  });

  it('names public links by slug, never by id', async () => {
    await setPolicy({ ...closed, stats_public: true, stats_show_links: true });
    const data = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    expect(data.top.link).toEqual([
      { value: 'alpha', slug: 'alpha', visits: 3 },
      { value: 'beta', slug: 'beta', visits: 2 },
    ]);
    expect(JSON.stringify(data)).not.toContain(linkA.id);
  });

  it('counts only data older than the publish delay, and cuts every list to stats_max_items', async () => {
    // Published: what is older than base + 23 h (the first day of the fixture), not the second day.
    const delay = Math.floor((Date.now() - (base + 23 * HOUR)) / 1000);
    await setPolicy({ ...closed, stats_public: true, stats_show_geo: true, stats_publish_delay_sec: delay, stats_max_items: 1 });
    const data = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    expect(data.totals).toEqual({ visits: 3, unique_visitors: 2, bots: 0, attacks: 1 });
    expect(Date.parse(data.range.until)).toBeLessThanOrEqual(Date.now() - delay * 1000);
    expect(data.top.country).toEqual([{ value: 'FR', visits: 2 }]);
    expect(data.top.city.length).toBe(1);
    expect(data.series.length).toBe(1);
  });

  it('narrows to a public link by slug with stats_show_links, never by id, and says so', async () => {
    await setPolicy({ ...closed, stats_public: true, stats_show_geo: true, stats_show_links: true });
    const data = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}&link=beta`);
    expect(data.filters).toEqual({ link: 'beta' });
    // beta: #4 (h3) and the beacon #7 (h3) are human; the bot #5 is beside them.
    expect(data.totals).toEqual({ visits: 2, unique_visitors: 1, bots: 1, attacks: 0 });
    expect(data.top.country).toEqual([
      { value: 'FR', visits: 1 },
      { value: 'GB', visits: 1 },
    ]);
    expect(data.top.link).toEqual([{ value: 'beta', slug: 'beta', visits: 2 }]);
    expect(JSON.stringify(data)).not.toContain(linkB.id);
  });

  it('filters by a hidden dimension on the public side and is refused or ignored without revealing anything', async () => {
    await setPolicy({ ...closed, stats_public: true, stats_show_geo: true });
    const whole = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    // Links hidden: the link filter is ignored, whether the slug exists or not; the answer is the unfiltered one.
    for (const link of ['beta', 'alpha', 'no-such-link']) {
      expect(await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}&link=${link}`)).toEqual(whole);
    }
    // Links shown: an unknown slug and an id are ignored the same way (no existence oracle).
    await setPolicy({ ...closed, stats_public: true, stats_show_geo: true, stats_show_links: true });
    const open = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    expect(await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}&link=no-such-link`)).toEqual(open);
    expect(await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}&link=${linkB.id}`)).toEqual(open);
    // The owner's filters are not public ones: a country (geo hidden) or a link id is refused as an
    // unknown parameter, whether the value matches visits or not, so the refusal tells nothing either.
    await setPolicy({ ...closed, stats_public: true });
    for (const filter of ['country=FR', 'country=ZZ', `link_id=${linkB.id}`, 'browser=Chrome', 'referrer_host=google.com']) {
      const response = await get(undefined, `/api/v1/stats?subdomain=${sub}&${range}&${filter}`);
      expect(response.statusCode, filter).toBe(400);
      expect(response.json().error.code, filter).toBe('bad_request');
      expect(response.body, filter).not.toMatch(/"visits"/);
    }
  });

  it('cuts the public link breakdown after hiding the links the public list would not show', async () => {
    await setPolicy({ ...closed, stats_public: true, stats_show_geo: true, stats_show_links: true, stats_max_items: 1 });
    // Runs last: alpha (3 visits, ahead of beta) is deleted, so beta takes the one place.
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/links/${linkA.id}`, headers: alice.auth })).statusCode).toBe(200);
    const data = await report(undefined, `/api/v1/stats?subdomain=${sub}&${range}`);
    expect(data.top.link).toEqual([{ value: 'beta', slug: 'beta', visits: 2 }]);
    expect(data.top.country).toEqual([{ value: 'FR', visits: 3 }]);
  });
});
