import { readdirSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RATE_BUCKET_NAMES, loadConfig } from '#shared/config.js';
import type { Context } from '#shared/context.js';
import { ERROR_CATALOGUE, ERROR_CODES } from '#shared/errors.js';
import type { RouteDef } from '#shared/http/route.js';
import { CLICKHOUSE_MIGRATIONS, POSTGRES_MIGRATIONS } from '#shared/paths.js';
import { closeContext, createTestContext, SERVICES_MODE } from '#tests/support/context.js';
import { buildApp } from '#services/app.js';

let context: Context;
let app: FastifyInstance;
let routes: RouteDef[];

beforeAll(async () => {
  context = await createTestContext();
  ({ app, routes } = await buildApp(context));
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

describe('GET /api/v1/health', () => {
  it('answers the envelope with every dependency ok and its latency', async () => {
    const response = await app.inject({ url: '/api/v1/health' });
    expect(response.statusCode).toBe(200);
    const { data } = response.json();
    expect(data.status).toBe('ok');
    expect(data.version).toBe('2.0.0');
    expect(Object.keys(data.checks).sort()).toEqual(['analytics', 'cache', 'database', 'jobs', 'visit_log']);
    for (const check of Object.values<{ status: string; latency_ms: number }>(data.checks)) {
      expect(check.status).toBe('ok');
      expect(check.latency_ms).toBeGreaterThanOrEqual(0);
    }
  });

  it('reports the implementation of each dependency for the mode the suite runs in', async () => {
    const { data } = (await app.inject({ url: '/api/v1/health' })).json();
    expect(data.checks.analytics.kind).toBe('chdb');
    if (SERVICES_MODE) {
      expect(data.checks.database.kind).toBe('postgres');
      expect(data.checks.visit_log.kind).toBe('kafka');
      expect(data.checks.jobs.kind).toBe('bullmq');
      expect(data.checks.cache.kind).toBe('redis');
    } else {
      expect(data.checks.database.kind).toBe('pglite');
      expect(data.checks.visit_log.kind).toBe('lmdb');
      expect(data.checks.jobs.kind).toBe('lmdb');
      expect(data.checks.cache.kind).toBe('memory');
    }
  });

  it('answers HEAD as well', async () => {
    const response = await app.inject({ method: 'HEAD', url: '/api/v1/health' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('');
  });
});

describe('GET /api/v1/status', () => {
  it('shows the schema versions: the last migration applied to Postgres and ClickHouse, and the last this build expects', async () => {
    const newest = (dir: string) =>
      readdirSync(dir)
        .filter((file) => /^\d{4}_.*\.sql$/.test(file))
        .sort()
        .at(-1)!
        .slice(0, 4);
    const { data } = (await app.inject({ url: '/api/v1/status' })).json();
    expect(data.schema).toEqual({
      database: { applied: newest(POSTGRES_MIGRATIONS), expected: newest(POSTGRES_MIGRATIONS), up_to_date: true },
      analytics: { applied: newest(CLICKHOUSE_MIGRATIONS), expected: newest(CLICKHOUSE_MIGRATIONS), up_to_date: true },
    });
  });

  it('reports version 2.0.0, features and the live configuration of all eight buckets', async () => {
    const config = loadConfig({ ...process.env, RATE_LIMIT_TRACK: '77:30', RATE_LIMIT_AUTH: '5:600' });
    const custom = (await buildApp({ ...context, config: { ...context.config, rateLimits: config.rateLimits } })).app;
    try {
      const { data } = (await custom.inject({ url: '/api/v1/status' })).json();
      expect(data.version).toBe('2.0.0');
      expect(Object.keys(data.limits.rate_limits).sort()).toEqual([...RATE_BUCKET_NAMES].sort());
      expect(data.limits.rate_limits.track).toMatchObject({ limit: 77, window_sec: 30, setting: 'RATE_LIMIT_TRACK' });
      expect(data.limits.rate_limits.auth).toMatchObject({ limit: 5, window_sec: 600, setting: 'RATE_LIMIT_AUTH' });
      expect(data.limits.rate_limits.default).toMatchObject({ limit: 600, window_sec: 60 });
      expect(data.limits.rate_limits.swarm_register).toMatchObject({ limit: 20, window_sec: 3600 });
      expect(data.features.languages).toEqual(['en', 'de', 'fr', 'es']);
      expect(data.features.embedded).toBe(!SERVICES_MODE);
    } finally {
      await custom.close();
    }
  });

  // Guards issue 23: the flag was a constant false while /api/rest.php/... answered.
  it('features.legacy_v0_api is true exactly when the legacy v0 API is served', async () => {
    const { data } = (await app.inject({ url: '/api/v1/status' })).json();
    expect(routes.some((route) => route.path.startsWith('/api/rest.php/'))).toBe(true);
    expect(data.features.legacy_v0_api).toBe(true);
    // Served: it answers its own 401 (no credentials, no subdomain), not a 404.
    expect((await app.inject({ url: '/api/rest.php/stats' })).statusCode).toBe(401);
  });

  it('counts requests', async () => {
    const before = (await app.inject({ url: '/api/v1/status' })).json().data.counters.requests_total;
    await app.inject({ url: '/api/v1/languages' });
    const after = (await app.inject({ url: '/api/v1/status' })).json().data.counters.requests_total;
    expect(after).toBeGreaterThanOrEqual(before + 2);
  });
});

describe('GET /api/v1/errors', () => {
  it('lists all 28 codes with the statuses of the spec', async () => {
    const { data } = (await app.inject({ url: '/api/v1/errors' })).json();
    expect(data.errors).toHaveLength(28);
    expect(data.errors.map((entry: { code: string }) => entry.code)).toEqual(ERROR_CODES);
    for (const entry of data.errors) {
      expect(entry.status).toBe(ERROR_CATALOGUE[entry.code as keyof typeof ERROR_CATALOGUE].status);
      expect(entry.docs).toBe(`/api/v1/errors#${entry.code}`);
    }
  });

  it('localises the messages', async () => {
    const { data } = (await app.inject({ url: '/api/v1/errors?lang=fr' })).json();
    expect(data.errors.find((entry: { code: string }) => entry.code === 'not_found').message).toBe("Rien n'a été trouvé ici.");
  });
});

describe('GET /api/v1/languages and the index', () => {
  it('lists the supported locales', async () => {
    const { data } = (await app.inject({ url: '/api/v1/languages' })).json();
    expect(data.languages.map((language: { code: string }) => language.code)).toEqual(['en', 'de', 'fr', 'es']);
    expect(data.default).toBe('en');
  });

  it('the index links the discovery documents and lists every operation', async () => {
    for (const url of ['/api/v1/', '/api/v1']) {
      const response = await app.inject({ url });
      expect(response.statusCode).toBe(200);
      const { data } = response.json();
      expect(data.links.openapi).toBe('/api/v1/openapi.json');
      expect(data.endpoints).toHaveLength(routes.length);
    }
  });
});

describe('GET /api/v1/openapi.json', () => {
  it('is served raw, validates as OpenAPI 3.1 and lists every registered route', async () => {
    const response = await app.inject({ url: '/api/v1/openapi.json' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const document = response.json();
    expect(document.ok).toBeUndefined();
    expect(document.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    for (const route of routes) {
      expect(document.paths[route.path]?.[route.method.toLowerCase()], `${route.method} ${route.path}`).toBeDefined();
    }
    const operations = Object.values<Record<string, unknown>>(document.paths).flatMap((item) => Object.keys(item));
    expect(operations).toHaveLength(routes.length);
  });

  it('documents the failure envelope and the rate-limit headers on every operation', async () => {
    const document = (await app.inject({ url: '/api/v1/openapi.json' })).json();
    expect(document.components.schemas.FailureEnvelope.properties.error.properties.code.enum).toHaveLength(28);
    // Error answers are declared once under components/responses and referenced.
    const resolve = (response: { $ref?: string } | undefined) =>
      response?.$ref ? document.components.responses[response.$ref.replace('#/components/responses/', '')] : response;
    for (const route of routes) {
      const operation = document.paths[route.path][route.method.toLowerCase()];
      expect(resolve(operation.responses['400']), `${route.operationId} documents 400`).toBeDefined();
      expect(resolve(operation.responses['500']), `${route.operationId} documents 500`).toBeDefined();
      if (route.bucket) {
        expect(resolve(operation.responses['429']).headers['Retry-After']).toBeDefined();
        const documented = [resolve(operation.responses['429']), route.response ? operation.responses[String(route.status ?? 200)] : undefined];
        for (const response of documented.filter(Boolean)) {
          for (const header of [
            'RateLimit-Limit',
            'RateLimit-Remaining',
            'RateLimit-Reset',
            'X-RateLimit-Limit',
            'X-RateLimit-Remaining',
            'X-RateLimit-Reset',
          ]) {
            expect(response.headers[header], `${route.operationId} ${header}`).toBeDefined();
          }
        }
      }
    }
    const swarm = document.paths['/agents/heartbeat'].post;
    expect(swarm.responses['501']).toBeDefined();
    expect(document.paths['/api/v1/health'].get.responses['503']).toBeDefined();
    expect(document.paths['/api/v1/status'].get.parameters.map((p: { name: string }) => p.name)).toContain('lang');
  });
});

describe('GET /metrics', () => {
  it('serves Prometheus text with default metrics and the request-duration histogram by route and status', async () => {
    await app.inject({ url: '/api/v1/languages' });
    await app.inject({ url: '/api/v1/nothing-here' });
    const response = await app.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toContain('process_resident_memory_bytes');
    expect(response.body).toMatch(/http_request_duration_seconds_bucket\{[^}]*route="\/api\/v1\/languages"[^}]*status_code="200"/);
    expect(response.body).toMatch(/http_request_duration_seconds_count\{[^}]*route="not_found"[^}]*status_code="404"/);
  });
});
