import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { auditRepository } from '#shared/audit/audit.repository.js';
import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext, testConfig, uniqueName } from '#tests/support/context.js';
import { startSmtpServer, type ReceivedMail } from '#tests/support/smtp.js';
import { waitFor } from '#tests/support/wait.js';
import { buildApp } from '#services/app.js';

// Password change, reset by e-mail (a real local SMTP server, the mail read as sent) and
// staff-issued reset links, through the real HTTP app on PGlite; every log line the platform
// writes, at trace level, is kept to show that no link, token or new password reaches it.

let context: Context;
let app: FastifyInstance;
let origin: string;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
const logLines: string[] = [];
/** Every reset secret and new password the tests handled: none may appear in the log. */
const secrets: string[] = [];

const NEW_PASSWORD = 'plum tractor velvet orbit lantern';

beforeAll(async () => {
  smtp = await startSmtpServer();
  const log = pino(
    { level: 'trace' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logLines.push(chunk.toString());
        callback();
      },
    }),
  );
  context = await createTestContext(
    { SMTP_URL: smtp.url, BRUTEFORCE_MAX_ATTEMPTS: '3', BRUTEFORCE_WINDOW: '60', PASSWORD_RESET_PER_ADDRESS: '2:3600', LOG_LEVEL: 'trace' },
    { log },
  );
  app = (await buildApp(context)).app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  if (context) await closeContext(context);
  smtp?.close();
});

/** A distinct client address per call, so that the auth bucket of one test never limits another. */
const clientIp = () => `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

const post = (url: string, payload: unknown, headers: Record<string, string> = {}, ip = clientIp()) =>
  app.inject({ method: 'POST', url, payload: payload as Record<string, unknown>, headers: { origin, ...headers }, remoteAddress: ip });

const login = (email: string, password: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/auth/login', payload: { email, password }, remoteAddress: clientIp(), headers });

const me = (cookie: string) => app.inject({ url: '/api/v1/me', headers: { cookie } });

const audits = (action: string, actorId: string) => auditRepository(context.db.db).list({ action, actorId });

/** The reset secret of a link (the part after `#token=`). */
const tokenOf = (url: string) => {
  const token = /#token=([A-Za-z0-9_-]{43})$/.exec(url)?.[1];
  expect(token, url).toBeDefined();
  secrets.push(url, token!);
  return token!;
};

const mailTo = (email: string): Promise<ReceivedMail> =>
  waitFor(() => smtp.mails.find((mail) => mail.to.includes(email)), 10_000, { message: `a mail to ${email}` });

const staffIssue = async (staffCookie: string, userId: string) => {
  const issued = await post(`/api/v1/users/${userId}/password-reset`, undefined, { cookie: staffCookie });
  expect(issued.statusCode, issued.body).toBe(201);
  return issued.json().data as { url: string; expires_at: string };
};

describe('POST /api/v1/me/password', () => {
  it('changes the password given the current one, signs the other sessions out (and says how many), keeps the caller signed in, audits it', async () => {
    const account = await createAccount(context);
    const caller = await loginCookie(app, account.email);
    const other = await loginCookie(app, account.email);
    secrets.push(NEW_PASSWORD);
    const changed = await post('/api/v1/me/password', { current_password: TEST_PASSWORD, new_password: NEW_PASSWORD }, { cookie: caller });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data).toEqual({ password_changed: true, other_sessions_revoked: 1 });
    expect((await me(other)).statusCode).toBe(401);
    expect((await me(caller)).statusCode).toBe(200);
    expect((await login(account.email, TEST_PASSWORD)).statusCode).toBe(401);
    expect((await login(account.email, NEW_PASSWORD)).statusCode).toBe(200);
    await waitFor(async () => (await audits('user.password_changed', account.id)).length === 1, 5000);
    expect((await audits('user.password_changed', account.id))[0]!.details).toEqual({ sessions_revoked: 1 });
  });

  it('refuses a wrong current password with 403 and changes nothing; past BRUTEFORCE_MAX_ATTEMPTS it answers 429 even for the right one', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email);
    for (let attempt = 0; attempt < 3; attempt++) {
      const wrong = await post('/api/v1/me/password', { current_password: 'not the password', new_password: NEW_PASSWORD }, { cookie });
      expect(wrong.statusCode).toBe(403);
      expect(wrong.json().error).toMatchObject({ code: 'forbidden', message: 'The current password is wrong.', details: { reason: 'current_password_wrong' } });
    }
    const locked = await post('/api/v1/me/password', { current_password: TEST_PASSWORD, new_password: NEW_PASSWORD }, { cookie });
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error.details).toMatchObject({ reason: 'password_attempts' });
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await login(account.email, TEST_PASSWORD)).statusCode).toBe(200);
  });

  it('refuses a weak new password as sign-up does: 409 conflict with details.password', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email);
    const weak = await post('/api/v1/me/password', { current_password: TEST_PASSWORD, new_password: 'password1234' }, { cookie });
    expect(weak.statusCode).toBe(409);
    expect(weak.json().error).toMatchObject({ code: 'conflict', details: { password: expect.stringContaining('too common') } });
    expect((await login(account.email, TEST_PASSWORD)).statusCode).toBe(200);
  });

  it('is refused to an API token (session only) and to a cross-site form', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email);
    const { token } = await mintToken(app, cookie, origin);
    const viaToken = await post('/api/v1/me/password', { current_password: TEST_PASSWORD, new_password: NEW_PASSWORD }, { authorization: `Bearer ${token}` });
    expect(viaToken.statusCode).toBe(401);
    expect(viaToken.json().error.details).toMatchObject({ reason: 'session_required' });
    const crossSite = await post(
      '/api/v1/me/password',
      { current_password: TEST_PASSWORD, new_password: NEW_PASSWORD },
      { cookie, origin: 'https://evil.example' },
    );
    expect(crossSite.statusCode).toBe(403);
    expect((await login(account.email, TEST_PASSWORD)).statusCode).toBe(200);
  });
});

describe('password reset by e-mail', () => {
  it("mails a one-hour link in the account's language; the link sets the password once, signs every session out, and is audited", async () => {
    const account = await createAccount(context);
    // The account last signed in in German: its mail is German, whatever language the request asks in.
    const session = await loginCookie(app, account.email);
    expect((await login(account.email, TEST_PASSWORD, { 'accept-language': 'de-DE' })).statusCode).toBe(200);
    const requested = await post('/auth/password-reset', { email: account.email.toUpperCase() }, { 'accept-language': 'en' });
    expect(requested.statusCode).toBe(202);
    expect(requested.json().data).toEqual({ requested: true });
    const mail = await mailTo(account.email);
    expect(mail.subject).toBe('Passwort zurücksetzen');
    expect(mail.text).toContain('innerhalb einer Stunde');
    const link = /(http\S+#token=[A-Za-z0-9_-]{43})/.exec(mail.text)?.[1];
    expect(link).toMatch(new RegExp(`^${context.config.publicUrl}/login/reset#token=`));
    const token = tokenOf(link!);

    secrets.push(NEW_PASSWORD);
    const confirmed = await post('/auth/password-reset/confirm', { token, password: NEW_PASSWORD });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(confirmed.json().data).toEqual({ password_reset: true, sessions_revoked: 2 });
    expect(confirmed.cookies.find((cookie) => cookie.name === 'lt_session')).toBeUndefined();
    expect((await me(session)).statusCode).toBe(401);
    expect((await login(account.email, TEST_PASSWORD)).statusCode).toBe(401);
    expect((await login(account.email, NEW_PASSWORD)).statusCode).toBe(200);

    const reused = await post('/auth/password-reset/confirm', { token, password: 'another long unusual passphrase 42' });
    expect(reused.statusCode).toBe(403);
    expect(reused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'reset_link_used' } });
    expect(reused.json().error.message).toContain('already used');
    await waitFor(async () => (await audits('user.password_reset', account.id)).length === 1, 5000);
    expect((await audits('user.password_reset_requested', account.id)).length).toBe(1);
  });

  it('answers an unknown address exactly as a known one, in about the same time, and mails nothing', async () => {
    const account = await createAccount(context);
    const unknown = `${uniqueName('nobody')}@example.test`;
    const strip = (body: { ok: boolean; data: unknown }) => ({ ok: body.ok, data: body.data });
    const known = await post('/auth/password-reset', { email: account.email });
    const missing = await post('/auth/password-reset', { email: unknown });
    expect(missing.statusCode).toBe(known.statusCode);
    expect(strip(missing.json())).toEqual(strip(known.json()));
    expect(Object.keys(missing.headers).sort()).toEqual(Object.keys(known.headers).sort());
    await mailTo(account.email);
    // The known address's mail has arrived; the unknown one's would have by now.
    await sleep(200);
    expect(smtp.mails.some((mail) => mail.to.includes(unknown))).toBe(false);

    // Timing: the look-up, link and mail happen after the answer, so both answer alike. Medians of
    // seven, interleaved (three let one pause on a loaded CI machine decide); loose bounds for a busy
    // machine (a synchronous mail would take many times longer). The accounts are made first, which
    // of the two goes first alternates, and each known address's mail is awaited before the next
    // request: else the work after one answer (an account's creation, a mail) lands in the other's
    // time (a CI run once measured the known address 4.5 times slower that way).
    const time = async (email: string) => {
      const started = performance.now();
      await post('/auth/password-reset', { email });
      return performance.now() - started;
    };
    const fresh: { email: string }[] = [];
    for (let i = 0; i < 7; i++) fresh.push(await createAccount(context));
    const knownTimes: number[] = [];
    const unknownTimes: number[] = [];
    const knownOne = async (email: string) => {
      knownTimes.push(await time(email));
      await mailTo(email);
    };
    const unknownOne = async () => void unknownTimes.push(await time(`${uniqueName('x')}@example.test`));
    for (const [i, { email }] of fresh.entries()) {
      if (i % 2 === 0) await knownOne(email).then(unknownOne);
      else await unknownOne().then(() => knownOne(email));
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[3]!;
    const ratio = median(unknownTimes) / median(knownTimes);
    expect(ratio).toBeGreaterThan(0.25);
    expect(ratio).toBeLessThan(4);
  });

  it('limits requests per address (PASSWORD_RESET_PER_ADDRESS), existing or not, with Retry-After', async () => {
    for (const email of [(await createAccount(context)).email, `${uniqueName('nobody')}@example.test`]) {
      expect((await post('/auth/password-reset', { email })).statusCode).toBe(202);
      expect((await post('/auth/password-reset', { email: email.toUpperCase() })).statusCode).toBe(202);
      const limited = await post('/auth/password-reset', { email });
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error).toMatchObject({ code: 'rate_limited', details: { reason: 'address_limited' } });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(3500);
    }
  });

  it('limits requests per IP through the auth bucket, whatever addresses they name', async () => {
    const limited = (await buildApp({ ...context, config: testConfig({ SMTP_URL: smtp.url, RATE_LIMIT_AUTH: '3:60' }) })).app;
    try {
      const ip = clientIp();
      const ask = () =>
        limited.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: `${uniqueName('a')}@example.test` }, remoteAddress: ip });
      for (let i = 0; i < 3; i++) expect((await ask()).statusCode).toBe(202);
      const refused = await ask();
      expect(refused.statusCode).toBe(429);
      expect(refused.json().error.details).toMatchObject({ bucket: 'auth' });
      // Another address is not limited by this one's requests.
      const elsewhere = await limited.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: 'x@example.test' }, remoteAddress: clientIp() });
      expect(elsewhere.statusCode).toBe(202);
    } finally {
      await limited.close();
    }
  });

  it('counts a mail SMTP refuses (account_mail_failures_total) and still answers 202; without SMTP_URL nothing is mailed or stored', async () => {
    // A port nothing listens on: the SMTP connection is refused after the answer.
    const closed = await startSmtpServer();
    closed.close();
    const down = (await buildApp({ ...context, config: testConfig({ SMTP_URL: closed.url }) })).app;
    const none = (await buildApp({ ...context, config: testConfig({ SMTP_URL: undefined }) })).app;
    try {
      const failures = async () => (await context.metrics.accountMailFailures.get()).values.find((value) => value.labels.mail === 'password_reset')?.value ?? 0;
      const before = await failures();
      const account = await createAccount(context);
      const asked = await down.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: account.email }, remoteAddress: clientIp() });
      expect(asked.statusCode).toBe(202);
      await waitFor(async () => (await failures()) > before, 10_000, { message: 'a counted mail failure' });

      const other = await createAccount(context);
      const unmailed = await none.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: other.email }, remoteAddress: clientIp() });
      expect(unmailed.statusCode).toBe(202);
      await sleep(300);
      const links = await context.db.db.selectFrom('password_resets').select('token_hash').where('user_id', '=', other.id).execute();
      expect(links).toEqual([]);
    } finally {
      await down.close();
      await none.close();
    }
  });

  it('refuses an expired link (reset_link_expired) and an unknown one (reset_link_unknown)', async () => {
    const staff = await createAccount(context, 'staff');
    const staffCookie = await loginCookie(app, staff.email);
    const account = await createAccount(context);
    const token = tokenOf((await staffIssue(staffCookie, account.id)).url);
    await context.db.db
      .updateTable('password_resets')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('user_id', '=', account.id)
      .execute();
    const expired = await post('/auth/password-reset/confirm', { token, password: NEW_PASSWORD });
    expect(expired.statusCode).toBe(403);
    expect(expired.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'reset_link_expired' } });
    expect(expired.json().error.message).toContain('expired');

    const forged = await post('/auth/password-reset/confirm', { token: 'A'.repeat(43), password: NEW_PASSWORD });
    expect(forged.statusCode).toBe(403);
    expect(forged.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'reset_link_unknown' } });
    expect((await login(account.email, TEST_PASSWORD)).statusCode).toBe(200);
  });

  it("resets only the link's own account: another account keeps its password and sessions", async () => {
    const staff = await createAccount(context, 'staff');
    const staffCookie = await loginCookie(app, staff.email);
    const owner = await createAccount(context);
    const bystander = await createAccount(context);
    const bystanderSession = await loginCookie(app, bystander.email);
    const token = tokenOf((await staffIssue(staffCookie, owner.id)).url);
    expect((await post('/auth/password-reset/confirm', { token, password: NEW_PASSWORD })).statusCode).toBe(200);
    expect((await me(bystanderSession)).statusCode).toBe(200);
    expect((await login(bystander.email, TEST_PASSWORD)).statusCode).toBe(200);
    expect((await login(owner.email, NEW_PASSWORD)).statusCode).toBe(200);
  });

  it('keeps the link usable after a weak password (409), and spends every open link of the account on success', async () => {
    const staff = await createAccount(context, 'staff');
    const staffCookie = await loginCookie(app, staff.email);
    const account = await createAccount(context);
    const first = tokenOf((await staffIssue(staffCookie, account.id)).url);
    const second = tokenOf((await staffIssue(staffCookie, account.id)).url);
    const weak = await post('/auth/password-reset/confirm', { token: first, password: 'password1234' });
    expect(weak.statusCode).toBe(409);
    expect(weak.json().error.details).toHaveProperty('password');
    expect((await post('/auth/password-reset/confirm', { token: first, password: NEW_PASSWORD })).statusCode).toBe(200);
    const other = await post('/auth/password-reset/confirm', { token: second, password: 'another long unusual passphrase 42' });
    expect(other.json().error.details).toMatchObject({ reason: 'reset_link_used' });
  });
});

describe('POST /api/v1/users/{id}/password-reset (staff-issued links)', () => {
  it('gives staff a one-hour link for the account, audited, and nothing changes until it is used', async () => {
    const staff = await createAccount(context, 'staff');
    const staffCookie = await loginCookie(app, staff.email);
    const account = await createAccount(context);
    const session = await loginCookie(app, account.email);
    const before = Date.now();
    const link = await staffIssue(staffCookie, account.id);
    expect(link.url.startsWith(`${context.config.publicUrl}/login/reset#token=`)).toBe(true);
    const ttl = Date.parse(link.expires_at) - before;
    expect(ttl).toBeGreaterThan(3_590_000);
    expect(ttl).toBeLessThanOrEqual(3_601_000);
    tokenOf(link.url);
    expect((await me(session)).statusCode).toBe(200);
    expect((await login(account.email, TEST_PASSWORD)).statusCode).toBe(200);
    await waitFor(async () => (await audits('user.password_reset_issued', staff.id)).some((row) => row.target === account.id), 5000);
    // Nothing is mailed for a staff-issued link.
    expect(smtp.mails.some((mail) => mail.to.includes(account.email))).toBe(false);
  });

  it('is refused to a non-staff account (403) and answers 404 for an unknown id', async () => {
    const user = await createAccount(context);
    const victim = await createAccount(context);
    const userCookie = await loginCookie(app, user.email);
    const refused = await post(`/api/v1/users/${victim.id}/password-reset`, undefined, { cookie: userCookie });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.details).toMatchObject({ reason: 'missing_scope' });
    const staff = await createAccount(context, 'staff');
    const unknown = await post(`/api/v1/users/${crypto.randomUUID()}/password-reset`, undefined, { cookie: await loginCookie(app, staff.email) });
    expect(unknown.statusCode).toBe(404);
  });
});

describe('reset secrets at rest and in request logs', () => {
  it('stores a link as the SHA-256 of its secret only: no column of its row holds the secret or the link', async () => {
    const staff = await createAccount(context, 'staff');
    const account = await createAccount(context);
    const link = await staffIssue(await loginCookie(app, staff.email, TEST_PASSWORD, clientIp()), account.id);
    const token = tokenOf(link.url);
    const rows = await context.db.db.selectFrom('password_resets').selectAll().where('user_id', '=', account.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    const stored = JSON.stringify(rows);
    expect(stored.includes(token)).toBe(false);
    expect(stored.includes(link.url)).toBe(false);
  });

  it('writes no reset secret a client put in a URL (a query, or a fragment a mail client escaped) into the request log', async () => {
    const staff = await createAccount(context, 'staff');
    const account = await createAccount(context);
    const token = tokenOf((await staffIssue(await loginCookie(app, staff.email, TEST_PASSWORD, clientIp()), account.id)).url);
    const before = logLines.length;
    for (const url of [`/login/reset?token=${token}`, `/login/reset%23token=${token}`, `/auth/password-reset/confirm?token=${token}&x=1`]) {
      await app.inject({ method: 'GET', url, remoteAddress: clientIp() });
    }
    await post(`/auth/password-reset/confirm?token=${token}`, { token, password: NEW_PASSWORD });
    const written = logLines.slice(before).join('');
    // The request lines were written (with the path and the redaction), and none holds the secret.
    expect(written).toContain('/login/reset');
    expect(written).toContain('token=[redacted]');
    expect(written.includes(token)).toBe(false);
  });
});

describe('logs', () => {
  it('hold no reset link, reset token or new password of the tests above', () => {
    // The log was written at trace level all along: requests, refusals, the audit's own lines.
    expect(logLines.length).toBeGreaterThan(10);
    expect(secrets.length).toBeGreaterThan(10);
    const log = logLines.join('');
    for (const secret of secrets) expect(log.includes(secret), `log holds ${secret.slice(0, 12)}…`).toBe(false);
  });
});
