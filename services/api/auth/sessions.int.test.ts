import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { auditRepository } from '#shared/audit/audit.repository.js';
import { createAccount, mintToken, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { buildApp } from '#services/app.js';

let context: Context;
let app: FastifyInstance;
let origin: string;

beforeAll(async () => {
  context = await createTestContext();
  app = (await buildApp(context)).app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

/** Signs in from an address with a user agent; answers the cookie header. */
async function signIn(email: string, ip: string, userAgent: string): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { email, password: TEST_PASSWORD },
    remoteAddress: ip,
    headers: { 'user-agent': userAgent },
  });
  expect(response.statusCode, response.body).toBe(200);
  return `lt_session=${response.cookies.find((cookie) => cookie.name === 'lt_session')!.value}`;
}

interface SessionView {
  id: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
  current: boolean;
}

const list = async (cookie: string): Promise<SessionView[]> => {
  const response = await app.inject({ url: '/api/v1/me/sessions', headers: { cookie } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data.sessions;
};

const revoke = (cookie: string, id: string) => app.inject({ method: 'DELETE', url: `/api/v1/me/sessions/${id}`, headers: { cookie, origin } });
const me = (cookie: string) => app.inject({ url: '/api/v1/me', headers: { cookie } });

describe('GET /api/v1/me/sessions', () => {
  it('lists the live sessions of the caller with created, last seen, IP and user agent, marking the current one', async () => {
    const account = await createAccount(context);
    const other = await createAccount(context);
    const laptop = await signIn(account.email, '203.0.113.7', 'Laptop/1.0');
    const phone = await signIn(account.email, '2001:db8::9', 'Phone/2.0');
    await signIn(other.email, '203.0.113.8', 'Other/1.0');
    const sessions = await list(phone);
    expect(sessions).toHaveLength(2);
    const byAgent = Object.fromEntries(sessions.map((session) => [session.user_agent, session]));
    expect(byAgent['Phone/2.0']).toMatchObject({ ip: '2001:db8::9', current: true });
    expect(byAgent['Laptop/1.0']).toMatchObject({ ip: '203.0.113.7', current: false });
    for (const session of sessions) {
      expect(Date.parse(session.created_at)).toBeGreaterThan(Date.now() - 60_000);
      expect(Date.parse(session.last_seen_at)).toBeGreaterThanOrEqual(Date.parse(session.created_at));
      expect(Date.parse(session.expires_at)).toBeGreaterThan(Date.now());
    }
    // Each session sees itself as the current one.
    expect((await list(laptop)).find((session) => session.current)?.user_agent).toBe('Laptop/1.0');
  });

  it('records when a session was last used, at most once a minute', async () => {
    const account = await createAccount(context);
    const cookie = await signIn(account.email, '203.0.113.20', 'Seen/1.0');
    const [session] = await list(cookie);
    const old = new Date(Date.now() - 3_600_000);
    await context.db.db.updateTable('sessions').set({ last_seen_at: old }).where('id', '=', session!.id).execute();
    expect((await me(cookie)).statusCode).toBe(200);
    const seen = await waitFor(async () => {
      const [row] = await list(cookie);
      return Date.parse(row!.last_seen_at) > Date.now() - 60_000 ? row : undefined;
    }, 5000);
    expect(Date.parse(seen.last_seen_at)).toBeGreaterThan(old.getTime());
  });

  it('is refused to an API token (session only)', async () => {
    const account = await createAccount(context);
    const cookie = await signIn(account.email, '203.0.113.21', 'Token/1.0');
    const { token } = await mintToken(app, cookie, origin);
    const response = await app.inject({ url: '/api/v1/me/sessions', headers: { authorization: `Bearer ${token}` } });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.details).toMatchObject({ reason: 'session_required' });
  });
});

describe('DELETE /api/v1/me/sessions/{id}', () => {
  it('signs another session of the caller out from its next request, and audits it', async () => {
    const account = await createAccount(context);
    const laptop = await signIn(account.email, '203.0.113.30', 'Laptop/1.0');
    const phone = await signIn(account.email, '203.0.113.31', 'Phone/2.0');
    const phoneId = (await list(phone)).find((session) => session.current)!.id;
    const revoked = await revoke(laptop, phoneId);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.json().data).toEqual({ revoked: true, signed_out: false });
    expect(revoked.cookies.find((cookie) => cookie.name === 'lt_session')).toBeUndefined();
    expect((await me(phone)).statusCode).toBe(401);
    expect((await me(laptop)).statusCode).toBe(200);
    expect((await list(laptop)).map((session) => session.id)).not.toContain(phoneId);
    // A revoked session is no longer there to revoke.
    expect((await revoke(laptop, phoneId)).statusCode).toBe(404);
    await waitFor(
      async () => (await auditRepository(context.db.db).list({ action: 'session.revoked', actorId: account.id })).some((row) => row.target === phoneId),
      5000,
    );
  });

  it("answers 404 for another account's session, as for an unknown id, and leaves it signed in", async () => {
    const account = await createAccount(context);
    const stranger = await createAccount(context);
    const cookie = await signIn(account.email, '203.0.113.40', 'Mine/1.0');
    const strangers = await signIn(stranger.email, '203.0.113.41', 'Theirs/1.0');
    const theirId = (await list(strangers))[0]!.id;
    const foreign = await revoke(cookie, theirId);
    const unknown = await revoke(cookie, crypto.randomUUID());
    expect(foreign.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe(unknown.json().error.code);
    expect(foreign.json().error.message).toBe(unknown.json().error.message);
    expect((await me(strangers)).statusCode).toBe(200);
  });

  it('revoking the current session signs the caller out and clears the cookie', async () => {
    const account = await createAccount(context);
    const cookie = await signIn(account.email, '203.0.113.50', 'Self/1.0');
    const id = (await list(cookie))[0]!.id;
    const response = await revoke(cookie, id);
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toEqual({ revoked: true, signed_out: true });
    const cleared = response.cookies.find((entry) => entry.name === 'lt_session');
    expect(cleared?.value).toBe('');
    expect((await me(cookie)).statusCode).toBe(401);
  });

  it('refuses a cross-site request', async () => {
    const account = await createAccount(context);
    const cookie = await signIn(account.email, '203.0.113.60', 'Csrf/1.0');
    const id = (await list(cookie))[0]!.id;
    const response = await app.inject({ method: 'DELETE', url: `/api/v1/me/sessions/${id}`, headers: { cookie, origin: 'https://evil.example' } });
    expect(response.statusCode).toBe(403);
    expect((await me(cookie)).statusCode).toBe(200);
  });
});
