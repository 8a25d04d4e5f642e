import { randomBytes } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { AppError, retryLater } from '#shared/errors.js';
import { rule, t, type Locale } from '#shared/i18n/index.js';
import { hashPassword, isWeakPassword, verifyPassword } from '#shared/password.js';
import type { Repositories } from '#services/repositories.js';
import type { AbuseGuard } from './abuse.js';
import { secretHash } from './authenticator.js';
import type { Mailer } from './mailer.js';

/** How long a reset link can be used. */
export const RESET_LINK_TTL_MS = 3_600_000;

/**
 * The dashboard page a reset link opens. The secret travels in the fragment: a browser sends a
 * fragment neither to the server (so no access log holds it) nor in a Referer.
 */
export const RESET_LINK_PATH = '/login/reset';

/** The key of the per-address count of reset requests: any submitted address, existing or not. */
const addressKey = (email: string) => `pw:reset:${email.trim().toLowerCase()}`;
/** Wrong current passwords of an account since its last change. */
const changeFailuresKey = (userId: string) => `pw:change-fail:${userId}`;

/** The refusal of a reset link that cannot be used, saying why. */
const linkRefused = (state: 'unknown' | 'used' | 'expired') =>
  new AppError('forbidden', { reason: `reset_link_${state}` }, { messageKey: `error.forbidden.reset_link_${state}` });

/**
 * Checks that the caller knows the account's current password (and passes `also`, a second check
 * such as a TOTP code, which throws its own refusal), before a change to the account's credentials.
 * One count per account, shared by every such change: BRUTEFORCE_MAX_ATTEMPTS tries within
 * BRUTEFORCE_WINDOW, taken before the checks (atomically, as login attempts), refuse the rest of the
 * window; a success clears it. Answers the account.
 */
export async function reauthenticate(
  context: Pick<Context, 'config' | 'cache'> & { repositories: Pick<Repositories, 'users'> },
  userId: string,
  password: string,
  also?: () => Promise<void>,
) {
  const { bruteforce } = context.config;
  const key = changeFailuresKey(userId);
  const attempt = await context.cache.increment(key, bruteforce.windowSec);
  if (attempt > bruteforce.maxAttempts) {
    throw retryLater('rate_limited', (await context.cache.ttlMs(key)) / 1000, { reason: 'password_attempts' });
  }
  const user = await context.repositories.users.findById(userId);
  if (!user) throw new AppError('unauthorized');
  if (!(await verifyPassword(password, user.password_hash))) {
    throw new AppError('forbidden', { reason: 'current_password_wrong' }, { messageKey: 'error.forbidden.current_password' });
  }
  if (also) await also();
  await context.cache.remove(key);
  return user;
}

/** A disabled account's password cannot be reset (its links were spent when it was disabled; this guards a race). */
const resetOfDisabled = () => new AppError('forbidden', { reason: 'account_disabled' }, { messageKey: 'error.forbidden.reset_account_disabled' });

const weakRefusal = () => new AppError('conflict', { password: rule('password_common') }, { messageKey: 'error.conflict.password_common' });

/**
 * Password change, reset by e-mail and staff-issued reset links. Reset links are 256 random bits,
 * stored as their SHA-256 only (as session secrets and API tokens: a preimage search of 256 bits is
 * out of reach, so a slow salted hash would add only a cost per lookup); single-use, valid one hour.
 *
 * Neither a change nor a reset signs anyone in: the account's next session starts at POST
 * /auth/login, so a second sign-in factor added there cannot be skipped through a reset.
 */
export function passwordService(
  context: Pick<Context, 'config' | 'cache' | 'log' | 'metrics'> & { repositories: Pick<Repositories, 'users' | 'sessions' | 'passwordResets'> },
  abuse: Pick<AbuseGuard, 'audit'>,
  mailer: Mailer | undefined,
) {
  const { users, sessions, passwordResets } = context.repositories;
  const { config, log } = context;
  /** Reset mails being prepared or sent after their request was answered; awaited by close(). */
  const pending = new Set<Promise<void>>();

  /** A new link for the account: the secret (shown or mailed once) and when it expires. */
  const issue = async (userId: string, issuedBy: string | null, ip: string) => {
    const secret = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + RESET_LINK_TTL_MS);
    await passwordResets.insert({ tokenHash: secretHash(secret), userId, issuedBy, ip, expiresAt });
    return { url: `${config.publicUrl}${RESET_LINK_PATH}#token=${secret}`, expiresAt };
  };

  /** Looks the address up and mails a link to an account it names; whatever happens, the request was answered already. */
  const mailLink = async (email: string, ip: string, requestLocale: Locale) => {
    const user = await users.findByEmail(email);
    // A disabled account gets no link: a reset must not lead back into it (the answer was the same already).
    if (!user || user.disabled_at) return;
    if (!mailer) {
      log.warn({ user_id: user.id }, 'password reset asked for, but SMTP_URL is not set: staff can issue a reset link instead');
      return;
    }
    const { url } = await issue(user.id, null, ip);
    const locale = user.locale ?? requestLocale;
    await mailer.send({
      to: user.email,
      subject: t(locale, 'mail.password_reset.subject'),
      text: t(locale, 'mail.password_reset.body', { email: user.email, link: url }),
    });
    abuse.audit({ action: 'user.password_reset_requested', actorId: user.id, target: user.id, ip });
  };

  return {
    /**
     * Changes the caller's password: the current one must be given (BRUTEFORCE_MAX_ATTEMPTS wrong
     * ones within BRUTEFORCE_WINDOW refuse further tries for the rest of it), the new one passes the
     * sign-up strength check. Every other session of the account is revoked; the caller's stays.
     */
    async change(input: { userId: string; sessionHash: string; current: string; next: string; ip: string }): Promise<{ otherSessionsRevoked: number }> {
      const user = await reauthenticate(context, input.userId, input.current);
      if (await isWeakPassword(input.next, [user.email, user.display_name ?? ''])) throw weakRefusal();
      await users.setPasswordHash(user.id, await hashPassword(input.next));
      const otherSessionsRevoked = await sessions.revokeAllOf(user.id, input.sessionHash);
      abuse.audit({ action: 'user.password_changed', actorId: user.id, target: user.id, ip: input.ip, details: { sessions_revoked: otherSessionsRevoked } });
      return { otherSessionsRevoked };
    },

    /**
     * Asks for a reset link by e-mail. The answer is the same whether or not the address has an
     * account, and so is its time: past the per-address count (PASSWORD_RESET_PER_ADDRESS, kept for
     * any address), the look-up, the link and the mail happen after the answer.
     */
    async requestReset(input: { email: string; ip: string; locale: Locale }): Promise<void> {
      const limit = config.passwordResetPerAddress;
      const key = addressKey(input.email);
      if ((await context.cache.increment(key, limit.windowSec)) > limit.limit) {
        throw retryLater('rate_limited', (await context.cache.ttlMs(key)) / 1000, { reason: 'address_limited' });
      }
      const work = mailLink(input.email, input.ip, input.locale)
        .catch((error: unknown) => {
          context.metrics.accountMailFailures.inc({ mail: 'password_reset' });
          // The error only: a nodemailer error can quote the message, and with it the link.
          log.error(
            { err: { message: error instanceof Error ? error.message.slice(0, 200).replace(/token=[\w-]+/g, 'token=[redacted]') : 'unknown' } },
            'password-reset mail failed',
          );
        })
        .finally(() => pending.delete(work));
      pending.add(work);
    },

    /**
     * Sets a new password with a reset link: refused when the link is unknown, used or expired
     * (403 `forbidden`, `details.reason` saying which), or the password weak (409, the link kept).
     * Spends the link (and any other open link of the account) and revokes every session.
     */
    async confirmReset(input: { token: string; password: string; ip: string }): Promise<{ sessionsRevoked: number }> {
      const tokenHash = secretHash(input.token);
      const link = await passwordResets.stateOf(tokenHash);
      if (link.state === 'account_disabled') throw resetOfDisabled();
      if (link.state !== 'valid') throw linkRefused(link.state);
      if (await isWeakPassword(input.password, [link.email])) throw weakRefusal();
      const redeemed = await passwordResets.redeem(tokenHash, await hashPassword(input.password));
      // A parallel use of the same link took it between the check and here.
      if (!redeemed) throw linkRefused('used');
      abuse.audit({
        action: 'user.password_reset',
        actorId: redeemed.userId,
        target: redeemed.userId,
        ip: input.ip,
        details: { sessions_revoked: redeemed.sessionsRevoked },
      });
      return { sessionsRevoked: redeemed.sessionsRevoked };
    },

    /** A reset link for an account, issued by staff (for a platform without SMTP_URL, or a user without their mailbox). */
    async issueByStaff(input: { staffId: string; userId: string; ip: string }): Promise<{ url: string; expiresAt: Date }> {
      const user = await users.findById(input.userId);
      if (!user) throw new AppError('not_found', { resource: 'user' });
      if (user.disabled_at) throw new AppError('conflict', { reason: 'account_disabled' }, { messageKey: 'error.conflict.account_disabled' });
      const link = await issue(user.id, input.staffId, input.ip);
      abuse.audit({ action: 'user.password_reset_issued', actorId: input.staffId, target: user.id, ip: input.ip });
      return link;
    },

    /** Waits for the reset mails still on their way. */
    async close(): Promise<void> {
      await Promise.allSettled([...pending]);
    },
  };
}

export type PasswordService = ReturnType<typeof passwordService>;
