import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '#shared/config.js';
import type { Context } from '#shared/context.js';
import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext, testConfig, uniqueName } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { auditRepository } from '#shared/audit/audit.repository.js';
import { buildApp } from '#services/app.js';
import { createAbuseGuard } from './abuse.js';
import { withRepositories } from '#tests/support/repositories.js';

let context: Context;
let origin: string;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  context = await createTestContext();
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await closeContext(context);
});

async function appWith(overrides: Partial<Config>): Promise<FastifyInstance> {
  const app = (await buildApp({ ...context, config: { ...context.config, ...overrides } })).app;
  apps.push(app);
  return app;
}

const address = () => `203.0.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250) + 1}`;
const audits = () => auditRepository(context.db.db);

describe('anti-spam', () => {
  it('an IP cycling through SPAM_IDENTITIES_PER_IP login e-mails is answered 429 spam_detected for the cooldown', async () => {
    const app = await appWith({ spam: { windowSec: 600, tokensPerAccount: 3, identitiesPerIp: 3, cooldownSec: 120 } });
    const ip = address();
    const login = (email: string, from = ip) => app.inject({ method: 'POST', url: '/auth/login', payload: { email, password: 'guess' }, remoteAddress: from });
    for (let n = 0; n < 2; n++) expect((await login(`${uniqueName('stuff')}@example.test`)).statusCode).toBe(401);
    // The third distinct identity trips the rule; from then on the IP is refused, whatever it asks.
    const third = await login(`${uniqueName('stuff')}@example.test`);
    expect(third.statusCode).toBe(401);
    const refused = await login(`${uniqueName('stuff')}@example.test`);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toMatchObject({ code: 'spam_detected', details: { subject: 'ip' } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(100);
    expect((await app.inject({ url: '/api/v1/status', remoteAddress: ip })).json().error.code).toBe('spam_detected');
    // Another address is not affected.
    expect((await login(`${uniqueName('stuff')}@example.test`, address())).statusCode).toBe(401);
    const rows = await waitFor(async () => {
      const found = (await audits().list({ action: 'spam.detected', limit: 500 })).filter((row) => row.ip === ip);
      return found.length > 0 ? found : undefined;
    }, 5_000);
    expect(rows[0]!.details).toMatchObject({ rule: 'identities_per_ip' });
  });

  it('one account exhausting its limit through SPAM_TOKENS_PER_ACCOUNT tokens is refused on every token', async () => {
    const rateLimits = testConfig({ RATE_LIMIT_API: '1:60' }).rateLimits;
    const app = await appWith({ rateLimits, spam: { windowSec: 600, tokensPerAccount: 2, identitiesPerIp: 1000, cooldownSec: 120 } });
    // Tokens are minted through an app with the usual limits; only the tested one is strict.
    const minter = await appWith({});
    const account = await createAccount(context);
    const cookie = await loginCookie(minter, account.email, TEST_PASSWORD, address());
    const tokens = [await mintToken(minter, cookie, origin), await mintToken(minter, cookie, origin), await mintToken(minter, cookie, origin)];
    const me = (token: string) => app.inject({ url: '/api/v1/me', headers: { authorization: `Bearer ${token}` }, remoteAddress: address() });
    expect((await me(tokens[0]!.token)).statusCode).toBe(200);
    expect((await me(tokens[0]!.token)).json().error.code).toBe('rate_limited');
    expect((await me(tokens[1]!.token)).statusCode).toBe(200);
    expect((await me(tokens[1]!.token)).json().error.code).toBe('rate_limited');
    // Two tokens of one account exhausted: the account is sharding its limit.
    const third = await me(tokens[2]!.token);
    expect(third.statusCode).toBe(429);
    expect(third.json().error).toMatchObject({ code: 'spam_detected', details: { subject: 'account' } });
    // Another account is not affected.
    const other = await createAccount(context);
    const otherCookie = await loginCookie(minter, other.email, TEST_PASSWORD, address());
    expect((await me((await mintToken(minter, otherCookie, origin)).token)).statusCode).toBe(200);
    const rows = await waitFor(async () => {
      const found = await audits().list({ action: 'spam.detected', actorId: account.id });
      return found.length > 0 ? found : undefined;
    }, 5_000);
    expect(rows[0]!.details).toMatchObject({ rule: 'tokens_per_account', tokens: 2 });
  });
});

describe('the spam_detected 429', () => {
  // Guards issue 23: it had Retry-After only, and was not counted in rate_limited_total.
  it("carries the rate-limit headers of the route's bucket and is counted under that bucket", async () => {
    const app = await appWith({ spam: { windowSec: 600, tokensPerAccount: 3, identitiesPerIp: 2, cooldownSec: 120 } });
    const counted = async (bucket: string) => (await context.metrics.rateLimited.get()).values.find((value) => value.labels.bucket === bucket)?.value ?? 0;
    const ip = address();
    const login = () =>
      app.inject({ method: 'POST', url: '/auth/login', payload: { email: `${uniqueName('shard')}@example.test`, password: 'guess' }, remoteAddress: ip });
    for (let n = 0; n < 2; n++) await login();
    const [authBefore, defaultBefore] = [await counted('auth'), await counted('default')];
    const refused = await login();
    expect(refused.json().error.code).toBe('spam_detected');
    const status = await app.inject({ url: '/api/v1/status', remoteAddress: ip });
    expect(status.json().error.code).toBe('spam_detected');
    for (const [answer, bucket] of [
      [refused, 'auth'],
      [status, 'default'],
    ] as const) {
      const limit = String(context.config.rateLimits[bucket].limit);
      expect(answer.headers['ratelimit-limit']).toBe(limit);
      expect(answer.headers['x-ratelimit-limit']).toBe(limit);
      expect(answer.headers['ratelimit-remaining']).toBe('0');
      expect(answer.headers['x-ratelimit-remaining']).toBe('0');
      expect(answer.headers['ratelimit-reset']).toBe(answer.headers['retry-after']);
      expect(Number(answer.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
    }
    expect(await counted('auth')).toBe(authBefore + 1);
    expect(await counted('default')).toBe(defaultBefore + 1);
    expect(await counted('undefined')).toBe(0);
  });
});

describe('audit log', () => {
  it('records rate-limit exhaustion once per window and key', async () => {
    const app = await appWith({ rateLimits: testConfig({ RATE_LIMIT_DEFAULT: '1:60' }).rateLimits });
    const ip = address();
    for (let n = 0; n < 4; n++) await app.inject({ url: '/api/v1/languages', remoteAddress: ip });
    const rows = await waitFor(async () => {
      const found = (await audits().list({ action: 'rate_limit.exhausted', limit: 1000 })).filter((row) => row.target === `default:${ip}`);
      return found.length > 0 ? found : undefined;
    }, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await audits().list({ action: 'rate_limit.exhausted', limit: 1000 })).filter((row) => row.target === `default:${ip}`)).toHaveLength(rows.length);
    expect(rows).toHaveLength(1);
  });

  it('records lockouts and token use from a new IP', async () => {
    const app = await appWith({ bruteforce: { maxAttempts: 2, windowSec: 60, lockoutSec: 60 } });
    const account = await createAccount(context);
    for (let n = 0; n < 2; n++) {
      await app.inject({ method: 'POST', url: '/auth/login', payload: { email: account.email, password: 'wrong' }, remoteAddress: address() });
    }
    await waitFor(async () => (await audits().list({ action: 'auth.lockout', actorId: account.id })).length === 1, 5_000);

    const other = await createAccount(context);
    const cookie = await loginCookie(app, other.email, TEST_PASSWORD, address());
    const { token, id } = await mintToken(app, cookie, origin);
    const ip = address();
    await app.inject({ url: '/api/v1/me', headers: { authorization: `Bearer ${token}` }, remoteAddress: ip });
    await app.inject({ url: '/api/v1/me', headers: { authorization: `Bearer ${token}` }, remoteAddress: ip });
    const rows = await waitFor(async () => {
      const found = (await audits().list({ action: 'token.new_ip', actorId: other.id })).filter((row) => row.target === id);
      return found.length > 0 ? found : undefined;
    }, 5_000);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.ip).toBe(ip);
  });
});

describe('pairs (IP, identity) a node remembers', () => {
  it('counts a pair once per window, and again after it was forgotten to keep the memory bounded', async () => {
    const counted: string[] = [];
    const cache = { ...context.cache, addToSet: async (_key: string, member: string) => (counted.push(member), 1) };
    const guard = await createAbuseGuard({ ...withRepositories(context), cache }, { seenMax: 2 });
    try {
      await guard.admit('198.51.100.1', undefined, 'login:a');
      await guard.admit('198.51.100.1', undefined, 'login:a'); // counted already
      await guard.admit('198.51.100.2', undefined, 'login:a'); // a second address: two pairs kept, the most
      await guard.admit('198.51.100.1', undefined, 'login:b'); // full: login:a is forgotten with both its addresses
      await guard.admit('198.51.100.2', undefined, 'login:a'); // so this pair is counted again
      await guard.admit('198.51.100.1', undefined, 'login:b'); // still remembered
      await guard.admit('198.51.100.3', undefined, 'login:a'); // full: login:b goes, login:a keeps .2 and adds .3
      await guard.admit('198.51.100.2', undefined, 'login:a'); // still remembered
      await guard.admit('198.51.100.4', undefined, 'login:a'); // full, and login:a is the oldest: it starts again with .4
      await guard.admit('198.51.100.3', undefined, 'login:a'); // forgotten with it: counted again
      expect(counted).toEqual(['login:a', 'login:a', 'login:b', 'login:a', 'login:a', 'login:a', 'login:a']);
    } finally {
      await guard.close();
    }
  });
});
