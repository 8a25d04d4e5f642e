import type { Context } from '../../../shared/context.js';
import { AppError } from '../../../shared/errors.js';
import type { Principal } from '../../../shared/http/auth.js';
import { auditRepository, type AuditEntry } from '../audit/audit.repository.js';

/**
 * Anti-spam: the audit trail of abuse signals and the detection of limits sharded across
 * identities or proxies. Two rules, thresholds from the config (SPAM_*):
 *  - one account whose requests hit a rate limit through SPAM_TOKENS_PER_ACCOUNT distinct tokens
 *    within SPAM_WINDOW is sharding its limit: the account is refused;
 *  - one IP presenting SPAM_IDENTITIES_PER_IP distinct accounts, tokens or login e-mails within
 *    SPAM_WINDOW is cycling identities: the IP is refused.
 * Refused means 429 `spam_detected` with Retry-After for SPAM_COOLDOWN seconds. Counts and flags
 * live in the shared cache, so every node applies them.
 */
export interface AbuseGuard {
  /** Throws spam_detected when the IP or the account is cooling down. */
  assertAllowed(ip: string, principal: Principal | undefined): Promise<void>;
  /** Records an identity seen from an IP (`user:…`, `token:…`, `login:…`). */
  observe(ip: string, identity: string): Promise<void>;
  /** Records a request refused by a rate limit (audit, and the per-account token rule). */
  limited(bucket: string, key: string, ip: string, principal: Principal | undefined, resetSec: number): Promise<void>;
  /** Writes an audit entry without failing the request if the write fails (the failure is logged and counted). */
  audit(entry: AuditEntry): void;
}

const ipFlag = (ip: string) => `spam:ip:${ip}`;
const accountFlag = (userId: string) => `spam:account:${userId}`;

export function createAbuseGuard(context: Context): AbuseGuard {
  const { spam } = context.config;
  const audits = auditRepository(context.db.db);

  const audit = (entry: AuditEntry) => {
    audits.insert(entry).catch((error: unknown) => {
      context.metrics.rateLimited.inc({ bucket: 'audit:write_error' });
      context.log.warn({ err: error, action: entry.action }, 'audit write failed');
    });
  };

  const refuse = (ttlMs: number, subject: 'ip' | 'account') => {
    const seconds = Math.max(1, Math.ceil(ttlMs / 1000));
    return new AppError('spam_detected', { subject, retry_after: seconds }, {
      headers: { 'Retry-After': String(seconds) },
      messageKey: 'error.rate_limited.retry',
      params: { seconds },
    });
  };

  const flag = async (key: string, subject: 'ip' | 'account', target: string, details: Record<string, unknown>) => {
    if ((await context.cache.ttlMs(key)) > 0) return;
    await context.cache.flag(key, spam.cooldownSec);
    context.log.warn({ subject, target, ...details }, 'sharding detected; identity cooling down');
    audit({ action: 'spam.detected', actorId: subject === 'account' ? target : null, target, ip: subject === 'ip' ? target : null, details });
  };

  return {
    audit,
    async assertAllowed(ip, principal) {
      const ipTtl = await context.cache.ttlMs(ipFlag(ip));
      if (ipTtl > 0) throw refuse(ipTtl, 'ip');
      if (principal) {
        const accountTtl = await context.cache.ttlMs(accountFlag(principal.userId));
        if (accountTtl > 0) throw refuse(accountTtl, 'account');
      }
    },
    async observe(ip, identity) {
      const distinct = await context.cache.addToSet(`spam:ids:${ip}`, identity, spam.windowSec);
      if (distinct >= spam.identitiesPerIp) await flag(ipFlag(ip), 'ip', ip, { rule: 'identities_per_ip', distinct });
    },
    async limited(bucket, key, ip, principal, resetSec) {
      // One audit row per exhausted window and key, not one per refused request.
      const seen = `audit:limited:${bucket}:${key}`;
      if ((await context.cache.ttlMs(seen)) === 0) {
        await context.cache.flag(seen, resetSec);
        audit({ action: 'rate_limit.exhausted', actorId: principal?.userId ?? null, target: `${bucket}:${key}`, ip, details: { bucket } });
      }
      if (principal?.tokenId) {
        const tokens = await context.cache.addToSet(`spam:limited-tokens:${principal.userId}`, principal.tokenId, spam.windowSec);
        if (tokens >= spam.tokensPerAccount) {
          await flag(accountFlag(principal.userId), 'account', principal.userId, { rule: 'tokens_per_account', tokens });
        }
      }
    },
  };
}
