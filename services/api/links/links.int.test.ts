import { Resvg } from '@resvg/resvg-js';
import type { FastifyInstance } from 'fastify';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { decodeEvents, type PlatformEvent } from '#shared/events/events.js';
import { subscribeLinkNotices, type LinkNotice } from '#shared/links/link-notices.js';
import { mintToken } from '#tests/support/accounts.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { buildApp } from '#services/app.js';

// jsqr is CommonJS with `exports.default`: under NodeNext its function is the default's `default`.
const jsQR = jsQRModule.default;

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;
let aliceSub: string;
let bobSub: string;

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  aliceSub = await claimSubdomain(app, alice);
  bobSub = await claimSubdomain(app, bob);
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

type Json = Record<string, any>;

async function create(owner: TestOwner, payload: Json, query = '') {
  return app.inject({ method: 'POST', url: `/api/v1/links${query}`, headers: owner.auth, payload });
}

async function createLink(owner: TestOwner, payload: Json): Promise<Json> {
  const response = await create(owner, payload);
  if (response.statusCode !== 201) throw new Error(`create failed: ${response.statusCode} ${response.body}`);
  return response.json().data;
}

const get = (owner: TestOwner | undefined, url: string, headers: Json = {}) =>
  app.inject({ method: 'GET', url, headers: { ...(owner?.auth ?? {}), ...headers } });

describe('POST /api/v1/links', () => {
  it('answers 201 with the whole record, a generated slug, a short URL and redirect type 302', async () => {
    const response = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/a?b=c', title: 'A', tags: ['Promo', 'promo', 'x'] });
    expect(response.statusCode).toBe(201);
    const link = response.json().data;
    expect(link).toMatchObject({
      subdomain: aliceSub,
      target_url: 'https://example.com/a?b=c',
      title: 'A',
      tags: ['promo', 'x'],
      expires_at: null,
      max_visits: null,
      redirect_type: 302,
      state: 'active',
      client_id: null,
      deleted_at: null,
    });
    expect(link.id).toMatch(/^l_[A-Za-z0-9_-]{16}$/);
    expect(link.slug).toMatch(/^[a-z0-9]{7}$/);
    expect(link.short_url).toBe(`http://${aliceSub}.localhost:8080/${link.slug}`);
    expect(Date.parse(link.created_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('gives random ids: consecutive links share no common prefix beyond chance', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/' })).id);
    expect(new Set(ids).size).toBe(8);
    // 96 random bits: eight ids agreeing on their first four random characters would be a 1 in 2^168 event.
    expect(new Set(ids.map((id) => id.slice(2, 6))).size).toBeGreaterThan(1);
    for (const id of ids) expect(id).toMatch(/^l_[A-Za-z0-9_-]{16}$/);
  });

  it('stores a custom slug in lower case, unique within the subdomain but free in another', async () => {
    const slug = `Sale-${Math.random().toString(36).slice(2, 8)}`;
    const first = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/', slug });
    expect(first.slug).toBe(slug.toLowerCase());
    const again = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/', slug: slug.toLowerCase() });
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toMatchObject({ code: 'conflict', details: { slug: 'is taken in this subdomain' } });
    const elsewhere = await create(bob, { subdomain: bobSub, target_url: 'https://example.com/', slug });
    expect(elsewhere.statusCode).toBe(201);
  });

  // The documented pattern is the whole syntax rule (422 naming target_url); the platform's own hosts are
  // well formed but refused (403 target_is_platform).
  it.each([
    ['javascript:', 'javascript:alert(1)'],
    ['ftp', 'ftp://example.com/file'],
    ['data:', 'data:text/html,<script>alert(1)</script>'],
    ['credentials', 'https://user:secret@example.com/'],
    ['a relative URL', '/just/a/path'],
    ['spaces', 'https://example.com/a b'],
    ['spaces around it', '  https://example.com/ '],
    ['an internationalised host', 'https://bücher.example/'],
    ['a punycode host', 'https://xn--bcher-kva.example/'],
    ['an over-long URL', `https://example.com/${'a'.repeat(2100)}`],
  ])('refuses a target with %s (422 naming target_url)', async (_why, target_url) => {
    const response = await create(alice, { subdomain: aliceSub, target_url });
    expect(response.statusCode).toBe(422);
    expect(response.json().error).toMatchObject({ code: 'validation_error', details: { target_url: expect.any(String) } });
  });

  it.each([
    ['the base domain', 'http://localhost:8080/x'],
    ['a short host', 'https://someone.localhost/abc'],
    ['a short host in upper case', 'https://SOMEONE.LOCALHOST/abc'],
    ['loopback', 'http://127.0.0.1:9/x'],
  ])('refuses a target with %s (403 target_is_platform)', async (_why, target_url) => {
    const response = await create(alice, { subdomain: aliceSub, target_url });
    expect(response.statusCode).toBe(403);
    expect(response.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'target_is_platform' } });
  });

  it('normalises the target URL', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'HTTP://Example.COM:80/P%C3%A4th?q=1#top' });
    expect(link.target_url).toBe('http://example.com/P%C3%A4th?q=1#top');
  });

  it.each([
    ['a slug with a slash', { slug: 'a/b' }, 'slug'],
    ['a slug starting with a hyphen', { slug: '-a' }, 'slug'],
    ['a 65-character slug', { slug: 'a'.repeat(65) }, 'slug'],
    ['redirect type 303', { redirect_type: 303 }, 'redirect_type'],
    ['max_visits 0', { max_visits: 0 }, 'max_visits'],
    ['an expiry before 1970', { expires_at: '1969-01-01T00:00:00Z' }, 'expires_at'],
    ['an expiry that is not a date', { expires_at: 'tomorrow' }, 'expires_at'],
    ['21 tags', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
  ])('refuses %s with 422 naming the field', async (_why, extra, field) => {
    const response = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/', ...extra });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.details).toHaveProperty(field);
  });

  it('answers 400 for a missing target and an unknown field', async () => {
    const missing = await create(alice, { subdomain: aliceSub });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatchObject({ code: 'missing_parameter', details: { missing: ['target_url'] } });
    const unknown = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/', colour: 'red' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.code).toBe('bad_request');
  });

  it("answers 403 not_owner in another owner's subdomain and 404 in an unknown one", async () => {
    const foreign = await create(alice, { subdomain: bobSub, target_url: 'https://example.com/' });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.code).toBe('not_owner');
    const unknown = await create(alice, { subdomain: uniqueName('nope').slice(0, 30).toLowerCase(), target_url: 'https://example.com/' });
    expect(unknown.statusCode).toBe(404);
  });

  it('needs links:write', async () => {
    const { token } = await mintToken(app, alice.cookie, new URL(context.config.publicUrl).origin, { name: 'ro', scopes: ['links:read'] });
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: { authorization: `Bearer ${token}` },
      payload: { subdomain: aliceSub, target_url: 'https://example.com/' },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('forbidden');
  });
});

describe('idempotent create with client_id', () => {
  it('answers a replay with 200, the original object and meta.code duplicate_client_id', async () => {
    const payload = { subdomain: aliceSub, target_url: 'https://example.com/once', client_id: uniqueName('cid') };
    const first = await create(alice, payload);
    expect(first.statusCode).toBe(201);
    expect(first.json().meta.code).toBeUndefined();
    const replay = await create(alice, payload);
    expect(replay.statusCode).toBe(200);
    expect(replay.json().ok).toBe(true);
    expect(replay.json().meta.code).toBe('duplicate_client_id');
    expect(replay.json().data).toEqual(first.json().data);
    const listed = await get(alice, `/api/v1/links?subdomain=${aliceSub}&q=example.com/once&limit=200`);
    expect(listed.json().data.links.filter((link: Json) => link.client_id === payload.client_id)).toHaveLength(1);
  });

  it('treats a request that stores the same values as a replay (tag case, host case)', async () => {
    const client_id = uniqueName('same');
    const first = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/same', tags: ['Promo'], client_id });
    expect(first.statusCode).toBe(201);
    const again = await create(alice, { subdomain: aliceSub, target_url: 'https://EXAMPLE.com/same', tags: ['promo'], client_id });
    expect(again.statusCode).toBe(200);
    expect(again.json().data.id).toBe(first.json().data.id);
  });

  it('answers a replay of a deleted link with the original object, marked deleted', async () => {
    const payload = { subdomain: aliceSub, target_url: 'https://example.com/deleted-replay', client_id: uniqueName('del') };
    const first = (await create(alice, payload)).json().data;
    await app.inject({ method: 'DELETE', url: `/api/v1/links/${first.id}`, headers: alice.auth });
    const replay = await create(alice, payload);
    expect(replay.statusCode).toBe(200);
    expect(replay.json().meta.code).toBe('duplicate_client_id');
    expect(replay.json().data).toMatchObject({ id: first.id, state: 'deleted' });
    expect(replay.json().data.deleted_at).not.toBeNull();
  });

  it('creates once when the same request races itself', async () => {
    const payload = { subdomain: aliceSub, target_url: 'https://example.com/race', client_id: uniqueName('race') };
    const answers = await Promise.all(Array.from({ length: 5 }, () => create(alice, payload)));
    const statuses = answers.map((answer) => answer.statusCode).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 201]);
    expect(new Set(answers.map((answer) => answer.json().data.id)).size).toBe(1);
  });

  it('answers 409 conflict when the client_id comes back with a different body', async () => {
    const client_id = uniqueName('cid');
    expect((await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/1', client_id })).statusCode).toBe(201);
    const other = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/2', client_id });
    expect(other.statusCode).toBe(409);
    expect(other.json().error).toMatchObject({ code: 'conflict', details: { client_id: 'was already used with a different request body' } });
  });

  it('keeps client_ids apart per owner', async () => {
    const client_id = uniqueName('shared');
    expect((await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/', client_id })).statusCode).toBe(201);
    expect((await create(bob, { subdomain: bobSub, target_url: 'https://example.com/', client_id })).statusCode).toBe(201);
  });
});

// Guards issue 23: the rules named by schemas and services were English whatever the language asked.
describe("validation rules in the caller's language", () => {
  it('schema rules, a service rule of a conflict and the shared cursor rule follow ?lang=', async () => {
    const slug = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/', slug: '-bad' }, '?lang=fr');
    expect(slug.statusCode).toBe(422);
    expect(slug.json().error.details.slug).toBe('doit compter 1 à 64 lettres, chiffres, _ ou -, et commencer par une lettre ou un chiffre');
    const target = await create(alice, { subdomain: aliceSub, target_url: 'ftp://example.com/' }, '?lang=es');
    expect(target.statusCode).toBe(422);
    expect(target.json().error.details.target_url).toBe(
      'debe ser una URL http o https con un nombre de host ASCII (no punycode) o una dirección IPv4 y caracteres seguros para URL',
    );
    const reserved = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/', slug: 'api' }, '?lang=de');
    expect(reserved.statusCode).toBe(409);
    expect(reserved.json().error.details.slug).toBe('ist reserviert');
    const cursor = await get(alice, '/api/v1/links?cursor=nonsense&lang=de');
    expect(cursor.statusCode).toBe(422);
    expect(cursor.json().error.details.cursor).toBe('ist kein Cursor dieser Liste');
    const patch = await app.inject({ method: 'PATCH', url: '/api/v1/links/l_aaaaaaaaaaaaaaaa?lang=fr', headers: alice.auth, payload: {} });
    expect(Object.values(patch.json().error.details)).toContain('doit définir au moins un champ');
  });
});

describe('GET, PATCH, DELETE /api/v1/links/{id} and duplicate', () => {
  it('reads a link', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/read' });
    const response = await get(alice, `/api/v1/links/${link.id}`);
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toEqual(link);
  });

  it('updates the fields it is given, clears with null, and keeps the rest', async () => {
    const link = await createLink(alice, {
      subdomain: aliceSub,
      target_url: 'https://example.com/',
      title: 'Old',
      max_visits: 5,
      expires_at: '2099-01-01T00:00:00Z',
    });
    const slug = `new-${Math.random().toString(36).slice(2, 8)}`;
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/v1/links/${link.id}`,
      headers: alice.auth,
      payload: { slug, target_url: 'https://example.org/new', title: null, max_visits: null, redirect_type: 301, tags: ['b'] },
    });
    expect(response.statusCode).toBe(200);
    const updated = response.json().data;
    expect(updated).toMatchObject({
      slug,
      target_url: 'https://example.org/new',
      title: null,
      max_visits: null,
      redirect_type: 301,
      tags: ['b'],
      expires_at: '2099-01-01T00:00:00.000Z',
    });
    expect(updated.short_url).toBe(`http://${aliceSub}.localhost:8080/${slug}`);
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(link.updated_at));
    expect((await get(alice, `/api/v1/links/${link.id}`)).json().data).toEqual(updated);
  });

  it('marks a link whose expiry passed as expired', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/', expires_at: new Date(Date.now() + 300).toISOString() });
    expect(link.state).toBe('active');
    await waitFor(async () => (await get(alice, `/api/v1/links/${link.id}`)).json().data.state === 'expired', 5_000);
  });

  it('refuses a slug taken by a sibling (409), bad values (422) and an empty patch (422), changing nothing', async () => {
    const taken = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/' });
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/keep' });
    const patch = (payload: Json) => app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: alice.auth, payload });
    const conflict = await patch({ slug: taken.slug });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.code).toBe('conflict');
    expect((await patch({ target_url: 'javascript:alert(1)' })).statusCode).toBe(422);
    expect((await patch({ redirect_type: 200 })).statusCode).toBe(422);
    expect((await patch({})).statusCode).toBe(422);
    const past = await patch({ expires_at: '1969-01-01T00:00:00Z' });
    expect(past.statusCode).toBe(422);
    expect(past.json().error.details).toHaveProperty('expires_at');
    expect((await patch({ id: 'x' })).statusCode).toBe(400);
    expect((await get(alice, `/api/v1/links/${link.id}`)).json().data).toEqual(link);
  });

  it('soft-deletes: the answer has deleted_at, then reads, updates, QR and duplicate answer 404 and lists leave it out', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/gone', title: 'to-delete' });
    const deleted = await app.inject({ method: 'DELETE', url: `/api/v1/links/${link.id}`, headers: alice.auth });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().data.deleted_at).not.toBeNull();
    expect((await get(alice, `/api/v1/links/${link.id}`)).statusCode).toBe(404);
    expect((await get(alice, `/api/v1/links/${link.id}/qr`)).statusCode).toBe(404);
    expect((await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: alice.auth, payload: { title: 'x' } })).statusCode).toBe(404);
    expect((await app.inject({ method: 'POST', url: `/api/v1/links/${link.id}/duplicate`, headers: alice.auth })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/links/${link.id}`, headers: alice.auth })).statusCode).toBe(404);
    const listed = await get(alice, `/api/v1/links?subdomain=${aliceSub}&q=to-delete`);
    expect(listed.json().data.links).toEqual([]);
    // The slug is free again; the deleted row stays (its statistics are keyed by its id).
    const reused = await create(alice, { subdomain: aliceSub, target_url: 'https://example.com/', slug: link.slug });
    expect(reused.statusCode).toBe(201);
    expect(reused.json().data.id).not.toBe(link.id);
  });

  it('duplicates an expired link without its past expiry', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/old', expires_at: new Date(Date.now() + 200).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const response = await app.inject({ method: 'POST', url: `/api/v1/links/${link.id}/duplicate`, headers: alice.auth });
    expect(response.statusCode).toBe(201);
    expect(response.json().data).toMatchObject({ expires_at: null, state: 'active' });
  });

  it('duplicates a link under a new slug', async () => {
    const link = await createLink(alice, {
      subdomain: aliceSub,
      target_url: 'https://example.com/dup',
      title: 'Dup',
      tags: ['t'],
      max_visits: 9,
      redirect_type: 307,
      client_id: uniqueName('d'),
    });
    const response = await app.inject({ method: 'POST', url: `/api/v1/links/${link.id}/duplicate`, headers: alice.auth });
    expect(response.statusCode).toBe(201);
    const copy = response.json().data;
    expect(copy.id).not.toBe(link.id);
    expect(copy.slug).not.toBe(link.slug);
    expect(copy).toMatchObject({
      subdomain: aliceSub,
      target_url: link.target_url,
      title: 'Dup',
      tags: ['t'],
      max_visits: 9,
      redirect_type: 307,
      client_id: null,
    });
  });

  // Guards issue 23: a body (say, a slug for the copy) was silently ignored.
  it('duplicate takes no body: fields are refused with 400 bad_request naming them, and nothing is copied', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/nobody' });
    const before = (await get(alice, `/api/v1/links?subdomain=${aliceSub}&limit=100`)).json().data.links.length;
    const refused = await app.inject({
      method: 'POST',
      url: `/api/v1/links/${link.id}/duplicate`,
      headers: alice.auth,
      payload: { slug: 'my-copy', title: 'x' },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatchObject({ code: 'bad_request', details: { unknown: ['slug', 'title'], in: 'body' } });
    const text = await app.inject({
      method: 'POST',
      url: `/api/v1/links/${link.id}/duplicate`,
      headers: { ...alice.auth, 'content-type': 'text/plain' },
      payload: 'copy please',
    });
    expect(text.statusCode).toBe(400);
    const array = await app.inject({ method: 'POST', url: `/api/v1/links/${link.id}/duplicate`, headers: alice.auth, payload: [1] });
    expect(array.statusCode).toBe(400);
    expect((await get(alice, `/api/v1/links?subdomain=${aliceSub}&limit=100`)).json().data.links.length).toBe(before);
    // No body, or an empty object, still duplicates.
    expect((await app.inject({ method: 'POST', url: `/api/v1/links/${link.id}/duplicate`, headers: alice.auth, payload: {} })).statusCode).toBe(201);
  });

  it("answers 403 not_owner for every operation on another owner's link, and changes nothing", async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/mine' });
    const attempts = [
      get(bob, `/api/v1/links/${link.id}`),
      get(bob, `/api/v1/links/${link.id}/qr`),
      app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: bob.auth, payload: { title: 'pwned' } }),
      app.inject({ method: 'DELETE', url: `/api/v1/links/${link.id}`, headers: bob.auth }),
      app.inject({ method: 'POST', url: `/api/v1/links/${link.id}/duplicate`, headers: bob.auth }),
      get(bob, `/api/v1/links?subdomain=${aliceSub}`),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.statusCode).toBe(403);
      expect(response.json().error.code).toBe('not_owner');
    }
    expect((await get(alice, `/api/v1/links/${link.id}`)).json().data).toEqual(link);
  });

  it('answers 404 for an unknown id and 401 without credentials', async () => {
    expect((await get(alice, '/api/v1/links/l_doesnotexist0000')).statusCode).toBe(404);
    expect((await get(undefined, '/api/v1/links/l_doesnotexist0000')).statusCode).toBe(401);
  });
});

describe('GET /api/v1/links (owner)', () => {
  it('walks every link exactly once with cursors while links are created during the walk', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner);
    const before = new Set<string>();
    for (let i = 0; i < 23; i++) before.add((await createLink(owner, { subdomain, target_url: `https://example.com/${i}` })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await get(owner, `/api/v1/links?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
      expect(response.statusCode).toBe(200);
      const { data, meta } = response.json();
      expect(Object.keys(meta)).toEqual(expect.arrayContaining(['count', 'total', 'limit', 'cursor', 'next_cursor', 'has_more']));
      expect(meta.count).toBe(data.links.length);
      expect(meta.limit).toBe(5);
      expect(meta.cursor).toBe(cursor);
      expect(meta.has_more).toBe(meta.next_cursor !== null);
      seen.push(...data.links.map((link: Json) => link.id));
      cursor = meta.next_cursor;
      // Links created mid-walk are newer than every cursor: they never show up in this walk.
      await createLink(owner, { subdomain, target_url: 'https://example.com/during' });
      pages += 1;
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toHaveLength(23);
    expect(new Set(seen)).toEqual(before);
  });

  it('pages by number with ?page= and reports totals', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner);
    for (let i = 0; i < 7; i++) await createLink(owner, { subdomain, target_url: `https://example.com/${i}`, title: `n${i}` });
    const page = (n: number) => get(owner, `/api/v1/links?limit=3&page=${n}`);
    const titles = async (n: number) => (await page(n)).json().data.links.map((link: Json) => link.title);
    expect(await titles(1)).toEqual(['n6', 'n5', 'n4']);
    expect(await titles(2)).toEqual(['n3', 'n2', 'n1']);
    expect(await titles(3)).toEqual(['n0']);
    expect(await titles(4)).toEqual([]);
    const meta = (await page(2)).json().meta;
    expect(meta).toMatchObject({ count: 3, total: 7, limit: 3, page: 2, has_more: true, cursor: null });
    // The next_cursor of a numbered page continues the walk by cursor.
    const next = await get(owner, `/api/v1/links?limit=3&cursor=${meta.next_cursor}`);
    expect(next.json().data.links.map((link: Json) => link.title)).toEqual(['n0']);
    expect((await page(3)).json().meta).toMatchObject({ count: 1, has_more: false, next_cursor: null });
    // Totals follow deletes and duplicates, per owner and per subdomain.
    const [newest] = (await page(1)).json().data.links;
    await app.inject({ method: 'DELETE', url: `/api/v1/links/${newest.id}`, headers: owner.auth });
    await app.inject({ method: 'POST', url: `/api/v1/links/${(await page(1)).json().data.links[0].id}/duplicate`, headers: owner.auth });
    await app.inject({ method: 'POST', url: `/api/v1/links/${(await page(1)).json().data.links[0].id}/duplicate`, headers: owner.auth });
    expect((await page(1)).json().meta.total).toBe(8);
    expect((await get(owner, `/api/v1/links?subdomain=${subdomain}`)).json().meta.total).toBe(8);
    const listed = (await get(owner, '/api/v1/subdomains')).json().data.subdomains;
    expect(listed.find((entry: Json) => entry.name === subdomain).links_count).toBe(8);
  });

  it('filters by subdomain, q, tag and since', async () => {
    const owner = await createOwner(context, app);
    const [one, two] = [await claimSubdomain(app, owner), await claimSubdomain(app, owner)];
    await createLink(owner, { subdomain: one, target_url: 'https://shop.example/summer', title: 'Summer 100%_off', tags: ['Sale'] });
    await createLink(owner, { subdomain: one, target_url: 'https://blog.example/post', title: 'Post' });
    const middle = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await createLink(owner, { subdomain: two, target_url: 'https://shop.example/winter', title: 'Winter', tags: ['sale', 'cold'] });
    const titles = async (query: string) => {
      const response = await get(owner, `/api/v1/links?${query}`);
      expect(response.statusCode).toBe(200);
      return response
        .json()
        .data.links.map((link: Json) => link.title)
        .sort();
    };
    expect(await titles(`subdomain=${one}`)).toEqual(['Post', 'Summer 100%_off']);
    expect(await titles('q=SHOP.example')).toEqual(['Summer 100%_off', 'Winter']);
    expect(await titles('q=100%25_')).toEqual(['Summer 100%_off']);
    expect(await titles('q=0%25')).toEqual(['Summer 100%_off']);
    expect(await titles('q=_o')).toEqual(['Summer 100%_off']);
    expect(await titles('tag=SALE')).toEqual(['Summer 100%_off', 'Winter']);
    expect(await titles(`tag=sale&subdomain=${two}`)).toEqual(['Winter']);
    expect(await titles(`since=${encodeURIComponent(middle)}`)).toEqual(['Winter']);
    const meta = (await get(owner, `/api/v1/links?tag=sale`)).json().meta;
    expect(meta).toMatchObject({ count: 2, total: 2, has_more: false });
  });

  it('refuses a forged cursor, cursor with page, and limits out of bounds', async () => {
    const outOfRange = Buffer.from('l1:9999999999999999999').toString('base64url');
    for (const query of ['cursor=bm9wZQ', `cursor=${outOfRange}`, 'cursor=abc&page=2', 'limit=0', 'limit=201', 'page=0', 'since=yesterday']) {
      const response = await get(alice, `/api/v1/links?${query}`);
      expect(response.statusCode, query).toBe(422);
      expect(response.json().error.code).toBe('validation_error');
    }
    expect((await get(alice, '/api/v1/links?sort=asc')).statusCode).toBe(400);
  });

  it('needs links:read when credentials are sent', async () => {
    const { token } = await mintToken(app, alice.cookie, new URL(context.config.publicUrl).origin, { name: 'stats', scopes: ['stats:read'] });
    const response = await app.inject({ method: 'GET', url: '/api/v1/links', headers: { authorization: `Bearer ${token}` } });
    expect(response.statusCode).toBe(403);
    expect(response.json().error).toMatchObject({ code: 'forbidden', details: { required_scope: 'links:read' } });
    const bad = await app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${aliceSub}`, headers: { authorization: 'Bearer svc_u_nope' } });
    expect(bad.statusCode).toBe(401);
    expect(bad.json().error.code).toBe('invalid_token');
  });
});

describe('GET /api/v1/links?subdomain= (public)', () => {
  it('answers 403 forbidden while the policy hides links, then the public links once shown', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner);
    for (let i = 0; i < 3; i++) await createLink(owner, { subdomain, target_url: `https://example.com/${i}`, title: `p${i}`, tags: ['internal'] });
    const hidden = await get(undefined, `/api/v1/links?subdomain=${subdomain}`);
    expect(hidden.statusCode).toBe(403);
    expect(hidden.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'links_not_public' } });
    expect(hidden.body).not.toContain('"p0"');

    await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${subdomain}`, headers: owner.auth, payload: { stats_show_links: true } });
    const shown = await get(undefined, `/api/v1/links?subdomain=${subdomain}`);
    expect(shown.statusCode).toBe(200);
    const links = shown.json().data.links;
    expect(links.map((link: Json) => link.title)).toEqual(['p2', 'p1', 'p0']);
    for (const link of links) expect(Object.keys(link).sort()).toEqual(['created_at', 'short_url', 'slug', 'title']);
    expect(shown.body).not.toContain('internal');
    expect(shown.body).not.toContain('example.com');
  });

  it('caps the public list at stats_max_items, pages within it, and leaves out expired links', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner, { stats_show_links: true, stats_max_items: 4 });
    for (let i = 0; i < 6; i++) await createLink(owner, { subdomain, target_url: `https://example.com/${i}`, title: `p${i}` });
    await createLink(owner, { subdomain, target_url: 'https://example.com/x', title: 'soon-expired', expires_at: new Date(Date.now() + 200).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const first = await get(undefined, `/api/v1/links?subdomain=${subdomain}&limit=3`);
    expect(first.json().data.links.map((link: Json) => link.title)).toEqual(['p5', 'p4', 'p3']);
    expect(first.json().meta).toMatchObject({ count: 3, total: 4, limit: 3, has_more: true });
    const second = await get(undefined, `/api/v1/links?subdomain=${subdomain}&limit=3&cursor=${first.json().meta.next_cursor}`);
    expect(second.json().data.links.map((link: Json) => link.title)).toEqual(['p2']);
    expect(second.json().meta).toMatchObject({ count: 1, total: 4, has_more: false, next_cursor: null });
    const numbered = await get(undefined, `/api/v1/links?subdomain=${subdomain}&limit=3&page=2`);
    expect(numbered.json().data.links.map((link: Json) => link.title)).toEqual(['p2']);
  });

  it('answers 401 without credentials and without a subdomain, 404 for an unknown subdomain, 422 naming an owner-only filter', async () => {
    const subdomain = await claimSubdomain(app, bob, { stats_show_links: true });
    expect((await get(undefined, '/api/v1/links')).statusCode).toBe(401);
    expect((await get(undefined, '/api/v1/links?subdomain=zz-unknown-zz')).statusCode).toBe(404);
    for (const field of ['q', 'tag', 'since']) {
      const response = await get(undefined, `/api/v1/links?subdomain=${subdomain}&${field}=2030-01-01T00:00:00Z`);
      expect(response.statusCode).toBe(422);
      expect(Object.keys(response.json().error.details)).toEqual([field]);
    }
  });

  it('gives a signed-in non-owner the public list, with or without links:read', async () => {
    const subdomain = await claimSubdomain(app, bob, { stats_show_links: true });
    await createLink(bob, { subdomain, target_url: 'https://example.com/pub', title: 'pub' });
    const { token } = await mintToken(app, alice.cookie, new URL(context.config.publicUrl).origin, { name: 'stats-only', scopes: ['stats:read'] });
    for (const headers of [alice.auth, { authorization: `Bearer ${token}` }, { cookie: alice.cookie }]) {
      const response = await app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${subdomain}`, headers });
      expect(response.statusCode).toBe(200);
      expect(response.json().data.links).toEqual([expect.objectContaining({ title: 'pub' })]);
      expect(Object.keys(response.json().data.links[0]).sort()).toEqual(['created_at', 'short_url', 'slug', 'title']);
    }
  });

  it('publishes links only once they are older than stats_publish_delay_sec', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner, { stats_show_links: true, stats_publish_delay_sec: 3600 });
    await createLink(owner, { subdomain, target_url: 'https://example.com/new', title: 'too new' });
    const response = await get(undefined, `/api/v1/links?subdomain=${subdomain}`);
    expect(response.statusCode).toBe(200);
    expect(response.json().data.links).toEqual([]);
    expect((await get(undefined, `/api/v1/subdomains/${subdomain}`)).json().data.links).toEqual([]);
    await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${subdomain}`, headers: owner.auth, payload: { stats_publish_delay_sec: 0 } });
    expect((await get(undefined, `/api/v1/links?subdomain=${subdomain}`)).json().data.links).toHaveLength(1);
  });
});

describe('click counts (include=clicks)', () => {
  const DAY_MS = 86_400_000;
  /** Stores visits of the owner's link as the enricher would (the rollup views count them on insert). */
  const storeVisits = async (owner: TestOwner, subdomain: string, link: Json, visits: { at: number; kind: string }[]) => {
    const rows = visits.map(({ at, kind }, i) => ({
      visit_id: uuidv7({ msecs: at }),
      ts: toClickHouseTime(at),
      kind,
      owner_id: owner.id,
      subdomain,
      link_id: link.id,
      slug: link.slug,
      ip_public: '203.0.113.7',
      visitor_hash: `v${i}`,
      is_bot: kind === 'bot' ? 1 : 0,
    }));
    await context.analytics.client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(`clicks-${link.id}`) });
  };

  it('adds total, last 7 days and per-day human visits from the rollups, to the list and to one link, only when asked', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner);
    const busy = await createLink(owner, { subdomain, target_url: 'https://example.com/busy' });
    const quiet = await createLink(owner, { subdomain, target_url: 'https://example.com/quiet' });
    const now = Date.now();
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    const todayAt = Math.max(today, now - 60_000);
    await storeVisits(owner, subdomain, busy, [
      ...Array.from({ length: 3 }, () => ({ at: todayAt, kind: 'visit' })),
      { at: todayAt, kind: 'beacon' },
      { at: todayAt, kind: 'bot' },
      { at: todayAt, kind: 'attack' },
      ...Array.from({ length: 2 }, () => ({ at: today - 3 * DAY_MS + 3_600_000, kind: 'visit' })),
      ...Array.from({ length: 4 }, () => ({ at: today - 30 * DAY_MS, kind: 'visit' })),
    ]);
    const days = Array.from({ length: 7 }, (_, i) => new Date(today - (6 - i) * DAY_MS).toISOString().slice(0, 10));

    const listed = await get(owner, `/api/v1/links?subdomain=${subdomain}&include=clicks`);
    expect(listed.statusCode).toBe(200);
    const byId = new Map<string, Json>(listed.json().data.links.map((link: Json) => [link.id, link]));
    expect(byId.get(busy.id)!.clicks).toEqual({
      total: 10,
      last_7_days: 6,
      daily: days.map((date, i) => ({ date, visits: i === 6 ? 4 : i === 3 ? 2 : 0 })),
    });
    expect(byId.get(quiet.id)!.clicks).toEqual({ total: 0, last_7_days: 0, daily: days.map((date) => ({ date, visits: 0 })) });

    const one = await get(owner, `/api/v1/links/${busy.id}?include=clicks`);
    expect(one.statusCode).toBe(200);
    expect(one.json().data.clicks).toEqual(byId.get(busy.id)!.clicks);

    // Not asked for: the Link is as it always was.
    expect((await get(owner, `/api/v1/links?subdomain=${subdomain}`)).json().data.links[0]).not.toHaveProperty('clicks');
    expect((await get(owner, `/api/v1/links/${busy.id}`)).json().data).not.toHaveProperty('clicks');
  });

  it('refuses another value, a public list asking for clicks, and another owner asking for a link with clicks', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner, { stats_show_links: true });
    const link = await createLink(owner, { subdomain, target_url: 'https://example.com/c' });
    await storeVisits(owner, subdomain, link, [{ at: Date.now() - 1000, kind: 'visit' }]);

    const other = await get(owner, `/api/v1/links?include=visits`);
    expect(other.statusCode).toBe(422);
    expect(Object.keys(other.json().error.details)).toEqual(['include']);

    for (const caller of [undefined, bob]) {
      const response = await get(caller, `/api/v1/links?subdomain=${subdomain}&include=clicks`);
      expect(response.statusCode).toBe(422);
      expect(response.body).not.toContain('"clicks"');
      expect(Object.keys(response.json().error.details)).toEqual(['include']);
    }
    const foreign = await get(bob, `/api/v1/links/${link.id}?include=clicks`);
    expect([403, 404]).toContain(foreign.statusCode);
    expect(foreign.body).not.toContain('"clicks"');
  });
});

describe('GET /api/v1/links/{id}/qr', () => {
  const decodePng = (png: Buffer) => {
    const image = PNG.sync.read(png);
    return jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data;
  };

  it('answers SVG by default that decodes back to the short URL', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/qr' });
    const response = await get(alice, `/api/v1/links/${link.id}/qr`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(response.body).toMatch(/^<svg/);
    expect(response.body).toContain('width="256"');
    const png = new Resvg(response.body, { background: 'white' }).render().asPng();
    expect(decodePng(png)).toBe(link.short_url);
  });

  it('answers PNG with ?format=png or Accept: image/png, sized as asked, decoding to the short URL', async () => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/qr' });
    const byQuery = await app.inject({ method: 'GET', url: `/api/v1/links/${link.id}/qr?format=png&size=300&margin=2&ecc=H`, headers: alice.auth });
    expect(byQuery.statusCode).toBe(200);
    expect(byQuery.headers['content-type']).toBe('image/png');
    const image = PNG.sync.read(byQuery.rawPayload);
    expect(image.width).toBe(300);
    expect(decodePng(byQuery.rawPayload)).toBe(link.short_url);
    const byAccept = await app.inject({ method: 'GET', url: `/api/v1/links/${link.id}/qr`, headers: { ...alice.auth, accept: 'image/png' } });
    expect(byAccept.headers['content-type']).toBe('image/png');
    expect(decodePng(byAccept.rawPayload)).toBe(link.short_url);
  });

  it.each(['size=10', 'size=5000', 'margin=-1', 'margin=17', 'ecc=X', 'format=gif'])('refuses %s with 422', async (query) => {
    const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/qr' });
    const response = await get(alice, `/api/v1/links/${link.id}/qr?${query}`);
    expect(response.statusCode).toBe(422);
    expect(response.json().error.code).toBe('validation_error');
  });
});

describe('link-change notices and link.created', () => {
  it('publishes a notice for create, update (with the previous slug), limit change and delete, seen by another node within a second', async () => {
    // Services run: a second context is another node, with its own Redis connection. Embedded: one process.
    const node = SERVICES_MODE ? await createTestContext() : context;
    const notices: (LinkNotice & { receivedAt: number })[] = [];
    const unsubscribe = await subscribeLinkNotices(node.cache, (notice) => notices.push({ ...notice, receivedAt: Date.now() }));
    try {
      const started = Date.now();
      const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/n' });
      await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: alice.auth, payload: { slug: `moved-${link.slug}` } });
      await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: alice.auth, payload: { max_visits: 3 } });
      await app.inject({ method: 'DELETE', url: `/api/v1/links/${link.id}`, headers: alice.auth });
      const mine = await waitFor(() => {
        const found = notices.filter((notice) => notice.link.id === link.id);
        return found.length === 4 && found;
      }, 5_000);
      expect(mine.map((notice) => notice.kind)).toEqual(['upsert', 'upsert', 'upsert', 'delete']);
      expect(mine[0]!.link).toMatchObject({
        subdomain: aliceSub,
        slug: link.slug,
        target_url: 'https://example.com/n',
        redirect_type: 302,
        owner_id: alice.id,
      });
      expect(mine[1]!.previous).toEqual({ subdomain: aliceSub, slug: link.slug });
      expect(mine[1]!.link.slug).toBe(`moved-${link.slug}`);
      expect(mine[2]!.link.max_visits).toBe(3);
      for (const notice of mine) expect(notice.receivedAt - notice.at).toBeLessThan(1_000);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await unsubscribe();
      if (node !== context) await closeContext(node);
    }
  });

  it('emits link.created on the event bus for a create and a duplicate', async () => {
    const received: PlatformEvent[] = [];
    const consumer: Consumer = await context.messageLog.consume({
      groupId: uniqueName('events-test'),
      topic: TOPICS.events,
      handler: async (messages) => {
        for (const message of messages) received.push(...decodeEvents(message));
      },
    });
    try {
      const link = await createLink(alice, { subdomain: aliceSub, target_url: 'https://example.com/event' });
      const copy = (await app.inject({ method: 'POST', url: `/api/v1/links/${link.id}/duplicate`, headers: alice.auth })).json().data;
      const events = await waitFor(() => {
        const found = received.filter((event) => [link.id, copy.id].includes((event.data as Json).id));
        return found.length === 2 && found;
      }, 20_000);
      for (const event of events) {
        expect(event).toMatchObject({ type: 'link.created', owner_id: alice.id, subdomain: aliceSub });
        expect(event.id).toMatch(/^[0-9a-f-]{36}$/);
      }
    } finally {
      await consumer.stop();
    }
  });
});
