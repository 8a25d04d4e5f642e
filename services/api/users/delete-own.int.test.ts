import type { FastifyInstance } from 'fastify';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { auditRepository } from '#shared/audit/audit.repository.js';
import { selectRows } from '#shared/analytics/analytics.js';
import { createAccount, loginCookie, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext } from '#tests/support/context.js';
import { ownServerDatabase } from '#tests/support/fresh-database.js';
import type { listenerClient } from '#tests/support/listener.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { waitFor } from '#tests/support/wait.js';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import type { Consumer } from '#shared/message-log/message-log.js';

// An account deletes itself (DELETE /api/v1/me) through the real HTTP app on the real store
// (PGlite, or a database of its own on the services run's Postgres, since the last-staff rule counts
// every staff account): the password and second factor it asks, staff deletion's counts and
// refusals, and what is left of the account after.

let context: Context;
let app: FastifyInstance;
let ingest: ReturnType<typeof listenerClient>;
let origin: string;
let enricher: Consumer;
let database: Awaited<ReturnType<typeof ownServerDatabase>> | undefined;

beforeAll(async () => {
  database = await ownServerDatabase('lt_delown');
  ({ context, app, ingest } = await startTestPlatform({ ...database.overrides, RATE_LIMIT_REDIRECT: '1000000:60' }));
  // A deletion waits for the enricher to store what the log holds, as an erasure does.
  enricher = await startVisitConsumer(context);
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await enricher?.stop();
  await app?.close();
  if (context) await closeContext(context);
  await database?.drop();
});

/** A distinct client address per call, so that the auth bucket of one test never limits another. */
const clientIp = () => `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

const deleteSelf = (headers: Record<string, string>, payload: Record<string, unknown> = { password: TEST_PASSWORD }) =>
  app.inject({ method: 'DELETE', url: '/api/v1/me', headers: { origin, ...headers }, payload, remoteAddress: clientIp() });

const stillThere = async (owner: TestOwner) => (await app.inject({ url: '/api/v1/me', headers: owner.auth })).statusCode === 200;

describe('DELETE /api/v1/me', () => {
  it('deletes the account with its links (the short URL is 404), tokens, webhooks, sessions and raw visits; answers the counts, clears the cookie, audits it', async () => {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner);
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/mine' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { slug } = created.json().data;
    const hook = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: 'https://receiver.example/hook', events: ['visit.new'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const visit = () => ingest.inject({ method: 'GET', url: `/${slug}`, headers: { host: `${subdomain}.localhost:8080` }, remoteAddress: clientIp() });
    expect((await visit()).statusCode).toBe(302);
    const rawVisits = async () => {
      const [row] = await selectRows<{ n: number }>(context.analytics.client, 'SELECT count() AS n FROM visits WHERE owner_id = {owner:String}', {
        owner: owner.id,
      });
      return Number(row!.n);
    };
    await waitFor(async () => (await rawVisits()) === 1, 30_000, { message: 'the visit stored' });

    const deleted = await deleteSelf({ cookie: owner.cookie });
    expect(deleted.statusCode, deleted.body).toBe(200);
    const { data } = deleted.json();
    expect(data).toMatchObject({ id: owner.id, deleted: { links: 1, subdomains: 1, webhooks: 1, tokens: 1, sessions: 1, teams: 0, visits: 1 } });
    const cleared = deleted.cookies.find((cookie) => cookie.name === 'lt_session');
    expect(cleared?.value).toBe('');

    expect(await rawVisits()).toBe(0);
    await waitFor(async () => (await visit()).statusCode === 404, 10_000, { message: 'the edge to drop the link' });
    for (const headers of [owner.auth, { cookie: owner.cookie }]) {
      expect((await app.inject({ url: '/api/v1/me', headers })).statusCode).toBe(401);
    }
    const signIn = await app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { email: owner.email, password: TEST_PASSWORD },
      remoteAddress: clientIp(),
    });
    expect(signIn.statusCode).toBe(401);
    const [row] = await waitFor(async () => {
      const rows = (await auditRepository(context.db.db).list({ action: 'user.deleted' })).filter((entry) => entry.target === owner.id);
      return rows.length > 0 && rows;
    }, 5000);
    expect(row!.details).toEqual({ ...data.deleted, by: 'self' });
  });

  it('refuses a wrong password (403 current_password_wrong), an API token (401 session_required) and no session (401), deleting nothing', async () => {
    const owner = await createOwner(context, app);
    const wrong = await deleteSelf({ cookie: owner.cookie }, { password: 'not the password at all' });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'current_password_wrong' } });
    const token = await deleteSelf(owner.auth);
    expect(token.statusCode).toBe(401);
    expect(token.json().error.details).toMatchObject({ reason: 'session_required' });
    expect((await deleteSelf({})).statusCode).toBe(401);
    expect(await stillThere(owner)).toBe(true);
  });

  it('counts wrong passwords with those of the password change: past BRUTEFORCE_MAX_ATTEMPTS it is 429 password_attempts, even with the right one', async () => {
    const owner = await createOwner(context, app);
    for (let attempt = 0; attempt < context.config.bruteforce.maxAttempts; attempt++) {
      expect((await deleteSelf({ cookie: owner.cookie }, { password: 'not the password at all' })).statusCode).toBe(403);
    }
    const limited = await deleteSelf({ cookie: owner.cookie });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.details).toMatchObject({ reason: 'password_attempts' });
    expect(await stillThere(owner)).toBe(true);
  });

  it('asks the TOTP code of an account with two-factor sign-in: missing 403 totp_required, wrong 403 totp_code_wrong, right deletes', async () => {
    const owner = await createOwner(context, app);
    const started = await app.inject({
      method: 'POST',
      url: '/api/v1/me/totp',
      headers: { origin, cookie: owner.cookie },
      payload: { password: TEST_PASSWORD },
    });
    expect(started.statusCode, started.body).toBe(201);
    const secret = Secret.fromBase32(started.json().data.secret as string);
    const step = Math.floor(Date.now() / 30_000);
    const codeAt = (at: number) => TOTP.generate({ secret, timestamp: at * 30_000 });
    const confirmed = await app.inject({
      method: 'POST',
      url: '/api/v1/me/totp/confirm',
      headers: { origin, cookie: owner.cookie },
      payload: { code: codeAt(step - 1) },
    });
    expect(confirmed.statusCode, confirmed.body).toBe(200);

    const missing = await deleteSelf({ cookie: owner.cookie });
    expect(missing.statusCode).toBe(403);
    expect(missing.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'totp_required' } });
    const wrongCode = codeAt(step) === '000000' ? '111111' : '000000';
    const wrong = await deleteSelf({ cookie: owner.cookie }, { password: TEST_PASSWORD, totp_code: wrongCode });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().error.details).toMatchObject({ reason: 'totp_code_wrong' });
    // The right code with a wrong password is still a wrong password.
    const badPassword = await deleteSelf({ cookie: owner.cookie }, { password: 'not the password at all', totp_code: codeAt(step) });
    expect(badPassword.json().error.details).toMatchObject({ reason: 'current_password_wrong' });
    expect(await stillThere(owner)).toBe(true);

    const deleted = await deleteSelf({ cookie: owner.cookie }, { password: TEST_PASSWORD, totp_code: codeAt(step + 1) });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(await stillThere(owner)).toBe(false);
  });

  it('refuses the only owner of a team with other members (409 last_team_owner, naming the team) before deleting anything', async () => {
    const owner = await createOwner(context, app);
    const member = await createOwner(context, app);
    const asSession = (cookie: string) => ({ cookie, origin });
    const team = await app.inject({ method: 'POST', url: '/api/v1/teams', headers: asSession(owner.cookie), payload: { name: 'Shared' } });
    const teamId = team.json().data.id as string;
    const invited = await app.inject({
      method: 'POST',
      url: `/api/v1/teams/${teamId}/invitations`,
      headers: asSession(owner.cookie),
      payload: { email: member.email, role: 'admin' },
    });
    const token = new URL(invited.json().data.link).hash.replace('#token=', '');
    const accepted = await app.inject({ method: 'POST', url: '/api/v1/invitations/accept', headers: asSession(member.cookie), payload: { token } });
    expect(accepted.statusCode, accepted.body).toBe(200);

    const refused = await deleteSelf({ cookie: owner.cookie });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'conflict', details: { reason: 'last_team_owner', teams: [teamId] } });
    expect(await stillThere(owner)).toBe(true);
  });

  it('refuses the last active staff account (409 last_staff); with another active staff account it deletes', async () => {
    const first = await createAccount(context, 'staff');
    const cookie = await loginCookie(app, first.email, TEST_PASSWORD, clientIp());
    // Only staff of this test's own database: the first one is the last.
    const refused = await deleteSelf({ cookie });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'conflict', details: { reason: 'last_staff' } });
    expect(refused.json().error.message).toMatch(/last active staff/);
    expect((await app.inject({ url: '/api/v1/me', headers: { cookie } })).statusCode).toBe(200);

    await createAccount(context, 'staff');
    const deleted = await deleteSelf({ cookie });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect((await app.inject({ url: '/api/v1/me', headers: { cookie } })).statusCode).toBe(401);
  });
});
