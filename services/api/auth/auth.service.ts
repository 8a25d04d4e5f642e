import { randomBytes } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { AppError, retryLater } from '#shared/errors.js';
import { hashPassword, verifyPassword } from '#shared/password.js';
import { toUserView, type UserView } from '../users/users.view.js';
import { secretHash } from './authenticator.js';
import type { AbuseGuard } from './abuse.js';
import type { Captcha } from './captcha.js';
import type { Repositories } from '#services/repositories.js';

/** The account key of the brute-force counters: any submitted e-mail, existing or not. */
const accountKey = (email: string) => email.trim().toLowerCase();
const failuresKey = (email: string) => `bf:fail:${accountKey(email)}`;
const lockKey = (email: string) => `bf:lock:${accountKey(email)}`;
/** Attempts without a solved CAPTCHA since the last success: past CAPTCHA_AFTER, one is required. */
const captchaKey = (email: string) => `bf:captcha:${accountKey(email)}`;

export interface LoginResult {
  /** The cookie value (the session secret); only its hash is stored. */
  secret: string;
  expiresAt: Date;
  user: UserView;
}

/**
 * Login with brute-force protection. Attempts are counted per submitted e-mail whether or not
 * the account exists, each one taken before its password check (a success clears the count), and
 * a wrong e-mail costs the same password check as a wrong password, so neither the answer, its
 * timing nor a lockout tells which accounts exist.
 */
export function authService(
  context: Pick<Context, 'config' | 'cache' | 'log'> & { repositories: Pick<Repositories, 'users' | 'sessions'> },
  captcha: Captcha,
  abuse: Pick<AbuseGuard, 'audit'>,
) {
  const { users, sessions } = context.repositories;
  const { bruteforce } = context.config;
  // A real scrypt hash to check wrong e-mails against, so that they take as long as wrong passwords.
  const decoy = hashPassword(randomBytes(16).toString('hex'));

  /** Answers 429 while the account is locked: checked before any counter, so the lock wins. */
  const assertNotLocked = async (email: string): Promise<void> => {
    const ttl = await context.cache.ttlMs(lockKey(email));
    if (ttl > 0) throw retryLater('rate_limited', ttl / 1000, { bucket: 'auth', reason: 'account_locked' });
  };

  return {
    assertNotLocked,

    /** Signs in; the route has checked the lock first (assertNotLocked, before the auth bucket counts). */
    async login(input: { email: string; password: string; captcha?: string }, client: { ip: string; userAgent: string | null }): Promise<LoginResult> {
      if (context.config.captcha.enabled) {
        const solved = input.captcha !== undefined && (await captcha.verify(input.captcha));
        // Without a solved CAPTCHA, the attempt takes one of the CAPTCHA_AFTER a window admits, atomically
        // (one increment in the shared cache) and before any check: parallel guesses cannot all pass a
        // requirement that a failure sets only once its check is done.
        if (!solved && (await context.cache.increment(captchaKey(input.email), bruteforce.windowSec)) > context.config.captcha.after) {
          throw new AppError(
            'forbidden',
            { reason: input.captcha ? 'captcha_invalid' : 'captcha_required', challenge: await captcha.challenge() },
            { messageKey: 'error.forbidden.captcha_required' },
          );
        }
      }
      // The attempt is taken before the password is checked, atomically (one increment in the shared
      // cache): of any number of parallel guesses, from any number of addresses, only the first
      // BRUTEFORCE_MAX_ATTEMPTS of a window reach the check; the others are refused as locked.
      const attempt = await context.cache.increment(failuresKey(input.email), bruteforce.windowSec);
      if (attempt > bruteforce.maxAttempts) {
        const ttl = Math.max(await context.cache.ttlMs(lockKey(input.email)), await context.cache.ttlMs(failuresKey(input.email)));
        throw retryLater('rate_limited', ttl / 1000, { bucket: 'auth', reason: 'account_locked' });
      }
      // A lock taken after this request passed the route's check (by a parallel attempt, whose
      // success then cleared the counter) still holds.
      await assertNotLocked(input.email);
      const user = await users.findByEmail(input.email);
      const valid = await verifyPassword(input.password, user?.password_hash ?? (await decoy));
      if (!user || !valid) {
        // The CAPTCHA stays required for a window after the last failure.
        if (context.config.captcha.enabled) await context.cache.expire(captchaKey(input.email), bruteforce.windowSec);
        if (attempt === bruteforce.maxAttempts) {
          await context.cache.flag(lockKey(input.email), bruteforce.lockoutSec);
          // The counter, now past the maximum, refuses every attempt already on its way; it ends with
          // the lock, so that the next window starts afresh when the lock is over.
          await context.cache.expire(failuresKey(input.email), bruteforce.lockoutSec);
          context.log.warn({ account: accountKey(input.email), ip: client.ip }, 'account locked after repeated failed logins');
          abuse.audit({ action: 'auth.lockout', actorId: user?.id ?? null, target: accountKey(input.email), ip: client.ip, details: { failures: attempt } });
        }
        throw new AppError('unauthorized', { reason: 'invalid_credentials' }, { messageKey: 'error.unauthorized.invalid_credentials' });
      }
      await context.cache.remove(failuresKey(input.email));
      await context.cache.remove(captchaKey(input.email));
      const secret = randomBytes(32).toString('base64url');
      const expiresAt = new Date(Date.now() + context.config.sessionTtlSec * 1000);
      await sessions.insert({ idHash: secretHash(secret), userId: user.id, ip: client.ip, userAgent: client.userAgent, expiresAt });
      return {
        secret,
        expiresAt,
        user: toUserView(user),
      };
    },

    async logout(sessionHash: string): Promise<void> {
      await sessions.revoke(sessionHash);
    },
  };
}
