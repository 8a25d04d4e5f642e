import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '#shared/config.js';
import type { Context } from '#shared/context.js';
import { defineRoute } from '#shared/http/route.js';
import { closeContext, createTestContext, testConfig } from '#tests/support/context.js';
import { buildApp } from '../app.js';

/** Routes that exist only in tests, to reach failure paths no public route has. */
const probeRoutes = [
  defineRoute({
    operationId: 'testEcho',
    method: 'POST',
    path: '/test/echo/{id}',
    summary: 'echo',
    tags: ['test'],
    auth: { kind: 'none' },
    bucket: null,
    params: z.object({ id: z.string().regex(/^[a-z]+$/) }),
    query: z.object({ limit: z.coerce.number().int().min(1).max(100), mode: z.enum(['a', 'b']).optional() }),
    body: z.strictObject({ name: z.string().min(1).max(20), tags: z.array(z.string()).max(3).optional() }),
    response: z.object({ id: z.string(), limit: z.number(), name: z.string() }),
    status: 201,
    handler: async ({ params, query, body, respond }) => {
      respond.meta({ extra: true });
      return { id: params.id, limit: query.limit, name: body.name };
    },
  }),
  defineRoute({
    operationId: 'testBoom',
    method: 'GET',
    path: '/test/boom',
    summary: 'throws',
    tags: ['test'],
    auth: { kind: 'none' },
    bucket: null,
    response: z.never(),
    handler: async () => {
      throw new Error('secret internals exploded');
    },
  }),
  defineRoute({
    operationId: 'testUnencodable',
    method: 'GET',
    path: '/test/unencodable',
    summary: 'returns a BigInt',
    tags: ['test'],
    auth: { kind: 'none' },
    bucket: null,
    response: z.unknown(),
    handler: async () => ({ n: 10n }),
  }),
];

let context: Context;
let app: FastifyInstance;
/** The app as `make run` builds it: NODE_ENV and DEBUG unset. */
let defaults: FastifyInstance;
let development: FastifyInstance;
let debug: FastifyInstance;

beforeAll(async () => {
  context = await createTestContext();
  app = (await buildApp(context, { extraRoutes: probeRoutes })).app;
  // The stores are the context's; only what the configuration decides about answers differs.
  const withEnv = async (env: Record<string, string | undefined>) =>
    (await buildApp({ ...context, config: testConfig({ NODE_ENV: undefined, DEBUG: undefined, ...env }) }, { extraRoutes: probeRoutes })).app;
  defaults = await withEnv({});
  development = await withEnv({ NODE_ENV: 'development' });
  debug = await withEnv({ DEBUG: '1' });
});

afterAll(async () => {
  await Promise.all([app?.close(), defaults?.close(), development?.close(), debug?.close()]);
  await closeContext(context);
});

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

function expectFailure(response: { statusCode: number; headers: Record<string, unknown>; json(): any }, status: number, code: string) {
  expect(response.statusCode).toBe(status);
  const body = response.json();
  expect(body.ok).toBe(false);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.docs).toBe(`/api/v1/errors#${code}`);
  expect(body.error.request_id).toBe(response.headers['x-request-id']);
  expect(body.meta.request_id).toBe(response.headers['x-request-id']);
  expect(new Date(body.meta.server_time_utc).toISOString()).toBe(body.meta.server_time_utc);
  expect(Number.isInteger(body.meta.took_ms)).toBe(true);
  return body;
}

describe('envelope and request id', () => {
  it('wraps success data with meta and answers the declared status', async () => {
    const response = await app.inject({ method: 'POST', url: '/test/echo/abc?limit=5', payload: { name: 'x' } });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({ ok: true, data: { id: 'abc', limit: 5, name: 'x' }, meta: { extra: true } });
    expect(body.meta.request_id).toBe(response.headers['x-request-id']);
    expect(body.meta.server_time_utc).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Number.isInteger(body.meta.took_ms)).toBe(true);
  });

  it('keeps a well-formed incoming X-Request-Id and replaces a malformed one', async () => {
    const kept = await app.inject({ url: '/api/v1/languages', headers: { 'x-request-id': 'client-req-0001' } });
    expect(kept.headers['x-request-id']).toBe('client-req-0001');
    expect(kept.json().meta.request_id).toBe('client-req-0001');
    const replaced = await app.inject({ url: '/api/v1/languages', headers: { 'x-request-id': 'bad id <script>' } });
    expect(replaced.headers['x-request-id']).not.toBe('bad id <script>');
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('puts X-Request-Id on error responses too', async () => {
    const response = await app.inject({ url: '/nowhere', headers: { 'x-request-id': 'trace-abcdef12' } });
    expect(response.headers['x-request-id']).toBe('trace-abcdef12');
    expect(response.json().error.request_id).toBe('trace-abcdef12');
  });
});

describe('error codes this layer produces', () => {
  it('unknown route answers 404 not_found', async () => {
    expectFailure(await app.inject({ url: '/api/v1/does-not-exist' }), 404, 'not_found');
  });

  it('a known path with a wrong method answers 405 with an Allow header', async () => {
    const response = await app.inject({ method: 'DELETE', url: '/api/v1/health' });
    const body = expectFailure(response, 405, 'method_not_allowed');
    expect(response.headers.allow).toBe('GET, HEAD');
    expect(body.error.details.allow).toEqual(['GET', 'HEAD']);
    const post = await app.inject({ method: 'GET', url: '/agents/heartbeat' });
    expectFailure(post, 405, 'method_not_allowed');
    expect(post.headers.allow).toBe('POST');
  });

  it('405 matches parameterised paths', async () => {
    const response = await app.inject({ method: 'GET', url: '/test/echo/abc' });
    expectFailure(response, 405, 'method_not_allowed');
    expect(response.headers.allow).toBe('POST');
  });

  it('an unknown query parameter answers 400 bad_request naming it', async () => {
    const body = expectFailure(await app.inject({ url: '/api/v1/status?verbose=1' }), 400, 'bad_request');
    expect(body.error.details).toEqual({ unknown: ['verbose'], in: 'query' });
    expect(body.error.message).toContain('verbose');
  });

  it('an unknown body field answers 400 bad_request', async () => {
    const body = expectFailure(await app.inject({ method: 'POST', url: '/test/echo/abc?limit=5', payload: { name: 'x', admin: true } }), 400, 'bad_request');
    expect(body.error.details).toEqual({ unknown: ['admin'], in: 'body' });
  });

  it('a missing required parameter answers 400 missing_parameter', async () => {
    const body = expectFailure(await app.inject({ method: 'POST', url: '/test/echo/abc', payload: { name: 'x' } }), 400, 'missing_parameter');
    expect(body.error.details.missing).toEqual(['limit']);
    const noBody = expectFailure(await app.inject({ method: 'POST', url: '/test/echo/abc?limit=1' }), 400, 'missing_parameter');
    expect(noBody.error.details.missing).toEqual(['body']);
    const field = expectFailure(await app.inject({ method: 'POST', url: '/test/echo/abc?limit=1', payload: {} }), 400, 'missing_parameter');
    expect(field.error.details.missing).toEqual(['name']);
  });

  it('invalid values answer 422 validation_error mapping each field to its rule', async () => {
    const body = expectFailure(
      await app.inject({ method: 'POST', url: '/test/echo/ABC?limit=500&mode=c', payload: { name: '', tags: ['a', 'b', 'c', 'd'] } }),
      422,
      'validation_error',
    );
    expect(Object.keys(body.error.details).sort()).toEqual(['id', 'limit', 'mode', 'name', 'tags']);
    for (const rule of Object.values(body.error.details)) expect(typeof rule).toBe('string');
    expect(body.error.details.limit).toMatch(/100/);
  });

  it('a body over the limit answers 413 payload_too_large', async () => {
    const small = (await buildApp({ ...context, config: { ...context.config, bodyLimit: 1024 } }, { extraRoutes: probeRoutes })).app;
    try {
      expectFailure(await small.inject({ method: 'POST', url: '/test/echo/abc?limit=1', payload: { name: 'x'.repeat(5000) } }), 413, 'payload_too_large');
    } finally {
      await small.close();
    }
  });

  it('malformed JSON answers 400 bad_request', async () => {
    const body = expectFailure(
      await app.inject({ method: 'POST', url: '/test/echo/abc?limit=1', headers: { 'content-type': 'application/json' }, payload: '{"name": ' }),
      400,
      'bad_request',
    );
    expect(body.error.message).toMatch(/JSON/);
  });

  it('an unsupported content type answers 400 bad_request', async () => {
    expectFailure(
      await app.inject({ method: 'POST', url: '/test/echo/abc?limit=1', headers: { 'content-type': 'application/x-unknown' }, payload: 'x' }),
      400,
      'bad_request',
    );
  });

  // Guards issue 23: NODE_ENV defaulted to development, so `make run` sent exception and stack to clients.
  it('with the default configuration (NODE_ENV and DEBUG unset) a 500 carries no exception detail nor stack', async () => {
    for (const built of [defaults, app]) {
      const body = expectFailure(await built.inject({ url: '/test/boom' }), 500, 'internal_error');
      expect(body.error.details.exception).toBeUndefined();
      expect(JSON.stringify(body)).not.toContain('secret internals');
      expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
    }
  });

  it('DEBUG=1 or NODE_ENV=development, set explicitly, put the exception detail in the 500', async () => {
    for (const built of [debug, development]) {
      const body = expectFailure(await built.inject({ url: '/test/boom' }), 500, 'internal_error');
      expect(body.error.details.exception).toContain('secret internals exploded');
      expect(body.error.details.exception).toMatch(/at .*\.ts:\d+/);
    }
  });

  it('data JSON cannot encode answers 500 encode_error', async () => {
    expectFailure(await defaults.inject({ url: '/test/unencodable' }), 500, 'encode_error');
  });

  it('the named swarm routes answer 501 not_implemented', async () => {
    for (const url of ['/agents/recover', '/agents/heartbeat', '/knowledge/post']) {
      expectFailure(await app.inject({ method: 'POST', url }), 501, 'not_implemented');
    }
  });

  it('an exhausted bucket answers 429 rate_limited with Retry-After and the rate-limit headers', async () => {
    const config = loadConfig({ ...process.env, RATE_LIMIT_DEFAULT: '2:60' });
    const limited = (await buildApp({ ...context, config: { ...context.config, rateLimits: config.rateLimits } })).app;
    try {
      const ip = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.7`;
      const first = await limited.inject({ url: '/api/v1/languages', remoteAddress: ip });
      expect(first.statusCode).toBe(200);
      expect(first.headers['ratelimit-limit']).toBe('2');
      expect(first.headers['ratelimit-remaining']).toBe('1');
      expect(first.headers['x-ratelimit-limit']).toBe('2');
      expect(first.headers['x-ratelimit-remaining']).toBe('1');
      expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
      expect(Number(first.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
      expect(Number(first.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
      await limited.inject({ url: '/api/v1/languages', remoteAddress: ip });
      const third = await limited.inject({ url: '/api/v1/languages', remoteAddress: ip });
      const body = expectFailure(third, 429, 'rate_limited');
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      expect(third.headers['ratelimit-remaining']).toBe('0');
      expect(body.error.details.bucket).toBe('default');
      // Another client is not affected.
      expect((await limited.inject({ url: '/api/v1/languages', remoteAddress: '192.0.2.99' })).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('a dependency that is down makes /health answer 503 service_unavailable naming it', async () => {
    const broken = {
      ...context,
      analytics: { ...context.analytics, ping: async () => Promise.reject(new Error('connection refused')) },
    };
    const down = (await buildApp(broken)).app;
    try {
      const body = expectFailure(await down.inject({ url: '/api/v1/health' }), 503, 'service_unavailable');
      expect(body.error.details.down).toEqual(['analytics']);
      expect(body.error.details.checks.analytics).toMatchObject({ status: 'down', error: 'connection refused' });
      expect(body.error.details.checks.database.status).toBe('ok');
      expect(body.error.message).toContain('analytics');
    } finally {
      await down.close();
    }
  });
});

describe('HTML error page', () => {
  it('a browser gets an HTML page with status, explanation, request id and links', async () => {
    const response = await defaults.inject({ url: '/nowhere', headers: { accept: BROWSER_ACCEPT, 'x-request-id': 'html-page-0001' } });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.body).toContain('Error 404');
    expect(response.body).toContain('Nothing was found here.');
    expect(response.body).toContain('html-page-0001');
    // Absolute on the platform's origin, so that the same page works on a short host; Home is the dashboard.
    const platform = context.config.publicUrl;
    expect(response.body).toContain(`<a href="${platform}/">Home</a>`);
    expect(response.body).toContain(`href="${platform}/api/v1/openapi.json"`);
    expect(response.body).toContain(`href="${platform}/api/v1/errors#not_found"`);
  });

  it('the page is translated', async () => {
    const response = await app.inject({ url: '/nowhere?lang=de', headers: { accept: BROWSER_ACCEPT } });
    expect(response.body).toContain('Fehler 404');
    expect(response.body).toContain('Hier wurde nichts gefunden.');
    expect(response.body).toContain('<html lang="de">');
  });

  it('shows exception detail only with DEBUG=1 or NODE_ENV=development, never by default', async () => {
    const prod = await defaults.inject({ url: '/test/boom', headers: { accept: BROWSER_ACCEPT } });
    expect(prod.statusCode).toBe(500);
    expect(prod.body).not.toContain('secret internals');
    const dev = await development.inject({ url: '/test/boom', headers: { accept: BROWSER_ACCEPT } });
    expect(dev.body).toContain('secret internals exploded');
    const dbg = await debug.inject({ url: '/test/boom', headers: { accept: BROWSER_ACCEPT } });
    expect(dbg.body).toContain('secret internals exploded');
  });

  it('escapes what it echoes', async () => {
    const response = await app.inject({ url: '/nowhere', headers: { accept: BROWSER_ACCEPT, 'x-request-id': 'abc<script>x' } });
    expect(response.body).not.toContain('<script>x');
  });

  it('API clients keep getting JSON', async () => {
    const response = await app.inject({ url: '/nowhere', headers: { accept: '*/*' } });
    expect(response.headers['content-type']).toMatch(/^application\/json/);
  });
});

describe('languages', () => {
  it.each([
    ['de', 'Hier wurde nichts gefunden.'],
    ['fr', "Rien n'a été trouvé ici."],
    ['es', 'No se encontró nada aquí.'],
    ['en', 'Nothing was found here.'],
  ])('?lang=%s localises the message', async (lang, message) => {
    const response = await app.inject({ url: `/nowhere?lang=${lang}` });
    expect(response.json().error.message).toBe(message);
    expect(response.headers['content-language']).toBe(lang);
  });

  it('falls back to Accept-Language, and ?lang= wins over it', async () => {
    const header = await app.inject({ url: '/nowhere', headers: { 'accept-language': 'fr-CH, fr;q=0.9, en;q=0.8' } });
    expect(header.json().error.message).toBe("Rien n'a été trouvé ici.");
    const both = await app.inject({ url: '/nowhere?lang=es', headers: { 'accept-language': 'fr' } });
    expect(both.json().error.message).toBe('No se encontró nada aquí.');
  });

  it('an unsupported locale falls back to English; a malformed tag is a validation error', async () => {
    const unsupported = await app.inject({ url: '/api/v1/languages?lang=ja' });
    expect(unsupported.statusCode).toBe(200);
    expect(unsupported.headers['content-language']).toBe('en');
    const malformed = await app.inject({ url: '/api/v1/languages?lang=<x>' });
    expectFailure(malformed, 422, 'validation_error');
  });

  // Guards issue 23: the rule of a custom message (here the shared ?lang= rule) stayed English.
  it("a custom rule message is in the caller's language too", async () => {
    const german = await app.inject({ url: '/api/v1/languages?lang=<x>', headers: { 'accept-language': 'de' } });
    expect(expectFailure(german, 422, 'validation_error').error.details.lang).toBe('muss ein Sprach-Tag wie en, de oder fr-CA sein');
    const english = await app.inject({ url: '/api/v1/languages?lang=<x>' });
    expect(expectFailure(english, 422, 'validation_error').error.details.lang).toBe('must be a language tag such as en, de or fr-CA');
  });

  it('validation rules are localised too', async () => {
    const response = await app.inject({ method: 'POST', url: '/test/echo/abc?limit=500&lang=de', payload: { name: 'x' } });
    const body = expectFailure(response, 422, 'validation_error');
    expect(body.error.message).toBe('Einige Parameter sind ungültig.');
    expect(body.error.details.limit).toMatch(/Zu groß/);
  });
});

describe('test configuration', () => {
  it('uses the embedded stores unless service URLs are set', () => {
    const config = testConfig({ DATABASE_URL: '', CLICKHOUSE_URL: '', KAFKA_BROKERS: '', REDIS_URL: '' });
    expect(config.database.kind).toBe('pglite');
    expect(config.analytics.kind).toBe('chdb');
    expect(config.messageLog.kind).toBe('lmdb');
    expect(config.redisUrl).toBeUndefined();
  });
});

describe('requests Fastify refuses before routing', () => {
  it('a malformed URL answers 400 bad_request in the envelope with a request id', async () => {
    const response = await app.inject({ url: '/api/v1/%' });
    const body = expectFailure(response, 400, 'bad_request');
    expect(body.error.request_id).toBeTruthy();
  });
});

describe('methods no route declares', () => {
  it('an extension method on a known path answers 405 with Allow, even without a body', async () => {
    const response = await app.inject({ method: 'QUERY' as 'GET', url: '/metrics' });
    expectFailure(response, 405, 'method_not_allowed');
    expect(response.headers.allow).toBe('GET, HEAD');
  });

  it('OPTIONS on a known path answers 405 with Allow', async () => {
    const response = await app.inject({ method: 'OPTIONS', url: '/api/v1/status' });
    expectFailure(response, 405, 'method_not_allowed');
    expect(response.headers.allow).toBe('GET, HEAD');
  });
});
