import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { Context } from '#shared/context.js';
import { closeContext } from './support/context.js';
import type { TestOwner } from './support/owners.js';
import { startTestPlatform } from './support/platform.js';

/**
 * The OpenAPI document as generated clients read it (issue 34, item 6): answers that match their
 * schemas, enums that name well in every language, typed pagination meta, JSON-only errors, and
 * shared error responses. `make contract` generates the Python and TypeScript clients for real
 * (contract/clients/); these pin each property of the document on the embedded stores.
 */
let context: Context;
let app: FastifyInstance;
let owner: TestOwner;
let document: OpenApiDocument;

type Json = Record<string, unknown>;
interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: Json[]; responses: Record<string, Json> }>>;
  components: { schemas: Record<string, Json>; responses?: Record<string, Json> };
}

beforeAll(async () => {
  ({ context, app, owner } = await startTestPlatform());
  document = (await app.inject({ url: '/api/v1/openapi.json' })).json();
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

/** JSON Pointer escaping of one path segment. */
const pointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Where the JSON-body schema of an operation's response is, through components/responses when it is a reference. */
function responseSchemaPointer(path: string, method: string, status: string): string {
  const { $ref } = document.paths[path]![method]!.responses[status]! as { $ref?: string };
  return `${$ref ?? `#/paths/${pointer(path)}/${method}/responses/${status}`}/content/application~1json/schema`;
}

/** Validates a body against the document's schema of that answer, as a generated client's parser would. */
function matchesDocument(path: string, method: string, status: string, body: unknown): string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajvFormats.default(ajv);
  ajv.addSchema({ ...document, $id: 'openapi.json' });
  const validate = ajv.compile({ $ref: `openapi.json${responseSchemaPointer(path, method, status)}` });
  return validate(body) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}

const get = (url: string, headers: Record<string, string> = owner.auth) => app.inject({ method: 'GET', url, headers });

describe('answers match their documented schemas', () => {
  it('the delivery log of a webhook gives each attempt its id as a string, as WebhookDelivery says (was an integer on PGlite)', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: 'https://hooks.invalid/deliveries', events: ['link.created'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().data.id as string;
    for (let i = 0; i < 2; i += 1) {
      expect((await app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, headers: owner.auth })).statusCode).toBe(200);
    }
    const log = await get(`/api/v1/webhooks/${id}/deliveries?limit=1`);
    expect(log.statusCode, log.body).toBe(200);
    const body = log.json();
    expect(body.data.deliveries).toHaveLength(1);
    expect(typeof body.data.deliveries[0].id).toBe('string');
    expect(matchesDocument('/api/v1/webhooks/{id}/deliveries', 'get', '200', body)).toEqual([]);
    // The cursor is the same position: the next page is the older attempt, its id smaller.
    const next = (await get(`/api/v1/webhooks/${id}/deliveries?limit=1&cursor=${body.meta.next_cursor}`)).json();
    expect(next.data.deliveries).toHaveLength(1);
    expect(BigInt(next.data.deliveries[0].id)).toBeLessThan(BigInt(body.data.deliveries[0].id));
  });
});

describe('enums name well in generated clients', () => {
  it('the time zones are one TimeZone enum whose x-enum-varnames name every zone uniquely (Etc/GMT+0, Etc/GMT-0 and Etc/GMT0 collided in Python)', () => {
    for (const path of ['/api/v1/stats', '/api/v1/stats/{scope}/{id}']) {
      const tz = document.paths[path]!.get!.parameters!.find((parameter) => parameter.name === 'tz')!;
      expect(tz.schema, path).toEqual({ $ref: '#/components/schemas/TimeZone' });
    }
    const zone = document.components.schemas.TimeZone as { enum: string[]; 'x-enum-varnames': string[] };
    const names = zone['x-enum-varnames'];
    expect(names).toHaveLength(zone.enum.length);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/);
    const named = (value: string) => names[zone.enum.indexOf(value)];
    expect(['Etc/GMT+0', 'Etc/GMT-0', 'Etc/GMT0'].map(named)).toEqual(['ETC_GMT_PLUS_0', 'ETC_GMT_MINUS_0', 'ETC_GMT0']);
  });
});

describe('every list declares its pagination meta', () => {
  it('each operation taking a cursor answers a typed PageMeta: next_cursor a string or null, count, total, limit, has_more', () => {
    const pageMeta = document.components.schemas.PageMeta as { properties: Record<string, Json>; required: string[] };
    expect(pageMeta.properties.next_cursor!.type).toEqual(['string', 'null']);
    expect(pageMeta.properties.cursor!.type).toEqual(['string', 'null']);
    expect(pageMeta.properties.has_more!.type).toBe('boolean');
    expect(pageMeta.required).toEqual(expect.arrayContaining(['request_id', 'count', 'total', 'limit', 'cursor', 'next_cursor', 'has_more']));
    const lists = Object.entries(document.paths).filter(([, item]) => item.get?.parameters?.some((parameter) => parameter.name === 'cursor'));
    expect(lists.map(([path]) => path).sort()).toEqual([
      '/api/v1/admin/dead-letters',
      '/api/v1/domains',
      '/api/v1/links',
      '/api/v1/me/audit',
      '/api/v1/notifications',
      '/api/v1/subdomains',
      '/api/v1/teams',
      '/api/v1/teams/{id}/audit',
      '/api/v1/teams/{id}/invitations',
      '/api/v1/teams/{id}/members',
      '/api/v1/tokens',
      '/api/v1/users',
      '/api/v1/users/{id}/audit',
      '/api/v1/visits',
      '/api/v1/webhooks',
      '/api/v1/webhooks/{id}/deliveries',
    ]);
    for (const [path, item] of lists) {
      const schema = (item.get!.responses['200'] as { content: { 'application/json': { schema: { properties: { meta: Json } } } } }).content['application/json']
        .schema;
      // Two lists extend the page meta: notifications (unread count) and visits (raw_visits_since).
      const own: Record<string, string> = { '/api/v1/notifications': 'NotificationPageMeta', '/api/v1/visits': 'VisitPageMeta' };
      expect(schema.properties.meta.$ref, path).toBe(`#/components/schemas/${own[path] ?? 'PageMeta'}`);
    }
  });

  it('pages answered by cursor, by number and of notifications match their declared meta', async () => {
    for (const url of [
      '/api/v1/links?limit=1',
      '/api/v1/links?limit=1&page=2',
      '/api/v1/tokens?limit=1',
      '/api/v1/notifications?limit=1',
      '/api/v1/visits?limit=1',
    ]) {
      const response = await get(url, url.startsWith('/api/v1/tokens') ? { cookie: owner.cookie } : owner.auth);
      expect(response.statusCode, response.body).toBe(200);
      expect(matchesDocument(url.split('?')[0]!, 'get', '200', response.json()), url).toEqual([]);
    }
  });
});

describe('errors are the JSON envelope, declared once', () => {
  it('every error answer of every operation is a components/responses reference whose only content is application/json', () => {
    const responses = document.components.responses!;
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (Number(status) < 400) continue;
          const ref = (response as { $ref?: string }).$ref;
          expect(ref, `${method} ${path} ${status}`).toMatch(/^#\/components\/responses\/[A-Za-z]+$/);
          expect(responses[ref!.split('/').at(-1)!], ref).toBeDefined();
        }
      }
    }
    for (const [name, response] of Object.entries(responses)) {
      expect(Object.keys(response.content as Json), name).toEqual(['application/json']);
    }
    expect((responses.RateLimited!.headers as Json)['Retry-After']).toBeDefined();
  });

  it('an error answer matches its declared envelope, and a browser still gets the HTML page', async () => {
    const url = '/api/v1/links/0';
    const refused = await get(url);
    expect(refused.statusCode).toBe(422);
    expect(matchesDocument('/api/v1/links/{id}', 'get', '422', refused.json())).toEqual([]);
    const browser = await get(url, { ...owner.auth, accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(browser.statusCode).toBe(422);
    expect(browser.headers['content-type']).toMatch(/^text\/html/);
  });

  it('the document is a quarter of its old size (1.05 MB, three quarters of it repeated error answers), per operation', () => {
    // 0.29 MB when this was written; it grows with the operations (issue 39's teams and imports, issue
    // 41's filters: 94 operations and 457 KB, 4.9 KB each). Repeated error answers would weigh many
    // times that: each operation refers to the declared ones instead.
    const operations = Object.values(document.paths as Record<string, Record<string, unknown>>).flatMap((item) =>
      Object.keys(item).filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method)),
    ).length;
    expect(operations).toBeGreaterThan(90);
    expect(JSON.stringify(document).length / operations).toBeLessThan(5_500);
  });
});
