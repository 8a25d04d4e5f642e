import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, uniqueName } from '#tests/support/context.js';
import { createOwner, type TestOwner } from '#tests/support/owners.js';
import type { listenerClient } from '#tests/support/listener.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { linksRepository } from '#shared/links/links.repository.js';
import { publishLinkNotice, toRedirectLink } from '#shared/links/link-notices.js';
import { PASSWORD_CHECKS } from './protected.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { closeContext as closeOther } from '#tests/support/context.js';

// Issue 40, protected links: the password and the expiry fallback, through the API and the edge's
// server listener (Host routing and the short-host listener, as a socket meets them).

let context: Context;
let app: FastifyInstance;
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let subdomain: string;
let consumer: Consumer;
const visits: RawVisit[] = [];

beforeAll(async () => {
  ({ context, app, ingest, owner, subdomain } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '1000:60' }));
  consumer = await context.messageLog.consume({
    groupId: uniqueName('protected-test'),
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

const api = (method: 'POST' | 'PATCH' | 'GET', url: string, payload?: Json, auth = owner.auth) => app.inject({ method, url, headers: auth, payload });

async function createLink(payload: Json): Promise<Json> {
  const response = await api('POST', '/api/v1/links', { subdomain, ...payload });
  if (response.statusCode !== 201) throw new Error(`create failed: ${response.statusCode} ${response.body}`);
  return response.json().data;
}

const visit = (path: string, headers: Json = {}, method: 'GET' | 'HEAD' = 'GET') =>
  ingest.inject({ method, url: path, headers: { host: `${subdomain}.localhost:8080`, ...headers } });

/** The password form, posted as a browser posts it (same origin, urlencoded). */
const post = (
  path: string,
  fields: Record<string, string>,
  options: { headers?: Json; remoteAddress?: string; client?: typeof ingest; host?: string } = {},
) => {
  const host = options.host ?? `${subdomain}.localhost:8080`;
  return (options.client ?? ingest).inject({
    method: 'POST',
    url: path,
    remoteAddress: options.remoteAddress,
    headers: { host, origin: `http://${host}`, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', ...(options.headers ?? {}) },
    payload: new URLSearchParams(fields).toString(),
  });
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const visitsWith = (marker: string) => visits.filter((entry) => entry.user_agent === marker);

describe('password in the API', () => {
  it('is write-only: the link says has_password, never the password or its hash; null removes it', async () => {
    const link = await createLink({ target_url: 'https://example.com/', password: 'open sesame' });
    expect(link.has_password).toBe(true);
    const read = await api('GET', `/api/v1/links/${link.id}`);
    expect(read.json().data.has_password).toBe(true);
    for (const answer of [JSON.stringify(link), read.body]) {
      expect(answer).not.toContain('open sesame');
      expect(answer).not.toContain('scrypt');
      expect(answer).not.toContain('"password"');
    }
    const cleared = await api('PATCH', `/api/v1/links/${link.id}`, { password: null });
    expect(cleared.json().data.has_password).toBe(false);
    expect((await createLink({ target_url: 'https://example.com/' })).has_password).toBe(false);
  });

  it('is stored as a salted scrypt hash, not the password: two links with one password have different hashes', async () => {
    const [a, b] = [
      await createLink({ target_url: 'https://example.com/', password: 'same-password' }),
      await createLink({ target_url: 'https://example.com/', password: 'same-password' }),
    ];
    const rows = await Promise.all([a, b].map((link) => linksRepository(context.db.db).findById(link.id)));
    for (const row of rows) {
      expect(row!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
      expect(row!.password_hash).not.toContain('same-password');
    }
    expect(rows[0]!.password_hash).not.toBe(rows[1]!.password_hash);
  });

  it("refuses a password too short or too long (422), and on another owner's link (403)", async () => {
    expect((await api('POST', '/api/v1/links', { subdomain, target_url: 'https://example.com/', password: 'abc' })).statusCode).toBe(422);
    const link = await createLink({ target_url: 'https://example.com/' });
    expect((await api('PATCH', `/api/v1/links/${link.id}`, { password: 'x'.repeat(129) })).statusCode).toBe(422);
    const other = await createOwner(context, app);
    const refused = await api('PATCH', `/api/v1/links/${link.id}`, { password: 'taken over' }, other.auth);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('not_owner');
    expect((await api('GET', `/api/v1/links/${link.id}`)).json().data.has_password).toBe(false);
  });
});

describe('a protected link at the edge', () => {
  it('answers GET and HEAD with its password page, no script, no Location, and counts no visit', async () => {
    const link = await createLink({ target_url: 'https://example.com/secret', password: 'open sesame' });
    const marker = uniqueName('page');
    const page = await visit(`/${link.slug}?utm_source=mail`, { 'user-agent': marker, accept: 'text/html' });
    expect(page.statusCode).toBe(200);
    expect(page.headers.location).toBeUndefined();
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toContain("script-src 'none'");
    // The post's redirect leaves for the target's origin, which the page does not name.
    expect(page.headers['content-security-policy']).toContain("form-action 'self' https: http:");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).not.toContain('<script');
    expect(page.body).not.toContain('example.com/secret');
    expect(page.body).toContain('<label for="password">Password</label>');
    expect(page.body).toContain(`action="/${link.slug}?utm_source=mail"`);
    const head = await visit(`/${link.slug}`, { 'user-agent': marker }, 'HEAD');
    expect(head.statusCode).toBe(200);
    expect(head.headers.location).toBeUndefined();
    expect(head.body).toBe('');
    await sleep(300);
    expect(visitsWith(marker)).toEqual([]);
  });

  it("speaks the visitor's language, as the public page does", async () => {
    const link = await createLink({ target_url: 'https://example.com/', password: 'open sesame' });
    for (const [language, label] of [
      ['de-DE,de;q=0.9', 'Passwort'],
      ['fr', 'Mot de passe'],
      ['es', 'Contraseña'],
    ] as const) {
      const page = await visit(`/${link.slug}`, { 'accept-language': language });
      expect(page.headers['content-language']).toBe(language.slice(0, 2));
      expect(page.body).toContain(`<label for="password">${label}</label>`);
    }
  });

  it('answers a wrong password 403 with the page and its error, counting no visit; the right one 302 to the target, counting one', async () => {
    const link = await createLink({ target_url: 'https://example.com/secret', password: 'open sesame' });
    const marker = uniqueName('try');
    const wrong = await post(`/${link.slug}`, { password: 'open barley', referrer: 'https://ref.example/' }, { headers: { 'user-agent': marker } });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.headers.location).toBeUndefined();
    expect(wrong.body).toContain('role="alert"');
    expect(wrong.body).toContain('aria-invalid="true"');
    expect(wrong.body).toContain('value="https://ref.example/"');
    await sleep(300);
    expect(visitsWith(marker)).toEqual([]);
    const right = await post(
      `/${link.slug}?utm_source=mail`,
      { password: 'open sesame', referrer: 'https://ref.example/' },
      { headers: { 'user-agent': marker } },
    );
    expect(right.statusCode).toBe(302);
    expect(right.headers.location).toBe('https://example.com/secret');
    expect(right.headers['set-cookie']).toBeUndefined();
    const [event] = await waitFor(() => visitsWith(marker).length === 1 && visitsWith(marker), 10_000);
    expect(event).toMatchObject({ kind: 'visit', link_id: link.id, referrer: 'https://ref.example/', query: 'utm_source=mail' });
    // No cookie: the next visit asks again.
    expect((await visit(`/${link.slug}`)).statusCode).toBe(200);
  });

  it('refuses a form posted from another origin (403), without trying the password', async () => {
    const link = await createLink({ target_url: 'https://example.com/', password: 'open sesame' });
    const refused = await post(`/${link.slug}`, { password: 'open sesame' }, { headers: { origin: 'https://evil.example' } });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers.location).toBeUndefined();
  });

  it('answers POST on a link without password as before: 405 with Allow: GET, HEAD', async () => {
    const link = await createLink({ target_url: 'https://example.com/' });
    const answer = await post(`/${link.slug}`, { password: 'anything' }, { headers: { accept: 'application/json' } });
    expect(answer.statusCode).toBe(405);
    expect(answer.headers.allow).toBe('GET, HEAD');
  });

  it('sends an expired protected link with a fallback to its fallback, with or without the password', async () => {
    const link = await createLink({
      target_url: 'https://example.com/',
      password: 'open sesame',
      fallback_url: 'https://example.org/ended',
      expires_at: new Date(Date.now() + 300).toISOString(),
    });
    await sleep(400);
    expect((await visit(`/${link.slug}`)).headers.location).toBe('https://example.org/ended');
    expect((await post(`/${link.slug}`, { password: 'open sesame' })).headers.location).toBe('https://example.org/ended');
  });
});

describe('password tries', () => {
  it('are checked one at a time per node, a few queued: a burst from many addresses beyond the queue gets 429, none waits unbounded', async () => {
    const link = await createLink({ target_url: 'https://example.com/burst', password: 'open sesame' });
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        post(`/${link.slug}`, { password: 'open sesame' }, { remoteAddress: `198.51.100.${index + 1}`, headers: { accept: 'application/json' } }),
      ),
    );
    const through = answers.filter((answer) => answer.statusCode === 302);
    const busy = answers.filter((answer) => answer.statusCode === 429);
    expect(through.length + busy.length).toBe(60);
    expect(through.length).toBeGreaterThanOrEqual(PASSWORD_CHECKS.running + PASSWORD_CHECKS.waiting);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy[0]!.json().error.details).toMatchObject({ reason: 'password_checks_busy' });
    expect(Number(busy[0]!.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('are refused beyond the auth bucket per address and link: a burst gets 429, the right password too; another address still tries', async () => {
    const limited = await startTestPlatform({ RATE_LIMIT_AUTH: '5:900' });
    try {
      const created = await limited.app.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: limited.owner.auth,
        payload: { subdomain: limited.subdomain, target_url: 'https://example.com/', password: 'correct horse' },
      });
      const link = created.json().data;
      const host = `${limited.subdomain}.localhost:8080`;
      const tries = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          post(`/${link.slug}`, { password: `guess-${index}` }, { client: limited.ingest, host, remoteAddress: '192.0.2.50' }),
        ),
      );
      const statuses = tries.map((answer) => answer.statusCode).sort();
      expect(statuses.filter((status) => status === 403)).toHaveLength(5);
      expect(statuses.filter((status) => status === 429)).toHaveLength(7);
      const limitedAnswer = tries.find((answer) => answer.statusCode === 429)!;
      expect(Number(limitedAnswer.headers['retry-after'])).toBeGreaterThan(0);
      expect(limitedAnswer.body).toContain('<html');
      const right = await post(`/${link.slug}`, { password: 'correct horse' }, { client: limited.ingest, host, remoteAddress: '192.0.2.50' });
      expect(right.statusCode).toBe(429);
      expect(right.headers.location).toBeUndefined();
      const elsewhere = await post(`/${link.slug}`, { password: 'correct horse' }, { client: limited.ingest, host, remoteAddress: '192.0.2.51' });
      expect(elsewhere.statusCode).toBe(302);
    } finally {
      await limited.app.close();
      await closeOther(limited.context);
    }
  });
});

describe('fallback_url in the API', () => {
  it('is stored normalised, returned, changed and cleared by PATCH', async () => {
    const link = await createLink({ target_url: 'https://example.com/', fallback_url: 'HTTPS://Example.org/Ended' });
    expect(link.fallback_url).toBe('https://example.org/Ended');
    const changed = await api('PATCH', `/api/v1/links/${link.id}`, { fallback_url: 'https://example.net/' });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().data.fallback_url).toBe('https://example.net/');
    const cleared = await api('PATCH', `/api/v1/links/${link.id}`, { fallback_url: null });
    expect(cleared.json().data.fallback_url).toBeNull();
    expect((await createLink({ target_url: 'https://example.com/' })).fallback_url).toBeNull();
  });

  it('refuses what a target would be refused: not http(s) 422, the platform itself 403', async () => {
    const bad = await api('POST', '/api/v1/links', { subdomain, target_url: 'https://example.com/', fallback_url: 'javascript:alert(1)' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.code).toBe('validation_error');
    const link = await createLink({ target_url: 'https://example.com/' });
    const platform = await api('PATCH', `/api/v1/links/${link.id}`, { fallback_url: `http://${subdomain}.localhost:8080/x` });
    expect(platform.statusCode).toBe(403);
    expect(platform.json().error.details).toMatchObject({ reason: 'target_is_platform' });
  });

  it("is refused on another owner's link", async () => {
    const link = await createLink({ target_url: 'https://example.com/' });
    const other = await createOwner(context, app);
    const refused = await api('PATCH', `/api/v1/links/${link.id}`, { fallback_url: 'https://example.net/' }, other.auth);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('not_owner');
    expect((await api('GET', `/api/v1/links/${link.id}`)).json().data.fallback_url).toBeNull();
  });
});

describe('fallback_url at the edge', () => {
  it('redirects an expired link to its fallback (302) instead of 410, and counts no visit', async () => {
    const link = await createLink({
      target_url: 'https://example.com/',
      fallback_url: 'https://example.org/ended',
      expires_at: new Date(Date.now() + 300).toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const marker = uniqueName('fallback');
    const answer = await visit(`/${link.slug}`, { 'user-agent': marker });
    expect(answer.statusCode).toBe(302);
    expect(answer.headers.location).toBe('https://example.org/ended');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(visits.filter((entry) => entry.user_agent === marker)).toEqual([]);
    // Cleared, the 410 is back.
    await api('PATCH', `/api/v1/links/${link.id}`, { fallback_url: null });
    await waitFor(async () => (await visit(`/${link.slug}`)).statusCode === 410, 5_000, { message: 'the fallback was cleared' });
  });

  it('redirects a link at its visit limit to its fallback', async () => {
    const link = await createLink({ target_url: 'https://example.com/', fallback_url: 'https://example.org/full', max_visits: 5 });
    expect((await visit(`/${link.slug}`)).headers.location).toBe('https://example.com/');
    // What the enricher does when the visits reach max_visits.
    const row = await linksRepository(context.db.db).markLimitReached(link.id);
    await publishLinkNotice(context, { kind: 'upsert', link: toRedirectLink(row!) });
    await waitFor(async () => (await visit(`/${link.slug}`)).headers.location === 'https://example.org/full', 5_000, { message: 'the limit was reached' });
  });

  it('leaves a live link alone: its target, not its fallback', async () => {
    const link = await createLink({ target_url: 'https://example.com/live', fallback_url: 'https://example.org/ended' });
    expect((await visit(`/${link.slug}`)).headers.location).toBe('https://example.com/live');
  });
});
