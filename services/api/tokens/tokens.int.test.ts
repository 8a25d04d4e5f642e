import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext, SERVICES_MODE, testConfig } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { buildApp, type App } from '#services/app.js';

let context: Context;
let built: App;
let app: FastifyInstance;
let origin: string;

beforeAll(async () => {
  context = await createTestContext();
  built = await buildApp(context);
  app = built.app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const ip = () => `192.0.2.${Math.floor(Math.random() * 250) + 1}`;

/** A signed-in account with a session cookie. */
async function owner(role: 'staff' | 'user' = 'user') {
  const account = await createAccount(context, role);
  const cookie = await loginCookie(app, account.email, TEST_PASSWORD, ip());
  return { ...account, cookie };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('POST /api/v1/tokens', () => {
  it('answers 201 with the secret once, a svc_u_ prefix and the record', async () => {
    const { cookie } = await owner();
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/tokens',
      headers: { cookie, origin },
      payload: { name: 'ci', scopes: ['links:read', 'stats:read'], ip_allowlist: ['203.0.113.7', '2001:db8::/32'], expires_at: '2099-01-01T00:00:00Z' },
    });
    expect(response.statusCode).toBe(201);
    const { data } = response.json();
    expect(data.token).toMatch(/^svc_u_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(data.prefix).toMatch(/^svc_u_[0-9a-f]{12}$/);
    expect(data.token.startsWith(`${data.prefix}_`)).toBe(true);
    expect(data).toMatchObject({
      name: 'ci',
      scopes: ['links:read', 'stats:read'],
      ip_allowlist: ['203.0.113.7/32', '2001:db8::/32'],
      expires_at: '2099-01-01T00:00:00.000Z',
      last_used_at: null,
      state: 'active',
    });
  });

  it('stores only the SHA-256 of the token', async () => {
    const { cookie } = await owner();
    const { token, id } = await mintToken(app, cookie, origin);
    const row = await context.db.db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(token.slice(20));
    const { createHash } = await import('node:crypto');
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
  });

  it('validates the body: unknown scope, bad CIDR, past expiry', async () => {
    const { cookie } = await owner();
    const post = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/v1/tokens', headers: { cookie, origin }, payload });
    const badScope = await post({ name: 'x', scopes: ['links:delete'] });
    expect(badScope.statusCode).toBe(422);
    expect(Object.keys(badScope.json().error.details)).toEqual(['scopes.0']);
    expect((await post({ name: 'x', scopes: ['links:read'], ip_allowlist: ['10.0.0.0/33'] })).json().error.details).toHaveProperty('ip_allowlist.0');
    // A past expiry is no schema rule: the token is created, already expired, and authenticates nothing.
    const past = await post({ name: 'x', scopes: ['links:read'], expires_at: '2001-01-01T00:00:00Z' });
    expect(past.statusCode).toBe(201);
    expect(past.json().data.state).toBe('expired');
    const refused = await app.inject({ method: 'GET', url: '/api/v1/links', headers: { authorization: `Bearer ${past.json().data.token}` } });
    expect(refused.json().error.code).toBe('invalid_token');
    // Before 1970 or a NUL: refused by the pattern and the one rule of every string.
    expect((await post({ name: 'x', scopes: ['links:read'], expires_at: '0024-11-01T11:51:28.42Z' })).json().error.details).toHaveProperty('expires_at');
    expect((await post({ name: 'x\u0000', scopes: ['links:read'] })).json().error.details).toHaveProperty('name');
    expect((await post({ scopes: ['links:read'] })).json().error.code).toBe('missing_parameter');
  });

  it('refuses the admin scope to non-staff, and grants it to staff', async () => {
    const user = await owner();
    const refused = await app.inject({
      method: 'POST',
      url: '/api/v1/tokens',
      headers: { cookie: user.cookie, origin },
      payload: { name: 'x', scopes: ['admin'] },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'admin_scope_is_for_staff' } });
    const staff = await owner('staff');
    const { token } = await mintToken(app, staff.cookie, origin, { name: 'admin', scopes: ['admin'] });
    // An admin token can create users.
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: bearer(token),
      payload: { email: `made-${Date.now()}@example.test`, password: 'a long enough password' },
    });
    expect(created.statusCode).toBe(201);
  });

  it('never lets a token mint a token with scopes it does not hold', async () => {
    const { cookie } = await owner();
    const { token } = await mintToken(app, cookie, origin, { name: 'narrow', scopes: ['links:read', 'stats:read'] });
    const narrower = await app.inject({ method: 'POST', url: '/api/v1/tokens', headers: bearer(token), payload: { name: 'n', scopes: ['links:read'] } });
    expect(narrower.statusCode).toBe(201);
    const wider = await app.inject({
      method: 'POST',
      url: '/api/v1/tokens',
      headers: bearer(token),
      payload: { name: 'w', scopes: ['links:read', 'links:write'] },
    });
    expect(wider.statusCode).toBe(403);
    expect(wider.json().error.details).toEqual({ reason: 'scopes_not_held', scopes: ['links:write'] });
  });
});

// Guards the token-management rules of issue 23: any authenticated principal could list, mint and
// revoke tokens, so a links:read token revoked others, a team:read token listed them, and a token
// with an expiry or a CIDR allowlist minted one without either.
describe('what a token may do with tokens', () => {
  const post = (token: string, payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/v1/tokens', headers: bearer(token), payload });

  // Guards issue 34: a token could mint tokens but neither list them nor revoke one it minted
  // without `admin`, which only staff hold, so no owner's automation could rotate its tokens.
  it("an owner's token (every scope but admin) lists its account's tokens without secrets and revokes one it minted", async () => {
    const { cookie } = await owner();
    const automation = await mintToken(app, cookie, origin, {
      name: 'automation',
      scopes: ['links:read', 'links:write', 'stats:read', 'subdomain:write', 'team:read'],
    });
    const minted = await post(automation.token, { name: 'rotated', scopes: ['links:read'] });
    expect(minted.statusCode).toBe(201);
    const { id, token } = minted.json().data;
    const listed = await app.inject({ url: '/api/v1/tokens', headers: bearer(automation.token) });
    expect(listed.statusCode).toBe(200);
    expect(
      listed
        .json()
        .data.tokens.map((entry: { id: string }) => entry.id)
        .sort(),
    ).toEqual([automation.id, id].sort());
    expect(listed.body).not.toContain(token);
    expect(listed.body).not.toContain(automation.token);
    expect(listed.body).not.toContain('token_hash');
    for (const entry of listed.json().data.tokens) expect(entry).not.toHaveProperty('token');
    const revoked = await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${id}`, headers: bearer(automation.token) });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().data).toMatchObject({ id, state: 'revoked' });
    expect((await app.inject({ url: '/api/v1/me', headers: bearer(token) })).json().error.code).toBe('invalid_token');
    expect((await app.inject({ url: '/api/v1/me', headers: bearer(automation.token) })).statusCode).toBe(200);
  });

  it('a token lists its own account only, whatever its scopes', async () => {
    const alice = await owner();
    const bob = await owner();
    const team = await mintToken(app, alice.cookie, origin, { name: 'team', scopes: ['team:read'] });
    const bobs = await mintToken(app, bob.cookie, origin);
    const listed = await app.inject({ url: '/api/v1/tokens', headers: bearer(team.token) });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.tokens.map((entry: { id: string }) => entry.id)).toEqual([team.id]);
    expect(listed.body).not.toContain(bobs.id);
  });

  it('a token cannot revoke a wider token of its account (403 forbidden, what is wider named); the target stays usable', async () => {
    const { cookie } = await owner();
    const reader = await mintToken(app, cookie, origin, { name: 'reader', scopes: ['links:read'] });
    const victim = await mintToken(app, cookie, origin);
    const refused = await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${victim.id}`, headers: bearer(reader.token) });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({
      code: 'forbidden',
      details: { reason: 'token_wider_than_caller', wider: ['scopes'], scopes: ['links:write', 'stats:read', 'subdomain:write'] },
    });
    expect((await app.inject({ url: '/api/v1/me', headers: bearer(victim.token) })).statusCode).toBe(200);
    // The same scopes are no wider: revoked.
    const peer = await mintToken(app, cookie, origin, { name: 'peer', scopes: ['links:read'] });
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${peer.id}`, headers: bearer(reader.token) })).statusCode).toBe(200);
  });

  it('a token with an expiry or an allowlist cannot revoke a token outliving it or usable from further', async () => {
    const { cookie } = await owner();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const caller = await mintToken(app, cookie, origin, { name: 'fenced', scopes: ['links:read'], expires_at: expiresAt, ip_allowlist: ['203.0.113.0/24'] });
    const revoke = (id: string) => app.inject({ method: 'DELETE', url: `/api/v1/tokens/${id}`, headers: bearer(caller.token), remoteAddress: '203.0.113.5' });
    const forever = await mintToken(app, cookie, origin, { name: 'forever', scopes: ['links:read'], ip_allowlist: ['203.0.113.0/25'] });
    const anywhere = await mintToken(app, cookie, origin, { name: 'anywhere', scopes: ['links:read'], expires_at: expiresAt });
    const outside = await mintToken(app, cookie, origin, { name: 'outside', scopes: ['links:read'], expires_at: expiresAt, ip_allowlist: ['198.51.100.0/24'] });
    const inside = await mintToken(app, cookie, origin, { name: 'inside', scopes: ['links:read'], expires_at: expiresAt, ip_allowlist: ['203.0.113.7'] });
    for (const [target, wider] of [
      [forever, ['expires_at']],
      [anywhere, ['ip_allowlist']],
      [outside, ['ip_allowlist']],
    ] as const) {
      const refused = await revoke(target.id);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'token_wider_than_caller', wider } });
    }
    expect((await revoke(inside.id)).statusCode).toBe(200);
  });

  it("a token cannot revoke another account's token (403 not_owner); a staff admin token can", async () => {
    const alice = await owner();
    const bob = await owner();
    const alices = await mintToken(app, alice.cookie, origin, { name: 'narrow', scopes: ['links:read'] });
    const bobs = await mintToken(app, bob.cookie, origin);
    const refused = await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${alices.id}`, headers: bearer(bobs.token) });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('not_owner');
    expect((await app.inject({ url: '/api/v1/me', headers: bearer(alices.token) })).statusCode).toBe(200);
    const staff = await owner('staff');
    const admin = await mintToken(app, staff.cookie, origin, { name: 'admin', scopes: ['admin'] });
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${alices.id}`, headers: bearer(admin.token) })).statusCode).toBe(200);
  });

  it('any token may revoke itself', async () => {
    const { cookie } = await owner();
    const reader = await mintToken(app, cookie, origin, { name: 'reader', scopes: ['links:read'] });
    const revoked = await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${reader.id}`, headers: bearer(reader.token) });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().data).toMatchObject({ id: reader.id, state: 'revoked' });
    expect((await app.inject({ url: '/api/v1/me', headers: bearer(reader.token) })).json().error.code).toBe('invalid_token');
  });

  it('a token with an expiry mints only tokens expiring no later than itself', async () => {
    const { cookie } = await owner();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const { token } = await mintToken(app, cookie, origin, { name: 'dated', scopes: ['links:read'], expires_at: expiresAt });
    const without = await post(token, { name: 'n', scopes: ['links:read'] });
    expect(without.statusCode).toBe(403);
    expect(without.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'expiry_required', max_expires_at: expiresAt } });
    const later = await post(token, { name: 'n', scopes: ['links:read'], expires_at: new Date(Date.now() + 7_200_000).toISOString() });
    expect(later.statusCode).toBe(403);
    expect(later.json().error.details).toEqual({ reason: 'expiry_beyond_token', max_expires_at: expiresAt });
    expect((await post(token, { name: 'n', scopes: ['links:read'], expires_at: expiresAt })).statusCode).toBe(201);
    expect((await post(token, { name: 'n', scopes: ['links:read'], expires_at: new Date(Date.now() + 60_000).toISOString() })).statusCode).toBe(201);
  });

  it('a token with an IP allowlist mints only tokens whose every range lies inside one of its own', async () => {
    const { cookie } = await owner();
    const { token } = await mintToken(app, cookie, origin, { name: 'fenced', scopes: ['links:read'], ip_allowlist: ['203.0.113.0/24', '2001:db8::/32'] });
    const from = (payload: Record<string, unknown>) =>
      app.inject({
        method: 'POST',
        url: '/api/v1/tokens',
        headers: bearer(token),
        payload: { name: 'n', scopes: ['links:read'], ...payload },
        remoteAddress: '203.0.113.5',
      });
    const anywhere = await from({});
    expect(anywhere.statusCode).toBe(403);
    expect(anywhere.json().error.details).toEqual({ reason: 'ip_allowlist_required', allowed_ranges: ['203.0.113.0/24', '2001:db8::/32'] });
    expect((await from({ ip_allowlist: [] })).json().error.details.reason).toBe('ip_allowlist_required');
    const wider = await from({ ip_allowlist: ['203.0.113.0/23', '2001:db8:1::/48', '198.51.100.7'] });
    expect(wider.statusCode).toBe(403);
    expect(wider.json().error.details).toEqual({
      reason: 'ip_allowlist_beyond_token',
      ranges: ['203.0.113.0/23', '198.51.100.7'],
      allowed_ranges: ['203.0.113.0/24', '2001:db8::/32'],
    });
    const inside = await from({ ip_allowlist: ['203.0.113.128/25', '203.0.113.7', '2001:db8:1::/48'] });
    expect(inside.statusCode).toBe(201);
    expect(inside.json().data.ip_allowlist).toEqual(['203.0.113.128/25', '203.0.113.7/32', '2001:db8:1::/48']);
  });

  it('a token without expiry or allowlist mints tokens with any expiry and allowlist within its scopes', async () => {
    const { cookie } = await owner();
    const { token } = await mintToken(app, cookie, origin, { name: 'plain', scopes: ['links:read'] });
    expect((await post(token, { name: 'n', scopes: ['links:read'], expires_at: '2099-01-01T00:00:00Z', ip_allowlist: ['10.0.0.0/8'] })).statusCode).toBe(201);
    expect((await post(token, { name: 'n', scopes: ['links:read'] })).statusCode).toBe(201);
  });
});

describe('GET /api/v1/tokens', () => {
  it("lists the caller's tokens with their state, never the secret or its hash", async () => {
    const { cookie } = await owner();
    const first = await mintToken(app, cookie, origin);
    const second = await mintToken(app, cookie, origin);
    await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${second.id}`, headers: { cookie, origin } });
    const other = await owner();
    await mintToken(app, other.cookie, origin);
    const response = await app.inject({ url: '/api/v1/tokens', headers: { cookie } });
    expect(response.statusCode).toBe(200);
    const { data, meta } = response.json();
    expect(data.tokens.map((t: { id: string }) => t.id).sort()).toEqual([first.id, second.id].sort());
    expect(data.tokens.find((t: { id: string }) => t.id === second.id).state).toBe('revoked');
    expect(data.tokens.find((t: { id: string }) => t.id === first.id).state).toBe('active');
    expect(meta).toMatchObject({ count: 2, total: 2 });
    const text = response.body;
    expect(text).not.toContain(first.token);
    expect(text).not.toContain('token_hash');
    for (const token of data.tokens) {
      expect(Object.keys(token).sort()).toEqual(
        ['created_at', 'expires_at', 'id', 'ip_allowlist', 'last_used_at', 'last_used_ip', 'name', 'prefix', 'revoked_at', 'scopes', 'state'].sort(),
      );
    }
  });

  it('updates last_used_at and last_used_ip within a few seconds of use', async () => {
    const { cookie } = await owner();
    const { token, id } = await mintToken(app, cookie, origin);
    await app.inject({ url: '/api/v1/me', headers: bearer(token), remoteAddress: '203.0.113.44' });
    const used = await waitFor(
      async () => {
        const list = (await app.inject({ url: '/api/v1/tokens', headers: { cookie } })).json().data.tokens;
        const entry = list.find((t: { id: string }) => t.id === id);
        return entry.last_used_at ? entry : undefined;
      },
      5_000,
      { intervalMs: 200, message: 'last_used_at to be written' },
    );
    expect(used.last_used_ip).toBe('203.0.113.44');
    expect(Date.now() - new Date(used.last_used_at).getTime()).toBeLessThan(5_000);
  });
});

describe('authentication rules', () => {
  it('no credentials → 401 unauthorized; malformed or unknown token → 401 invalid_token', async () => {
    expect((await app.inject({ url: '/api/v1/me' })).json().error.code).toBe('unauthorized');
    for (const header of ['Bearer', 'Bearer abc', 'Basic dXNlcjpwYXNz', `Bearer svc_u_000000000000_${'A'.repeat(43)}`]) {
      const response = await app.inject({ url: '/api/v1/me', headers: { authorization: header } });
      expect(response.statusCode, header).toBe(401);
      expect(response.json().error.code, header).toBe('invalid_token');
    }
  });

  it('a token works as a bearer on its scopes and is refused outside them with 403 forbidden', async () => {
    const { cookie, id: userId } = await owner();
    const { token, id } = await mintToken(app, cookie, origin, { name: 'read', scopes: ['links:read'] });
    const me = (await app.inject({ url: '/api/v1/me', headers: bearer(token) })).json().data;
    expect(me).toMatchObject({ id: userId, authenticated_via: 'token', token_id: id, scopes: ['links:read'] });
    const refused = await app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: bearer(token),
      payload: { email: 'x@example.test', password: 'a long enough password' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.details).toEqual({ reason: 'missing_scope', required_scope: 'admin' });
  });

  it('active → revoked: refused with invalid_token on the very next request', async () => {
    const { cookie } = await owner();
    const { token, id } = await mintToken(app, cookie, origin);
    expect((await app.inject({ url: '/api/v1/me', headers: bearer(token) })).statusCode).toBe(200);
    const revoked = await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${id}`, headers: { cookie, origin } });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().data).toMatchObject({ id, state: 'revoked' });
    const next = await app.inject({ url: '/api/v1/me', headers: bearer(token) });
    expect(next.statusCode).toBe(401);
    expect(next.json().error).toMatchObject({ code: 'invalid_token', details: { reason: 'revoked' } });
    // Revoking again is harmless and keeps the first revocation time.
    const again = await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${id}`, headers: { cookie, origin } });
    expect(again.json().data.revoked_at).toBe(revoked.json().data.revoked_at);
  });

  it('active → expired: refused with invalid_token once the expiry passes, and listed as expired', async () => {
    const { cookie } = await owner();
    const expiresAt = new Date(Date.now() + 1_500).toISOString();
    const { token, id } = await mintToken(app, cookie, origin, { name: 'short', scopes: ['links:read'], expires_at: expiresAt });
    expect((await app.inject({ url: '/api/v1/me', headers: bearer(token) })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    const expired = await app.inject({ url: '/api/v1/me', headers: bearer(token) });
    expect(expired.statusCode).toBe(401);
    expect(expired.json().error).toMatchObject({ code: 'invalid_token', details: { reason: 'expired' } });
    const listed = (await app.inject({ url: '/api/v1/tokens', headers: { cookie } })).json().data.tokens.find((t: { id: string }) => t.id === id);
    expect(listed.state).toBe('expired');
  });

  it('checks the IP allowlist for IPv4 and IPv6 ranges, IPv4-mapped addresses included', async () => {
    const { cookie } = await owner();
    const { token } = await mintToken(app, cookie, origin, { name: 'fenced', scopes: ['links:read'], ip_allowlist: ['203.0.113.0/24', '2001:db8::/32'] });
    const from = (remoteAddress: string) => app.inject({ url: '/api/v1/me', headers: bearer(token), remoteAddress });
    for (const allowed of ['203.0.113.9', '::ffff:203.0.113.10', '2001:db8::1', '2001:db8:ffff::2'])
      expect((await from(allowed)).statusCode, allowed).toBe(200);
    for (const refused of ['198.51.100.1', '2001:db9::1', '::1']) {
      const response = await from(refused);
      expect(response.statusCode, refused).toBe(403);
      expect(response.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'ip_not_allowed' } });
    }
  });

  it("another owner's token answers 403 not_owner; an unknown one 404 not_found", async () => {
    const alice = await owner();
    const bob = await owner();
    const { id } = await mintToken(app, alice.cookie, origin);
    const response = await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${id}`, headers: { cookie: bob.cookie, origin } });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('not_owner');
    const missing = await app.inject({ method: 'DELETE', url: '/api/v1/tokens/00000000-0000-4000-8000-000000000000', headers: { cookie: bob.cookie, origin } });
    expect(missing.json().error.code).toBe('not_found');
  });

  it('the api bucket counts per token, then per IP', async () => {
    const limited = (await buildApp({ ...context, config: { ...context.config, rateLimits: testConfig({ RATE_LIMIT_API: '2:60' }).rateLimits } })).app;
    try {
      const { cookie } = await owner();
      const a = await mintToken(app, cookie, origin);
      const b = await mintToken(app, cookie, origin);
      const address = ip();
      const me = (token: string) => limited.inject({ url: '/api/v1/me', headers: bearer(token), remoteAddress: address });
      expect((await me(a.token)).statusCode).toBe(200);
      expect((await me(a.token)).statusCode).toBe(200);
      const third = await me(a.token);
      expect(third.statusCode).toBe(429);
      expect(third.headers['retry-after']).toBeDefined();
      expect((await me(b.token)).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('revocation across API instances', () => {
  it(`a token revoked on one instance is refused by another on its next request (${SERVICES_MODE ? 'two contexts over Redis pub/sub' : 'one process'})`, async () => {
    // In the services run the second instance has its own connections (Redis, Postgres pool),
    // like a second node; embedded, one process is one node.
    const otherContext = SERVICES_MODE ? await createTestContext() : context;
    const other = (await buildApp(otherContext)).app;
    try {
      const { cookie } = await owner();
      const { token, id } = await mintToken(app, cookie, origin);
      // Both instances have the token in their caches.
      expect((await other.inject({ url: '/api/v1/me', headers: bearer(token) })).statusCode).toBe(200);
      expect((await app.inject({ url: '/api/v1/me', headers: bearer(token) })).statusCode).toBe(200);
      expect((await app.inject({ method: 'DELETE', url: `/api/v1/tokens/${id}`, headers: { cookie, origin } })).statusCode).toBe(200);
      const next = await other.inject({ url: '/api/v1/me', headers: bearer(token) });
      expect(next.statusCode).toBe(401);
      expect(next.json().error.code).toBe('invalid_token');
    } finally {
      await other.close();
      if (otherContext !== context) await closeContext(otherContext);
    }
  });
});
