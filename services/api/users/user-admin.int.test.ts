import type { FastifyInstance, FastifyRequest } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { auditRepository } from '#shared/audit/audit.repository.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { usersRepository } from '#shared/users/users.repository.js';
import { selectRows } from '#shared/analytics/analytics.js';
import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext, SERVICES_MODE } from '#tests/support/context.js';
import { createFreshDatabase, type FreshDatabase } from '#tests/support/fresh-database.js';
import type { listenerClient } from '#tests/support/listener.js';
import { claimSubdomain, createOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { waitFor } from '#tests/support/wait.js';
import { AppError } from '#shared/errors.js';
import type { AuditEntry } from '#shared/audit/audit.repository.js';
import { createMemoryCache } from '#shared/cache/cache.js';
import type { Principal } from '#shared/http/auth.js';
import { usersService } from './users.service.js';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { TOPICS } from '#shared/message-log/topics.js';
import { DLQ_REPLAY_GROUP } from '#shared/message-log/dead-letters.js';
import { buildApp } from '#services/app.js';
import { createRepositories } from '#services/repositories.js';
import { teamsRepository } from '#shared/teams/teams.repository.js';
import { subdomainsRepository } from '#shared/subdomains/subdomains.repository.js';
import { createAuthenticator } from '../auth/authenticator.js';

// User administration by staff (PATCH and DELETE /api/v1/users/{id}) through the real HTTP app on
// the real store (PGlite, or Postgres and Redis in the services run): what a disabled account's
// sessions, tokens, sign-in, reset links and links do, and the refusals.

let context: Context;
let app: FastifyInstance;
let ingest: ReturnType<typeof listenerClient>;
let origin: string;
let staff: { id: string; email: string; cookie: string };
let enricher: Consumer;

beforeAll(async () => {
  ({ context, app, ingest } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '1000000:60' }));
  // An account's deletion waits for the enricher to store what the log holds, as an erasure does.
  enricher = await startVisitConsumer(context);
  origin = new URL(context.config.publicUrl).origin;
  const account = await createAccount(context, 'staff');
  staff = { ...account, cookie: await loginCookie(app, account.email, TEST_PASSWORD, clientIp()) };
});

afterAll(async () => {
  await enricher?.stop();
  await app?.close();
  if (context) await closeContext(context);
});

/** A distinct client address per call, so that the auth bucket of one test never limits another. */
function clientIp() {
  return `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
}

const setDisabled = (id: string, disabled: unknown, headers: Record<string, string> = { cookie: staff.cookie }) =>
  app.inject({ method: 'PATCH', url: `/api/v1/users/${id}`, headers: { origin, ...headers }, payload: { disabled } as Record<string, unknown> });

const remove = (id: string, headers: Record<string, string> = { cookie: staff.cookie }) =>
  app.inject({ method: 'DELETE', url: `/api/v1/users/${id}`, headers: { origin, ...headers } });

const login = (email: string, password = TEST_PASSWORD) =>
  app.inject({ method: 'POST', url: '/auth/login', payload: { email, password }, remoteAddress: clientIp() });

const audits = (action: string, actorId: string) => auditRepository(context.db.db).list({ action, actorId });

describe('PATCH /api/v1/users/{id} (disable, re-enable)', () => {
  it("refuses a disabled account's session and token on their very next request (401 account_disabled), and its sign-in", async () => {
    const owner = await createOwner(context, app);
    // The token was used, so its record sits in the authenticator's cache when the account is disabled.
    expect((await app.inject({ url: '/api/v1/me', headers: owner.auth })).statusCode).toBe(200);
    expect((await app.inject({ url: '/api/v1/me', headers: { cookie: owner.cookie } })).statusCode).toBe(200);

    const disabled = await setDisabled(owner.id, true);
    expect(disabled.statusCode, disabled.body).toBe(200);
    expect(disabled.json().data).toMatchObject({ id: owner.id, disabled: true, disabled_at: expect.any(String) });

    for (const headers of [owner.auth, { cookie: owner.cookie }]) {
      const refused = await app.inject({ url: '/api/v1/links', headers });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error).toMatchObject({ code: 'unauthorized', details: { reason: 'account_disabled' } });
      expect(refused.json().error.message).toContain('disabled');
    }
    // The right password is told the account is disabled, and gets no session; a wrong one learns nothing new.
    const right = await login(owner.email);
    expect(right.statusCode).toBe(401);
    expect(right.json().error.details).toEqual({ reason: 'account_disabled' });
    expect(right.cookies.find((cookie) => cookie.name === 'lt_session')).toBeUndefined();
    const wrong = await login(owner.email, 'not the password at all');
    expect(wrong.json().error.details).toEqual({ reason: 'invalid_credentials' });
    await waitFor(async () => (await audits('user.disabled', staff.id)).some((row) => row.target === owner.id), 5000);
  });

  it('refuses the token on another API node that had it cached (its own context, sharing the store and cache in the services run)', async () => {
    // A second node: its own authenticator and token cache; in the services run also its own Postgres pool and Redis client.
    const otherContext = SERVICES_MODE ? await createTestContext() : context;
    const { app: other } = await buildApp(otherContext);
    try {
      const owner = await createOwner(context, app);
      expect((await other.inject({ url: '/api/v1/me', headers: owner.auth })).statusCode).toBe(200);
      expect((await other.inject({ url: '/api/v1/me', headers: owner.auth })).statusCode).toBe(200);
      expect((await setDisabled(owner.id, true)).statusCode).toBe(200);
      const refused = await other.inject({ url: '/api/v1/me', headers: owner.auth });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error.details).toEqual({ reason: 'account_disabled' });
      expect((await setDisabled(owner.id, false)).statusCode).toBe(200);
      expect((await other.inject({ url: '/api/v1/me', headers: owner.auth })).statusCode).toBe(200);
    } finally {
      await other.close();
      if (otherContext !== context) await closeContext(otherContext);
    }
  });

  it('re-enables: sign-in and API tokens work again, the sessions of before stay signed out; audited', async () => {
    const owner = await createOwner(context, app);
    expect((await setDisabled(owner.id, true)).statusCode).toBe(200);
    const enabled = await setDisabled(owner.id, false);
    expect(enabled.statusCode, enabled.body).toBe(200);
    expect(enabled.json().data).toMatchObject({ id: owner.id, disabled: false, disabled_at: null });

    expect((await app.inject({ url: '/api/v1/me', headers: owner.auth })).statusCode).toBe(200);
    const oldSession = await app.inject({ url: '/api/v1/me', headers: { cookie: owner.cookie } });
    expect(oldSession.statusCode).toBe(401);
    expect(oldSession.json().error.details?.reason).not.toBe('account_disabled');
    const cookie = await loginCookie(app, owner.email, TEST_PASSWORD, clientIp());
    expect((await app.inject({ url: '/api/v1/me', headers: { cookie } })).statusCode).toBe(200);
    const [row] = await waitFor(async () => {
      const rows = (await audits('user.enabled', staff.id)).filter((entry) => entry.target === owner.id);
      return rows.length > 0 && rows;
    }, 5000);
    expect(row!.details).toEqual({ sessions_revoked: 1 });
  });

  it('keeps the links of a disabled account redirecting', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, { ...owner });
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/kept' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { slug } = created.json().data;
    const visit = () => ingest.inject({ method: 'GET', url: `/${slug}`, headers: { host: `${subdomain}.localhost:8080` }, remoteAddress: clientIp() });
    expect((await visit()).statusCode).toBe(302);
    expect((await setDisabled(owner.id, true)).statusCode).toBe(200);
    const redirected = await visit();
    expect(redirected.statusCode).toBe(302);
    expect(redirected.headers.location).toBe('https://example.com/kept');
  });

  it('changes nothing, and audits nothing, when the account already has the state asked for', async () => {
    const account = await createAccount(context);
    const first = await setDisabled(account.id, false);
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({ disabled: false, disabled_at: null });
    expect((await setDisabled(account.id, true)).statusCode).toBe(200);
    const again = await setDisabled(account.id, true);
    expect(again.statusCode).toBe(200);
    await waitFor(async () => (await audits('user.disabled', staff.id)).some((row) => row.target === account.id), 5000);
    expect((await audits('user.disabled', staff.id)).filter((row) => row.target === account.id)).toHaveLength(1);
  });

  it("refuses a staff member's own account (409 cannot_disable_self), through a session or an admin token", async () => {
    const token = await mintToken(app, staff.cookie, origin, { name: 'admin', scopes: ['admin'] });
    const callers: Record<string, string>[] = [{ cookie: staff.cookie }, { authorization: `Bearer ${token.token}` }];
    for (const headers of callers) {
      const refused = await setDisabled(staff.id, true, headers);
      expect(refused.statusCode).toBe(409);
      expect(refused.json().error).toMatchObject({ code: 'conflict', details: { reason: 'cannot_disable_self' } });
      expect(refused.json().error.message).toContain('your own account');
    }
    expect((await app.inject({ url: '/api/v1/me', headers: { cookie: staff.cookie } })).statusCode).toBe(200);
  });

  it('disables another staff account through an admin token', async () => {
    const other = await createAccount(context, 'staff');
    const token = await mintToken(app, staff.cookie, origin, { name: 'admin', scopes: ['admin'] });
    const done = await setDisabled(other.id, true, { authorization: `Bearer ${token.token}` });
    expect(done.statusCode, done.body).toBe(200);
    expect((await login(other.email)).json().error.details).toEqual({ reason: 'account_disabled' });
  });

  it('refuses non-staff callers (403), anonymous ones (401), unknown ids (404) and bodies other than {disabled: boolean} (422)', async () => {
    const user = await createOwner(context, app);
    const victim = await createAccount(context);
    for (const headers of [{ cookie: user.cookie }, user.auth]) {
      const refused = await setDisabled(victim.id, true, headers);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'missing_scope', required_scope: 'admin' } });
    }
    expect((await setDisabled(victim.id, true, {})).statusCode).toBe(401);
    expect((await login(victim.email)).statusCode).toBe(200);
    const unknown = await setDisabled(crypto.randomUUID(), true);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('not_found');
    const invalid: [Record<string, unknown>, number, string][] = [
      [{ disabled: 'yes' }, 422, 'validation_error'],
      [{}, 400, 'missing_parameter'],
      [{ disabled: true, role: 'staff' }, 400, 'bad_request'],
    ];
    for (const [payload, status, code] of invalid) {
      const answer = await app.inject({ method: 'PATCH', url: `/api/v1/users/${victim.id}`, headers: { origin, cookie: staff.cookie }, payload });
      expect(answer.statusCode, JSON.stringify(payload)).toBe(status);
      expect(answer.json().error.code).toBe(code);
    }
    expect((await login(victim.email)).statusCode).toBe(200);
    expect((await setDisabled('not-a-uuid', true)).statusCode).toBe(422);
  });

  it('lists the state of every account for staff', async () => {
    const account = await createAccount(context);
    expect((await setDisabled(account.id, true)).statusCode).toBe(200);
    const list = await app.inject({ url: '/api/v1/users?limit=100', headers: { cookie: staff.cookie } });
    const users = list.json().data.users as { id: string; disabled: boolean }[];
    expect(users.find((user) => user.id === account.id)).toMatchObject({ disabled: true, disabled_at: expect.any(String) });
    expect(users.find((user) => user.id === staff.id)).toMatchObject({ disabled: false, disabled_at: null });
  });
});

describe('the cost of the disabled check', () => {
  it('adds no store read per request: a cached token is read once per tokens version, a session by its one usual look-up (reads counted)', async () => {
    const owner = await createOwner(context, app);
    const repositories = createRepositories(context);
    const reads = { token: 0, session: 0 };
    const tokens = { ...repositories.tokens, findByHashWithUser: (hash: string) => (reads.token++, repositories.tokens.findByHashWithUser(hash)) };
    const sessions = { ...repositories.sessions, findLiveWithUser: (hash: string) => (reads.session++, repositories.sessions.findLiveWithUser(hash)) };
    const authenticator = createAuthenticator(
      { cache: context.cache, log: context.log, repositories: { tokens, sessions, settings: repositories.settings, totp: repositories.totp } },
      { audit: () => undefined },
    );
    const cookie = owner.cookie.slice('lt_session='.length);
    const request = (headers: Record<string, string>, cookies: Record<string, string> = {}) =>
      ({ headers, cookies, ip: '203.0.113.9' }) as unknown as FastifyRequest;
    try {
      for (let i = 0; i < 100; i++) {
        expect((await authenticator.authenticate(request(owner.auth)))?.userId).toBe(owner.id);
        expect((await authenticator.authenticate(request({}, { lt_session: cookie })))?.userId).toBe(owner.id);
      }
      expect(reads).toEqual({ token: 1, session: 100 });
      expect((await setDisabled(owner.id, true)).statusCode).toBe(200);
      for (let i = 0; i < 100; i++) {
        await expect(Promise.resolve().then(() => authenticator.authenticate(request(owner.auth)))).rejects.toMatchObject({
          details: { reason: 'account_disabled' },
        });
      }
      // A refused token is cached as any other: one read for the new version, then none.
      expect(reads).toEqual({ token: 2, session: 100 });
    } finally {
      await authenticator.close();
    }
  });
});

describe('password reset of a disabled account', () => {
  it('issues no staff link (409 account_disabled), and a link issued before the disabling no longer works', async () => {
    const account = await createAccount(context);
    const issued = await app.inject({ method: 'POST', url: `/api/v1/users/${account.id}/password-reset`, headers: { origin, cookie: staff.cookie } });
    expect(issued.statusCode).toBe(201);
    const token = /#token=([\w-]+)$/.exec(issued.json().data.url)![1]!;
    expect((await setDisabled(account.id, true)).statusCode).toBe(200);

    const refused = await app.inject({ method: 'POST', url: `/api/v1/users/${account.id}/password-reset`, headers: { origin, cookie: staff.cookie } });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.details).toEqual({ reason: 'account_disabled' });
    const confirm = await app.inject({
      method: 'POST',
      url: '/auth/password-reset/confirm',
      payload: { token, password: 'plum tractor velvet orbit lantern' },
      remoteAddress: clientIp(),
    });
    expect(confirm.statusCode).toBe(403);
    // Disabling spent the account's open links: a reset cannot lead back in, even after re-enabling.
    expect(confirm.json().error.details.reason).toBe('reset_link_used');
    expect((await setDisabled(account.id, false)).statusCode).toBe(200);
    expect((await login(account.email)).statusCode).toBe(200);
  });

  it('refuses a link of an account disabled after the link was taken out (a race): 403 account_disabled', async () => {
    const account = await createAccount(context);
    const issued = await app.inject({ method: 'POST', url: `/api/v1/users/${account.id}/password-reset`, headers: { origin, cookie: staff.cookie } });
    const token = /#token=([\w-]+)$/.exec(issued.json().data.url)![1]!;
    // As if the link had been taken out between the disabling's transaction and its use: the account is disabled, the link open.
    await context.db.db.updateTable('users').set({ disabled_at: new Date() }).where('id', '=', account.id).execute();
    const confirm = await app.inject({
      method: 'POST',
      url: '/auth/password-reset/confirm',
      payload: { token, password: 'plum tractor velvet orbit lantern' },
      remoteAddress: clientIp(),
    });
    expect(confirm.statusCode).toBe(403);
    expect(confirm.json().error.details).toEqual({ reason: 'account_disabled' });
    expect(confirm.json().error.message).toContain('disabled');
  });
});

describe('DELETE /api/v1/users/{id}', () => {
  it("deletes the account's links (they stop redirecting), tokens, webhooks, sessions and raw visits, frees its subdomain, answers the counts and audits them", async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, { ...owner });
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/gone' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { slug, id: linkId } = created.json().data;
    const hook = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: 'https://receiver.example/hook', events: ['visit.new'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const visit = () => ingest.inject({ method: 'GET', url: `/${slug}`, headers: { host: `${subdomain}.localhost:8080` }, remoteAddress: clientIp() });
    expect((await visit()).statusCode).toBe(302);
    expect((await visit()).statusCode).toBe(302);
    const rawVisits = async () => {
      const [row] = await selectRows<{ n: number }>(context.analytics.client, 'SELECT count() AS n FROM visits WHERE owner_id = {owner:String}', {
        owner: owner.id,
      });
      return Number(row!.n);
    };
    await waitFor(async () => (await rawVisits()) === 2, 30_000, { message: 'the two visits stored' });
    // Dead letters: one naming the account, one another account's.
    const otherOwner = crypto.randomUUID();
    await context.messageLog.publish(TOPICS.visitsDlq, [
      { key: linkId, value: JSON.stringify({ owner_id: owner.id, link_id: linkId, ip_public: '203.0.113.7', user_agent: 'cut' }).slice(0, -3) },
      { key: 'kept', value: JSON.stringify({ owner_id: otherOwner, ip_public: '203.0.113.8' }).slice(0, -3) },
    ]);
    const deadLetters = async () =>
      (await context.messageLog.peek({ topic: TOPICS.visitsDlq, groupId: DLQ_REPLAY_GROUP, limit: 1000 })).messages.map((message) => message.value);
    expect((await deadLetters()).filter((value) => value.includes(owner.id))).toHaveLength(1);

    const deleted = await remove(owner.id);
    expect(deleted.statusCode, deleted.body).toBe(200);
    const { data } = deleted.json();
    expect(data.id).toBe(owner.id);
    expect(data.deleted).toMatchObject({ links: 1, subdomains: 1, webhooks: 1, tokens: 1, sessions: 1 });
    expect(data.deleted.visits).toBe(2);
    expect(data.deleted.dead_letters).toBe(1);
    const left = await deadLetters();
    expect(left.filter((value) => value.includes(owner.id))).toEqual([]);
    expect(left.filter((value) => value.includes(otherOwner))).toHaveLength(1);

    expect(await rawVisits()).toBe(0);
    await waitFor(async () => (await visit()).statusCode === 404, 10_000, { message: 'the edge to drop the link' });
    expect((await app.inject({ url: '/api/v1/links', headers: owner.auth })).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/v1/links', headers: { cookie: owner.cookie } })).statusCode).toBe(401);
    expect((await login(owner.email)).statusCode).toBe(401);
    expect((await app.inject({ url: `/api/v1/links/${linkId}`, headers: { cookie: staff.cookie } })).statusCode).toBe(404);
    // The name is free again.
    const other = await createOwner(context, app);
    const claimed = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: other.auth, payload: { name: subdomain } });
    expect(claimed.statusCode, claimed.body).toBe(201);

    const [row] = await waitFor(async () => {
      const rows = (await audits('user.deleted', staff.id)).filter((entry) => entry.target === owner.id);
      return rows.length > 0 && rows;
    }, 5000);
    expect(row!.details).toEqual(data.deleted);
    expect((await remove(owner.id)).statusCode).toBe(404);
  });

  it("refuses a staff member's own account (409 cannot_delete_self) and deletes nothing", async () => {
    const refused = await remove(staff.id);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'conflict', details: { reason: 'cannot_delete_self' } });
    expect((await login(staff.email)).statusCode).toBe(200);
  });

  it('answers 403 to non-staff callers, 401 to anonymous ones and 404 for an unknown id', async () => {
    const user = await createOwner(context, app);
    const victim = await createAccount(context);
    for (const headers of [{ cookie: user.cookie }, user.auth]) {
      const refused = await remove(victim.id, headers);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error.details).toMatchObject({ reason: 'missing_scope' });
    }
    expect((await remove(victim.id, {})).statusCode).toBe(401);
    expect((await remove(crypto.randomUUID())).statusCode).toBe(404);
  });
});

describe('DELETE /api/v1/users/{id} and teams', () => {
  const asSession = (cookie: string) => ({ cookie, origin });

  /** A team of the owner with the member in it (invited without SMTP_URL: the link is answered), and its id. */
  async function teamWith(owner: { cookie: string }, member: { email: string; cookie: string }, role: string): Promise<string> {
    const team = await app.inject({ method: 'POST', url: '/api/v1/teams', headers: asSession(owner.cookie), payload: { name: 'Shared' } });
    const teamId = team.json().data.id as string;
    const invited = await app.inject({
      method: 'POST',
      url: `/api/v1/teams/${teamId}/invitations`,
      headers: asSession(owner.cookie),
      payload: { email: member.email, role },
    });
    const token = new URL(invited.json().data.link).hash.replace('#token=', '');
    const accepted = await app.inject({ method: 'POST', url: '/api/v1/invitations/accept', headers: asSession(member.cookie), payload: { token } });
    expect(accepted.statusCode, accepted.body).toBe(200);
    return teamId;
  }

  it('refuses the only owner of a team with other members (409 last_team_owner, naming the team) before erasing anything; with a second owner it deletes', async () => {
    const owner = await createOwner(context, app);
    const member = await createOwner(context, app);
    const teamId = await teamWith(owner, member, 'admin');
    const refused = await remove(owner.id);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'conflict', details: { reason: 'last_team_owner', teams: [teamId] } });
    expect(refused.json().error.message).toMatch(/without an owner/);
    expect((await app.inject({ url: '/api/v1/me', headers: owner.auth })).statusCode).toBe(200);

    const promoted = await app.inject({
      method: 'PATCH',
      url: `/api/v1/teams/${teamId}/members/${member.id}`,
      headers: asSession(owner.cookie),
      payload: { role: 'owner' },
    });
    expect(promoted.statusCode).toBe(200);
    const deleted = await remove(owner.id);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json().data.deleted.teams).toBe(0);
    const left = await app.inject({ url: `/api/v1/teams/${teamId}/members`, headers: asSession(member.cookie) });
    expect(left.json().data.members).toMatchObject([{ id: member.id, role: 'owner' }]);
  });

  it('deletes the teams the account is the only member of with it (deleted.teams)', async () => {
    const owner = await createOwner(context, app);
    const team = await app.inject({ method: 'POST', url: '/api/v1/teams', headers: asSession(owner.cookie), payload: { name: 'Alone' } });
    const teamId = team.json().data.id as string;
    const deleted = await remove(owner.id);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json().data.deleted.teams).toBe(1);
    expect(await context.db.db.selectFrom('teams').selectAll().where('id', '=', teamId).execute()).toEqual([]);
  });

  it("refuses in the deletion's own transaction when the last other owner stepped down after the service's check", async () => {
    const owner = await createOwner(context, app);
    const member = await createOwner(context, app);
    const teamId = await teamWith(owner, member, 'viewer');
    // The repository's deletion alone, as when an owner stepped down between the check and the deletion.
    const result = await createRepositories(context).users.deleteAccount(owner.id);
    expect(result).toEqual({ refused: 'last_team_owner', orphaned: [teamId] });
    expect(await context.db.db.selectFrom('users').select('id').where('id', '=', owner.id).execute()).toHaveLength(1);
  });
});

describe('the last active staff account', () => {
  let fresh: FreshDatabase | undefined;
  afterEach(async () => {
    await fresh?.drop();
    fresh = undefined;
  });

  const staffPair = async () => {
    fresh = await createFreshDatabase();
    await migrateDatabase(fresh.database);
    const users = usersRepository(fresh.database.db);
    const ids = await Promise.all(
      ['a', 'b'].map((name) => users.insertIfAbsent({ email: `${name}@staff.example`, passwordHash: 'scrypt$unused', role: 'staff' })),
    );
    return { users, ids: ids as string[] };
  };

  it('cannot be disabled: 409 last_active_staff', async () => {
    const { users, ids } = await staffPair();
    expect(await users.setDisabled(ids[0]!, true)).toMatchObject({ changed: true });
    expect(await users.setDisabled(ids[1]!, true)).toEqual({ refused: 'last_active_staff' });
    expect((await users.findById(ids[1]!))!.disabled_at).toBeNull();
  });

  it('survives two staff disabling each other at once: one of the two stays active', async () => {
    const { users, ids } = await staffPair();
    const results = await Promise.all(ids.map((id) => users.setDisabled(id, true)));
    expect(results.filter((result) => result?.refused === 'last_active_staff')).toHaveLength(1);
    const rows = await Promise.all(ids.map((id) => users.findById(id)));
    expect(rows.filter((row) => row!.disabled_at === null)).toHaveLength(1);
  });

  it('is refused by the service with 409 last_active_staff to a staff caller authenticated just before being disabled (audit recorded in memory)', async () => {
    const { users, ids } = await staffPair();
    const [a, b] = ids as [string, string];
    const audited: AuditEntry[] = [];
    const service = usersService(
      {
        cache: createMemoryCache(),
        log: context.log,
        metrics: context.metrics,
        repositories: { users, teams: teamsRepository(context.db.db), subdomains: subdomainsRepository(context.db.db), audit: auditRepository(context.db.db) },
      },
      { audit: (entry) => audited.push(entry) },
      { eraseAccount: () => Promise.reject(new Error('no account is deleted here')) },
    );
    const principal = (userId: string): Principal => ({
      userId,
      email: '',
      role: 'staff',
      via: 'session',
      scopes: new Set(['admin']),
      identity: `user:${userId}`,
    });
    // Both requests passed authentication; a's disabling of b commits first.
    expect(await service.setDisabled(principal(a), b, true, '203.0.113.1')).toMatchObject({ id: b, disabled: true });
    const refused = await service.setDisabled(principal(b), a, true, '203.0.113.2').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'conflict', status: 409, details: { reason: 'last_active_staff' } });
    expect(audited.map((entry) => entry.action)).toEqual(['user.disabled']);
  });
});

describe('GET /api/v1/users/{id}/audit (what staff read of an account)', () => {
  const trail = (id: string, headers: Record<string, string> = { cookie: staff.cookie }, query = '') =>
    app.inject({ method: 'GET', url: `/api/v1/users/${id}/audit${query}`, headers });
  const actionsOf = (body: string) => (JSON.parse(body) as { data: { entries: { action: string }[] } }).data.entries.map((entry) => entry.action);

  it("answers over HTTP the account's own changes and staff's actions on it, newest first, with actor, target and IP", async () => {
    const owner = await createOwner(context, app);
    const changed = await app.inject({
      method: 'POST',
      url: '/api/v1/me/password',
      headers: { origin, cookie: owner.cookie },
      payload: { current_password: TEST_PASSWORD, new_password: 'gravel sunset mango kettle piano' },
      remoteAddress: '203.0.113.7',
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect((await setDisabled(owner.id, true)).statusCode).toBe(200);
    expect((await setDisabled(owner.id, false)).statusCode).toBe(200);
    const issued = await app.inject({ method: 'POST', url: `/api/v1/users/${owner.id}/password-reset`, headers: { origin, cookie: staff.cookie } });
    expect(issued.statusCode, issued.body).toBe(201);

    const expected = ['user.password_reset_issued', 'user.enabled', 'user.disabled', 'user.password_changed'];
    // Audit rows are written after the answer: read until the four are there.
    const body = await waitFor(
      async () => {
        const read = await trail(owner.id);
        expect(read.statusCode, read.body).toBe(200);
        expect(actionsOf(read.body).filter((action) => expected.includes(action))).toEqual(expected);
        return read.body;
      },
      10_000,
      { message: "the account's audit trail" },
    );
    type Entry = { action: string; actor_id: string | null; actor_email: string | null; target: string | null; ip: string | null; details: object };
    const entries = (JSON.parse(body) as { data: { entries: Entry[] }; meta: { total: number } }).data.entries;
    const byAction = (action: string) => entries.find((entry) => entry.action === action)!;
    expect(byAction('user.password_changed')).toMatchObject({ actor_id: owner.id, actor_email: owner.email, target: owner.id, ip: '203.0.113.7' });
    expect(byAction('user.disabled')).toMatchObject({ actor_id: staff.id, actor_email: staff.email, target: owner.id });
    expect(byAction('user.enabled')).toMatchObject({ actor_id: staff.id, target: owner.id, details: { sessions_revoked: 1 } });
    expect(byAction('user.password_reset_issued')).toMatchObject({ actor_id: staff.id, target: owner.id });
    // Nothing of the link itself is in its entry.
    const link = (JSON.parse(issued.body) as { data: { url: string } }).data.url;
    expect(body).not.toContain(link.split('#token=')[1]);

    // Paged as the other collections: one entry a page, the next page by its cursor.
    const first = await trail(owner.id, { cookie: staff.cookie }, '?limit=1');
    const firstBody = JSON.parse(first.body) as { data: { entries: { id: string }[] }; meta: { next_cursor: string | null } };
    expect(firstBody.data.entries).toHaveLength(1);
    const second = await trail(owner.id, { cookie: staff.cookie }, `?limit=1&cursor=${encodeURIComponent(firstBody.meta.next_cursor!)}`);
    expect(second.statusCode, second.body).toBe(200);
    expect((JSON.parse(second.body) as { data: { entries: { id: string }[] } }).data.entries[0]!.id).not.toBe(firstBody.data.entries[0]!.id);
  });

  it("keeps a deleted account's trail readable by its id, the deletion in it", async () => {
    const owner = await createOwner(context, app);
    const deleted = await remove(owner.id);
    expect(deleted.statusCode, deleted.body).toBe(200);
    await waitFor(
      async () => {
        const read = await trail(owner.id);
        expect(read.statusCode, read.body).toBe(200);
        expect(actionsOf(read.body)).toContain('user.deleted');
        return true;
      },
      10_000,
      { message: "the deleted account's trail" },
    );
  });

  it('refuses a caller without the admin scope (403), answers 404 for an id with no account and no entry, and 422 for a non-uuid', async () => {
    const owner = await createOwner(context, app);
    const other = await createOwner(context, app);
    const bySession = await trail(owner.id, { cookie: owner.cookie });
    expect(bySession.statusCode).toBe(403);
    expect(JSON.parse(bySession.body)).toMatchObject({
      ok: false,
      error: { code: 'forbidden', details: { reason: 'missing_scope', required_scope: 'admin' } },
    });
    expect((await trail(other.id, owner.auth)).statusCode).toBe(403);
    const unknown = await trail('00000000-0000-4000-8000-000000000000');
    expect(unknown.statusCode).toBe(404);
    expect(JSON.parse(unknown.body)).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect((await trail('not-a-uuid')).statusCode).toBe(422);
  });
});

describe('GET /api/v1/me/audit (one’s own account activity)', () => {
  type OwnEntry = { action: string; by: string; ip: string | null; details: Record<string, unknown> };
  const own = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/v1/me/audit', headers });

  it('lists the password change as by self with its IP, and staff’s disabling as by staff without their identity or address', async () => {
    const owner = await createOwner(context, app);
    const changed = await app.inject({
      method: 'POST',
      url: '/api/v1/me/password',
      headers: { origin, cookie: owner.cookie },
      payload: { current_password: TEST_PASSWORD, new_password: 'gravel sunset mango kettle piano' },
      remoteAddress: '203.0.113.8',
    });
    expect(changed.statusCode, changed.body).toBe(200);
    const disabled = await app.inject({
      method: 'PATCH',
      url: `/api/v1/users/${owner.id}`,
      headers: { origin, cookie: staff.cookie },
      payload: { disabled: true },
      remoteAddress: '203.0.113.99',
    });
    expect(disabled.statusCode).toBe(200);
    expect((await setDisabled(owner.id, false)).statusCode).toBe(200);
    // Re-enabling signed the old sessions out: a new one.
    const cookie = await loginCookie(app, owner.email, 'gravel sunset mango kettle piano', clientIp());

    const entries = await waitFor(
      async () => {
        const read = await own({ cookie });
        expect(read.statusCode, read.body).toBe(200);
        const list = (JSON.parse(read.body) as { data: { entries: OwnEntry[] } }).data.entries;
        expect(list.map((entry) => entry.action)).toEqual(expect.arrayContaining(['user.password_changed', 'user.disabled', 'user.enabled']));
        return list;
      },
      10_000,
      { message: 'the own audit trail' },
    );
    const byAction = (action: string) => entries.find((entry) => entry.action === action)!;
    expect(byAction('user.password_changed')).toMatchObject({ by: 'self', ip: '203.0.113.8', details: { sessions_revoked: 0 } });
    expect(byAction('user.disabled')).toEqual(expect.objectContaining({ by: 'staff', ip: null, details: {} }));
    const body = JSON.stringify(entries);
    expect(body).not.toContain(staff.id);
    expect(body).not.toContain(staff.email);
    expect(body).not.toContain('203.0.113.99');
  });

  it('takes a session: an API token is 401 session_required, no credentials 401', async () => {
    const owner = await createOwner(context, app);
    const byToken = await own(owner.auth);
    expect(byToken.statusCode).toBe(401);
    expect(JSON.parse(byToken.body)).toMatchObject({ ok: false, error: { code: 'unauthorized', details: { reason: 'session_required' } } });
    expect((await own({})).statusCode).toBe(401);
  });
});
