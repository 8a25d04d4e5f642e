import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { mintToken } from '#tests/support/accounts.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { POLICY_DEFAULTS, POLICY_SWITCHES } from '#shared/policy/policy.js';
import { buildApp } from '#services/app.js';

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const uniqueLabel = () => `t${Math.random().toString(36).slice(2, 10)}`;

describe('POST /api/v1/subdomains', () => {
  it('claims a name with a private policy: every switch off, delay 0, max items 50', async () => {
    const name = uniqueLabel();
    const response = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: alice.auth, payload: { name, title: 'Alice' } });
    expect(response.statusCode).toBe(201);
    const { data } = response.json();
    expect(data).toMatchObject({ name, title: 'Alice', owner_id: alice.id, ...POLICY_DEFAULTS });
    expect(data.url).toBe(`http://${name}.localhost:8080/`);
    for (const field of POLICY_SWITCHES) expect(data[field]).toBe(false);
  });

  it('answers 409 conflict when the name is taken, by anyone', async () => {
    const name = uniqueLabel();
    expect((await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: alice.auth, payload: { name } })).statusCode).toBe(201);
    for (const owner of [bob, alice]) {
      const again = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: owner.auth, payload: { name } });
      expect(again.statusCode).toBe(409);
      expect(again.json().error.code).toBe('conflict');
    }
  });

  // A reserved name is well formed (the document's pattern admits it) but taken by the platform: 409, as a taken one.
  it.each(['www', 'api', 'admin', 'mail', 'static'])('refuses the reserved name %s with 409', async (name) => {
    const response = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: alice.auth, payload: { name } });
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({ code: 'conflict', details: { name: 'is reserved' } });
  });

  it.each([
    ['too short', 'ab'],
    ['too long', 'a'.repeat(64)],
    ['upper case', 'Alice'],
    ['leading hyphen', '-alice'],
    ['trailing hyphen', 'alice-'],
    ['underscore', 'al_ice'],
    ['dot', 'al.ice'],
    ['hyphens in positions 3 and 4 (reserved for IDN)', 'ab--cd'],
  ])('refuses a name that is not a DNS label (%s) with 422', async (_why, name) => {
    const response = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: alice.auth, payload: { name } });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.details).toHaveProperty('name');
  });

  // Guards issue 23's lookalike subdomains: punycode labels were accepted, so `xn--pypal-4ve`
  // (which browsers show as a paypal lookalike) could be claimed.
  it.each(['xn--pypal-4ve', 'xn--80ak6aa92e', 'xn--abc', 'zz--abc'])(
    'refuses %s: a punycode label or the IDNA reserved form (-- in positions 3-4)',
    async (name) => {
      const response = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: alice.auth, payload: { name } });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.code).toBe('validation_error');
      expect(response.json().error.details.name).toMatch(/punycode/);
    },
  );

  it('says the same in the OpenAPI document: its patterns refuse punycode and admit plain labels', async () => {
    const document = (await app.inject({ url: '/api/v1/openapi.json' })).json();
    const body = document.paths['/api/v1/subdomains'].post.requestBody.content['application/json'].schema;
    const resolve = (schema: Record<string, any>): Record<string, any> =>
      schema.$ref ? resolve(document.components.schemas[schema.$ref.split('/').pop()]) : schema;
    const name = resolve(resolve(body).properties.name);
    const patterns: string[] = [name.pattern, ...(name.allOf ?? []).map((part: { pattern?: string }) => part.pattern)].filter(Boolean);
    expect(patterns.length).toBeGreaterThan(0);
    const admits = (label: string) => patterns.every((pattern) => new RegExp(pattern, 'u').test(label));
    expect(admits('alice')).toBe(true);
    expect(admits('my-links')).toBe(true);
    for (const refused of ['xn--pypal-4ve', 'zz--abc', 'Alice', '-alice', 'ab']) expect(admits(refused), refused).toBe(false);
  });

  it('accepts 3- and 63-character labels with inner hyphens', async () => {
    const long = `x-${Math.random().toString(36).slice(2, 10)}`.padEnd(63, 'y');
    expect(long).toHaveLength(63);
    const claimedLong = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: alice.auth, payload: { name: long } });
    expect(claimedLong.statusCode).toBe(201);
    // Three characters leave few names: one may already be taken by an earlier run on the same database.
    const short = `a${Math.random().toString(36).slice(2, 3)}z`;
    const claimedShort = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: alice.auth, payload: { name: short } });
    expect(claimedShort.statusCode === 201 || claimedShort.json().error.code === 'conflict').toBe(true);
  });

  it('needs the subdomain:write scope', async () => {
    const { token } = await mintToken(app, alice.cookie, new URL(context.config.publicUrl).origin, { name: 'ro', scopes: ['links:read'] });
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/subdomains',
      headers: { authorization: `Bearer ${token}` },
      payload: { name: uniqueLabel() },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().error).toMatchObject({ code: 'forbidden', details: { required_scope: 'subdomain:write' } });
    // Reads need links:read, which this token holds.
    expect((await app.inject({ method: 'GET', url: '/api/v1/subdomains', headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(200);
  });

  it('answers 401 without credentials', async () => {
    const response = await app.inject({ method: 'POST', url: '/api/v1/subdomains', payload: { name: uniqueLabel() } });
    expect(response.statusCode).toBe(401);
  });
});

describe('GET /api/v1/subdomains', () => {
  it("lists only the caller's subdomains, by token or session", async () => {
    const carol = await createOwner(context, app);
    const mine = [await claimSubdomain(app, carol), await claimSubdomain(app, carol)].sort();
    await claimSubdomain(app, bob);
    const byToken = await app.inject({ method: 'GET', url: '/api/v1/subdomains', headers: carol.auth });
    expect(byToken.statusCode).toBe(200);
    expect(byToken.json().data.subdomains.map((s: { name: string }) => s.name)).toEqual(mine);
    expect(byToken.json().meta).toMatchObject({ count: 2, total: 2, has_more: false, next_cursor: null });
    const bySession = await app.inject({ method: 'GET', url: '/api/v1/subdomains', headers: { cookie: carol.cookie } });
    expect(bySession.json().data.subdomains.map((s: { name: string }) => s.name)).toEqual(mine);
  });
});

describe('GET /api/v1/subdomains/{name}/settings', () => {
  it('answers the owner, by token or session, with the title, policy and live links count, as the list does', async () => {
    const name = await claimSubdomain(app, alice, { title: 'Settings', stats_show_geo: true, stats_max_items: 7 });
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: { subdomain: name, target_url: 'https://example.com/s' },
    });
    expect(created.statusCode).toBe(201);
    const byToken = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}/settings`, headers: alice.auth });
    expect(byToken.statusCode).toBe(200);
    const listed = (await app.inject({ method: 'GET', url: '/api/v1/subdomains', headers: alice.auth }))
      .json()
      .data.subdomains.find((s: { name: string }) => s.name === name);
    expect(byToken.json().data).toEqual(listed);
    expect(byToken.json().data).toMatchObject({
      name,
      title: 'Settings',
      owner_id: alice.id,
      links_count: 1,
      stats_show_geo: true,
      stats_public: false,
      stats_max_items: 7,
    });
    const bySession = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}/settings`, headers: { cookie: alice.cookie } });
    expect(bySession.json().data).toEqual(byToken.json().data);
  });

  it("answers 403 not_owner on another owner's subdomain, 404 on an unknown one and 401 without credentials", async () => {
    const name = await claimSubdomain(app, alice);
    const foreign = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}/settings`, headers: bob.auth });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.code).toBe('not_owner');
    expect(foreign.body).not.toContain(alice.id);
    const unknown = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${uniqueLabel()}/settings`, headers: bob.auth });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('not_found');
    expect((await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}/settings` })).statusCode).toBe(401);
  });

  it("lets staff read another owner's subdomain", async () => {
    const staff = await createOwner(context, app, 'staff');
    const { token } = await mintToken(app, staff.cookie, new URL(context.config.publicUrl).origin, { name: 'admin', scopes: ['links:read', 'admin'] });
    const name = await claimSubdomain(app, alice);
    const response = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}/settings`, headers: { authorization: `Bearer ${token}` } });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ name, owner_id: alice.id });
  });
});

describe('PATCH /api/v1/subdomains/{name}', () => {
  it('sets any of the eleven policy fields and the title; the rest keep their values', async () => {
    const name = await claimSubdomain(app, alice);
    const first = await app.inject({
      method: 'PATCH',
      url: `/api/v1/subdomains/${name}`,
      headers: alice.auth,
      payload: { stats_public: true, stats_show_geo: true, stats_publish_delay_sec: 3600, stats_max_items: 10, title: 'Shop' },
    });
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({
      stats_public: true,
      stats_show_geo: true,
      stats_show_ip: false,
      stats_publish_delay_sec: 3600,
      stats_max_items: 10,
      title: 'Shop',
    });
    const second = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: alice.auth, payload: { stats_show_ip: true } });
    expect(second.json().data).toMatchObject({ stats_public: true, stats_show_geo: true, stats_show_ip: true, stats_max_items: 10 });
  });

  it.each([
    ['a negative delay', { stats_publish_delay_sec: -1 }, 'stats_publish_delay_sec'],
    ['a delay over 30 days', { stats_publish_delay_sec: 2_592_001 }, 'stats_publish_delay_sec'],
    ['max items 0', { stats_max_items: 0 }, 'stats_max_items'],
    ['max items over 1000', { stats_max_items: 1001 }, 'stats_max_items'],
    ['a string for a switch', { stats_public: 'yes' }, 'stats_public'],
    ['a fractional delay', { stats_publish_delay_sec: 1.5 }, 'stats_publish_delay_sec'],
  ])('refuses %s with 422 naming the field, and stores nothing', async (_why, payload, field) => {
    const name = await claimSubdomain(app, alice);
    const response = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: alice.auth, payload });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.details).toHaveProperty(field);
    const listed = await app.inject({ method: 'GET', url: '/api/v1/subdomains', headers: alice.auth });
    expect(listed.json().data.subdomains.find((s: { name: string }) => s.name === name)).toMatchObject(POLICY_DEFAULTS);
  });

  it('refuses unknown fields with 400 and an empty body with 422', async () => {
    const name = await claimSubdomain(app, alice);
    const unknown = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: alice.auth, payload: { stats_everything: true } });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.code).toBe('bad_request');
    const empty = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: alice.auth, payload: {} });
    expect(empty.statusCode).toBe(422);
  });

  it("answers 403 not_owner on another owner's subdomain and 404 on an unknown one", async () => {
    const name = await claimSubdomain(app, alice);
    const foreign = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: bob.auth, payload: { stats_public: true } });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.code).toBe('not_owner');
    const unknown = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${uniqueLabel()}`, headers: bob.auth, payload: { stats_public: true } });
    expect(unknown.statusCode).toBe(404);
  });
});

describe('GET /api/v1/subdomains/{name} (public page payload)', () => {
  const createLinks = async (owner: TestOwner, subdomain: string, count: number) => {
    for (let i = 0; i < count; i++) {
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: owner.auth,
        payload: { subdomain, target_url: `https://example.com/${i}`, title: `Link ${i}`, tags: ['secret-tag'] },
      });
      expect(created.statusCode).toBe(201);
    }
  };

  it.each([
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ])('with stats_show_links=%s and stats_show_owner=%s carries exactly the visible parts, no hidden key', async (showLinks, showOwner) => {
    const name = await claimSubdomain(app, alice, { stats_show_links: showLinks, stats_show_owner: showOwner, title: 'Page' });
    await createLinks(alice, name, 3);
    const response = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}` });
    expect(response.statusCode).toBe(200);
    const page = response.json().data;
    expect(page.name).toBe(name);
    expect(page.title).toBe('Page');
    expect(page.public).toMatchObject({ links: showLinks, owner: showOwner, stats: false, visits_list: false });
    expect('links' in page).toBe(showLinks);
    expect('owner' in page).toBe(showOwner);
    const text = response.body;
    // Owner-only data never appears, whatever the switches.
    expect(text).not.toContain(alice.email);
    expect(text).not.toContain(alice.id);
    expect(text).not.toContain('example.com/');
    expect(text).not.toContain('secret-tag');
    if (showLinks) {
      expect(page.links).toHaveLength(3);
      expect(Object.keys(page.links[0]).sort()).toEqual(['created_at', 'short_url', 'slug', 'title']);
    } else {
      expect(text).not.toContain('Link 0');
    }
    if (showOwner) expect(page.owner).toEqual({ display_name: null });
  });

  it('caps the links at stats_max_items, newest first, and leaves out expired links', async () => {
    const name = await claimSubdomain(app, alice, { stats_show_links: true, stats_max_items: 2 });
    await createLinks(alice, name, 4);
    const expiring = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: { subdomain: name, target_url: 'https://example.com/x', title: 'expired', expires_at: new Date(Date.now() + 200).toISOString() },
    });
    expect(expiring.statusCode).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const page = (await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}` })).json().data;
    // The expired link is the newest: it would come first if it were not left out.
    expect(page.links.map((link: { title: string }) => link.title)).toEqual(['Link 3', 'Link 2']);
    expect(page.public.max_items).toBe(2);
  });

  it('answers 404 for an unknown subdomain', async () => {
    const response = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${uniqueLabel()}` });
    expect(response.statusCode).toBe(404);
    expect(response.json().error.code).toBe('not_found');
  });
});

describe('tracker_origins (the sites a subdomain’s tracker may run on)', () => {
  const settings = async (name: string) => (await app.inject({ method: 'GET', url: `/api/v1/subdomains/${name}/settings`, headers: alice.auth })).json().data;

  it('is empty (any site) by default, set on claim and by PATCH, stored canonical and without duplicates', async () => {
    const plain = await claimSubdomain(app, alice);
    expect((await settings(plain)).tracker_origins).toEqual([]);
    const name = uniqueLabel();
    const claimed = await app.inject({
      method: 'POST',
      url: '/api/v1/subdomains',
      headers: alice.auth,
      payload: { name, tracker_origins: ['https://Shop.Example/', 'https://shop.example:443', 'http://localhost:8080', 'http://192.0.2.7:81/'] },
    });
    expect(claimed.statusCode).toBe(201);
    expect(claimed.json().data.tracker_origins).toEqual(['https://shop.example', 'http://localhost:8080', 'http://192.0.2.7:81']);
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/v1/subdomains/${name}`,
      headers: alice.auth,
      payload: { tracker_origins: ['HTTPS://Blog.Shop.Example:8443'] },
    });
    expect(patched.statusCode).toBe(200);
    expect((await settings(name)).tracker_origins).toEqual(['https://blog.shop.example:8443']);
    const emptied = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: alice.auth, payload: { tracker_origins: [] } });
    expect(emptied.json().data.tracker_origins).toEqual([]);
  });

  it.each([
    ['a path', 'https://shop.example/page'],
    ['a query', 'https://shop.example?x=1'],
    ['credentials', 'https://user:pw@shop.example'],
    ['another scheme', 'ftp://shop.example'],
    ['no scheme', 'shop.example'],
    ['a port out of range', 'https://shop.example:99999'],
    ['a wildcard', 'https://*.shop.example'],
    ['null', 'null'],
    // No pattern can state which of these the URL parser takes: refused, so that the document's pattern is the whole rule.
    ['a Unicode host name', 'https://bücher.example'],
    ['a punycode label', 'https://xn--bcher-kva.example'],
    ['an IPv6 literal', 'https://[2001:db8::1]:8443'],
    ['a last label of digits', 'https://shop.999'],
  ])('refuses an origin with %s with 422 naming the field, and stores nothing', async (_why, origin) => {
    const name = await claimSubdomain(app, alice);
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/v1/subdomains/${name}`,
      headers: alice.auth,
      payload: { tracker_origins: ['https://fine.example', origin] },
    });
    expect(response.statusCode).toBe(422);
    expect(Object.keys(response.json().error.details)).toEqual(['tracker_origins.1']);
    expect((await settings(name)).tracker_origins).toEqual([]);
  });

  it('refuses more than 50 origins, and the document states the field on create, update and read', async () => {
    const name = await claimSubdomain(app, alice);
    const many = Array.from({ length: 51 }, (_, i) => `https://site${i}.example`);
    const response = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: alice.auth, payload: { tracker_origins: many } });
    expect(response.statusCode).toBe(422);
    const document = (await app.inject({ url: '/api/v1/openapi.json' })).json();
    const resolve = (schema: Record<string, any>): Record<string, any> =>
      schema.$ref ? resolve(document.components.schemas[schema.$ref.split('/').pop()]) : schema;
    const create = resolve(document.paths['/api/v1/subdomains'].post.requestBody.content['application/json'].schema);
    const update = resolve(document.paths['/api/v1/subdomains/{name}'].patch.requestBody.content['application/json'].schema);
    for (const body of [create, update]) {
      expect(body.properties.tracker_origins).toMatchObject({ type: 'array', maxItems: 50 });
      expect(body.properties.tracker_origins.description).toContain('origin_not_allowed');
    }
    expect(resolve(document.components.schemas.Subdomain).properties.tracker_origins.type).toBe('array');
  });
});
