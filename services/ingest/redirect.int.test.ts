import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { listenerClient } from '#tests/support/listener.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { buildApp } from '../app.js';
import { startTestPlatform } from '#tests/support/platform.js';

let context: Context;
let app: FastifyInstance;
/** The server's listener, as a socket reaches it (Host routing, then the short-host listener). */
let ingest: Client;
type Client = ReturnType<typeof listenerClient>;
let edgeApp: FastifyInstance;
let owner: TestOwner;
let subdomain: string;
let consumer: Consumer;
const visits: RawVisit[] = [];

beforeAll(async () => {
  let built;
  ({ context, built, app, ingest, owner, subdomain } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '1000:60', TRUST_PROXY: '10.9.0.0/16' }));
  edgeApp = built.ingest!;
  consumer = await context.messageLog.consume({
    groupId: uniqueName('redirect-test'),
    topic: TOPICS.visitsRaw,
    handler: async (messages) => void visits.push(...messages.map((message) => JSON.parse(message.value) as RawVisit)),
  });
});

afterAll(async () => {
  await consumer?.stop();
  await app?.close();
  await closeContext(context);
});

type Json = Record<string, any>;

async function createLink(payload: Json, on = subdomain): Promise<Json> {
  const response = await app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: { subdomain: on, ...payload } });
  if (response.statusCode !== 201) throw new Error(`create failed: ${response.statusCode} ${response.body}`);
  return response.json().data;
}

const visit = (
  path: string,
  options: { host?: string; method?: 'GET' | 'HEAD'; headers?: Json; remoteAddress?: string; target?: Client | FastifyInstance } = {},
) =>
  (options.target ?? ingest).inject({
    method: options.method ?? 'GET',
    url: path,
    headers: { host: options.host ?? `${subdomain}.localhost:8080`, ...(options.headers ?? {}) },
    remoteAddress: options.remoteAddress,
  });

const visitsOf = (linkId: string) => visits.filter((entry) => entry.link_id === linkId);

describe('GET /{slug} on a short host', () => {
  it('redirects with the link type, Location, Cache-Control private and the rate-limit headers', async () => {
    const link = await createLink({ target_url: 'https://example.com/landing?x=1', slug: uniqueName('go').toLowerCase().slice(0, 40) });
    const response = await visit(`/${link.slug}`);
    expect(response.statusCode).toBe(302);
    expect(response.headers.location).toBe('https://example.com/landing?x=1');
    expect(response.headers['cache-control']).toBe('private, max-age=0');
    for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
      expect(response.headers[name], name).toBeDefined();
    }
    expect(response.body).toBe('');
  });

  it('answers the same through the server listener as through the edge Fastify app, refusals included', async () => {
    const link = await createLink({ target_url: 'https://example.com/same' });
    const refusals = ['/no-such-slug-here', '/wp-login.php'];
    for (const [path, method] of [[`/${link.slug}`, 'GET'], [`/${link.slug}`, 'HEAD'], ...refusals.map((path) => [path, 'GET'] as const)] as const) {
      const [raw, routed] = [await visit(path, { method }), await visit(path, { method, target: edgeApp })];
      expect(raw.statusCode, path).toBe(routed.statusCode);
      const errorOf = (response: typeof raw) => (response.body ? { ...response.json().error, request_id: undefined } : undefined);
      expect(errorOf(raw), path).toEqual(errorOf(routed));
      const names = (response: typeof raw) =>
        Object.keys(response.headers)
          .filter((name) => !['date', 'connection', 'keep-alive'].includes(name))
          .sort();
      expect(names(raw), path).toEqual(names(routed));
      // content-length is not compared: the envelope's took_ms and server time vary.
      for (const name of ['location', 'cache-control', 'ratelimit-limit', 'content-type'])
        expect(raw.headers[name], `${path} ${name}`).toBe(routed.headers[name]);
    }
  });

  it('keeps a well-formed incoming X-Request-Id, and otherwise uses the visit id as the request id', async () => {
    const link = await createLink({ target_url: 'https://example.com/ids' });
    const own = await visit(`/${link.slug}`, { headers: { 'x-request-id': 'client-trace-0001', 'user-agent': 'ids-own' } });
    expect(own.headers['x-request-id']).toBe('client-trace-0001');
    const fresh = await visit(`/${link.slug}`, { headers: { 'x-request-id': 'bad id!', 'user-agent': 'ids-fresh' } });
    const id = fresh.headers['x-request-id'] as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    const [ownVisit, freshVisit] = await waitFor(() => {
      const [a, b] = [visits.find((entry) => entry.user_agent === 'ids-own'), visits.find((entry) => entry.user_agent === 'ids-fresh')];
      return a && b ? [a, b] : false;
    }, 10_000);
    expect(freshVisit.visit_id).toBe(id);
    expect(ownVisit.visit_id).not.toBe('client-trace-0001');
    // A refusal handed on to the Fastify app keeps the id the listener gave it.
    const refused = await visit('/unknown-slug-ids', { headers: { 'x-request-id': 'client-trace-0002', accept: 'application/json' } });
    expect(refused.headers['x-request-id']).toBe('client-trace-0002');
    expect(refused.json().meta.request_id).toBe('client-trace-0002');
  });

  it.each([301, 307, 308])('answers redirect type %i', async (redirect_type) => {
    const link = await createLink({ target_url: 'https://example.com/', redirect_type });
    expect((await visit(`/${link.slug}`)).statusCode).toBe(redirect_type);
  });

  it('answers HEAD like GET, without a body', async () => {
    const link = await createLink({ target_url: 'https://example.com/head' });
    const response = await visit(`/${link.slug}`, { method: 'HEAD' });
    expect(response.statusCode).toBe(302);
    expect(response.headers.location).toBe('https://example.com/head');
    expect(response.body).toBe('');
  });

  it('matches slugs case-insensitively and ignores the host case and a trailing dot', async () => {
    const link = await createLink({ target_url: 'https://example.com/case', slug: `case-${Math.random().toString(36).slice(2, 8)}` });
    expect((await visit(`/${link.slug.toUpperCase()}`)).statusCode).toBe(302);
    expect((await visit(`/${link.slug}`, { host: `${subdomain.toUpperCase()}.LOCALHOST.:8080` })).statusCode).toBe(302);
  });

  // The root of a short host is the subdomain's public page (services/public-page/public-page.int.test.ts).
  it('answers 404 for an unknown slug, another subdomain, or a deeper path: an HTML page for browsers, the envelope otherwise', async () => {
    const link = await createLink({ target_url: 'https://example.com/' });
    const other = await claimSubdomain(app, owner);
    for (const [path, host] of [
      ['/no-such-slug', undefined],
      [`/${link.slug}`, `${other}.localhost:8080`],
      ['/a/b', undefined],
    ] as const) {
      const json = await visit(path, { host });
      expect(json.statusCode, path).toBe(404);
      expect(json.json().error.code).toBe('not_found');
      const html = await visit(path, { host, headers: { accept: 'text/html' } });
      expect(html.statusCode).toBe(404);
      expect(html.headers['content-type']).toMatch(/^text\/html/);
    }
  });

  // Guards issue 23: the short hosts' answers followed Accept-Language only.
  it('localises its answers by ?lang= first, as the API does, then Accept-Language', async () => {
    const german = await visit('/no-such-slug?lang=de', { headers: { 'accept-language': 'fr' } });
    expect(german.statusCode).toBe(404);
    expect(german.json().error.message).toBe('Unter dieser Adresse antwortet kein Link: Er wurde gelöscht oder hat nie existiert.');
    expect(german.headers['content-language']).toBe('de');
    const page = await visit('/no-such-slug?lang=es', { headers: { accept: 'text/html' } });
    expect(page.body).toContain('Ningún enlace responde en esta dirección: se eliminó o nunca existió.');
    const link = await createLink({ target_url: 'https://example.com/', expires_at: new Date(Date.now() + 1_000).toISOString() });
    await waitFor(async () => (await visit(`/${link.slug}`)).statusCode === 410, 10_000, { message: 'the link expired' });
    expect((await visit(`/${link.slug}?lang=fr`)).headers['content-language']).toBe('fr');
    expect((await visit('/no-such-slug', { headers: { 'accept-language': 'fr' } })).headers['content-language']).toBe('fr');
  });

  // Guards issue 23: a short host answered other methods 404, as if the path did not exist.
  it('answers another method 405 with Allow: GET, HEAD, in the envelope, on a slug and on the root', async () => {
    const link = await createLink({ target_url: 'https://example.com/' });
    for (const [method, path] of [
      ['DELETE', `/${link.slug}`],
      ['POST', '/abc'],
      ['PUT', '/'],
      ['PATCH', '/no-such-slug?lang=de'],
    ] as const) {
      const answer = await ingest.inject({ method, url: path, headers: { host: `${subdomain}.localhost:8080` } });
      expect(answer.statusCode, `${method} ${path}`).toBe(405);
      expect(answer.headers.allow).toBe('GET, HEAD');
      expect(answer.headers['x-request-id']).toBeTruthy();
      expect(answer.json().error).toMatchObject({ code: 'method_not_allowed', details: { method, allow: ['GET', 'HEAD'] } });
    }
    // The link is still there: the refused method did nothing.
    expect((await visit(`/${link.slug}`)).statusCode).toBe(302);
  });

  it('answers 410 gone once the link expired', async () => {
    const link = await createLink({ target_url: 'https://example.com/', expires_at: new Date(Date.now() + 300).toISOString() });
    expect((await visit(`/${link.slug}`)).statusCode).toBe(302);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const gone = await visit(`/${link.slug}`);
    expect(gone.statusCode).toBe(410);
    expect(gone.json().error.code).toBe('gone');
  });

  // Guards issue 34: an expired link said "deleted permanently", and the page's links were relative
  // (404 on a short host) or led to raw JSON.
  it('says on its error page what happened, with links that work from a short host', async () => {
    const platform = context.config.publicUrl;
    const link = await createLink({ target_url: 'https://example.com/', expires_at: new Date(Date.now() + 300).toISOString() });
    await waitFor(async () => (await visit(`/${link.slug}`)).statusCode === 410, 5_000, { message: 'the link expired' });
    const cases = [
      [`/${link.slug}`, 410, 'This link has expired: it no longer leads anywhere.'],
      ['/never-made-here', 404, 'No link answers at this address: it was deleted, or it never existed.'],
    ] as const;
    for (const [path, status, message] of cases) {
      expect((await visit(path)).json().error.message, path).toBe(message);
      const page = await visit(path, { headers: { accept: 'text/html' } });
      expect(page.statusCode, path).toBe(status);
      expect(page.body).toContain(`<p>${message}</p>`);
      expect(page.body).not.toContain('deleted permanently');
      // Home is the subdomain's public page (this host's root); the documentation is the platform's.
      expect(page.body).toContain('<a href="/">Home</a>');
      expect(page.body).toContain(`href="${platform}/api/v1/openapi.json"`);
      expect(page.body).toContain(`href="${platform}/api/v1/errors#${status === 410 ? 'gone' : 'not_found'}"`);
    }
    const french = await visit(`/${link.slug}`, { headers: { accept: 'text/html', 'accept-language': 'fr' } });
    expect(french.body).toContain('Ce lien a expiré : il ne mène plus nulle part.');
  });

  it('is reached by Host over one server: short hosts get the edge, the API host the API', async () => {
    const link = await createLink({ target_url: 'https://example.com/served' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    const ask = (path: string, host: string) =>
      new Promise<{ status: number; location?: string; keepAlive?: string }>((resolve, reject) =>
        get({ host: '127.0.0.1', port, path, headers: { host } }, (response) => {
          response.resume();
          resolve({ status: response.statusCode ?? 0, location: response.headers.location, keepAlive: String(response.headers['keep-alive']) });
        }).once('error', reject),
      );
    // Idle connections are kept 72 s, as Fastify keeps those of the servers it creates: longer than
    // the 60 s idle timeout of common load balancers, which would otherwise reuse a closed one (502).
    expect(await ask(`/${link.slug}`, `${subdomain}.localhost:${port}`)).toEqual({
      status: 302,
      location: 'https://example.com/served',
      keepAlive: 'timeout=72',
    });
    expect((await ask(`/${link.slug}`, `localhost:${port}`)).status).toBe(404);
    expect(await ask('/api/v1/health', `localhost:${port}`)).toMatchObject({ status: 200, keepAlive: 'timeout=72' });
    expect((await ask('/api/v1/health', `${subdomain}.localhost:${port}`)).status).toBe(404);
  });
});

describe('the redirect cache follows link changes', () => {
  it('obeys an update, a slug change and a delete within a second, on this node and on another one', async () => {
    // Services run: a second app on its own context is another node sharing Redis and Postgres.
    const otherContext = SERVICES_MODE ? await createTestContext() : undefined;
    const otherBuilt = otherContext ? await buildApp(otherContext) : undefined;
    const other = otherBuilt ? listenerClient(otherBuilt.listener!) : ingest;
    try {
      const link = await createLink({ target_url: 'https://example.com/v1' });
      for (const target of [ingest, other]) expect((await visit(`/${link.slug}`, { target })).headers.location).toBe('https://example.com/v1');

      await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: owner.auth, payload: { target_url: 'https://example.com/v2' } });
      for (const target of [ingest, other]) {
        await waitFor(async () => (await visit(`/${link.slug}`, { target })).headers.location === 'https://example.com/v2', 1_000, {
          message: 'update obeyed',
        });
      }

      const moved = `${link.slug}-moved`;
      await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: owner.auth, payload: { slug: moved } });
      for (const target of [ingest, other]) {
        await waitFor(async () => (await visit(`/${link.slug}`, { target })).statusCode === 404, 1_000, { message: 'old slug gone' });
        expect((await visit(`/${moved}`, { target })).headers.location).toBe('https://example.com/v2');
      }

      await app.inject({ method: 'DELETE', url: `/api/v1/links/${link.id}`, headers: owner.auth });
      for (const target of [ingest, other]) {
        await waitFor(async () => (await visit(`/${moved}`, { target })).statusCode === 404, 1_000, { message: 'delete obeyed' });
      }
    } finally {
      if (otherContext) {
        await otherBuilt!.app.close();
        await closeContext(otherContext);
      }
    }
  });

  it('serves a link created after start (a miss loads it) and a reused slug', async () => {
    const link = await createLink({ target_url: 'https://example.com/first', slug: `reuse-${Math.random().toString(36).slice(2, 8)}` });
    expect((await visit(`/${link.slug}`)).headers.location).toBe('https://example.com/first');
    await app.inject({ method: 'DELETE', url: `/api/v1/links/${link.id}`, headers: owner.auth });
    await waitFor(async () => (await visit(`/${link.slug}`)).statusCode === 404, 1_000);
    await createLink({ target_url: 'https://example.com/second', slug: link.slug });
    await waitFor(async () => (await visit(`/${link.slug}`)).headers.location === 'https://example.com/second', 1_000);
  });
});

describe('the visit event', () => {
  it('goes to visits.raw with a UUIDv7, the link, the socket IP and the request headers', async () => {
    const link = await createLink({ target_url: 'https://example.com/' });
    await visit(`/${link.slug}?utm_source=news&x=1`, {
      remoteAddress: '203.0.113.9',
      headers: { 'user-agent': 'Mozilla/5.0 test', referer: 'https://ref.example/page', 'accept-language': 'de-DE,de;q=0.9' },
    });
    const [event] = await waitFor(() => visitsOf(link.id).length === 1 && visitsOf(link.id), 10_000);
    expect(event).toMatchObject({
      kind: 'visit',
      owner_id: owner.id,
      subdomain,
      link_id: link.id,
      slug: link.slug,
      ip_public: '203.0.113.9',
      user_agent: 'Mozilla/5.0 test',
      referrer: 'https://ref.example/page',
      accept_language: 'de-DE,de;q=0.9',
      query: 'utm_source=news&x=1',
    });
    expect(event!.visit_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Math.abs(Date.parse(event!.ts) - Date.now())).toBeLessThan(60_000);
  });

  it('ignores X-Forwarded-For from an untrusted peer: a client cannot set ip_public', async () => {
    const link = await createLink({ target_url: 'https://example.com/' });
    await visit(`/${link.slug}`, {
      remoteAddress: '198.51.100.77',
      headers: { 'x-forwarded-for': '1.2.3.4', 'x-real-ip': '1.2.3.4', forwarded: 'for=1.2.3.4' },
    });
    const [event] = await waitFor(() => visitsOf(link.id).length === 1 && visitsOf(link.id), 10_000);
    expect(event!.ip_public).toBe('198.51.100.77');
  });

  it('takes the client address from X-Forwarded-For when the peer is a trusted proxy', async () => {
    const link = await createLink({ target_url: 'https://example.com/' });
    await visit(`/${link.slug}`, { remoteAddress: '10.9.1.2', headers: { 'x-forwarded-for': '1.2.3.4, 10.9.1.3' } });
    const [event] = await waitFor(() => visitsOf(link.id).length === 1 && visitsOf(link.id), 10_000);
    expect(event!.ip_public).toBe('1.2.3.4');
  });

  it('answers attack-looking requests 404 and records them as attack visits', async () => {
    for (const path of ['/wp-login.php', '/.env', '/../../etc/passwd', "/promo?id=1' OR '1'='1", '/x?q=<script>alert(1)</script>']) {
      const marker = uniqueName('atk');
      const response = await visit(path, { headers: { 'user-agent': marker } });
      expect(response.statusCode, path).toBe(404);
      const events = await waitFor(() => {
        const found = visits.filter((entry) => entry.user_agent === marker);
        return found.length === 1 && found;
      }, 10_000);
      expect(events[0]).toMatchObject({ kind: 'attack', subdomain, link_id: '' });
    }
  });

  it('records no visit for an unknown slug', async () => {
    const marker = uniqueName('none');
    await visit('/unknown-slug-here', { headers: { 'user-agent': marker } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(visits.filter((entry) => entry.user_agent === marker)).toEqual([]);
  });
});

describe('the redirect bucket', () => {
  it('limits per IP and link, with 429, Retry-After and the headers', async () => {
    const limited = await createTestContext({ RATE_LIMIT_REDIRECT: '3:60' });
    const limitedBuilt = await buildApp(limited);
    const limitedApp = limitedBuilt.app;
    try {
      const name = await claimSubdomain(limitedApp, await createOwner(limited, limitedApp).then((o) => (owner2 = o)));
      const create = async () =>
        (
          await limitedApp.inject({
            method: 'POST',
            url: '/api/v1/links',
            headers: owner2!.auth,
            payload: { subdomain: name, target_url: 'https://example.com/' },
          })
        ).json().data;
      const [first, second] = [await create(), await create()];
      const hit = (slug: string, ip: string) =>
        visit(`/${slug}`, { host: `${name}.localhost:8080`, remoteAddress: ip, target: listenerClient(limitedBuilt.listener!) });
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await hit(first.slug, '192.0.2.10'));
      expect(answers.map((answer) => answer.statusCode)).toEqual([302, 302, 302, 429]);
      expect(answers.map((answer) => answer.headers['ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
      const refused = answers[3]!;
      expect(refused.json().error.code).toBe('rate_limited');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers.location).toBeUndefined();
      // Another link, or another address, has its own count.
      expect((await hit(second.slug, '192.0.2.10')).statusCode).toBe(302);
      expect((await hit(first.slug, '192.0.2.11')).statusCode).toBe(302);
    } finally {
      await limitedApp.close();
      await closeContext(limited);
    }
  });
});

let owner2: TestOwner | undefined;
