import type { Context } from '#shared/context.js';
import { retryLater, type AppError } from '#shared/errors.js';
import type { AbuseHooks, Principal } from '#shared/http/auth.js';
import type { AuditEntry } from '#shared/audit/audit.repository.js';
import type { Repositories } from '#services/repositories.js';

/**
 * Anti-spam: the audit trail of abuse signals and the detection of limits sharded across
 * identities or proxies. Two rules, thresholds from the config (SPAM_*):
 *  - one account whose requests hit a rate limit through SPAM_TOKENS_PER_ACCOUNT distinct tokens
 *    within SPAM_WINDOW is sharding its limit: the account is refused;
 *  - one IP presenting SPAM_IDENTITIES_PER_IP distinct accounts, tokens or login e-mails within
 *    SPAM_WINDOW is cycling identities: the IP is refused.
 * Refused means 429 `spam_detected` with Retry-After for SPAM_COOLDOWN seconds.
 *
 * The counts live in the shared cache (Redis when nodes share it), written only when a node sees a
 * pair (IP, identity) for the first time in the window. A caught identity is announced on a pub/sub
 * channel and every node keeps the flags in memory, so the check on each request costs no I/O.
 */
export interface AbuseGuard extends AbuseHooks {
  /** Records a request refused by a rate limit (audit, and the per-account token rule). */
  limited(bucket: string, key: string, ip: string, principal: Principal | undefined, resetSec: number): Promise<void>;
  /** Writes an audit entry without failing the request if the write fails (the failure is logged and counted). */
  audit(entry: AuditEntry): void;
  close(): Promise<void>;
}

const FLAG_CHANNEL = 'spam.flagged';
/**
 * Pairs (IP, identity) this node remembers having counted; past it, the identity remembered longest
 * ago is forgotten with all its addresses (a forgotten pair is only counted again: one more write
 * to a set in the cache). About 340 bytes a pair: some 70 MB when full.
 */
const SEEN_MAX = 200_000;
/** How often cooled-down flags are dropped, so that the check builds no key once none is left. */
const FLAG_SWEEP_MS = 10_000;

export async function createAbuseGuard(
  context: Pick<Context, 'config' | 'cache' | 'log' | 'metrics'> & { repositories: Pick<Repositories, 'audit'> },
  options: { seenMax?: number } = {},
): Promise<AbuseGuard> {
  const seenMax = Math.max(1, options.seenMax ?? SEEN_MAX);
  const { spam } = context.config;
  const audits = context.repositories.audit;
  /** Flag key (`ip:…`, `account:…`) → when the cooldown ends, in ms. */
  const flags = new Map<string, number>();
  /**
   * Pairs (IP, identity) already counted in the current window of this node: identity → IP → end of
   * the window, in ms. Nested rather than keyed by a joined string, so that the check on each
   * request builds no string (an identity is built once per principal, the socket's address once
   * per connection), at the price of some 150 bytes more a pair.
   */
  const seen = new Map<string, Map<string, number>>();
  let seenPairs = 0;

  const audit = (entry: AuditEntry) => {
    audits.insert(entry).catch((error: unknown) => {
      context.metrics.auditWriteFailures.inc();
      context.log.warn({ err: error, action: entry.action }, 'audit write failed');
    });
  };

  const unsubscribe = await context.cache.subscribe(FLAG_CHANNEL, (message) => {
    const { key, until } = JSON.parse(message) as { key: string; until: number };
    flags.set(key, until);
  });
  // Flags of every node arrive here and a request only drops the one it checks: cooled-down flags
  // are swept, so that a node is back to checking nothing once none is left.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, until] of flags) if (until <= now) flags.delete(key);
  }, FLAG_SWEEP_MS);
  sweep.unref();

  const refusal = (key: string): AppError | undefined => {
    const until = flags.get(key);
    if (until === undefined) return undefined;
    const left = until - Date.now();
    if (left <= 0) {
      flags.delete(key);
      return undefined;
    }
    return retryLater('spam_detected', left / 1000, { subject: key.slice(0, key.indexOf(':')) });
  };

  const flag = async (key: string, target: string, details: Record<string, unknown>) => {
    if (refusal(key)) return;
    const until = Date.now() + spam.cooldownSec * 1000;
    flags.set(key, until);
    await context.cache.publish(FLAG_CHANNEL, JSON.stringify({ key, until }));
    const subject = key.startsWith('ip:') ? 'ip' : 'account';
    context.log.warn({ subject, target, ...details }, 'sharding detected; identity cooling down');
    audit({ action: 'spam.detected', actorId: subject === 'account' ? target : null, target, ip: subject === 'ip' ? target : null, details });
  };

  const countIdentity = async (ip: string, identity: string) => {
    const distinct = await context.cache.addToSet(`spam:ids:${ip}`, identity, spam.windowSec);
    if (distinct >= spam.identitiesPerIp) await flag(`ip:${ip}`, ip, { rule: 'identities_per_ip', distinct });
  };

  return {
    audit,
    admit(ip, principal, identity) {
      // No flag anywhere (the usual case): no key to build.
      if (flags.size > 0) {
        const refused = refusal(`ip:${ip}`) ?? (principal ? refusal(`account:${principal.userId}`) : undefined);
        if (refused) throw refused;
      }
      if (!identity) return;
      const now = Date.now();
      let ips = seen.get(identity);
      const countedUntil = ips?.get(ip);
      if (countedUntil !== undefined && countedUntil > now) return;
      if (countedUntil === undefined && seenPairs >= seenMax) {
        // Forget the identity remembered longest ago, with all its addresses.
        const [oldest, itsIps] = seen.entries().next().value as [string, Map<string, number>];
        seen.delete(oldest);
        seenPairs -= itsIps.size;
        if (oldest === identity) ips = undefined;
      }
      if (!ips) seen.set(identity, (ips = new Map<string, number>()));
      if (countedUntil === undefined) seenPairs++;
      ips.set(ip, now + spam.windowSec * 1000);
      return countIdentity(ip, identity);
    },
    async limited(bucket, key, ip, principal, resetSec) {
      // One audit row per exhausted window and key, not one per refused request.
      const marker = `audit:limited:${bucket}:${key}`;
      if (await context.cache.flagIfAbsent(marker, resetSec)) {
        audit({ action: 'rate_limit.exhausted', actorId: principal?.userId ?? null, target: `${bucket}:${key}`, ip, details: { bucket } });
      }
      if (principal?.tokenId) {
        const tokens = await context.cache.addToSet(`spam:limited-tokens:${principal.userId}`, principal.tokenId, spam.windowSec);
        if (tokens >= spam.tokensPerAccount) await flag(`account:${principal.userId}`, principal.userId, { rule: 'tokens_per_account', tokens });
      }
    },
    async close() {
      clearInterval(sweep);
      await unsubscribe();
    },
  };
}
