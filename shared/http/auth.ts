import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Scope } from './scopes.js';

/** Who is calling: a user through a session cookie or an API token, with the scopes that grants. */
export interface Principal {
  userId: string;
  email: string;
  role: 'staff' | 'user';
  via: 'session' | 'token';
  scopes: ReadonlySet<Scope>;
  tokenId?: string;
  sessionHash?: string;
  /**
   * The identity presented, built once with the principal: `token:<id>` or `user:<id>`. It keys the
   * api bucket of a token and the anti-spam count of identities per IP.
   */
  identity: string;
  /**
   * Set on the session of a staff account without TOTP while staff must have it: the registrar
   * admits it only to routes marked `duringTotpEnrolment` (403 `totp_enrolment_required` elsewhere).
   */
  totpEnrolmentRequired?: boolean;
}

/** 403 `forbidden` (missing_scope) unless the principal holds the scope. */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.has(scope)) throw new AppError('forbidden', { reason: 'missing_scope', required_scope: scope });
}

/** Who may manage an object: its owner, or staff acting with the admin scope. */
export function canManage(principal: Principal, ownerId: string): boolean {
  return ownerId === principal.userId || principal.scopes.has('admin');
}

/**
 * Resolves the caller of a request. Resolves undefined without credentials; throws AppError
 * `invalid_token` for an unknown, malformed, revoked or expired token and `forbidden` for a token
 * used from an IP outside its allowlist.
 */
export interface Authenticator {
  /** Synchronous when the answer is at hand (a cached token), a promise when it needs the store. */
  authenticate(request: FastifyRequest): Principal | undefined | Promise<Principal | undefined>;
}

/** Anti-spam hooks the registrar calls around the rate limit (see services/api/auth/abuse.ts). */
export interface AbuseHooks {
  /**
   * Throws spam_detected for a cooling IP or account, then records the identity seen from the IP.
   * Synchronous on the steady path; returns a promise only when it has shared state to write.
   */
  admit(ip: string, principal: Principal | undefined, identity: string | undefined): void | Promise<void>;
  limited(bucket: string, key: string, ip: string, principal: Principal | undefined, resetSec: number): Promise<void>;
}
