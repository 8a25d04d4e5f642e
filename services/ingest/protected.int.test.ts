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
import { startTestPlatform } from '#tests/support/platform.js';

// Issue 40, protected links: the expiry fallback, through the API and the edge's server listener.

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

const visit = (path: string, headers: Json = {}) => ingest.inject({ method: 'GET', url: path, headers: { host: `${subdomain}.localhost:8080`, ...headers } });

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
