import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { openGeoLookup } from '#shared/geo.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { buildApp } from '#services/app.js';

// The v0 shapes are frozen: these snapshots pin them. A change here is a breaking change of v0.

type Json = Record<string, any>;

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;
let sub: string;

/** Fixed times and ids, so that the snapshots hold from run to run. */
const FIXTURE = [
  {
    id: '019c3a1e-0000-7000-8000-000000000001',
    at: '2026-01-15T10:00:00.000Z',
    kind: 'visit',
    ip: '203.0.113.10',
    country: 'FR',
    city: 'Paris',
    browser: 'Firefox',
    os: 'Linux',
    referrer: 'https://news.example/a',
    visitor: 'v1',
  },
  {
    id: '019c3a1e-0000-7000-8000-000000000002',
    at: '2026-01-15T10:05:00.000Z',
    kind: 'bot',
    ip: '198.51.100.20',
    country: 'US',
    city: '',
    browser: '',
    os: '',
    referrer: '',
    visitor: 'v2',
  },
  {
    id: '019c3a1e-0000-7000-8000-000000000003',
    at: '2026-01-15T10:10:00.000Z',
    kind: 'attack',
    ip: '198.51.100.21',
    country: '',
    city: '',
    browser: '',
    os: '',
    referrer: '',
    visitor: 'v3',
  },
  {
    id: '019c3a1e-0000-7000-8000-000000000004',
    at: '2026-01-15T10:15:00.000Z',
    kind: 'visit',
    ip: '203.0.113.10',
    country: 'DE',
    city: 'Berlin',
    browser: 'Chrome',
    os: 'Windows',
    referrer: '',
    visitor: 'v4',
  },
] as const;

const get = async (owner: TestOwner | undefined, url: string) => {
  const response = await app.inject({ method: 'GET', url, headers: owner?.auth ?? {} });
  return { status: response.statusCode, body: response.json<Json>() };
};
const data = async (owner: TestOwner | undefined, url: string) => {
  const { status, body } = await get(owner, url);
  if (status !== 200) throw new Error(`${url}: ${status} ${JSON.stringify(body)}`);
  expect(body.ok).toBe(true);
  return body.data;
};
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
  const link = created.json().data;
  const rows = FIXTURE.map((visit) => ({
    visit_id: visit.id,
    ts: toClickHouseTime(visit.at),
    kind: visit.kind,
    owner_id: alice.id,
    subdomain: sub,
    link_id: visit.kind === 'attack' ? '' : link.id,
    slug: visit.kind === 'attack' ? 'wp-login.php' : 'promo',
    ip_public: visit.ip,
    country: visit.country,
    city: visit.city,
    user_agent: visit.browser ? `Mozilla/5.0 ${visit.browser}` : 'curl/8.5',
    browser: visit.browser,
    os: visit.os,
    referrer: visit.referrer,
    visitor_hash: visit.visitor,
    is_bot: visit.kind === 'bot' ? 1 : 0,
    is_attack: visit.kind === 'attack' ? 1 : 0,
  }));
  await context.analytics.client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(`legacy-${sub}`) });
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

describe('legacy v0 API (owner, bearer token)', () => {
  it('GET /api/rest.php/visits', async () => {
    expect(await data(alice, '/api/rest.php/visits')).toMatchInlineSnapshot(`
      {
        "visits": [
          {
            "browser": "Chrome",
            "city": "Berlin",
            "country": "DE",
            "id": "019c3a1e-0000-7000-8000-000000000004",
            "ip": "203.0.113.10",
            "kind": "visit",
            "os": "Windows",
            "page": "promo",
            "referrer": "",
            "time": "2026-01-15T10:15:00.000Z",
            "user_agent": "Mozilla/5.0 Chrome",
          },
          {
            "browser": "Firefox",
            "city": "Paris",
            "country": "FR",
            "id": "019c3a1e-0000-7000-8000-000000000001",
            "ip": "203.0.113.10",
            "kind": "visit",
            "os": "Linux",
            "page": "promo",
            "referrer": "https://news.example/a",
            "time": "2026-01-15T10:00:00.000Z",
            "user_agent": "Mozilla/5.0 Firefox",
          },
        ],
      }
    `);
  });

  it('GET /api/rest.php/bots and /hacks', async () => {
    expect(await data(alice, '/api/rest.php/bots')).toMatchInlineSnapshot(`
      {
        "visits": [
          {
            "browser": "",
            "city": "",
            "country": "US",
            "id": "019c3a1e-0000-7000-8000-000000000002",
            "ip": "198.51.100.20",
            "kind": "bot",
            "os": "",
            "page": "promo",
            "referrer": "",
            "time": "2026-01-15T10:05:00.000Z",
            "user_agent": "curl/8.5",
          },
        ],
      }
    `);
    expect(await data(alice, '/api/rest.php/hacks')).toMatchInlineSnapshot(`
      {
        "visits": [
          {
            "browser": "",
            "city": "",
            "country": "",
            "id": "019c3a1e-0000-7000-8000-000000000003",
            "ip": "198.51.100.21",
            "kind": "attack",
            "os": "",
            "page": "wp-login.php",
            "referrer": "",
            "time": "2026-01-15T10:10:00.000Z",
            "user_agent": "curl/8.5",
          },
        ],
      }
    `);
  });

  it('GET /api/rest.php/ip/{ip}', async () => {
    expect(await data(alice, '/api/rest.php/ip/203.0.113.10?limit=1')).toMatchInlineSnapshot(`
      {
        "ip": "203.0.113.10",
        "total": 2,
        "visits": [
          {
            "browser": "Chrome",
            "city": "Berlin",
            "country": "DE",
            "id": "019c3a1e-0000-7000-8000-000000000004",
            "ip": "203.0.113.10",
            "kind": "visit",
            "os": "Windows",
            "page": "promo",
            "referrer": "",
            "time": "2026-01-15T10:15:00.000Z",
            "user_agent": "Mozilla/5.0 Chrome",
          },
        ],
      }
    `);
  });

  it('GET /api/rest.php/stats', async () => {
    expect(await data(alice, '/api/rest.php/stats')).toMatchInlineSnapshot(`
      {
        "bots": 1,
        "hacks": 1,
        "unique_visitors": 2,
        "visits": 2,
      }
    `);
    expect(await data(alice, `/api/rest.php/stats?subdomain=${sub}`)).toEqual(await data(alice, '/api/rest.php/stats'));
  });

  it('GET /api/rest.php/ip: the current visitor', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/rest.php/ip', headers: { 'user-agent': 'legacy-client/1.0' }, remoteAddress: '81.2.69.142' });
    // Where the address is comes from the GeoLite2 database shipped in the package; the shape is frozen.
    const geo = (await openGeoLookup()).lookup('81.2.69.142')!;
    expect(response.json().data).toEqual({
      ip: '81.2.69.142',
      ip_version: 4,
      user_agent: 'legacy-client/1.0',
      country: geo.country,
      region: geo.region,
      city: geo.city,
    });
    expect(geo.country).toBe('GB');
    const v6 = await app.inject({ method: 'GET', url: '/api/rest.php/ip', remoteAddress: '2001:db8::1' });
    expect(v6.json().data).toMatchObject({ ip: '2001:db8::1', ip_version: 6, country: '', user_agent: 'lightMyRequest' });
  });

  it("never answers another owner's visits", async () => {
    expect(await data(bob, '/api/rest.php/visits')).toEqual({ visits: [] });
    expect(await data(bob, '/api/rest.php/ip/203.0.113.10')).toEqual({ ip: '203.0.113.10', total: 0, visits: [] });
    expect(await data(bob, '/api/rest.php/stats')).toEqual({ visits: 0, unique_visitors: 0, bots: 0, hacks: 0 });
    await setPolicy({ stats_public: false, stats_show_visits_list: false });
    for (const url of [`/api/rest.php/visits?subdomain=${sub}`, `/api/rest.php/stats?subdomain=${sub}`]) {
      const { status, body } = await get(bob, url);
      expect(status, url).toBe(403);
      expect(body.error.code).toBe('not_owner');
    }
  });

  it('refuses a malformed IP and an unknown parameter', async () => {
    const bad = await get(alice, '/api/rest.php/ip/300.1.1.1');
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_error');
    const unknown = await get(alice, '/api/rest.php/visits?offset=3');
    expect(unknown.status).toBe(400);
  });
});

describe('legacy v0 API (public, ?subdomain=)', () => {
  it('answers 401 without credentials or subdomain, 403 while the policy hides the data', async () => {
    expect((await get(undefined, '/api/rest.php/visits')).status).toBe(401);
    await setPolicy({ stats_public: false, stats_show_visits_list: false, stats_show_ip: false });
    for (const url of [`/api/rest.php/visits?subdomain=${sub}`, `/api/rest.php/bots?subdomain=${sub}`, `/api/rest.php/stats?subdomain=${sub}`]) {
      const { status, body } = await get(undefined, url);
      expect(status, url).toBe(403);
      expect(body.error.code).toBe('forbidden');
    }
  });

  it('serves the public shapes under the policy', async () => {
    await setPolicy({
      stats_public: true,
      stats_show_visits_list: true,
      stats_show_geo: true,
      stats_show_ip: false,
      stats_show_links: true,
      stats_publish_delay_sec: 0,
    });
    expect(await data(undefined, `/api/rest.php/visits?subdomain=${sub}`)).toMatchInlineSnapshot(`
      {
        "visits": [
          {
            "city": "Berlin",
            "country": "DE",
            "kind": "visit",
            "page": "promo",
            "time": "2026-01-15T10:15:00.000Z",
          },
          {
            "city": "Paris",
            "country": "FR",
            "kind": "visit",
            "page": "promo",
            "time": "2026-01-15T10:00:00.000Z",
          },
        ],
      }
    `);
    // The path an attack attempt asked for is any visitor's text: public only when the owner opts in (issue 34).
    expect(await data(undefined, `/api/rest.php/hacks?subdomain=${sub}`)).toMatchInlineSnapshot(`
      {
        "visits": [
          {
            "city": "",
            "country": "",
            "kind": "attack",
            "time": "2026-01-15T10:10:00.000Z",
          },
        ],
      }
    `);
    await setPolicy({ stats_show_attack_paths: true });
    expect((await data(undefined, `/api/rest.php/hacks?subdomain=${sub}`)).visits[0].page).toBe('wp-login.php');
    await setPolicy({ stats_show_attack_paths: false });
    expect(await data(undefined, `/api/rest.php/stats?subdomain=${sub}`)).toMatchInlineSnapshot(`
      {
        "bots": 1,
        "hacks": 1,
        "unique_visitors": 2,
        "visits": 2,
      }
    `);
    // IPs are hidden: looking visits up by IP is refused rather than answered empty.
    const byIp = await get(undefined, `/api/rest.php/ip/203.0.113.10?subdomain=${sub}`);
    expect(byIp.status).toBe(403);
    expect(byIp.body.error.details.reason).toBe('ips_not_public');
    await setPolicy({ stats_show_ip: true, stats_max_items: 1 });
    expect(await data(undefined, `/api/rest.php/ip/203.0.113.10?subdomain=${sub}`)).toMatchInlineSnapshot(`
      {
        "ip": "203.0.113.10",
        "total": 1,
        "visits": [
          {
            "city": "Berlin",
            "country": "DE",
            "ip": "203.0.113.10",
            "kind": "visit",
            "page": "promo",
            "time": "2026-01-15T10:15:00.000Z",
          },
        ],
      }
    `);
  });
});
