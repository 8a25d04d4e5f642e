import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createAccount, loginCookie, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext, testConfig, uniqueName } from '#tests/support/context.js';
import { buildApp } from '#services/app.js';

let context: Context;
let app: FastifyInstance;
let origin: string;

beforeAll(async () => {
  context = await createTestContext({ BRUTEFORCE_MAX_ATTEMPTS: '3', BRUTEFORCE_WINDOW: '60', BRUTEFORCE_LOCKOUT: '600' });
  app = (await buildApp(context)).app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

/** A distinct client address per test, so that the auth bucket of one test never limits another. */
const clientIp = () => `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

function login(email: string, password: string, ip: string, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url: '/auth/login', payload: { email, password }, remoteAddress: ip, headers });
}

describe('login', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie and /me answers the account', async () => {
    const account = await createAccount(context);
    const response = await login(account.email.toUpperCase(), TEST_PASSWORD, clientIp());
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.data.user).toMatchObject({ id: account.id, email: account.email, role: 'user' });
    expect(body.data.user.password_hash).toBeUndefined();
    const cookie = response.cookies.find((entry) => entry.name === 'lt_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    const me = await app.inject({ url: '/api/v1/me', headers: { cookie: `lt_session=${cookie.value}` } });
    expect(me.statusCode).toBe(200);
    expect(me.json().data).toMatchObject({ id: account.id, authenticated_via: 'session' });
    expect(me.json().data.scopes).not.toContain('admin');
  });

  // Guards issue 23: with NODE_ENV production by default, a cookie Secure by NODE_ENV would be
  // dropped by the browser on `make run`'s http://localhost and nobody could sign in.
  it.each([
    ['http://localhost:8080', 'production', false],
    ['http://localhost:8080', undefined, false],
    ['https://links.example.com', 'production', true],
    ['https://links.example.com', 'development', true],
  ])('with PUBLIC_URL %s and NODE_ENV %s the cookie is Secure: %s', async (publicUrl, nodeEnv, secure) => {
    const built = (await buildApp({ ...context, config: testConfig({ PUBLIC_URL: publicUrl, NODE_ENV: nodeEnv, BRUTEFORCE_MAX_ATTEMPTS: '3' }) })).app;
    try {
      const account = await createAccount(context);
      const response = await built.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { email: account.email, password: TEST_PASSWORD },
        remoteAddress: clientIp(),
      });
      expect(response.statusCode).toBe(200);
      const cookie = response.cookies.find((entry) => entry.name === 'lt_session')!;
      expect(Boolean(cookie.secure)).toBe(secure);
      // The cookie signs the next request in, over the scheme it was set for.
      const me = await built.inject({ url: '/api/v1/me', headers: { cookie: `lt_session=${cookie.value}` } });
      expect(me.statusCode).toBe(200);
    } finally {
      await built.close();
    }
  });

  it('answers a wrong e-mail and a wrong password the same way', async () => {
    const account = await createAccount(context);
    const wrongPassword = await login(account.email, 'not the password', clientIp());
    const wrongEmail = await login(`${uniqueName('nobody')}@example.test`, 'not the password', clientIp());
    expect(wrongPassword.statusCode).toBe(401);
    expect(wrongEmail.statusCode).toBe(401);
    const strip = (body: any) => ({ code: body.error.code, message: body.error.message, details: body.error.details });
    expect(strip(wrongEmail.json())).toEqual(strip(wrongPassword.json()));
    expect(wrongPassword.json().error.code).toBe('unauthorized');
  });

  it('spends a password check on unknown e-mails too, so timing does not tell which accounts exist', async () => {
    const account = await createAccount(context);
    const time = async (email: string) => {
      const started = performance.now();
      await login(email, 'not the password', clientIp());
      return performance.now() - started;
    };
    // Interleaved, so both kinds meet the same load; medians of three (the third failure locks the
    // account, after its password check). Without the check an unknown
    // e-mail would answer in about 1 % of the time of a known one (no scrypt at all), so loose bounds
    // still catch that while tolerating a busy machine.
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 3; i++) {
      known.push(await time(account.email));
      unknown.push(await time(`${uniqueName('x')}@example.test`));
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[1]!;
    const ratio = median(unknown) / median(known);
    expect(ratio).toBeGreaterThan(0.25);
    expect(ratio).toBeLessThan(4);
  });

  it('locks an account after BRUTEFORCE_MAX_ATTEMPTS failures, even for the right password, with Retry-After', async () => {
    const account = await createAccount(context);
    for (let attempt = 0; attempt < 3; attempt++) expect((await login(account.email, 'wrong', clientIp())).statusCode).toBe(401);
    const locked = await login(account.email, TEST_PASSWORD, clientIp());
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error).toMatchObject({ code: 'rate_limited', details: { reason: 'account_locked' } });
    const retryAfter = Number(locked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(590);
    expect(retryAfter).toBeLessThanOrEqual(600);
  });

  // Guards the lockout race: the attempt used to be counted only after the password check, so 40
  // parallel guesses all passed the lock check and 20 (one IP) or 67 (five IPs) were checked.
  it('checks at most BRUTEFORCE_MAX_ATTEMPTS passwords of 40 parallel guesses, from one IP or from many', async () => {
    for (const addresses of [[clientIp()], Array.from({ length: 5 }, clientIp)]) {
      const account = await createAccount(context);
      const answers = await Promise.all(Array.from({ length: 40 }, (_, n) => login(account.email, `wrong ${n}`, addresses[n % addresses.length]!)));
      // A 401 is a password checked and found wrong; every other guess was refused before any check.
      const checked = answers.filter((answer) => answer.statusCode === 401);
      expect(checked.length).toBeLessThanOrEqual(3);
      expect(answers.filter((answer) => answer.statusCode === 429).length).toBe(40 - checked.length);
      for (const refused of answers.filter((answer) => answer.statusCode === 429)) {
        // The lock, or the auth bucket when one IP sends more than RATE_LIMIT_AUTH.
        expect(refused.json().error.code).toBe('rate_limited');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      }
      // The account is locked, even for the right password.
      expect((await login(account.email, TEST_PASSWORD, clientIp())).json().error.details.reason).toBe('account_locked');
    }
  });

  it('a right password under the limit signs in although wrong guesses run in parallel', async () => {
    const account = await createAccount(context);
    const [right, ...wrong] = await Promise.all([
      login(account.email, TEST_PASSWORD, clientIp()),
      login(account.email, 'wrong', clientIp()),
      login(account.email, 'wrong', clientIp()),
    ]);
    expect(right.statusCode).toBe(200);
    for (const answer of wrong) expect(answer.statusCode).toBe(401);
  });

  // Guards issue 23: the lockout's 429 had Retry-After only and was counted as bucket="undefined".
  it('the lockout 429 carries the rate-limit headers and is counted under the auth bucket', async () => {
    const counted = async (bucket: string) => (await context.metrics.rateLimited.get()).values.find((value) => value.labels.bucket === bucket)?.value ?? 0;
    const before = await counted('auth');
    const account = await createAccount(context);
    for (let attempt = 0; attempt < 3; attempt++) await login(account.email, 'wrong', clientIp());
    const locked = await login(account.email, TEST_PASSWORD, clientIp());
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error.details).toMatchObject({ bucket: 'auth', reason: 'account_locked' });
    const retryAfter = locked.headers['retry-after'];
    expect(locked.headers['ratelimit-limit']).toBe(String(context.config.rateLimits.auth.limit));
    expect(locked.headers['x-ratelimit-limit']).toBe(String(context.config.rateLimits.auth.limit));
    expect(locked.headers['ratelimit-remaining']).toBe('0');
    expect(locked.headers['x-ratelimit-remaining']).toBe('0');
    expect(locked.headers['ratelimit-reset']).toBe(retryAfter);
    expect(Number(locked.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
    expect(await counted('auth')).toBe(before + 1);
    expect(await counted('undefined')).toBe(0);
  });

  it('locks an e-mail that has no account exactly like one that has', async () => {
    const email = `${uniqueName('ghost')}@example.test`;
    for (let attempt = 0; attempt < 3; attempt++) expect((await login(email, 'wrong', clientIp())).statusCode).toBe(401);
    const locked = await login(email, 'wrong', clientIp());
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error.details.reason).toBe('account_locked');
  });

  it('a successful login clears the failure count', async () => {
    const account = await createAccount(context);
    const ip = clientIp();
    for (let attempt = 0; attempt < 2; attempt++) await login(account.email, 'wrong', ip);
    expect((await login(account.email, TEST_PASSWORD, ip)).statusCode).toBe(200);
    for (let attempt = 0; attempt < 2; attempt++) expect((await login(account.email, 'wrong', ip)).statusCode).toBe(401);
    expect((await login(account.email, TEST_PASSWORD, ip)).statusCode).toBe(200);
  });

  it('the lockout takes precedence over an exhausted auth bucket', async () => {
    const strict = (await buildApp({ ...context, config: { ...context.config, rateLimits: testConfig({ RATE_LIMIT_AUTH: '3:60' }).rateLimits } })).app;
    try {
      const account = await createAccount(context);
      const ip = clientIp();
      const attempt = () => strict.inject({ method: 'POST', url: '/auth/login', payload: { email: account.email, password: 'wrong' }, remoteAddress: ip });
      for (let n = 0; n < 3; n++) expect((await attempt()).statusCode).toBe(401);
      const refused = await attempt();
      expect(refused.statusCode).toBe(429);
      // The bucket alone would say at most 60 s; the lock says ~600 s and wins.
      expect(refused.json().error.details.reason).toBe('account_locked');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(60);
    } finally {
      await strict.close();
    }
  });

  it('the auth bucket counts per IP and account', async () => {
    const strict = (await buildApp({ ...context, config: { ...context.config, rateLimits: testConfig({ RATE_LIMIT_AUTH: '2:60' }).rateLimits } })).app;
    try {
      const account = await createAccount(context);
      const ip = clientIp();
      const attempt = (email: string, from = ip) =>
        strict.inject({ method: 'POST', url: '/auth/login', payload: { email, password: TEST_PASSWORD }, remoteAddress: from });
      expect((await attempt(account.email)).statusCode).toBe(200);
      const second = await attempt(account.email);
      expect(second.statusCode).toBe(200);
      expect(second.headers['ratelimit-remaining']).toBe('0');
      const third = await attempt(account.email);
      expect(third.statusCode).toBe(429);
      expect(third.json().error.details.bucket).toBe('auth');
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      expect((await attempt(account.email, clientIp())).statusCode).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('refuses a login posted from another site', async () => {
    const account = await createAccount(context);
    const response = await login(account.email, TEST_PASSWORD, clientIp(), { origin: 'https://evil.example' });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.details.reason).toBe('cross_site_request');
  });

  it('refuses a malformed body with the usual codes', async () => {
    expect((await app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'a@b.c' } })).json().error.code).toBe('missing_parameter');
    expect((await app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'a@b.c', password: 'x', remember: true } })).json().error.code).toBe(
      'bad_request',
    );
  });
});

// Guards issue 34: anyone could keep any account locked (five wrong passwords every 15 minutes),
// and the right password from the owner's own browser still got 429.
describe('device cookies: a lock others cause does not lock out a browser that signed in before', () => {
  const deviceOf = (response: { cookies: { name: string; value: string }[] }) => response.cookies.find((entry) => entry.name === 'lt_device');
  const lockFrom = async (email: string, ip: string) => {
    for (let attempt = 0; attempt < 3; attempt++) expect((await login(email, 'wrong', ip)).statusCode).toBe(401);
    expect((await login(email, TEST_PASSWORD, ip)).json().error.details.reason).toBe('account_locked');
  };

  it('sets a signed, HttpOnly, SameSite=Lax device cookie for /auth, Secure only over https', async () => {
    const account = await createAccount(context);
    const plain = await login(account.email, TEST_PASSWORD, clientIp());
    const cookie = deviceOf(plain)!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/auth' });
    expect(cookie.value.split('.')).toHaveLength(3);
    expect(cookie.value).not.toContain(account.email);
    expect(Boolean((cookie as { secure?: boolean }).secure)).toBe(false);
    expect(new Date((cookie as { expires?: Date }).expires!).getTime()).toBeGreaterThan(Date.now() + 100 * 86_400_000);
    // Over https, as a trusted proxy tells it: Secure.
    const proxied = (await buildApp({ ...context, config: { ...context.config, trustProxy: ['127.0.0.0/8'] } })).app;
    try {
      const secure = await proxied.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { email: account.email, password: TEST_PASSWORD },
        remoteAddress: '127.0.0.1',
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': clientIp() },
      });
      expect(secure.statusCode).toBe(200);
      expect((deviceOf(secure) as { secure?: boolean }).secure).toBe(true);
    } finally {
      await proxied.close();
    }
  });

  it('an attacker locks the account from one address; the owner with a device cookie still signs in with the right password', async () => {
    const account = await createAccount(context);
    const ownerIp = clientIp();
    const device = deviceOf(await login(account.email, TEST_PASSWORD, ownerIp))!.value;
    await lockFrom(account.email, clientIp());
    const owner = await login(account.email, TEST_PASSWORD, ownerIp, { cookie: `lt_device=${device}` });
    expect(owner.statusCode).toBe(200);
    expect(owner.cookies.find((entry) => entry.name === 'lt_session')).toBeDefined();
    // Without the cookie, the owner shares the account's lock like anyone else.
    expect((await login(account.email, TEST_PASSWORD, ownerIp)).json().error.details.reason).toBe('account_locked');
    // The owner's success did not lift the lock for the others.
    expect((await login(account.email, TEST_PASSWORD, clientIp())).statusCode).toBe(429);
  });

  it('wrong passwords with a device cookie lock that device only, not the account or other devices', async () => {
    const account = await createAccount(context);
    const device = deviceOf(await login(account.email, TEST_PASSWORD, clientIp()))!.value;
    const other = deviceOf(await login(account.email, TEST_PASSWORD, clientIp()))!.value;
    const withDevice = (password: string, value = device) => login(account.email, password, clientIp(), { cookie: `lt_device=${value}` });
    for (let attempt = 0; attempt < 3; attempt++) expect((await withDevice('wrong')).statusCode).toBe(401);
    const locked = await withDevice(TEST_PASSWORD);
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error).toMatchObject({ code: 'rate_limited', details: { reason: 'device_locked' } });
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(590);
    // The account and the other device are untouched.
    expect((await withDevice(TEST_PASSWORD, other)).statusCode).toBe(200);
    expect((await login(account.email, TEST_PASSWORD, clientIp())).statusCode).toBe(200);
  });

  it('of parallel wrong passwords with one device cookie, at most BRUTEFORCE_MAX_ATTEMPTS are checked', async () => {
    const account = await createAccount(context);
    const device = deviceOf(await login(account.email, TEST_PASSWORD, clientIp()))!.value;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => login(account.email, `wrong ${n}`, clientIp(), { cookie: `lt_device=${device}` })));
    expect(answers.filter((answer) => answer.statusCode === 401).length).toBeLessThanOrEqual(3);
    for (const refused of answers.filter((answer) => answer.statusCode !== 401)) expect(refused.json().error.details.reason).toBe('device_locked');
  });

  it("a forged, tampered, or another account's device cookie does not help", async () => {
    const account = await createAccount(context);
    const stranger = await createAccount(context);
    const device = deviceOf(await login(account.email, TEST_PASSWORD, clientIp()))!.value;
    const strangers = deviceOf(await login(stranger.email, TEST_PASSWORD, clientIp()))!.value;
    await lockFrom(account.email, clientIp());
    const [header, payload, signature] = device.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const altered = Buffer.from(JSON.stringify({ ...claims, jti: 'another-device' })).toString('base64url');
    const flipped = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
    for (const value of [`${header}.${altered}.${signature}`, `${header}.${payload}.${flipped}`, unsigned, strangers, 'not-a-cookie']) {
      const refused = await login(account.email, TEST_PASSWORD, clientIp(), { cookie: `lt_device=${value}` });
      expect(refused.statusCode, value).toBe(429);
      expect(refused.json().error.details.reason, value).toBe('account_locked');
    }
    expect((await login(account.email, TEST_PASSWORD, clientIp(), { cookie: `lt_device=${device}` })).statusCode).toBe(200);
  });
});

describe('logout', () => {
  it('revokes the session server-side: the old cookie no longer authenticates', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email, TEST_PASSWORD, clientIp());
    const out = await app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie, origin } });
    expect(out.statusCode).toBe(200);
    expect(out.cookies.find((entry) => entry.name === 'lt_session')?.value).toBe('');
    const me = await app.inject({ url: '/api/v1/me', headers: { cookie } });
    expect(me.statusCode).toBe(401);
    expect(me.json().error.code).toBe('unauthorized');
  });

  it('needs a session', async () => {
    expect((await app.inject({ method: 'POST', url: '/auth/logout' })).json().error.code).toBe('unauthorized');
  });
});

describe('CSRF protection of cookie-authenticated writes', () => {
  const create = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/api/v1/tokens', headers, payload: { name: 'csrf', scopes: ['links:read'] } });

  it('refuses a write with a foreign Origin, a foreign Referer, or neither', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email, TEST_PASSWORD, clientIp());
    const variants: Record<string, string>[] = [{ cookie, origin: 'https://evil.example' }, { cookie, referer: 'https://evil.example/page' }, { cookie }];
    for (const headers of variants) {
      const response = await create(headers);
      expect(response.statusCode).toBe(403);
      expect(response.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'cross_site_request' } });
    }
  });

  it('accepts a write from the platform origin, by Origin or by Referer', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email, TEST_PASSWORD, clientIp());
    expect((await create({ cookie, origin })).statusCode).toBe(201);
    expect((await create({ cookie, referer: `${origin}/dashboard/tokens` })).statusCode).toBe(201);
  });

  it('does not apply to bearer-token requests or to reads', async () => {
    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email, TEST_PASSWORD, clientIp());
    const token = (await create({ cookie, origin })).json().data.token;
    expect((await create({ authorization: `Bearer ${token}`, origin: 'https://evil.example' })).statusCode).toBe(201);
    expect((await app.inject({ url: '/api/v1/me', headers: { cookie, origin: 'https://evil.example' } })).statusCode).toBe(200);
  });
});

describe('POST /api/v1/users', () => {
  const payload = () => ({ email: `${uniqueName('new')}@example.test`, password: 'a long enough password' });

  it('lets staff create accounts, refusing a taken e-mail with 409 conflict', async () => {
    const staff = await createAccount(context, 'staff');
    const cookie = await loginCookie(app, staff.email, TEST_PASSWORD, clientIp());
    const body = payload();
    const created = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { cookie, origin }, payload: body });
    expect(created.statusCode).toBe(201);
    expect(created.json().data).toMatchObject({ email: body.email, role: 'user' });
    const again = await app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { cookie, origin },
      payload: { ...body, email: body.email.toUpperCase() },
    });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('conflict');
    expect((await login(body.email, body.password, clientIp())).statusCode).toBe(200);
  });

  // Guards issue 34: the rule was length only, so `password1234` was accepted.
  it('refuses common, breached and easily derived passwords with 409 conflict naming the field', async () => {
    const staff = await createAccount(context, 'staff');
    const cookie = await loginCookie(app, staff.email, TEST_PASSWORD, clientIp());
    const email = `${uniqueName('weak')}@example.test`;
    for (const password of ['password1234', 'qwertyuiop12', 'P@ssw0rd2024!', 'iloveyou2024', `${email.split('@')[0]}1`]) {
      const refused = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { cookie, origin }, payload: { email, password } });
      expect(refused.statusCode, password).toBe(409);
      expect(refused.json().error, password).toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/password is too common/),
        details: { password: expect.stringMatching(/too common/) },
      });
    }
    // Localised like every rule.
    const german = await app.inject({
      method: 'POST',
      url: '/api/v1/users?lang=de',
      headers: { cookie, origin },
      payload: { email, password: 'password1234' },
    });
    expect(german.json().error.details.password).toMatch(/zu verbreitet/);
    expect(
      (await app.inject({ method: 'POST', url: '/api/v1/users', headers: { cookie, origin }, payload: { email, password: 'velvet lantern quietly orbits' } }))
        .statusCode,
    ).toBe(201);
  });

  it('refuses users (403 forbidden) and anonymous callers (401 unauthorized)', async () => {
    const user = await createAccount(context);
    const cookie = await loginCookie(app, user.email, TEST_PASSWORD, clientIp());
    const refused = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { cookie, origin }, payload: payload() });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.details).toMatchObject({ reason: 'missing_scope', required_scope: 'admin' });
    expect((await app.inject({ method: 'POST', url: '/api/v1/users', payload: payload() })).json().error.code).toBe('unauthorized');
  });
});

describe('CAPTCHA after repeated failures (ENABLE_CAPTCHA)', () => {
  it('requires a solved, unused proof-of-work challenge once an e-mail has failed CAPTCHA_AFTER times', async () => {
    const { solveChallenge } = await import('altcha-lib');
    const config = {
      ...context.config,
      captcha: { enabled: true, after: 2, secret: undefined },
      bruteforce: { ...context.config.bruteforce, maxAttempts: 10 },
    };
    const guarded = (await buildApp({ ...context, config })).app;
    const solve = async (challenge: { challenge: string; salt: string; algorithm: string; maxnumber?: number; signature: string }) => {
      const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
      const payload = {
        algorithm: challenge.algorithm,
        challenge: challenge.challenge,
        number: solution!.number,
        salt: challenge.salt,
        signature: challenge.signature,
      };
      return Buffer.from(JSON.stringify(payload)).toString('base64');
    };
    try {
      const account = await createAccount(context);
      const attempt = (password: string, captcha?: string) =>
        guarded.inject({
          method: 'POST',
          url: '/auth/login',
          payload: { email: account.email, password, ...(captcha ? { captcha } : {}) },
          remoteAddress: clientIp(),
        });
      expect((await attempt('wrong')).statusCode).toBe(401);
      expect((await attempt('wrong')).statusCode).toBe(401);
      const required = await attempt(TEST_PASSWORD);
      expect(required.statusCode).toBe(403);
      const error = required.json().error;
      expect(error.details.reason).toBe('captcha_required');
      expect(error.message).toMatch(/CAPTCHA/);
      expect(error.details.challenge).toMatchObject({ algorithm: 'SHA-256' });
      const payload = await solve(error.details.challenge);
      // A solved challenge counts once: spent on a wrong password, it cannot be replayed.
      expect((await attempt('wrong', payload)).statusCode).toBe(401);
      const replay = await attempt(TEST_PASSWORD, payload);
      expect(replay.statusCode).toBe(403);
      expect(replay.json().error.details.reason).toBe('captcha_invalid');
      expect((await attempt(TEST_PASSWORD, 'bm90IGEgcGF5bG9hZA==')).json().error.details.reason).toBe('captcha_invalid');
      const fresh = (await guarded.inject({ url: '/auth/captcha' })).json().data;
      expect((await attempt(TEST_PASSWORD, await solve(fresh))).statusCode).toBe(200);
      // Success clears the requirement.
      expect((await attempt(TEST_PASSWORD)).statusCode).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  // Guards issue 34: the requirement was a flag set after a failed check, so guesses sent in
  // parallel after one failure all passed before it applied (4 of 10 were checked from outside).
  it('of 10 parallel wrong passwords after one failure, only the one CAPTCHA_AFTER still admits is checked', async () => {
    const config = {
      ...context.config,
      captcha: { enabled: true, after: 2, secret: undefined },
      bruteforce: { ...context.config.bruteforce, maxAttempts: 50 },
    };
    const guarded = (await buildApp({ ...context, config })).app;
    try {
      const account = await createAccount(context);
      const attempt = (password: string) =>
        guarded.inject({ method: 'POST', url: '/auth/login', payload: { email: account.email, password }, remoteAddress: clientIp() });
      expect((await attempt('wrong')).statusCode).toBe(401);
      const answers = await Promise.all(Array.from({ length: 10 }, (_, n) => attempt(`wrong ${n}`)));
      // A 401 is a password checked; every other guess was refused before any check.
      expect(answers.filter((answer) => answer.statusCode === 401)).toHaveLength(1);
      const refused = answers.filter((answer) => answer.statusCode === 403);
      expect(refused).toHaveLength(9);
      for (const answer of refused) expect(answer.json().error.details.reason).toBe('captcha_required');
      // The right password without a CAPTCHA is refused as well now.
      expect((await attempt(TEST_PASSWORD)).json().error.details.reason).toBe('captcha_required');
    } finally {
      await guarded.close();
    }
  });
});
