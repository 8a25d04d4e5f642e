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
let link: Json;
/** The fixture's visit ids, newest first. */
let ids: string[];

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Two days ago, to the minute: the fixture's visits follow it, one every 10 minutes. */
const base = Math.floor((Date.now() - 48 * HOUR) / MINUTE) * MINUTE;

interface Row {
  visit_id: string;
  ts: string;
  kind: string;
  owner_id: string;
  subdomain: string;
  link_id: string;
  slug: string;
  ip_public: string;
  country: string;
  user_agent: string;
  browser: string;
  referrer: string;
  is_bot: number;
  version: number;
  timezone?: string;
  consent_analytics?: number;
}

async function insert(rows: Row[], token: string) {
  await context.analytics.client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(token) });
}

const visitRow = (owner: TestOwner, subdomain: string, at: number, fields: Partial<Row> = {}): Row => ({
  visit_id: v7({ msecs: at }),
  ts: toClickHouseTime(at),
  kind: 'visit',
  owner_id: owner.id,
  subdomain,
  link_id: link.id,
  slug: link.slug,
  ip_public: '203.0.113.9',
  country: 'FR',
  user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0',
  browser: 'Firefox',
  referrer: 'https://news.example/item',
  is_bot: 0,
  version: 0,
  ...fields,
});

const get = (owner: TestOwner | undefined, url: string) => app.inject({ method: 'GET', url, headers: owner?.auth ?? {} });
async function page(owner: TestOwner | undefined, url: string): Promise<{ visits: Json[]; meta: Json }> {
  const response = await get(owner, url);
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  const body = response.json();
  return { visits: body.data.visits, meta: body.meta };
}
async function walk(owner: TestOwner | undefined, url: string, between?: () => Promise<void>): Promise<Json[]> {
  const seen: Json[] = [];
  let cursor: string | null = null;
  do {
    const { visits, meta } = await page(owner, `${url}${cursor ? `&cursor=${cursor}` : ''}`);
    seen.push(...visits);
    cursor = meta.next_cursor;
    if (between) await between();
  } while (cursor);
  return seen;
}
const setPolicy = async (policy: Json) => {
  const response = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${sub}`, headers: alice.auth, payload: policy });
  expect(response.statusCode).toBe(200);
};

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  sub = await claimSubdomain(app, alice);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: alice.auth,
    payload: { subdomain: sub, slug: 'promo', target_url: 'https://example.com/' },
  });
  link = created.json().data;
  // Seven visits, ten minutes apart: #2 a bot from the US, #4 an attack attempt (no link), #6 from Germany.
  const rows = Array.from({ length: 7 }, (_, i) =>
    visitRow(alice, sub, base + i * 10 * MINUTE, {
      ...(i === 2 ? { kind: 'bot', is_bot: 1, country: 'US', browser: '' } : {}),
      ...(i === 4 ? { kind: 'attack', link_id: '', slug: 'wp-login.php' } : {}),
      ...(i === 6 ? { country: 'DE' } : {}),
    }),
  );
  await insert(rows, `visits-fixture-${sub}`);
  // The beacon's signals for #5 arrive as a newer version of it: listed once, with them.
  await insert([{ ...rows[5]!, version: 3, timezone: 'Europe/Paris', consent_analytics: 1 }], `visits-merge-${sub}`);
  ids = rows.map((row) => row.visit_id).reverse();
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

describe('GET /api/v1/visits (owner)', () => {
  it("lists the caller's visits newest first, once each, with every column and the spec's meta", async () => {
    const { visits, meta } = await page(alice, `/api/v1/visits?subdomain=${sub}`);
    expect(visits.map((visit) => visit.visit_id)).toEqual(ids);
    expect(meta).toMatchObject({ count: 7, total: 7, limit: 50, cursor: null, next_cursor: null, has_more: false });
    const newest = visits[0]!;
    expect(newest).toMatchObject({
      kind: 'visit',
      subdomain: sub,
      link_id: link.id,
      slug: 'promo',
      ip_public: '203.0.113.9',
      country: 'DE',
      is_bot: false,
      browser: 'Firefox',
    });
    expect(newest.ts).toBe(new Date(base + 60 * MINUTE).toISOString());
    expect(newest).not.toHaveProperty('visitor_hash');
    const merged = visits[1]!;
    expect(merged).toMatchObject({ timezone: 'Europe/Paris', consent_analytics: true });
  });

  it('filters by link, kind, bot flag, country and time', async () => {
    const ofLink = await page(alice, `/api/v1/visits?link_id=${link.id}`);
    expect(ofLink.visits.length).toBe(6);
    expect((await page(alice, `/api/v1/visits?subdomain=${sub}&kind=attack`)).visits.map((visit) => visit.slug)).toEqual(['wp-login.php']);
    const bots = await page(alice, `/api/v1/visits?subdomain=${sub}&is_bot=true`);
    expect(bots.visits.map((visit) => visit.visit_id)).toEqual([ids[4]]);
    expect(bots.meta.total).toBe(1);
    expect((await page(alice, `/api/v1/visits?subdomain=${sub}&is_bot=false`)).meta.total).toBe(6);
    expect((await page(alice, `/api/v1/visits?subdomain=${sub}&country=de`)).visits.map((visit) => visit.visit_id)).toEqual([ids[0]]);
    const since = encodeURIComponent(new Date(base + 20 * MINUTE).toISOString());
    const until = encodeURIComponent(new Date(base + 40 * MINUTE).toISOString());
    const window = await page(alice, `/api/v1/visits?subdomain=${sub}&since=${since}&until=${until}`);
    expect(window.visits.map((visit) => visit.visit_id)).toEqual([ids[3], ids[4]]);
    expect(window.meta.total).toBe(2);
  });

  it('walks every visit exactly once with cursors, whatever arrives meanwhile', async () => {
    let added = 0;
    const seen = await walk(alice, `/api/v1/visits?subdomain=${sub}&limit=2&until=${encodeURIComponent(new Date(base + 2 * HOUR).toISOString())}`, async () => {
      added += 1;
      await insert([visitRow(alice, sub, base + 61 * MINUTE + added)], `visits-arrival-${sub}-${added}`);
    });
    expect(seen.map((visit) => visit.visit_id).slice(-7)).toEqual(ids);
    expect(new Set(seen.map((visit) => visit.visit_id)).size).toBe(seen.length);
  });

  it('pages by number for human tables', async () => {
    const since = encodeURIComponent(new Date(base).toISOString());
    const until = encodeURIComponent(new Date(base + 61 * MINUTE).toISOString());
    const second = await page(alice, `/api/v1/visits?subdomain=${sub}&since=${since}&until=${until}&limit=2&page=2`);
    expect(second.visits.map((visit) => visit.visit_id)).toEqual(ids.slice(2, 4));
    expect(second.meta).toMatchObject({ page: 2, count: 2, total: 7, has_more: true });
  });

  // A cursor outside the documented pattern is 422; page wins over a cursor; a reversed range counts nothing.
  it('refuses a foreign cursor and unknown filters; page wins over cursor; reversed bounds list nothing', async () => {
    const bad = await get(alice, `/api/v1/visits?subdomain=${sub}&cursor=bm9wZQ`);
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.details).toHaveProperty('cursor');
    const both = await get(alice, `/api/v1/visits?subdomain=${sub}&cursor=v2.1.0000000000000000&page=1`);
    expect(both.statusCode).toBe(200);
    expect(both.json().meta.page).toBe(1);
    const reversed = await get(
      alice,
      `/api/v1/visits?since=${encodeURIComponent(new Date(base + HOUR).toISOString())}&until=${encodeURIComponent(new Date(base).toISOString())}`,
    );
    expect(reversed.statusCode).toBe(200);
    expect(reversed.json().data.visits).toEqual([]);
    const unknown = await get(alice, '/api/v1/visits?colour=red');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.code).toBe('bad_request');
    const country = await get(alice, '/api/v1/visits?country=France');
    expect(country.statusCode).toBe(422);
  });

  it("answers 403 not_owner for another owner's hidden list and 403 forbidden without stats:read", async () => {
    await setPolicy({ stats_show_visits_list: false });
    const foreign = await get(bob, `/api/v1/visits?subdomain=${sub}`);
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.code).toBe('not_owner');
    expect((await page(bob, '/api/v1/visits')).visits).toEqual([]);
    const { token } = await mintToken(app, alice.cookie, new URL(context.config.publicUrl).origin, { name: 'links only', scopes: ['links:read'] });
    const narrow = await app.inject({ method: 'GET', url: '/api/v1/visits', headers: { authorization: `Bearer ${token}` } });
    expect(narrow.statusCode).toBe(403);
    expect(narrow.json().error.code).toBe('forbidden');
  });
  // Guards issue 34: another owner's link_id answered 200 with an empty list, while the export of
  // the same filter answered 403 not_owner; both now follow the API's rule for other owners' objects.
  it("answers another owner's link_id 403 not_owner and an unknown one 404 not_found, like the export", async () => {
    const unknown = 'l_AAAAAAAAAAAAAAAA';
    for (const url of [`/api/v1/visits?link_id=${link.id}`, `/api/v1/export?format=json&link_id=${link.id}`]) {
      const foreign = await get(bob, url);
      expect(foreign.statusCode, url).toBe(403);
      expect(foreign.json().error).toMatchObject({ code: 'not_owner', details: { link: link.id } });
    }
    for (const url of [`/api/v1/visits?link_id=${unknown}`, `/api/v1/export?format=json&link_id=${unknown}`]) {
      const missing = await get(bob, url);
      expect(missing.statusCode, url).toBe(404);
      expect(missing.json().error).toMatchObject({ code: 'not_found', details: { link: unknown } });
    }
    // With the owner's own subdomain named too, another owner's link is still refused on both.
    const bobs = await claimSubdomain(app, bob);
    for (const url of [`/api/v1/visits?subdomain=${bobs}&link_id=${link.id}`, `/api/v1/export?format=json&subdomain=${bobs}&link_id=${link.id}`]) {
      expect((await get(bob, url)).json().error?.code, url).toBe('not_owner');
    }
    // The owner still lists the link's visits.
    expect((await page(alice, `/api/v1/visits?link_id=${link.id}`)).visits.length).toBeGreaterThan(0);
  });
});

describe('GET /api/v1/visits?subdomain= (public)', () => {
  const closed = {
    stats_show_visits_list: false,
    stats_show_ip: false,
    stats_show_internal_ip: false,
    stats_show_geo: false,
    stats_show_ua: false,
    stats_show_referrer: false,
    stats_show_links: false,
    stats_publish_delay_sec: 0,
    stats_max_items: 50,
  };

  it('needs a subdomain without credentials, and answers 403 forbidden while the list is hidden', async () => {
    expect((await get(undefined, '/api/v1/visits')).statusCode).toBe(401);
    await setPolicy(closed);
    const hidden = await get(undefined, `/api/v1/visits?subdomain=${sub}`);
    expect(hidden.statusCode).toBe(403);
    expect(hidden.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'visits_not_public' } });
  });

  it('shows the time and kind only, then each switch its columns, never ids or the owner', async () => {
    await setPolicy({ ...closed, stats_show_visits_list: true });
    const bare = await page(undefined, `/api/v1/visits?subdomain=${sub}`);
    expect(bare.visits.length).toBeGreaterThanOrEqual(7);
    for (const visit of bare.visits) expect(Object.keys(visit).sort()).toEqual(['kind', 'ts']);
    await setPolicy({ ...closed, stats_show_visits_list: true, stats_show_ip: true, stats_show_links: true });
    const open = await page(undefined, `/api/v1/visits?subdomain=${sub}&kind=visit`);
    for (const visit of open.visits) expect(Object.keys(visit).sort()).toEqual(['ip_public', 'kind', 'slug', 'ts']);
    const text = JSON.stringify(open);
    for (const secret of [link.id, alice.id, ...ids]) expect(text).not.toContain(secret);
    // Another owner sees the same public list.
    expect((await page(bob, `/api/v1/visits?subdomain=${sub}&kind=visit`)).visits).toEqual(open.visits);
  });

  it('publishes country, region and city under stats_show_geo, never the coordinates', async () => {
    // A subdomain of its own, so that the other tests' counts stay as they are.
    const located = await claimSubdomain(app, alice);
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/v1/subdomains/${located}`,
      headers: alice.auth,
      payload: { ...closed, stats_show_visits_list: true, stats_show_geo: true },
    });
    expect(patched.statusCode).toBe(200);
    const at = base + 5 * MINUTE;
    await insert(
      [{ ...visitRow(alice, located, at), region: 'Auvergne-Rhone-Alpes', city: 'Lyon', latitude: 45.7578, longitude: 4.832 } as Row],
      `geo-${located}`,
    );
    const open = await page(undefined, `/api/v1/visits?subdomain=${located}`);
    expect(open.visits).toEqual([{ ts: new Date(at).toISOString(), kind: 'visit', country: 'FR', region: 'Auvergne-Rhone-Alpes', city: 'Lyon' }]);
    const text = JSON.stringify(open);
    for (const coordinate of ['latitude', 'longitude', '45.75', '4.83']) expect(text).not.toContain(coordinate);
    // The owner still sees them.
    const own = await page(alice, `/api/v1/visits?subdomain=${located}`);
    expect(own.visits[0]).toMatchObject({ latitude: expect.closeTo(45.7578, 3), longitude: expect.closeTo(4.832, 3) });
  });

  it('publishes only visits older than the delay, at most stats_max_items, walked within that window', async () => {
    // Published: visits up to base + 30 min (#0 to #3).
    const delay = Math.floor((Date.now() - (base + 30 * MINUTE)) / 1000);
    await setPolicy({ ...closed, stats_show_visits_list: true, stats_publish_delay_sec: delay, stats_max_items: 3 });
    const first = await page(undefined, `/api/v1/visits?subdomain=${sub}&limit=2`);
    expect(first.meta).toMatchObject({ count: 2, total: 3, has_more: true });
    const all = await walk(undefined, `/api/v1/visits?subdomain=${sub}&limit=2`);
    expect(all.map((visit) => visit.ts)).toEqual([30, 20, 10].map((minutes) => new Date(base + minutes * MINUTE).toISOString()));
  });

  it('takes since, until and kind only', async () => {
    await setPolicy({ ...closed, stats_show_visits_list: true });
    for (const filter of ['country=FR', `link_id=${link.id}`, 'is_bot=true']) {
      const response = await get(undefined, `/api/v1/visits?subdomain=${sub}&${filter}`);
      expect(response.statusCode, filter).toBe(400);
      expect(response.json().error.code).toBe('bad_request');
    }
    const bots = await page(undefined, `/api/v1/visits?subdomain=${sub}&kind=bot`);
    expect(bots.visits).toEqual([{ ts: new Date(base + 20 * MINUTE).toISOString(), kind: 'bot' }]);
  });
});
