import { randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { PlatformSecretsRepository } from '#shared/secrets/platform-secrets.repository.js';
import { secretHash } from './authenticator.js';

/** The device cookie's name; it is sent to `/auth` only. */
export const DEVICE_COOKIE = 'lt_device';
export const DEVICE_COOKIE_PATH = '/auth';
/** How long a browser stays a known device of an account after its last successful sign-in. */
export const DEVICE_COOKIE_TTL_SEC = 180 * 86_400;

const AUDIENCE = 'linktrack-device';
const SECRET_NAME = 'device_cookie_key';

/**
 * The key device cookies are signed with: generated at first start and kept in Postgres
 * (`platform_secrets`), read once per process, so every API node checks any node's cookies.
 */
export async function deviceCookieKey({ platformSecrets }: { platformSecrets: PlatformSecretsRepository }): Promise<Uint8Array> {
  return new TextEncoder().encode(await platformSecrets.valueOrInsert(SECRET_NAME, randomBytes(32).toString('base64url')));
}

export interface DeviceCookies {
  /** A cookie value naming a new device of the account, and when it expires. */
  issue(accountKey: string): Promise<{ value: string; expiresAt: Date }>;
  /** The device a cookie names for this account; undefined when it is absent, forged, expired, malformed or another account's. */
  deviceOf(value: string | undefined, accountKey: string): Promise<string | undefined>;
}

/**
 * Device cookies as OWASP's "Slow Down Online Guessing Attacks with Device Cookies" describes
 * them: a signed token (JWT, HS256) naming an account (the SHA-256 of its lower-cased e-mail, not
 * the address) and a random device id, given to a browser that signed in successfully. The login
 * gives such a browser its own failure allowance, so that a lockout others cause does not lock it out.
 */
export function deviceCookies(key: Uint8Array): DeviceCookies {
  return {
    async issue(accountKey) {
      const expiresAt = new Date(Math.floor(Date.now() / 1000 + DEVICE_COOKIE_TTL_SEC) * 1000);
      const value = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(secretHash(accountKey))
        .setJti(randomBytes(16).toString('base64url'))
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(expiresAt)
        .sign(key);
      return { value, expiresAt };
    },
    async deviceOf(value, accountKey) {
      if (!value || value.length > 1024) return undefined;
      try {
        const { payload } = await jwtVerify(value, key, { audience: AUDIENCE, algorithms: ['HS256'], subject: secretHash(accountKey) });
        return typeof payload.jti === 'string' ? payload.jti : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
