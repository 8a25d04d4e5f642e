import { randomBytes } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { AppError, retryLater } from '#shared/errors.js';
import type { Locale } from '#shared/i18n/index.js';
import { hashPassword, verifyPassword } from '#shared/password.js';
import { toUserView, type UserView } from '../users/users.view.js';
import { accountDisabled, secretHash } from './authenticator.js';
import type { AbuseGuard } from './abuse.js';
import type { Captcha } from './captcha.js';
import type { DeviceCookies } from './device-cookie.js';
import { checkSecondFactor, totpEnrolmentRequired, type SecondFactor } from './totp.service.js';
import type { Repositories } from '#services/repositories.js';

/** The account key of the brute-force counters: any submitted e-mail, existing or not. */
const accountKey = (email: string) => email.trim().toLowerCase();
/** Attempts without a solved CAPTCHA since the last success: past CAPTCHA_AFTER, one is required. */
const captchaKey = (email: string) => `bf:captcha:${accountKey(email)}`;

/**
 * Whose allowance an attempt spends: the account's, shared by every client without a device cookie
 * of it, or one known device's own (a browser that signed in to the account before).
 */
interface Allowance {
  failures: string;
  lock: string;
  reason: 'account_locked' | 'device_locked';
  device?: string;
}
const accountAllowance = (email: string): Allowance => ({
  failures: `bf:fail:${accountKey(email)}`,
  lock: `bf:lock:${accountKey(email)}`,
  reason: 'account_locked',
});
const deviceAllowance = (device: string): Allowance => ({ failures: `bf:dev-fail:${device}`, lock: `bf:dev-lock:${device}`, reason: 'device_locked', device });

/** How long the second step of a sign-in may follow its password. */
export const CHALLENGE_TTL_MS = 5 * 60_000;

/** A sign-in that is complete: a new session. */
export interface SessionResult {
  kind: 'session';
  /** The cookie value (the session secret); only its hash is stored. */
  secret: string;
  expiresAt: Date;
  user: UserView;
  /** A fresh device cookie for the browser that signed in. */
  device: { value: string; expiresAt: Date };
  /** A staff account without TOTP while staff must have it: the session reaches only the enrolment routes until it has. */
  totpEnrolmentRequired: boolean;
}

/** A right password for an account with TOTP: the second step (POST /auth/login/totp) takes this challenge and a code. */
export interface ChallengeResult {
  kind: 'totp';
  challenge: string;
  expiresAt: Date;
}

export type LoginResult = SessionResult | ChallengeResult;

const challengeRefused = () => new AppError('unauthorized', { reason: 'challenge_invalid' }, { messageKey: 'error.unauthorized.challenge_invalid' });

/**
 * Login with brute-force protection. Attempts are counted per submitted e-mail whether or not
 * the account exists, each one taken before its password check (a success clears the count), and
 * a wrong e-mail costs the same password check as a wrong password, so neither the answer, its
 * timing nor a lockout tells which accounts exist.
 *
 * A browser that signed in successfully gets a device cookie (OWASP's device cookies): with it, its
 * attempts spend the device's own allowance (the same numbers, its own lock), not the account's, so
 * that anyone guessing from elsewhere can lock the account for others but not for its owner's known
 * browsers. A forged, expired or another account's cookie counts for nothing.
 */
export function authService(
  context: Pick<Context, 'config' | 'cache' | 'log' | 'secrets'> & { repositories: Pick<Repositories, 'users' | 'sessions' | 'totp' | 'settings'> },
  captcha: Captcha,
  abuse: Pick<AbuseGuard, 'audit'>,
  devices: DeviceCookies,
) {
  const { users, sessions, totp } = context.repositories;
  const { bruteforce } = context.config;
  // A real scrypt hash to check wrong e-mails against, so that they take as long as wrong passwords.
  const decoy = hashPassword(randomBytes(16).toString('hex'));

  /** The allowance an attempt spends: its known device's when it carries a valid device cookie of the account. */
  const allowanceOf = async (email: string, deviceCookie: string | undefined): Promise<Allowance> => {
    const device = await devices.deviceOf(deviceCookie, accountKey(email));
    return device ? deviceAllowance(device) : accountAllowance(email);
  };

  /** Answers 429 while the allowance is locked: checked before any counter, so the lock wins. */
  const assertAllowanceOpen = async (allowance: Allowance): Promise<void> => {
    const ttl = await context.cache.ttlMs(allowance.lock);
    if (ttl > 0) throw retryLater('rate_limited', ttl / 1000, { bucket: 'auth', reason: allowance.reason });
  };

  /** Starts a session for an account whose every factor was checked: a new secret, stored as its hash only. */
  const startSession = async (userId: string, client: { ip: string; userAgent: string | null }) => {
    const secret = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + context.config.sessionTtlSec * 1000);
    await sessions.insert({ idHash: secretHash(secret), userId, ip: client.ip, userAgent: client.userAgent, expiresAt });
    return { secret, expiresAt };
  };

  /** An attempt taken from an allowance: refused before any check when the CAPTCHA or the lock says so. */
  const takeAttempt = async (email: string, deviceCookie: string | undefined, solution: string | undefined) => {
    const allowance = await allowanceOf(email, deviceCookie);
    // A known device has its own allowance: the CAPTCHA guards the account's shared one.
    if (context.config.captcha.enabled && !allowance.device) {
      const solved = solution !== undefined && (await captcha.verify(solution));
      // Without a solved CAPTCHA, the attempt takes one of the CAPTCHA_AFTER a window admits, atomically
      // (one increment in the shared cache) and before any check: parallel guesses cannot all pass a
      // requirement that a failure sets only once its check is done.
      if (!solved && (await context.cache.increment(captchaKey(email), bruteforce.windowSec)) > context.config.captcha.after) {
        throw new AppError(
          'forbidden',
          { reason: solution ? 'captcha_invalid' : 'captcha_required', challenge: await captcha.challenge() },
          { messageKey: 'error.forbidden.captcha_required' },
        );
      }
    }
    // The attempt is taken before the password is checked, atomically (one increment in the shared
    // cache): of any number of parallel guesses, from any number of addresses, only the first
    // BRUTEFORCE_MAX_ATTEMPTS of a window reach the check; the others are refused as locked.
    const attempt = await context.cache.increment(allowance.failures, bruteforce.windowSec);
    if (attempt > bruteforce.maxAttempts) {
      const ttl = Math.max(await context.cache.ttlMs(allowance.lock), await context.cache.ttlMs(allowance.failures));
      throw retryLater('rate_limited', ttl / 1000, { bucket: 'auth', reason: allowance.reason });
    }
    // A lock taken after this request passed the route's check (by a parallel attempt, whose
    // success then cleared the counter) still holds.
    await assertAllowanceOpen(allowance);
    return { allowance, attempt };
  };

  /** A failed attempt (a wrong password or code): keeps the CAPTCHA required, locks at the maximum. */
  const failed = async (email: string, taken: { allowance: Allowance; attempt: number }, userId: string | null, ip: string) => {
    const { allowance, attempt } = taken;
    // The CAPTCHA stays required for a window after the last failure.
    if (context.config.captcha.enabled && !allowance.device) await context.cache.expire(captchaKey(email), bruteforce.windowSec);
    if (attempt === bruteforce.maxAttempts) {
      await context.cache.flag(allowance.lock, bruteforce.lockoutSec);
      // The counter, now past the maximum, refuses every attempt already on its way; it ends with
      // the lock, so that the next window starts afresh when the lock is over.
      await context.cache.expire(allowance.failures, bruteforce.lockoutSec);
      const what = allowance.device ? 'a known device of an account' : 'account';
      context.log.warn({ account: accountKey(email), ip, device: allowance.device }, `${what} locked after repeated failed logins`);
      abuse.audit({
        action: allowance.device ? 'auth.device_lockout' : 'auth.lockout',
        actorId: userId,
        target: accountKey(email),
        ip,
        details: { failures: attempt, ...(allowance.device ? { device: allowance.device } : {}) },
      });
    }
  };

  /** Every factor was right: the count it was taken from is cleared and a session starts. */
  const succeeded = async (
    email: string,
    allowance: Allowance,
    user: NonNullable<Awaited<ReturnType<typeof users.findById>>>,
    client: { ip: string; userAgent: string | null; locale: Locale },
  ): Promise<SessionResult> => {
    // A success clears the count it was taken from: a known device's success leaves the account's
    // (others' guesses) as it is.
    await context.cache.remove(allowance.failures);
    if (!allowance.device) await context.cache.remove(captchaKey(email));
    await users.setLocale(user.id, client.locale);
    const { secret, expiresAt } = await startSession(user.id, client);
    return {
      kind: 'session',
      secret,
      expiresAt,
      user: toUserView(user),
      device: await devices.issue(accountKey(email)),
      totpEnrolmentRequired: await totpEnrolmentRequired(context.repositories, user),
    };
  };

  return {
    /** Answers 429 while the allowance this attempt would spend (the account's, or its known device's) is locked. */
    async assertNotLocked(email: string, deviceCookie: string | undefined): Promise<void> {
      await assertAllowanceOpen(await allowanceOf(email, deviceCookie));
    },

    /** As assertNotLocked, for the second step: the allowance of the challenge's account (nothing for an unknown challenge). */
    async assertChallengeNotLocked(challenge: string, deviceCookie: string | undefined): Promise<void> {
      const live = await totp.findLiveChallenge(secretHash(challenge));
      if (live) await assertAllowanceOpen(await allowanceOf(live.email, deviceCookie));
    },

    /** Signs in; the route has checked the lock first (assertNotLocked, before the auth bucket counts). */
    async login(
      input: { email: string; password: string; captcha?: string },
      client: { ip: string; userAgent: string | null; deviceCookie?: string; locale: Locale },
    ): Promise<LoginResult> {
      const taken = await takeAttempt(input.email, client.deviceCookie, input.captcha);
      const user = await users.findByEmail(input.email);
      const valid = await verifyPassword(input.password, user?.password_hash ?? (await decoy));
      if (!user || !valid) {
        await failed(input.email, taken, user?.id ?? null, client.ip);
        throw new AppError('unauthorized', { reason: 'invalid_credentials' }, { messageKey: 'error.unauthorized.invalid_credentials' });
      }
      // Told only to a caller who gave the right password; the attempt stays counted, as a failure.
      if (user.disabled_at) throw accountDisabled();
      if (await totp.isEnabled(user.id)) {
        // The password is right, and the second factor is asked for; the count stays as it is.
        const challenge = randomBytes(32).toString('base64url');
        const expiresAt = new Date(Date.now() + CHALLENGE_TTL_MS);
        await totp.insertChallenge({ idHash: secretHash(challenge), userId: user.id, expiresAt });
        return { kind: 'totp', challenge, expiresAt };
      }
      return succeeded(input.email, taken.allowance, user, client);
    },

    /**
     * The second step: a live challenge and a code (of a step later than any accepted before) or an
     * unused recovery code start the session and spend the challenge. A wrong code is a failed
     * attempt of the account's (or its known device's) allowance; an unknown, spent or expired
     * challenge is 401 `challenge_invalid`.
     */
    async loginWithTotp(
      input: { challenge: string; factor: SecondFactor; captcha?: string },
      client: { ip: string; userAgent: string | null; deviceCookie?: string; locale: Locale },
    ): Promise<SessionResult> {
      const idHash = secretHash(input.challenge);
      const live = await totp.findLiveChallenge(idHash);
      if (!live) throw challengeRefused();
      const taken = await takeAttempt(live.email, client.deviceCookie, input.captcha);
      const used = await checkSecondFactor(totp, context.secrets, live.user_id, input.factor);
      if (!used) {
        await failed(live.email, taken, live.user_id, client.ip);
        throw new AppError('unauthorized', { reason: 'second_factor_wrong' }, { messageKey: 'error.unauthorized.second_factor_wrong' });
      }
      if (!(await totp.spendChallenge(idHash))) throw challengeRefused();
      const user = await users.findById(live.user_id);
      if (!user) throw challengeRefused();
      // Disabled by staff between the two steps.
      if (user.disabled_at) throw accountDisabled();
      if (used === 'recovery_code') {
        abuse.audit({
          action: 'auth.recovery_code_used',
          actorId: user.id,
          target: user.id,
          ip: client.ip,
          details: { left: await totp.countRecoveryCodesLeft(user.id) },
        });
      }
      return succeeded(live.email, taken.allowance, user, client);
    },

    async logout(sessionHash: string): Promise<void> {
      await sessions.revoke(sessionHash);
    },
  };
}
