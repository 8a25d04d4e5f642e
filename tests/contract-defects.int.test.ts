import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Context } from '#shared/context.js';
import { selectRows } from '#shared/analytics/analytics.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import { closeContext } from './support/context.js';
import type { listenerClient } from './support/listener.js';
import type { TestOwner } from './support/owners.js';
import { startTestPlatform } from './support/platform.js';

/**
 * The defects Schemathesis and the security probe of issue 23 found from outside, each asked as a
 * client would (each failed on the main of before: a 500, a 404, a schema-valid request refused or
 * a document looser than the server). `make contract` is the broad check; these pin each case.
 */
let context: Context;
let app: FastifyInstance;
let edge: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let subdomain: string;

beforeAll(async () => {
  ({ context, app, ingest: edge, owner, subdomain } = await startTestPlatform());
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const get = (url: string) => app.inject({ method: 'GET', url, headers: owner.auth });
const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, headers: owner.auth, payload: payload as never });

describe('what storage cannot hold is refused at the edge, naming the field', () => {
  it('a NUL in a JSON string: 422 validation_error naming the field, nothing stored (was a 500 from Postgres)', async () => {
    const response = await post('/api/v1/links', { subdomain, target_url: 'https://example.com/', title: 'a\u0000b' });
    expect(response.statusCode).toBe(422);
    expect(response.json().error).toMatchObject({ code: 'validation_error', details: { title: expect.stringContaining('NUL') } });
    expect((await get(`/api/v1/links?subdomain=${subdomain}&q=example.com`)).json().data.links).toEqual([]);
  });

  it('a NUL in a query value and in a login body: 422, not 500', async () => {
    const stats = await get('/api/v1/stats?subdomain=%00abc');
    expect(stats.statusCode).toBe(422);
    expect(stats.json().error.details).toHaveProperty('subdomain');
    const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'a\u0000@example.com', password: 'x' } });
    expect(login.statusCode).toBe(422);
    expect(login.json().error.details).toHaveProperty('email');
  });

  it('an unpaired UTF-16 surrogate: 422, not stored as U+FFFD', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: { ...owner.auth, 'content-type': 'application/json' },
      payload: `{"subdomain":"${subdomain}","target_url":"https://example.com/","title":"x\\ud800y"}`,
    });
    expect(response.statusCode).toBe(422);
    expect(Object.keys(response.json().error.details)).toEqual(['title']);
  });

  it('a malformed id is no 500: the user report of "0" is not found, a link id of the wrong shape 422', async () => {
    const staff = await startStaffToken();
    const user = await app.inject({ method: 'GET', url: '/api/v1/stats/user/0', headers: staff });
    expect(user.statusCode).toBe(404);
    const link = await get('/api/v1/links/0');
    expect(link.statusCode).toBe(422);
    expect(link.json().error.details).toHaveProperty('id');
  });
});

/** A staff token with the admin scope (the stats of another user need it). */
async function startStaffToken() {
  const { createOwner } = await import('./support/owners.js');
  const staff = await createOwner(context, app, 'staff');
  const minted = await app.inject({
    method: 'POST',
    url: '/api/v1/tokens',
    headers: { cookie: staff.cookie, origin: new URL(context.config.publicUrl).origin },
    payload: { name: 'staff', scopes: ['stats:read', 'admin'] },
  });
  return { authorization: `Bearer ${minted.json().data.token}` };
}

describe('schema-valid requests are accepted', () => {
  it('an IPv6 address on the legacy ip path, and a cursor of the documented pattern past the end', async () => {
    expect((await get('/api/rest.php/ip/::ffff:192.0.2.1')).statusCode).toBe(200);
    const links = await get('/api/v1/links?cursor=s1.0');
    expect(links.statusCode).toBe(200);
    expect(links.json().data.links).toEqual([]);
    expect((await get('/api/v1/visits?cursor=v2.0.0000000000000000')).statusCode).toBe(200);
  });

  it('page with cursor: the page wins; an inverted range counts nothing; an hourly series past 2000 points keeps its last', async () => {
    const paged = await get('/api/v1/links?cursor=s1.5&page=1');
    expect(paged.statusCode).toBe(200);
    expect(paged.json().meta.page).toBe(1);
    const inverted = await get(`/api/v1/stats/subdomain/${subdomain}?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z`);
    expect(inverted.statusCode).toBe(200);
    expect(inverted.json().data.series).toEqual([]);
    const long = await get(`/api/v1/stats/subdomain/${subdomain}?since=2020-01-01T00:00:00Z&until=2026-01-01T00:00:00Z&granularity=hour`);
    expect(long.statusCode).toBe(200);
    expect(long.json().data.series).toHaveLength(1999);
    expect(long.json().data.range.since).toBe('2025-10-09T17:00:00.000Z');
  });

  it('a token expiring in the past is created expired; a webhook whose host does not resolve is accepted', async () => {
    const token = await app.inject({
      method: 'POST',
      url: '/api/v1/tokens',
      headers: { cookie: owner.cookie, origin: new URL(context.config.publicUrl).origin },
      payload: { name: 'past', scopes: ['links:read'], expires_at: '2020-01-01T00:00:00Z' },
    });
    expect(token.statusCode).toBe(201);
    expect(token.json().data.state).toBe('expired');
    const webhook = await post('/api/v1/webhooks', { url: 'https://hooks.invalid/linktrack', events: ['visit.new'] });
    expect(webhook.statusCode).toBe(201);
    await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${webhook.json().data.id}`, headers: owner.auth });
  });

  it('every time zone the document offers is one ClickHouse loads (US/Pacific-New was a 500)', async () => {
    const document = (await get('/api/v1/openapi.json')).json();
    const tz = document.paths['/api/v1/stats/{scope}/{id}'].get.parameters.find((parameter: { name: string }) => parameter.name === 'tz');
    expect(tz.schema.$ref).toBe('#/components/schemas/TimeZone');
    const offered: string[] = document.components.schemas.TimeZone.enum;
    expect(offered).toEqual(expect.arrayContaining(['UTC', 'Europe/Paris', 'Asia/Kolkata', 'Asia/Calcutta']));
    expect(offered).not.toContain('US/Pacific-New');
    // One query naming every zone: ClickHouse refuses the whole query if it cannot load one.
    const zones = offered.map((zone, index) => `toString(toTimeZone(toDateTime(0), '${zone}')) AS z${index}`);
    const [row] = await selectRows<Record<string, string>>(context.analytics.client, `SELECT ${zones.join(', ')}`, {});
    expect(Object.keys(row!)).toHaveLength(offered.length);
    expect((await get(`/api/v1/stats/subdomain/${subdomain}?tz=US/Pacific-New`)).statusCode).toBe(422);
  });
});

describe('every collection pages alike', () => {
  /** Walks a collection with limit 2 from its first page, following next_cursor. */
  async function walk(path: string, key: string, headers: Record<string, string>) {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 20; pages += 1) {
      const url: string = `${path}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const response = await app.inject({ method: 'GET', url, headers });
      expect(response.statusCode, response.body).toBe(200);
      const { data, meta } = response.json<{ data: Record<string, { id?: string; name?: string }[]>; meta: { next_cursor: string | null; total: number } }>();
      expect(meta).toMatchObject({ limit: 2, count: data[key]!.length, has_more: meta.next_cursor !== null });
      seen.push(...data[key]!.map((item) => (item.id ?? item.name)!));
      cursor = meta.next_cursor;
      if (!cursor) return { seen, total: meta.total };
    }
    throw new Error('the walk did not end');
  }

  it('tokens, webhooks and subdomains take limit and cursor and give the cursor meta (they refused limit before)', async () => {
    const { createOwner, claimSubdomain } = await import('./support/owners.js');
    const someone = await createOwner(context, app);
    const session = { cookie: someone.cookie, origin: new URL(context.config.publicUrl).origin };
    for (let i = 0; i < 3; i += 1) {
      await app.inject({ method: 'POST', url: '/api/v1/tokens', headers: session, payload: { name: `t${i}`, scopes: ['links:read'] } });
      await claimSubdomain(app, someone);
      await app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: someone.auth,
        payload: { url: `https://hooks.invalid/${i}`, events: ['visit.new'] },
      });
    }
    for (const [path, key, headers] of [
      ['/api/v1/tokens', 'tokens', session],
      ['/api/v1/webhooks', 'webhooks', someone.auth],
      ['/api/v1/subdomains', 'subdomains', someone.auth],
    ] as const) {
      const { seen, total } = await walk(path, key, headers);
      expect(seen.length, path).toBe(total);
      expect(new Set(seen).size, path).toBe(total);
      expect(total, path).toBeGreaterThanOrEqual(3);
    }
    const past = await app.inject({ method: 'GET', url: '/api/v1/subdomains?cursor=n1.zzz', headers: someone.auth });
    expect(past.json().data.subdomains).toEqual([]);
  });
});

describe('a path declared as it is answers for itself', () => {
  it('PATCH, DELETE or OPTIONS on /api/v1/links/bulk and /api/v1/links/export.csv is 405 with their own Allow, not the methods of /api/v1/links/{id}', async () => {
    for (const [method, url, allow] of [
      ['PATCH', '/api/v1/links/bulk', 'POST'],
      ['DELETE', '/api/v1/links/bulk', 'POST'],
      ['OPTIONS', '/api/v1/links/bulk', 'POST'],
      ['PATCH', '/api/v1/links/export.csv', 'GET, HEAD'],
      ['OPTIONS', '/api/v1/links/export.csv', 'GET, HEAD'],
    ] as const) {
      const response = await app.inject({ method, url, headers: owner.auth });
      expect(response.statusCode, `${method} ${url}`).toBe(405);
      expect(response.headers.allow, `${method} ${url}`).toBe(allow);
      expect(response.json().error.code).toBe('method_not_allowed');
    }
    // The parametric route still answers its own paths.
    expect((await app.inject({ method: 'PATCH', url: '/api/v1/links/l_0000000000000000', headers: owner.auth, payload: { title: 'x' } })).statusCode).toBe(404);
    expect((await app.inject({ method: 'OPTIONS', url: '/api/v1/links/l_0000000000000000', headers: owner.auth })).headers.allow).toBe(
      'DELETE, GET, HEAD, PATCH',
    );
  });
});

describe('the tracker paths keep the contract', () => {
  it('an undeclared method on a beacon path is 405 with Allow, on any host (was 404)', async () => {
    for (const [method, url, allow] of [
      ['TRACE', '/tracker.js', 'GET, HEAD'],
      ['GET', '/tracker/consent', 'POST'],
      ['DELETE', '/tracker/collect', 'GET, HEAD, POST'],
    ] as const) {
      const response = await edge.inject({ method, url, headers: { host: 'localhost:8080' } });
      expect(response.statusCode, `${method} ${url}`).toBe(405);
      expect(response.headers.allow).toBe(allow);
      expect(response.json().error.code).toBe('method_not_allowed');
    }
  });

  it('the document declares what the tracker answers: the script, 403 without consent, GET collect data as JSON content', async () => {
    const document = (await get('/api/v1/openapi.json')).json();
    expect(document.paths['/tracker.js'].get.responses['200'].content['application/javascript; charset=utf-8']).toBeDefined();
    expect(document.paths['/tracker/collect'].post.responses['403']).toBeDefined();
    const data = document.paths['/tracker/collect'].get.parameters.find((parameter: { name: string }) => parameter.name === 'data');
    expect(data.content['application/json'].schema.$ref).toBe('#/components/schemas/TrackerSignals');
    const export200 = document.paths['/api/v1/export'].get.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(export200)).toContain('visits');
  });
});

describe('the document is as strict as the server and chains its resources', () => {
  it('PATCH bodies need a field (minProperties), cursors and ids have their patterns, free text says no NUL', async () => {
    const document = (await get('/api/v1/openapi.json')).json();
    const patchLink = document.paths['/api/v1/links/{id}'].patch;
    expect(patchLink.requestBody.content['application/json'].schema.minProperties).toBe(1);
    const cursor = document.paths['/api/v1/links'].get.parameters.find((parameter: { name: string }) => parameter.name === 'cursor');
    expect(new RegExp(cursor.schema.pattern).test('s1.42')).toBe(true);
    expect(new RegExp(cursor.schema.pattern).test('bm9wZQ')).toBe(false);
    const q = document.paths['/api/v1/links'].get.parameters.find((parameter: { name: string }) => parameter.name === 'q');
    expect(new RegExp(q.schema.pattern).test('a\u0000')).toBe(false);
  });

  it('has OpenAPI links from a created link, token and webhook to the operations that take its id', async () => {
    const document = (await get('/api/v1/openapi.json')).json();
    const linkLinks = document.paths['/api/v1/links'].post.responses['201'].links;
    expect(linkLinks.GetLink).toEqual({ operationId: 'getLink', parameters: { id: '$response.body#/data/id' } });
    expect(Object.keys(linkLinks)).toEqual(expect.arrayContaining(['UpdateLink', 'DeleteLink', 'DuplicateLink', 'LinkQr']));
    expect(document.paths['/api/v1/tokens'].post.responses['201'].links.RevokeToken.operationId).toBe('revokeToken');
    expect(Object.keys(document.paths['/api/v1/webhooks'].post.responses['201'].links)).toContain('TestWebhook');
  });
});

// Guards issue 34: docs/api.md said 422 for a webhook address the SSRF guard refuses and for a reserved
// subdomain name, while the server answers 403 and 409. Each status is read off the server, then found in
// the sentence of the guide that describes it.
describe('the API guide states the statuses the server answers', () => {
  const guide = readFileSync(join(PROJECT_ROOT, 'docs/api.md'), 'utf8');
  /** The guide's bullet that starts with `lead` (up to the next bullet), with its line breaks folded. */
  const bullet = (lead: string) => {
    const start = guide.indexOf(lead);
    expect(start, lead).toBeGreaterThanOrEqual(0);
    const end = guide.indexOf('\n- ', start + lead.length);
    return guide.slice(start, end < 0 ? undefined : end).replace(/\s+/g, ' ');
  };

  it('a webhook address the SSRF guard refuses: the status and reason the guide names', async () => {
    const response = await post('/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['visit.new'] });
    const { code, details } = response.json().error as { code: string; details: { reason: string } };
    expect(bullet('- **SSRF guard**')).toContain(`${response.statusCode} \`${code}\`, \`details.reason\` \`${details.reason}\``);
  });

  it('a reserved subdomain name: the status and code the guide names', async () => {
    const response = await post('/api/v1/subdomains', { name: 'www' });
    const { code } = response.json().error as { code: string };
    expect(bullet('- **Subdomains**')).toContain(`are reserved (${response.statusCode} \`${code}\``);
  });
});
