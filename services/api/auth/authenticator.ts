import type {} from '@fastify/cookie';
import { hash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { Authenticator, Principal } from '#shared/http/auth.js';
import { SESSION_COOKIE } from '#shared/http/route.js';
import { SCOPES, sessionScopes, type Scope } from '#shared/http/scopes.js';
import { ipInRanges } from '#shared/ip.js';
import type { TokenWithUser } from '../tokens/tokens.repository.js';
import type { AbuseGuard } from './abuse.js';
import { totpEnrolmentRequired } from './totp.service.js';
import type { Repositories } from '#services/repositories.js';

/** `svc_u_` + 12 hex (the prefix shown in lists) + `_` + 43 base64url characters (256 random bits). */
export const TOKEN_PATTERN = /^svc_u_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/;

/**
 * Version of the token set, bumped by every revocation (in Redis when nodes share it). A cached
 * token record is used only while the version it was read under is still current, so a revoked
 * token is refused on the next request on every node — one GET per request in the Redis mode,
 * nothing more in one process.
 */
export const TOKENS_VERSION_KEY = 'tokens:version';

/** SHA-256 (hex) of a token or session secret: the only form either is stored in. */
export function secretHash(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** How long a token record may be served from memory (a revocation anywhere voids it at once). */
const TOKEN_CACHE_TTL_MS = 30_000;
const TOKEN_CACHE_MAX = 10_000;
/** A session's last_seen_at is written at most once per this long (a write per request would cost more than it tells). */
export const SESSION_SEEN_EVERY_MS = 60_000;
/** last_used_at/last_used_ip are written behind, at most this late. */
export const LAST_USED_FLUSH_MS = 2_000;

/**
 * The answer to a session or token of a disabled account. Read from the user row the look-up
 * already joins: a session's on every request, a token's when its cached record is read again
 * (disabling bumps TOKENS_VERSION_KEY), so it costs no query of its own.
 */
export const accountDisabled = () => new AppError('unauthorized', { reason: 'account_disabled' }, { messageKey: 'error.unauthorized.account_disabled' });

export interface TokenAuthenticator extends Authenticator {
  /** Stops the write-behind timer after writing what is pending. */
  close(): Promise<void>;
}

/**
 * Authenticates bearer tokens and session cookies. Token records are cached for 30 s at most and
 * only under the current tokens version (see TOKENS_VERSION_KEY), so a revoked token is refused on
 * the next request on every node; expiry and allowlist are checked on every request. Token use is
 * recorded write-behind.
 */
export function createAuthenticator(
  context: Pick<Context, 'cache' | 'log'> & { repositories: Pick<Repositories, 'tokens' | 'sessions' | 'totp' | 'settings'> },
  abuse: Pick<AbuseGuard, 'audit'>,
): TokenAuthenticator {
  const { tokens, sessions } = context.repositories;
  /** A token as authentication needs it, its principal built once. */
  interface Cached {
    token: TokenWithUser;
    principal: Principal;
    expiresAtMs: number | null;
    cachedAt: number;
    version: number;
  }
  const cache = new Map<string, Cached>();
  const lastUse = new Map<string, { at: number; ip: string }>();

  const principalOf = (token: TokenWithUser): Principal => {
    // A token never carries more than its user's role allows (admin is for staff only).
    const allowed = new Set<Scope>(sessionScopes(token.role));
    const scopes = new Set(token.scopes.filter((scope): scope is Scope => (SCOPES as readonly string[]).includes(scope) && allowed.has(scope as Scope)));
    return { userId: token.user_id, email: token.email, role: token.role, via: 'token', scopes, tokenId: token.id, identity: `token:${token.id}` };
  };

  const flush = async () => {
    const pending = [...lastUse];
    lastUse.clear();
    for (const [id, use] of pending) {
      await tokens.recordUse(id, new Date(use.at), use.ip).catch((error: unknown) => {
        // Kept for the next flush unless a newer use arrived meanwhile.
        if (!lastUse.has(id)) lastUse.set(id, use);
        context.log.warn({ err: error, token_id: id }, 'recording token use failed; retried at the next flush');
      });
    }
  };
  const timer = setInterval(() => void flush(), LAST_USED_FLUSH_MS);
  timer.unref();

  /** Audits the first use of a token from an address it was not last used from (once a day per pair). */
  const auditNewIp = async (token: TokenWithUser, ip: string) => {
    const key = `audit:token-ip:${token.id}:${ip}`;
    if (!(await context.cache.flagIfAbsent(key, 86_400))) return;
    abuse.audit({ action: 'token.new_ip', actorId: token.user_id, target: token.id, ip, details: { previous_ip: token.last_used_ip } });
  };

  /**
   * The cache is keyed by the presented token itself, so that a hit costs no hashing (a SHA-256 was
   * a quarter of the authentication cost per request, bench/auth-overhead.ts): secrets already in
   * the process for the request stay there at most TOKEN_CACHE_TTL_MS more. Only the hash is stored.
   */
  const loadToken = (presented: string): Cached | undefined | Promise<Cached | undefined> => {
    const version = context.cache.read(TOKENS_VERSION_KEY);
    if (typeof version !== 'number') return version.then((current) => lookup(presented, current));
    return lookup(presented, version);
  };

  /** The cached entry when it is current, else a read from the store (then cached). */
  const lookup = (presented: string, version: number): Cached | undefined | Promise<Cached | undefined> => {
    const hit = cache.get(presented);
    if (hit && hit.version === version && Date.now() - hit.cachedAt < TOKEN_CACHE_TTL_MS) return hit;
    if (!TOKEN_PATTERN.test(presented)) throw new AppError('invalid_token', { reason: 'malformed' });
    return tokens.findByHashWithUser(secretHash(presented)).then((token) => {
      if (!token) return undefined;
      const entry: Cached = { token, principal: principalOf(token), expiresAtMs: token.expires_at?.getTime() ?? null, cachedAt: Date.now(), version };
      if (token.revoked_at) cache.delete(presented);
      else {
        if (cache.size >= TOKEN_CACHE_MAX) cache.delete(cache.keys().next().value as string);
        cache.set(presented, entry);
      }
      return entry;
    });
  };

  /** Checks a token entry against the request; synchronous unless a new IP is to be audited. */
  const admitToken = (entry: Cached | undefined, request: FastifyRequest): Principal | Promise<Principal> => {
    if (!entry) throw new AppError('invalid_token', { reason: 'unknown' });
    const { token } = entry;
    if (token.revoked_at) throw new AppError('invalid_token', { reason: 'revoked' });
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= Date.now()) throw new AppError('invalid_token', { reason: 'expired' });
    if (token.disabled_at) throw accountDisabled();
    const ip = request.ip;
    if (token.ip_allowlist.length > 0 && !ipInRanges(ip, token.ip_allowlist)) {
      throw new AppError('forbidden', { reason: 'ip_not_allowed' });
    }
    const use = lastUse.get(token.id);
    const newIp = use?.ip !== ip && token.last_used_ip !== ip;
    if (use) {
      use.at = Date.now();
      use.ip = ip;
    } else lastUse.set(token.id, { at: Date.now(), ip });
    return newIp ? auditNewIp(token, ip).then(() => entry.principal) : entry.principal;
  };

  const fromToken = (header: string, request: FastifyRequest): Principal | Promise<Principal> => {
    const presented = header.startsWith('Bearer ') ? header.slice(7).trim() : /^Bearer +(\S+) *$/i.exec(header)?.[1];
    if (!presented) throw new AppError('invalid_token', { reason: 'malformed' });
    const entry = loadToken(presented);
    return entry instanceof Promise ? entry.then((loaded) => admitToken(loaded, request)) : admitToken(entry, request);
  };

  const fromSession = async (cookie: string): Promise<Principal | undefined> => {
    const sessionHash = secretHash(cookie);
    const session = await sessions.findLiveWithUser(sessionHash);
    if (!session) return undefined;
    if (session.disabled_at) throw accountDisabled();
    const now = Date.now();
    if (!session.last_seen_at || now - session.last_seen_at.getTime() >= SESSION_SEEN_EVERY_MS) {
      // Not awaited: the request needs no answer from it, and a failed write costs only a stale time.
      sessions.touch(sessionHash, new Date(now)).catch((error: unknown) => context.log.warn({ err: error }, 'recording session use failed'));
    }
    const principal: Principal = {
      userId: session.user_id,
      email: session.email,
      role: session.role,
      via: 'session',
      scopes: new Set(sessionScopes(session.role)),
      sessionHash,
      identity: `user:${session.user_id}`,
    };
    // Read on every request of a staff session (two small reads; staff are few), so that requiring
    // TOTP holds staff sessions open before it at once, and enabling TOTP frees one at once.
    if (session.role === 'staff' && (await totpEnrolmentRequired(context.repositories, { id: session.user_id, role: session.role }))) {
      principal.totpEnrolmentRequired = true;
    }
    return principal;
  };

  return {
    authenticate(request) {
      const header = request.headers.authorization;
      if (header !== undefined) return fromToken(header, request);
      const cookie = request.cookies?.[SESSION_COOKIE];
      return cookie ? fromSession(cookie) : undefined;
    },
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
