import { randomBytes } from 'node:crypto';
import { AppError, retryLater } from '../../../shared/errors.js';
import { hashPassword, verifyPassword } from '../../../shared/password.js';
import { usersRepository } from '../users/users.repository.js';
import { toUserView } from '../users/users.view.js';
import { secretHash } from './authenticator.js';
import { sessionsRepository } from './sessions.repository.js';
/** The account key of the brute-force counters: any submitted e-mail, existing or not. */
const accountKey = (email) => email.trim().toLowerCase();
const failuresKey = (email) => `bf:fail:${accountKey(email)}`;
const lockKey = (email) => `bf:lock:${accountKey(email)}`;
const captchaKey = (email) => `bf:captcha:${accountKey(email)}`;
/**
 * Login with brute-force protection. Failures are counted per submitted e-mail whether or not
 * the account exists, and a wrong e-mail costs the same password check as a wrong password, so
 * neither the answer, its timing nor a lockout tells which accounts exist.
 */
export function authService(context, captcha, abuse) {
    const users = usersRepository(context.db.db);
    const sessions = sessionsRepository(context.db.db);
    const { bruteforce } = context.config;
    // A real scrypt hash to check wrong e-mails against, so that they take as long as wrong passwords.
    const decoy = hashPassword(randomBytes(16).toString('hex'));
    /** Answers 429 while the account is locked: checked before any counter, so the lock wins. */
    const assertNotLocked = async (email) => {
        const ttl = await context.cache.ttlMs(lockKey(email));
        if (ttl > 0)
            throw retryLater('rate_limited', ttl / 1000, { reason: 'account_locked' });
    };
    return {
        assertNotLocked,
        /** Signs in; the route has checked the lock first (assertNotLocked, before the auth bucket counts). */
        async login(input, client) {
            if (context.config.captcha.enabled && (await context.cache.ttlMs(captchaKey(input.email))) > 0) {
                if (!input.captcha || !(await captcha.verify(input.captcha))) {
                    throw new AppError('forbidden', { reason: input.captcha ? 'captcha_invalid' : 'captcha_required', challenge: await captcha.challenge() }, { messageKey: 'error.forbidden.captcha_required' });
                }
            }
            const user = await users.findByEmail(input.email);
            const valid = await verifyPassword(input.password, user?.password_hash ?? (await decoy));
            if (!user || !valid) {
                const failures = await context.cache.increment(failuresKey(input.email), bruteforce.windowSec);
                if (context.config.captcha.enabled && failures >= context.config.captcha.after) {
                    await context.cache.flag(captchaKey(input.email), bruteforce.windowSec);
                }
                if (failures >= bruteforce.maxAttempts) {
                    await context.cache.flag(lockKey(input.email), bruteforce.lockoutSec);
                    await context.cache.remove(failuresKey(input.email));
                    context.log.warn({ account: accountKey(input.email), ip: client.ip }, 'account locked after repeated failed logins');
                    abuse.audit({ action: 'auth.lockout', actorId: user?.id ?? null, target: accountKey(input.email), ip: client.ip, details: { failures } });
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
        async logout(sessionHash) {
            await sessions.revoke(sessionHash);
        },
    };
}
//# sourceMappingURL=auth.service.js.map