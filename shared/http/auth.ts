import type { FastifyRequest } from 'fastify';
import type { Scope } from './route.js';

/** Who is calling: a user through a session cookie or an API token, with the scopes that grants. */
export interface Principal {
  userId: string;
  email: string;
  role: 'staff' | 'user';
  via: 'session' | 'token';
  scopes: ReadonlySet<Scope>;
  tokenId?: string;
  sessionHash?: string;
}

/**
 * Resolves the caller of a request. Resolves undefined without credentials; throws AppError
 * `invalid_token` for an unknown, malformed, revoked or expired token and `forbidden` for a token
 * used from an IP outside its allowlist.
 */
export interface Authenticator {
  authenticate(request: FastifyRequest): Promise<Principal | undefined>;
}

/** Anti-spam hooks the registrar calls around the rate limit (see services/api/auth/abuse.ts). */
export interface AbuseHooks {
  assertAllowed(ip: string, principal: Principal | undefined): Promise<void>;
  observe(ip: string, identity: string): Promise<void>;
  limited(bucket: string, key: string, ip: string, principal: Principal | undefined, resetSec: number): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the registrar once the caller is known. */
    principal?: Principal;
  }
}
