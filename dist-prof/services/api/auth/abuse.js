import { retryLater } from '../../../shared/errors.js';
import { auditRepository } from '../audit/audit.repository.js';
const FLAG_CHANNEL = 'spam.flagged';
/** Pairs (IP, identity) this node remembers having counted, before it starts forgetting the oldest. */
const SEEN_MAX = 200_000;
export async function createAbuseGuard(context) {
    const { spam } = context.config;
    const audits = auditRepository(context.db.db);
    /** Flag key (`ip:…`, `account:…`) → when the cooldown ends, in ms. */
    const flags = new Map();
    /** `ip identity` pairs already counted in the current window of this node. */
    const seen = new Map();
    const audit = (entry) => {
        audits.insert(entry).catch((error) => {
            context.metrics.auditWriteFailures.inc();
            context.log.warn({ err: error, action: entry.action }, 'audit write failed');
        });
    };
    const unsubscribe = await context.cache.subscribe(FLAG_CHANNEL, (message) => {
        const { key, until } = JSON.parse(message);
        flags.set(key, until);
    });
    const refusal = (key) => {
        const until = flags.get(key);
        if (until === undefined)
            return undefined;
        const left = until - Date.now();
        if (left <= 0) {
            flags.delete(key);
            return undefined;
        }
        return retryLater('spam_detected', left / 1000, { subject: key.slice(0, key.indexOf(':')) });
    };
    const flag = async (key, target, details) => {
        if (refusal(key))
            return;
        const until = Date.now() + spam.cooldownSec * 1000;
        flags.set(key, until);
        await context.cache.publish(FLAG_CHANNEL, JSON.stringify({ key, until }));
        const subject = key.startsWith('ip:') ? 'ip' : 'account';
        context.log.warn({ subject, target, ...details }, 'sharding detected; identity cooling down');
        audit({ action: 'spam.detected', actorId: subject === 'account' ? target : null, target, ip: subject === 'ip' ? target : null, details });
    };
    const countIdentity = async (ip, identity) => {
        const distinct = await context.cache.addToSet(`spam:ids:${ip}`, identity, spam.windowSec);
        if (distinct >= spam.identitiesPerIp)
            await flag(`ip:${ip}`, ip, { rule: 'identities_per_ip', distinct });
    };
    return {
        audit,
        admit(ip, principal, identity) {
            const refused = refusal(`ip:${ip}`) ?? (principal ? refusal(`account:${principal.userId}`) : undefined);
            if (refused)
                throw refused;
            if (!identity)
                return;
            const pair = `${ip} ${identity}`;
            const now = Date.now();
            const countedUntil = seen.get(pair);
            if (countedUntil !== undefined && countedUntil > now)
                return;
            if (seen.size >= SEEN_MAX)
                seen.delete(seen.keys().next().value);
            seen.set(pair, now + spam.windowSec * 1000);
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
                if (tokens >= spam.tokensPerAccount)
                    await flag(`account:${principal.userId}`, principal.userId, { rule: 'tokens_per_account', tokens });
            }
        },
        async close() {
            await unsubscribe();
        },
    };
}
//# sourceMappingURL=abuse.js.map