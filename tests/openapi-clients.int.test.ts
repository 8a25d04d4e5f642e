import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
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

/** The JSON-body schema of an operation's response, resolved through components/responses. */
function responseSchemaPointer(path: string, method: string, status: string): string {
  let response = document.paths[path]![method]!.responses[status]! as { $ref?: string };
  let at = `#/paths/${pointer(path)}/${method}/responses/${status}`;
  if (response.$ref) {
    at = response.$ref;
    response = document.components.responses![response.$ref.split('/').at(-1)!]!;
  }
  return `${at}/content/application~1json/schema`;
}

/** Validates a body against the document's schema of that answer, as a generated client's parser would. */
function matchesDocument(path: string, method: string, status: string, body: unknown): string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
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
