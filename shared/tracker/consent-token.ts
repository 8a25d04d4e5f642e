import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, jwtVerify } from 'jose';
import type { PlatformSecretsRepository } from '../secrets/platform-secrets.repository.js';

/** A recorded consent decision, as the token carries it. */
export interface Consent {
  visitId: string;
  analytics: boolean;
  lanIp: boolean;
  /** The subdomain of a visit the tracker started (its tracker origins apply to collect too); absent for a redirect's visit. */
  subdomain?: string;
}

const AUDIENCE = 'linktrack-tracker';
const SECRET_NAME = 'tracker_consent_key';

/**
 * The key consent tokens are signed with: TRACKER_SECRET when set, else one generated at first
 * start and kept in Postgres (`platform_secrets`), read once per process — so every ingest node
 * sharing the database checks any node's tokens without further configuration or round trips.
 */
export async function consentKey({ platformSecrets }: { platformSecrets: PlatformSecretsRepository }, configured: string | undefined): Promise<Uint8Array> {
  if (configured) return new TextEncoder().encode(configured);
  const value = await platformSecrets.valueOrInsert(SECRET_NAME, randomBytes(32).toString('base64url'));
  return new TextEncoder().encode(value);
}

export interface ConsentTokens {
  /** Signs a consent with analytics given; the token and when it expires. */
  issue(consent: Consent): Promise<{ token: string; expiresAt: Date }>;
  /** The consent a token proves, or undefined when it is forged, expired or malformed. */
  verify(token: string): Promise<Consent | undefined>;
}

/** Short-lived signed consent tokens (JWT, HS256): checked on any ingest node without a database. */
export function consentTokens(key: Uint8Array, ttlSec: number): ConsentTokens {
  return {
    async issue(consent) {
      const expiresAt = new Date(Math.floor(Date.now() / 1000 + ttlSec) * 1000);
      const token = await new SignJWT({ a: consent.analytics ? 1 : 0, l: consent.lanIp ? 1 : 0, ...(consent.subdomain ? { s: consent.subdomain } : {}) })
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
        if (typeof payload.sub !== 'string') return undefined;
        const consent: Consent = { visitId: payload.sub, analytics: payload.a === 1, lanIp: payload.l === 1 };
        if (typeof payload.s === 'string') consent.subdomain = payload.s;
        return consent;
      } catch {
        return undefined;
      }
    },
  };
}

/** The visit a token names, unverified: only to key the rate-limit bucket before the check. */
export function visitIdOfToken(token: unknown): string | undefined {
  if (typeof token !== 'string' || token.length > 2000) return undefined;
  try {
    const sub = decodeJwt(token).sub;
    return typeof sub === 'string' ? sub.slice(0, 64) : undefined;
  } catch {
    return undefined;
  }
}
