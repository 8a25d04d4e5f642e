import type { FastifyInstance } from 'fastify';
import type { InjectOptions } from 'light-my-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ROLES, type Role } from '#shared/config.js';
import type { Context } from '#shared/context.js';
import { defineRoute } from '#shared/http/route.js';
import { closeContext } from '#tests/support/context.js';
import { listenerClient } from '#tests/support/listener.js';
import type { TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { buildApp, type App } from './app.js';

// Each role alone, as `SERVICE_ROLES=<role>` starts it: the HTTP app of a process of that one role,
// on the test context's stores, asked the way a socket reaches it (the server's listener with the
// ingest role: Host routing first).

let context: Context;
/** Every role: seeds the owner, the subdomain and the link the single-role apps are asked about. */
let everything: FastifyInstance;
let owner: TestOwner;
let subdomain: string;
let slug: string;
/** Asks as a socket does: the server's listener (with the ingest role), or the app. */
type Client = ReturnType<typeof listenerClient>;
const alone = new Map<Role, { built: App; client: Client }>();

/** The platform's own host, and a subdomain's short host (`make run`'s BASE_DOMAIN and port). */
const API_HOST = 'localhost:8080';
const shortHost = () => `${subdomain}.localhost:8080`;

beforeAll(async () => {
  ({ context, app: everything, owner, subdomain } = await startTestPlatform());
  const created = await everything.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://example.com/roles' },
  });
  expect(created.statusCode).toBe(201);
  slug = created.json().data.slug;
  for (const role of ROLES) {
    // The stores are the context's; only the roles differ (an edge warms its link cache with the link above).
    const built = await buildApp({ ...context, config: { ...context.config, roles: [role] } });
    await built.app.ready();
    alone.set(role, { built, client: built.listener ? listenerClient(built.listener) : built.app });
  }
});

afterAll(async () => {
  await Promise.all([...alone.values()].map(({ built }) => built.app.close()));
  await everything?.close();
  await closeContext(context);
});

/** The status each role alone answers `request` with, by role. */
async function statuses(request: InjectOptions): Promise<Record<Role, number>> {
  const answers = await Promise.all(ROLES.map(async (role) => [role, (await alone.get(role)!.client.inject(request)).statusCode] as const));
  return Object.fromEntries(answers) as Record<Role, number>;
}

/** The statuses expected when only `role` serves a request: `status` from it, `otherwise` from the others. */
const only = (role: Role, status: number, otherwise = 404): Record<Role, number> =>
  Object.fromEntries(ROLES.map((each) => [each, each === role ? status : otherwise])) as Record<Role, number>;

describe('what every role answers', () => {
  it('health, naming the process roles, and metrics', async () => {
    for (const role of ROLES) {
      const { client } = alone.get(role)!;
      const health = await client.inject({ url: '/api/v1/health', headers: { host: API_HOST } });
      expect(health.statusCode, role).toBe(200);
      expect(health.json().data.roles, role).toEqual([role]);
      const metrics = await client.inject({ url: '/metrics', headers: { host: API_HOST } });
      expect(metrics.statusCode, role).toBe(200);
      expect(metrics.headers['content-type'], role).toMatch(/^text\/plain/);
      expect(metrics.body, role).toContain('http_request_duration_seconds');
    }
  });

  it('a path no route of the process serves: 404 in the error envelope', async () => {
    for (const role of ROLES) {
      const response = await alone.get(role)!.client.inject({ url: '/no/such/path', headers: { host: API_HOST, 'x-request-id': 'roles-404-check' } });
      expect(response.statusCode, role).toBe(404);
      expect(response.headers['x-request-id'], role).toBe('roles-404-check');
      expect(response.json().error, role).toMatchObject({ code: 'not_found', request_id: 'roles-404-check' });
    }
  });
});

describe('what only the api role answers', () => {
  it('the API: the others answer 404 (not 401) to a request without credentials, and 404 with them', async () => {
    expect(await statuses({ url: '/api/v1/links', headers: { host: API_HOST } })).toEqual(only('api', 401));
    expect(await statuses({ url: `/api/v1/links?subdomain=${subdomain}`, headers: { host: API_HOST, ...owner.auth } })).toEqual(only('api', 200));
    const wrong = await alone.get('enricher')!.client.inject({ url: '/api/v1/links', headers: { host: API_HOST } });
    expect(wrong.json().error.code).toBe('not_found');
  });

  it('discovery, sign-in and the legacy v0 API', async () => {
    for (const url of ['/api/v1/', '/api/v1/status', '/api/v1/openapi.json', '/api/v1/errors', '/api/v1/languages', '/api/rest.php/ip']) {
      expect(await statuses({ url, headers: { host: API_HOST } }), url).toEqual(only('api', 200));
    }
    const login = {
      method: 'POST',
      url: '/auth/login',
      headers: { host: API_HOST },
      payload: { email: 'nobody@example.com', password: 'not the password' },
    } as const;
    expect(await statuses(login)).toEqual(only('api', 401));
  });

  it('the dashboard on the platform host (503 when it is not built)', async () => {
    const answers = await statuses({ url: '/', headers: { host: API_HOST } });
    expect([200, 503]).toContain(answers.api);
    expect(answers).toEqual(only('api', answers.api));
  });

  it('lists in its index and OpenAPI document only what it serves: not the tracker, which is the edge', async () => {
    const index = await alone.get('api')!.client.inject({ url: '/api/v1/', headers: { host: API_HOST } });
    const paths = index.json().data.endpoints.map((endpoint: { path: string }) => endpoint.path);
    expect(paths).toContain('/api/v1/health');
    expect(paths).toContain('/api/v1/links');
    expect(paths.filter((path: string) => path.startsWith('/tracker'))).toEqual([]);
    expect(alone.get('api')!.built.routes.some((route) => route.path.startsWith('/tracker'))).toBe(false);
    expect(alone.get('ingest')!.built.routes.map((route) => route.path)).toEqual(expect.arrayContaining(['/api/v1/health', '/metrics', '/tracker/collect']));
    expect(alone.get('ingest')!.built.routes.some((route) => route.path.startsWith('/api/v1/links'))).toBe(false);
  });
});

describe('what only the ingest role answers', () => {
  it('a redirect on a short host', async () => {
    expect(await statuses({ url: `/${slug}`, headers: { host: shortHost() } })).toEqual(only('ingest', 302));
    const redirect = await alone.get('ingest')!.client.inject({ url: `/${slug}`, headers: { host: shortHost() } });
    expect(redirect.headers.location).toBe('https://example.com/roles');
  });

  it('the tracker, on any host', async () => {
    expect(await statuses({ url: '/tracker.js', headers: { host: API_HOST } })).toEqual(only('ingest', 200));
  });

  it('the public page of a subdomain: the edge, or an API-only process a proxy sends the short host to', async () => {
    expect(await statuses({ url: '/', headers: { host: shortHost() } })).toEqual({ api: 200, ingest: 200, enricher: 404, worker: 404 });
  });
});

describe('a process composes only what its routes use', () => {
  it('without the api and ingest roles, a route that takes credentials or counts in a rate bucket is refused at start-up', async () => {
    const common = { tags: ['test'], summary: 'test', response: z.object({}), handler: async () => ({}) };
    const scoped = defineRoute({
      ...common,
      operationId: 'testScoped',
      method: 'GET',
      path: '/test/scoped',
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: null,
    });
    const counted = defineRoute({ ...common, operationId: 'testCounted', method: 'GET', path: '/test/counted', auth: { kind: 'none' }, bucket: 'default' });
    const worker = { ...context, config: { ...context.config, roles: ['worker' as const] } };
    await expect(buildApp(worker, { extraRoutes: [scoped] })).rejects.toThrow('GET /test/scoped needs an authenticator');
    await expect(buildApp(worker, { extraRoutes: [counted] })).rejects.toThrow('GET /test/counted needs a rate limiter');
  });
});
