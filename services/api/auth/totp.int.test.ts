import { Writable } from 'node:stream';
import { Resvg } from '@resvg/resvg-js';
import type { FastifyInstance } from 'fastify';
import jsQRModule from 'jsqr';
import { sql } from 'kysely';
import { Secret, TOTP } from 'otpauth';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { auditRepository } from '#shared/audit/audit.repository.js';
import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { ownServerDatabase } from '#tests/support/fresh-database.js';
import { waitFor } from '#tests/support/wait.js';
import { buildApp } from '#services/app.js';

// jsqr is CommonJS: its function is the default export of the module object.
const jsQR = jsQRModule.default;

// Two-factor sign-in by TOTP through the real HTTP app on PGlite: enrolment, the two-step sign-in,
// replays, recovery codes, challenges, lockout and CAPTCHA across both steps, the staff requirement,
// API tokens. Codes are computed here with the same library (otpauth) for chosen 30-second steps.
// Every log line the platform writes, at trace level, is kept to show that no secret, code or
// challenge reaches it; the tables are read back to show none is stored in plaintext.

let context: Context;
let app: FastifyInstance;
let origin: string;
const logLines: string[] = [];
/** Every TOTP secret, recovery code and challenge the tests handled: none may appear in the log or the tables. */
const secrets: string[] = [];

let database: Awaited<ReturnType<typeof ownServerDatabase>> | undefined;

beforeAll(async () => {
  const log = pino(
    { level: 'trace' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logLines.push(chunk.toString());
        callback();
      },
    }),
  );
  // require_totp_for_staff is platform-wide: on the services run's shared Postgres, other files' staff would be held by it.
  database = await ownServerDatabase('lt_totp');
  context = await createTestContext(
    { BRUTEFORCE_MAX_ATTEMPTS: '4', BRUTEFORCE_WINDOW: '60', ENABLE_CAPTCHA: '1', CAPTCHA_AFTER: '3', LOG_LEVEL: 'trace', ...database.overrides },
    { log },
  );
  app = (await buildApp(context)).app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  if (context) await closeContext(context);
  await database?.drop();
});

/** A distinct client address per call, so that the auth bucket of one test never limits another. */
const clientIp = () => `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

const send = (method: 'GET' | 'POST' | 'DELETE' | 'PATCH', url: string, payload?: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method, url, payload: payload as Record<string, unknown> | undefined, headers: { origin, ...headers }, remoteAddress: clientIp() });

/** The current 30-second step, and the code of a step (as an authenticator app computes it). */
const stepNow = () => Math.floor(Date.now() / 30_000);
const codeAt = (secret: string, step: number) => TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: step * 30_000 });

const audits = (action: string, actorId: string) => auditRepository(context.db.db).list({ action, actorId });
/** Waits for one audit entry (they are written after the answer). */
const audited = (action: string, actorId: string) =>
  waitFor(async () => (await audits(action, actorId)).length === 1, 5000, { message: `one ${action} audit entry` });

/** Starts and confirms an enrolment with the code of `step`; answers the secret and the recovery codes. */
async function enrol(cookie: string, step = stepNow()): Promise<{ secret: string; codes: string[] }> {
  const started = await send('POST', '/api/v1/me/totp', { password: TEST_PASSWORD }, { cookie });
  expect(started.statusCode, started.body).toBe(201);
  const { secret } = started.json().data as { secret: string };
  secrets.push(secret);
  const confirmed = await send('POST', '/api/v1/me/totp/confirm', { code: codeAt(secret, step) }, { cookie });
  expect(confirmed.statusCode, confirmed.body).toBe(200);
  const codes = confirmed.json().data.recovery_codes as string[];
  secrets.push(...codes);
  return { secret, codes };
}

/** An account with TOTP enabled (its first code of the current step), and a session of it. */
async function accountWithTotp(role: 'user' | 'staff' = 'user') {
  const account = await createAccount(context, role);
  const cookie = await loginCookie(app, account.email, TEST_PASSWORD, clientIp());
  const step = stepNow();
  return { ...account, cookie, step, ...(await enrol(cookie, step)) };
}

/** The first step of a sign-in; answers the challenge of an account with TOTP. */
async function passwordStep(email: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await send('POST', '/auth/login', { email, password: TEST_PASSWORD }, headers);
  expect(response.statusCode, response.body).toBe(200);
  const data = response.json().data;
  expect(data.status).toBe('totp_required');
  expect(response.cookies.find((cookie) => cookie.name === 'lt_session')).toBeUndefined();
  secrets.push(data.challenge);
  return data.challenge as string;
}

const totpStep = (body: Record<string, unknown>, headers: Record<string, string> = {}) => send('POST', '/auth/login/totp', body, headers);

const sessionCookieOf = (response: Awaited<ReturnType<typeof send>>) => {
  const cookie = response.cookies.find((entry) => entry.name === 'lt_session');
  expect(cookie, response.body).toBeDefined();
  return `lt_session=${cookie!.value}`;
};

describe('enrolment', () => {
  it('answers a secret, its otpauth URI and a QR code of it; a wrong code does not enable it, the right one does, with ten recovery codes', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email, TEST_PASSWORD, clientIp());
    expect((await send('GET', '/api/v1/me/totp', undefined, { cookie })).json().data).toEqual({
      enabled: false,
      enrolled_at: null,
      pending: false,
      recovery_codes_left: 0,
    });

    const started = await send('POST', '/api/v1/me/totp', { password: TEST_PASSWORD }, { cookie });
    expect(started.statusCode, started.body).toBe(201);
    const { secret, otpauth_uri: uri, qr_code: qr } = started.json().data as { secret: string; otpauth_uri: string; qr_code: string };
    secrets.push(secret);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const parsed = new URL(uri);
    expect(parsed.protocol).toBe('otpauth:');
    expect(parsed.searchParams.get('secret')).toBe(secret);
    expect(parsed.searchParams.get('digits')).toBe('6');
    expect(decodeURIComponent(parsed.pathname)).toContain(account.email);
    // The QR code, drawn and read back as a phone would, holds the URI.
    expect(qr).toMatch(/^data:image\/svg\+xml;base64,/);
    const png = new Resvg(Buffer.from(qr.split(',')[1]!, 'base64').toString('utf8'), { background: 'white' }).render();
    expect(jsQR(new Uint8ClampedArray(png.pixels), png.width, png.height)?.data).toBe(uri);
    expect((await send('GET', '/api/v1/me/totp', undefined, { cookie })).json().data.pending).toBe(true);

    const step = stepNow();
    const wrong = await send('POST', '/api/v1/me/totp/confirm', { code: codeAt(secret, step + 5) }, { cookie });
    expect(wrong.statusCode, wrong.body).toBe(403);
    expect(wrong.json().error.details.reason).toBe('totp_code_wrong');
    expect((await send('GET', '/api/v1/me/totp', undefined, { cookie })).json().data.enabled).toBe(false);

    const confirmed = await send('POST', '/api/v1/me/totp/confirm', { code: codeAt(secret, step) }, { cookie });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    const codes = confirmed.json().data.recovery_codes as string[];
    secrets.push(...codes);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}$/);
    const status = (await send('GET', '/api/v1/me/totp', undefined, { cookie })).json().data;
    expect(status).toMatchObject({ enabled: true, pending: false, recovery_codes_left: 10 });
    expect(Date.parse(status.enrolled_at)).toBeGreaterThan(Date.now() - 60_000);
    await audited('user.totp_enrolment_started', account.id);
    await audited('user.totp_enabled', account.id);

    // Enabled: a new enrolment is refused until TOTP is turned off.
    const again = await send('POST', '/api/v1/me/totp', { password: TEST_PASSWORD }, { cookie });
    expect(again.statusCode, again.body).toBe(409);
    expect(again.json().error.details.reason).toBe('totp_enabled');
  });

  it('refuses an enrolment with a wrong password, one by an API token, and a confirm with none pending', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email, TEST_PASSWORD, clientIp());
    const wrong = await send('POST', '/api/v1/me/totp', { password: 'not the password' }, { cookie });
    expect(wrong.statusCode, wrong.body).toBe(403);
    expect(wrong.json().error.details.reason).toBe('current_password_wrong');
    const { token } = await mintToken(app, cookie, origin);
    const byToken = await send('POST', '/api/v1/me/totp', { password: TEST_PASSWORD }, { authorization: `Bearer ${token}` });
    expect(byToken.statusCode, byToken.body).toBe(401);
    expect(byToken.json().error.details.reason).toBe('session_required');
    const none = await send('POST', '/api/v1/me/totp/confirm', { code: '123456' }, { cookie });
    expect(none.statusCode, none.body).toBe(409);
    expect(none.json().error.details.reason).toBe('totp_not_pending');
  });
});

describe('sign-in with TOTP', () => {
  it('asks for a code after the password, then signs in with it; the same code is refused again within its step', async () => {
    const account = await accountWithTotp();
    const challenge = await passwordStep(account.email);
    const code = codeAt(account.secret, account.step + 1);
    const signedIn = await totpStep({ challenge, code });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
    expect(signedIn.json().data).toMatchObject({ status: 'signed_in', user: { id: account.id }, totp_enrolment_required: false });
    const me = await send('GET', '/api/v1/me', undefined, { cookie: sessionCookieOf(signedIn) });
    expect(me.json().data.id).toBe(account.id);

    // A replay, on a new challenge: the step was taken. So is the enrolment's own code.
    const replayed = await totpStep({ challenge: await passwordStep(account.email), code });
    expect(replayed.statusCode, replayed.body).toBe(401);
    expect(replayed.json().error.details.reason).toBe('second_factor_wrong');
    // This browser's device cookie: its own allowance, so no CAPTCHA after the two attempts above (CAPTCHA_AFTER=3).
    const device = { cookie: `lt_device=${signedIn.cookies.find((cookie) => cookie.name === 'lt_device')!.value}` };
    const older = await totpStep({ challenge: await passwordStep(account.email, device), code: codeAt(account.secret, account.step) }, device);
    expect(older.statusCode, older.body).toBe(401);
  });

  it('takes a recovery code once, in any case and without its dashes; the second use is refused', async () => {
    const account = await accountWithTotp();
    const [first] = account.codes;
    const signedIn = await totpStep({ challenge: await passwordStep(account.email), recovery_code: first!.toUpperCase().replace(/-/g, ' ') });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
    expect((await send('GET', '/api/v1/me/totp', undefined, { cookie: sessionCookieOf(signedIn) })).json().data.recovery_codes_left).toBe(9);
    await audited('auth.recovery_code_used', account.id);
    const twice = await totpStep({ challenge: await passwordStep(account.email), recovery_code: first });
    expect(twice.statusCode, twice.body).toBe(401);
    expect(twice.json().error.details.reason).toBe('second_factor_wrong');
  });

  it('refuses a forged, a spent and an expired challenge, and a code of another account on a challenge', async () => {
    const account = await accountWithTotp();
    const other = await accountWithTotp();
    const forged = await totpStep({ challenge: 'A'.repeat(43), code: codeAt(account.secret, account.step + 1) });
    expect(forged.statusCode, forged.body).toBe(401);
    expect(forged.json().error.details.reason).toBe('challenge_invalid');

    // The challenge is bound to its account: the other account's right code does not open it.
    const challenge = await passwordStep(account.email);
    const foreign = await totpStep({ challenge, code: codeAt(other.secret, other.step + 1) });
    expect(foreign.statusCode, foreign.body).toBe(401);
    expect(foreign.json().error.details.reason).toBe('second_factor_wrong');

    expect((await totpStep({ challenge, recovery_code: account.codes[0] })).statusCode).toBe(200);
    const spent = await totpStep({ challenge, recovery_code: account.codes[1] });
    expect(spent.statusCode, spent.body).toBe(401);
    expect(spent.json().error.details.reason).toBe('challenge_invalid');

    const late = await passwordStep(account.email);
    await sql`UPDATE login_challenges SET expires_at = now() - interval '1 second' WHERE user_id = ${account.id} AND used_at IS NULL`.execute(context.db.db);
    const expired = await totpStep({ challenge: late, recovery_code: account.codes[1] });
    expect(expired.statusCode, expired.body).toBe(401);
    expect(expired.json().error.details.reason).toBe('challenge_invalid');
    // The refused challenges spent no recovery code.
    expect((await totpStep({ challenge: await passwordStep(account.email), recovery_code: account.codes[1] })).statusCode).toBe(200);
  });

  it('asks for a CAPTCHA on the second step as on the first, wrong codes counting as failed attempts', async () => {
    const account = await accountWithTotp();
    const challenge = await passwordStep(account.email); // attempt 1 (a right password clears no count)
    for (let attempt = 2; attempt <= 4; attempt += 1) {
      const wrong = await totpStep({ challenge, code: codeAt(account.secret, account.step + 9) });
      if (attempt < 4) expect(wrong.statusCode, wrong.body).toBe(401);
      // CAPTCHA_AFTER=3: the fourth attempt without a CAPTCHA is asked for one, on this step as on the first.
      else {
        expect(wrong.statusCode, wrong.body).toBe(403);
        expect(wrong.json().error.details.reason).toBe('captcha_required');
      }
    }
    const captchaOnFirst = await send('POST', '/auth/login', { email: account.email, password: TEST_PASSWORD });
    expect(captchaOnFirst.statusCode, captchaOnFirst.body).toBe(403);
    expect(captchaOnFirst.json().error.details.reason).toBe('captcha_required');
    expect(await audits('auth.lockout', account.id)).toHaveLength(0);
  });

  it('locks the account at BRUTEFORCE_MAX_ATTEMPTS counting both steps, and refuses the right code while locked', async () => {
    const account = await accountWithTotp();
    // A known device spends its own allowance, without CAPTCHA: so only the lockout is measured here.
    const first = await totpStep({ challenge: await passwordStep(account.email), recovery_code: account.codes[0] });
    const device = first.cookies.find((cookie) => cookie.name === 'lt_device')!;
    const headers = { cookie: `lt_device=${device.value}` };
    const challenge = await passwordStep(account.email, headers); // attempt 1
    for (let attempt = 2; attempt <= 4; attempt += 1) {
      const wrong = await totpStep({ challenge, code: codeAt(account.secret, account.step + 9) }, headers);
      expect(wrong.statusCode, wrong.body).toBe(401);
    }
    const locked = await totpStep({ challenge, code: codeAt(account.secret, account.step + 1) }, headers);
    expect(locked.statusCode, locked.body).toBe(429);
    expect(locked.json().error.details.reason).toBe('device_locked');
    expect(locked.headers['retry-after']).toBeDefined();
    await audited('auth.device_lockout', account.id);
  });
});

describe('changes with TOTP on', () => {
  it('regenerates recovery codes with the password and a code (the old ones void), and disables TOTP with a recovery code', async () => {
    const account = await accountWithTotp();
    const wrongCode = await send(
      'POST',
      '/api/v1/me/totp/recovery-codes',
      { password: TEST_PASSWORD, code: codeAt(account.secret, account.step + 9) },
      { cookie: account.cookie },
    );
    expect(wrongCode.statusCode, wrongCode.body).toBe(403);
    expect(wrongCode.json().error.details.reason).toBe('totp_code_wrong');
    const regenerated = await send(
      'POST',
      '/api/v1/me/totp/recovery-codes',
      { password: TEST_PASSWORD, code: codeAt(account.secret, account.step + 1) },
      { cookie: account.cookie },
    );
    expect(regenerated.statusCode, regenerated.body).toBe(201);
    const codes = regenerated.json().data.recovery_codes as string[];
    secrets.push(...codes);
    expect(codes).toHaveLength(10);
    await audited('user.totp_recovery_codes_regenerated', account.id);

    const oldCode = await send('DELETE', '/api/v1/me/totp', { password: TEST_PASSWORD, recovery_code: account.codes[0] }, { cookie: account.cookie });
    expect(oldCode.statusCode, oldCode.body).toBe(403);
    const wrongPassword = await send('DELETE', '/api/v1/me/totp', { password: 'nope', recovery_code: codes[0] }, { cookie: account.cookie });
    expect(wrongPassword.statusCode, wrongPassword.body).toBe(403);
    expect(wrongPassword.json().error.details.reason).toBe('current_password_wrong');
    const disabled = await send('DELETE', '/api/v1/me/totp', { password: TEST_PASSWORD, recovery_code: codes[0] }, { cookie: account.cookie });
    expect(disabled.statusCode, disabled.body).toBe(200);
    expect(disabled.json().data).toEqual({ enabled: false });
    await audited('user.totp_disabled', account.id);
    // One step again.
    const login = await send('POST', '/auth/login', { email: account.email, password: TEST_PASSWORD });
    expect(login.json().data.status).toBe('signed_in');
    const notEnabled = await send('DELETE', '/api/v1/me/totp', { password: TEST_PASSWORD, code: '123456' }, { cookie: account.cookie });
    expect(notEnabled.statusCode, notEnabled.body).toBe(409);
  });

  it('leaves API tokens working for an account with TOTP on: a token is already a second credential', async () => {
    const account = await accountWithTotp();
    const { token } = await mintToken(app, account.cookie, origin);
    const me = await send('GET', '/api/v1/me', undefined, { authorization: `Bearer ${token}` });
    expect(me.statusCode, me.body).toBe(200);
    expect(me.json().data).toMatchObject({ id: account.id, authenticated_via: 'token' });
    const links = await send('GET', '/api/v1/links', undefined, { authorization: `Bearer ${token}` });
    expect(links.statusCode, links.body).toBe(200);
    expect((await send('GET', '/api/v1/me/totp', undefined, { authorization: `Bearer ${token}` })).json().data.enabled).toBe(true);
  });
});

describe('TOTP required for staff', () => {
  it('is a staff-only setting; while on, a staff account without TOTP reaches only enrolment until it has enabled TOTP', async () => {
    const staff = await createAccount(context, 'staff');
    const staffCookie = await loginCookie(app, staff.email, TEST_PASSWORD, clientIp());
    const user = await createAccount(context);
    const userCookie = await loginCookie(app, user.email, TEST_PASSWORD, clientIp());
    const refused = await send('PATCH', '/api/v1/settings/security', { require_totp_for_staff: true }, { cookie: userCookie });
    expect(refused.statusCode, refused.body).toBe(403);
    expect((await send('GET', '/api/v1/settings/security', undefined, { cookie: userCookie })).statusCode).toBe(403);

    // The admin who turns it on without TOTP is held to enrolling from the next request, as is any staff session.
    const other = await createAccount(context, 'staff');
    const otherCookie = await loginCookie(app, other.email, TEST_PASSWORD, clientIp());
    const on = await send('PATCH', '/api/v1/settings/security', { require_totp_for_staff: true }, { cookie: staffCookie });
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json().data).toEqual({ require_totp_for_staff: true });
    await audited('settings.security_changed', staff.id);
    try {
      const held = await send('GET', '/api/v1/users', undefined, { cookie: otherCookie });
      expect(held.statusCode, held.body).toBe(403);
      expect(held.json().error.details.reason).toBe('totp_enrolment_required');
      const login = await send('POST', '/auth/login', { email: other.email, password: TEST_PASSWORD });
      expect(login.json().data).toMatchObject({ status: 'signed_in', totp_enrolment_required: true });
      const cookie = sessionCookieOf(login);
      expect((await send('GET', '/api/v1/me', undefined, { cookie })).json().data.totp_enrolment_required).toBe(true);
      expect((await send('GET', '/api/v1/links', undefined, { cookie })).statusCode).toBe(403);
      // A user (not staff) is not concerned.
      expect((await send('GET', '/api/v1/links', undefined, { cookie: userCookie })).statusCode).toBe(200);

      await enrol(cookie);
      expect((await send('GET', '/api/v1/users', undefined, { cookie })).statusCode).toBe(200);
      expect((await send('GET', '/api/v1/me', undefined, { cookie })).json().data.totp_enrolment_required).toBe(false);
    } finally {
      // The admin enrols too, then turns it off again for the other tests.
      await enrol(staffCookie);
      const off = await send('PATCH', '/api/v1/settings/security', { require_totp_for_staff: false }, { cookie: staffCookie });
      expect(off.statusCode, off.body).toBe(200);
    }
  });
});

describe('secrets at rest and in the logs', () => {
  it('stores the TOTP secret sealed and recovery codes and challenges hashed, and logs none of them', async () => {
    // Runs last: every secret, code and challenge of the tests above is checked.
    await accountWithTotp();
    expect(secrets.length).toBeGreaterThan(50);
    const tables = ['user_totp', 'totp_recovery_codes', 'login_challenges', 'audit_log', 'sessions', 'users', 'platform_settings'];
    const dump: string[] = [];
    for (const table of tables) {
      const { rows } = await sql<{ row: string }>`SELECT row_to_json(t)::text AS row FROM ${sql.table(table)} t`.execute(context.db.db);
      dump.push(...rows.map((row) => row.row));
    }
    const stored = await sql<{ secret: string }>`SELECT secret FROM user_totp`.execute(context.db.db);
    for (const row of stored.rows) expect(row.secret).toMatch(/^v1:[A-Za-z0-9_-]{8}:/);
    const all = dump.join('\n');
    const log = logLines.join('');
    expect(log.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      const normalized = secret.replace(/-/g, '');
      expect(all.includes(secret) || all.includes(normalized), 'a secret is stored in plaintext').toBe(false);
      expect(log.includes(secret) || log.includes(normalized), 'a secret reached the log').toBe(false);
    }
  });
});
