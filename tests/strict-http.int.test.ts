import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '#services/app.js';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from './support/context.js';
import { rawExchange as rawExchangeWith, type RawAnswer } from './support/raw-http.js';
import { claimSubdomain, createOwner, type TestOwner } from './support/owners.js';
import { TEST_PASSWORD } from './support/accounts.js';

// Issue 34, items 4 and 7 and the last line of item 10: what the platform does with requests that
// are not quite HTTP or not quite JSON, met over a real socket (every role of one process: Host
// routing, the short hosts' listener, the tracker and the API on one server).

let context: Context;
let app: FastifyInstance;
let port: number;
let owner: TestOwner;
let subdomain: string;
let errorLines: ReturnType<typeof vi.spyOn>;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_AUTH: '1000:900' });
  app = (await buildApp(context)).app;
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
  owner = await createOwner(context, app);
  subdomain = await claimSubdomain(app, owner);
  errorLines = vi.spyOn(context.log, 'error');
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

type Answer = RawAnswer;

/** Sends raw bytes (the head as written: repeated or missing headers stay so) and reads the answer until the server closes. */
const rawExchange = (bytes: string, to = port): Promise<Answer> => rawExchangeWith(to, bytes);

/** A request over HTTP with fetch (Host and framing as a client writes them). */
async function send(path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual', ...init });
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  return { status: response.status, headers, body: await response.text() };
}

function expectEnvelope(answer: Answer, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
  const id = answer.headers['x-request-id'];
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  const body = JSON.parse(answer.body);
  expect(body).toMatchObject({ ok: false, error: { code, request_id: id, docs: `/api/v1/errors#${code}` }, meta: { request_id: id } });
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  return body;
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const json = (body: string, contentType = 'application/json') => ({ method: 'POST', headers: { 'content-type': contentType }, body });

describe('deeply nested JSON is refused before anything walks it (item 4)', () => {
  const targets = (): { path: string; headers: Record<string, string> }[] => [
    { path: '/auth/login', headers: {} },
    { path: '/tracker/consent', headers: {} },
    { path: '/api/v1/links', headers: owner.auth },
    { path: '/api/v1/tokens', headers: { cookie: owner.cookie, origin: `http://127.0.0.1:${port}` } },
  ];

  for (const depth of [3_000, 100_000]) {
    it(`depth ${depth} answers 400 bad_request with the envelope on every JSON route, and logs no error`, async () => {
      errorLines.mockClear();
      for (const { path, headers } of targets()) {
        const answer = await send(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: `{"email":${nested(depth)}}` });
        const body = expectEnvelope(answer, 400, 'bad_request');
        expect(body.error.details).toEqual({ body: 'nested too deeply', max_depth: 32 });
        expect(body.error.message).toBe('The JSON nests deeper than 32 levels.');
      }
      // The tracker's text/plain JSON (no preflight) and its GET form's `data` parameter too.
      expectEnvelope(await send('/tracker/consent', json(nested(depth), 'text/plain')), 400, 'bad_request');
      expect(errorLines).not.toHaveBeenCalled();
    });
  }

  it("the GET beacon's `data` nested 3 000 deep answers 400, not a 500", async () => {
    errorLines.mockClear();
    const body = expectEnvelope(await send(`/tracker/collect?token=x&data=${nested(3_000)}`), 400, 'bad_request');
    expect(body.error.details).toEqual({ data: 'nested too deeply', max_depth: 32 });
    expect(errorLines).not.toHaveBeenCalled();
  });

  it('nesting within the limit is parsed and validated as before', async () => {
    // 32 levels: parsed, then refused by the route's own rules (a 422 naming the field, not the depth).
    const deep = await send('/auth/login', json(`{"email":${nested(31)},"password":"x"}`));
    expect(deep.status).toBe(422);
    expect(JSON.parse(deep.body).error.details).toHaveProperty('email');
    // Brackets inside strings are text, not nesting.
    const text = await send('/auth/login', json(JSON.stringify({ email: owner.email, password: '['.repeat(100) })));
    expectEnvelope(text, 401, 'unauthorized');
    const signedIn = await send('/auth/login', json(JSON.stringify({ email: owner.email, password: TEST_PASSWORD })));
    expect(signedIn.status).toBe(200);
  });
});

describe('strict Host and request line (item 7)', () => {
  const health = (head: string) => rawExchange(`GET /api/v1/health HTTP/1.1\r\n${head}Connection: close\r\n\r\n`);

  it('a request with two Host headers answers 400 with the envelope, on the API, the tracker and a short host', async () => {
    for (const path of ['/api/v1/health', '/tracker.js', '/some-slug', '/']) {
      for (const hosts of [
        ['localhost', 'evil.example'],
        [`${subdomain}.localhost`, `${subdomain}.localhost`],
      ]) {
        const answer = await rawExchange(`GET ${path} HTTP/1.1\r\nHost: ${hosts[0]}\r\nhost: ${hosts[1]}\r\nConnection: close\r\n\r\n`);
        const body = expectEnvelope(answer, 400, 'bad_request');
        expect(body.error.details).toEqual({ host: 'repeated' });
      }
    }
  });

  it('a Host with userinfo, a path or a bad port answers 400 and never reaches a short host', async () => {
    for (const host of [
      `${subdomain}.localhost@evil.example`,
      `evil.example@${subdomain}.localhost`,
      `${subdomain}.localhost:80@evil.example`,
      `${subdomain}.localhost/x`,
      `${subdomain}.localhost:99999`,
      `${subdomain}.localhost:`,
      'a b',
    ]) {
      const answer = await rawExchange(`GET / HTTP/1.1\r\nHost: ${host}\r\nAccept: text/html;q=0.1, application/json\r\nConnection: close\r\n\r\n`);
      const body = expectEnvelope(answer, 400, 'bad_request');
      expect(body.error.details).toEqual({ host: 'malformed' });
    }
  });

  it('an HTTP/1.1 request without Host answers 400 with the envelope and X-Request-Id (not Node’s bare 400)', async () => {
    const body = expectEnvelope(await health(''), 400, 'bad_request');
    expect(body.error.details).toEqual({ host: 'missing' });
    expect(body.error.message).toBe('The request needs exactly one Host header naming a host (and port), nothing else.');
  });

  it('a process without the ingest role (Fastify’s own server) answers a missing or repeated Host with the envelope too', async () => {
    const apiContext = await createTestContext({ SERVICE_ROLES: 'api' });
    const apiApp = (await buildApp(apiContext)).app;
    try {
      await apiApp.listen({ port: 0, host: '127.0.0.1' });
      const apiPort = (apiApp.server.address() as { port: number }).port;
      const missing = await rawExchange('GET /api/v1/health HTTP/1.1\r\nConnection: close\r\n\r\n', apiPort);
      expect(expectEnvelope(missing, 400, 'bad_request').error.details).toEqual({ host: 'missing' });
      const repeated = await rawExchange('GET / HTTP/1.1\r\nHost: localhost\r\nHost: x.localhost\r\nConnection: close\r\n\r\n', apiPort);
      expect(expectEnvelope(repeated, 400, 'bad_request').error.details).toEqual({ host: 'repeated' });
    } finally {
      await apiApp.close();
      await closeContext(apiContext);
    }
  });

  it('an HTTP/1.0 request without Host is served as the platform’s own host', async () => {
    const answer = await rawExchange('GET /api/v1/health HTTP/1.0\r\n\r\n');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ ok: true });
  });

  it('a request line without an HTTP version (HTTP/0.9 `GET /`) answers 400, not the dashboard', async () => {
    const answer = await rawExchange('GET /\r\n\r\n');
    const body = expectEnvelope(answer, 400, 'bad_request');
    expect(body.error.details).toEqual({ request: 'http_version', version: '0.9' });
  });

  it('well-formed hosts still route: a name with a port, an IPv4 address, an IPv6 literal, a short host', async () => {
    for (const host of ['localhost', 'localhost:8080', '127.0.0.1:8080', '[::1]:8080', 'LOCALHOST.']) {
      expect((await health(`Host: ${host}\r\n`)).status).toBe(200);
    }
    const page = await rawExchange(`GET /no-such-slug HTTP/1.1\r\nHost: ${subdomain}.localhost:8080\r\nConnection: close\r\n\r\n`);
    expect(page.status).toBe(404);
  });
});

describe('integer query parameters take decimal digits only (item 7)', () => {
  it('hexadecimal, padded, exponent, signed and fractional values answer 422 validation_error', async () => {
    for (const value of ['0x10', '%205', '5%20', '1e1', '+5', '5.0', '']) {
      const body = expectEnvelope(await send(`/api/v1/links?limit=${value}`, { headers: owner.auth }), 422, 'validation_error');
      expect(body.error.details).toEqual({ limit: 'must be an integer in decimal digits (0-9) only' });
    }
  });

  it('every integer query parameter is held to it: page, stats limit, the legacy limit, QR size and margin', async () => {
    const links = await send('/api/v1/links', {
      ...json(JSON.stringify({ subdomain, target_url: 'https://example.com/' })),
      headers: { ...owner.auth, 'content-type': 'application/json' },
    });
    const id = JSON.parse(links.body).data.id as string;
    for (const [path, field] of [
      ['/api/v1/links?page=0x2', 'page'],
      [`/api/v1/stats/subdomain/${subdomain}?limit=0x10`, 'limit'],
      ['/api/rest.php/visits?limit=0x10', 'limit'],
      [`/api/v1/links/${id}/qr?size=0x100`, 'size'],
      [`/api/v1/links/${id}/qr?margin=%204`, 'margin'],
    ] as const) {
      const body = expectEnvelope(await send(path, { headers: owner.auth }), 422, 'validation_error');
      expect(body.error.details).toEqual({ [field]: 'must be an integer in decimal digits (0-9) only' });
    }
  });

  it('the document states exactly that: every integer query parameter is `type: integer`, never nullable', async () => {
    const document = JSON.parse((await send('/api/v1/openapi.json')).body) as {
      paths: Record<string, Record<string, { parameters?: { in: string; name: string; schema: { type: unknown } }[] }>>;
    };
    const integers = Object.values(document.paths)
      .flatMap((operations) => Object.values(operations))
      .flatMap((operation) => operation.parameters ?? [])
      .filter((parameter) => parameter.in === 'query' && ['limit', 'page', 'size', 'margin'].includes(parameter.name));
    expect(integers.length).toBeGreaterThan(20);
    for (const parameter of integers) expect(parameter.schema.type, parameter.name).toBe('integer');
    // An empty value is no integer either (Number('') was 0).
    const links = await send('/api/v1/links', {
      ...json(JSON.stringify({ subdomain, target_url: 'https://example.com/' })),
      headers: { ...owner.auth, 'content-type': 'application/json' },
    });
    const empty = await send(`/api/v1/links/${JSON.parse(links.body).data.id as string}/qr?margin=`, { headers: owner.auth });
    expect(expectEnvelope(empty, 422, 'validation_error').error.details).toEqual({ margin: 'must be an integer in decimal digits (0-9) only' });
  });

  it('plain digits are read as before; the rule is translated', async () => {
    const answer = await send('/api/v1/links?limit=16', { headers: owner.auth });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).meta.limit).toBe(16);
    const german = await send('/api/v1/links?limit=0x10&lang=de', { headers: owner.auth });
    expect(JSON.parse(german.body).error.details).toEqual({ limit: 'muss eine ganze Zahl nur aus Dezimalziffern (0-9) sein' });
  });
});

describe('a JSON body must be UTF-8 (item 7)', () => {
  it('charset=utf-7 (and any charset but UTF-8) answers 400 with the envelope, on the API and the tracker', async () => {
    for (const [path, type] of [
      ['/auth/login', 'application/json; charset=utf-7'],
      ['/auth/login', 'application/json;charset="ISO-8859-1"'],
      ['/tracker/consent', 'application/json; charset=UTF-16'],
      ['/tracker/consent', 'text/plain; charset=utf-7'],
    ] as const) {
      const body = expectEnvelope(await send(path, json(JSON.stringify({ email: owner.email, password: TEST_PASSWORD }), type)), 400, 'bad_request');
      expect(body.error.details).toMatchObject({ content_type: 'unsupported charset' });
    }
  });

  it('UTF-8 in any spelling, or no charset, is accepted', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'application/json; Charset="UTF-8"', 'application/json;charset=utf8']) {
      const answer = await send('/auth/login', json(JSON.stringify({ email: owner.email, password: TEST_PASSWORD }), type));
      expect(answer.status).toBe(200);
    }
  });
});

describe('answers to authenticated requests are not cached (item 10)', () => {
  it('a bearer token’s and a session’s answers, success or failure, carry Cache-Control: no-store', async () => {
    expect((await send('/api/v1/links', { headers: owner.auth })).headers['cache-control']).toBe('no-store');
    expect((await send('/api/v1/tokens', { headers: { cookie: owner.cookie } })).headers['cache-control']).toBe('no-store');
    const refused = await send('/api/v1/links', { headers: { authorization: 'Bearer svc_u_nosuchtoken' } });
    expect(refused.status).toBe(401);
    expect(refused.headers['cache-control']).toBe('no-store');
  });

  it('the sign-in endpoints answer no-store, signed in or not', async () => {
    const failed = await send('/auth/login', json(JSON.stringify({ email: owner.email, password: 'wrong password!' })));
    expect(failed.status).toBe(401);
    expect(failed.headers['cache-control']).toBe('no-store');
    expect((await send('/auth/login', json(JSON.stringify({ email: owner.email, password: TEST_PASSWORD })))).headers['cache-control']).toBe('no-store');
  });

  it('anonymous answers and the redirects keep their own caching', async () => {
    expect((await send('/api/v1/health')).headers['cache-control']).toBeUndefined();
    const link = await send('/api/v1/links', {
      ...json(JSON.stringify({ subdomain, target_url: 'https://example.com/cached' })),
      headers: { ...owner.auth, 'content-type': 'application/json' },
    });
    const slug = JSON.parse(link.body).data.slug as string;
    const redirect = await rawExchange(`GET /${slug} HTTP/1.1\r\nHost: ${subdomain}.localhost\r\nCookie: ${owner.cookie}\r\nConnection: close\r\n\r\n`);
    expect(redirect.status).toBe(302);
    expect(redirect.headers['cache-control']).toBe('private, max-age=0');
  });
});
