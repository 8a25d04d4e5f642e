import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, jwtVerify } from 'jose';
const AUDIENCE = 'linktrack-tracker';
const SECRET_NAME = 'tracker_consent_key';
/**
 * The key consent tokens are signed with: TRACKER_SECRET when set, else one generated at first
 * start and kept in Postgres (`platform_secrets`), read once per process — so every ingest node
 * sharing the database checks any node's tokens without further configuration or round trips.
 */
export async function consentKey(db, configured) {
    if (configured)
        return new TextEncoder().encode(configured);
    await db
        .insertInto('platform_secrets')
        .values({ name: SECRET_NAME, value: randomBytes(32).toString('base64url') })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
    const row = await db.selectFrom('platform_secrets').select('value').where('name', '=', SECRET_NAME).executeTakeFirstOrThrow();
    return new TextEncoder().encode(row.value);
}
/** Short-lived signed consent tokens (JWT, HS256): checked on any ingest node without a database. */
export function consentTokens(key, ttlSec) {
    return {
        async issue(consent) {
            const expiresAt = new Date(Math.floor(Date.now() / 1000 + ttlSec) * 1000);
            const token = await new SignJWT({ a: consent.analytics ? 1 : 0, l: consent.lanIp ? 1 : 0 })
                .setProtectedHeader({ alg: 'HS256' })
                .setSubject(consent.visitId)
                .setAudience(AUDIENCE)
                .setIssuedAt()
                .setExpirationTime(expiresAt)
                .sign(key);
            return { token, expiresAt };
        },
        async verify(token) {
            try {
                const { payload } = await jwtVerify(token, key, { audience: AUDIENCE, algorithms: ['HS256'] });
                if (typeof payload.sub !== 'string')
                    return undefined;
                return { visitId: payload.sub, analytics: payload.a === 1, lanIp: payload.l === 1 };
            }
            catch {
                return undefined;
            }
        },
    };
}
/** The visit a token names, unverified: only to key the rate-limit bucket before the check. */
export function visitIdOfToken(token) {
    if (typeof token !== 'string' || token.length > 2000)
        return undefined;
    try {
        const sub = decodeJwt(token).sub;
        return typeof sub === 'string' ? sub.slice(0, 64) : undefined;
    }
    catch {
        return undefined;
    }
}
//# sourceMappingURL=consent-token.js.map