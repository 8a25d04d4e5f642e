import { randomBytes } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { canManage, type Principal } from '#shared/http/auth.js';
import type { Scope } from '#shared/http/scopes.js';
import { normalizeRange, rangeWithin } from '#shared/ip.js';
import { TOKENS_VERSION_KEY, secretHash } from '../auth/authenticator.js';
import type { Repositories } from '#services/repositories.js';
import type { TokenRow } from './tokens.repository.js';

/** Active (neither revoked nor expired) tokens one account may hold. */
export const MAX_ACTIVE_TOKENS = 100;

export type TokenState = 'active' | 'revoked' | 'expired';

/** A token as its owner sees it: never the secret, never its hash. */
export interface TokenView {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  ip_allowlist: string[];
  expires_at: string | null;
  last_used_at: string | null;
  last_used_ip: string | null;
  created_at: string;
  revoked_at: string | null;
  state: TokenState;
}

/** The state of a token now. */
export function tokenState(row: Pick<TokenRow, 'revoked_at' | 'expires_at'>, now = Date.now()): TokenState {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && row.expires_at.getTime() <= now) return 'expired';
  return 'active';
}

export function toTokenView(row: TokenRow): TokenView {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes as Scope[],
    ip_allowlist: row.ip_allowlist,
    expires_at: row.expires_at?.toISOString() ?? null,
    last_used_at: row.last_used_at?.toISOString() ?? null,
    last_used_ip: row.last_used_ip,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
    state: tokenState(row),
  };
}

export interface NewTokenInput {
  name: string;
  scopes: Scope[];
  ip_allowlist?: string[];
  expires_at?: string;
}

/**
 * What makes one token wider than another: scopes the other lacks, a later expiry or none where the
 * other has one, ranges outside the other's allowlist or none where the other has one. Listed in
 * that order, empty when `candidate` is no wider than `bound`.
 */
export function widerThan(
  bound: { scopes: ReadonlySet<string>; expiresAt: Date | null; ipAllowlist: readonly string[] },
  candidate: { scopes: readonly string[]; expiresAt: Date | null; ipAllowlist: readonly string[] },
): { wider: ('scopes' | 'expires_at' | 'ip_allowlist')[]; scopes: string[]; ranges: string[] } {
  const scopes = candidate.scopes.filter((scope) => !bound.scopes.has(scope));
  const laterExpiry = bound.expiresAt !== null && (candidate.expiresAt === null || candidate.expiresAt.getTime() > bound.expiresAt.getTime());
  const ranges = bound.ipAllowlist.length === 0 ? [] : candidate.ipAllowlist.filter((range) => !rangeWithin(range, bound.ipAllowlist));
  const widerAllowlist = bound.ipAllowlist.length > 0 && (candidate.ipAllowlist.length === 0 || ranges.length > 0);
  const wider = [
    ...(scopes.length > 0 ? ['scopes' as const] : []),
    ...(laterExpiry ? ['expires_at' as const] : []),
    ...(widerAllowlist ? ['ip_allowlist' as const] : []),
  ];
  return { wider, scopes, ranges };
}

/**
 * Token rules. A session lists, mints (within its role's scopes) and revokes its account's tokens.
 * A token is a delegated credential: it lists its account's tokens (never their secrets), mints only
 * a token no wider than itself, and revokes only tokens no wider than itself (any token revokes
 * itself), so a leaked narrow token can neither outlive its expiry, escape its allowlist or widen its
 * scopes by minting, nor cut off the account's wider automation by revoking. `admin` (staff) is
 * needed only for another account's tokens, and a token holding it may revoke any token.
 */
export function tokensService({ cache, repositories }: Pick<Context, 'cache'> & { repositories: Pick<Repositories, 'tokens'> }) {
  const { tokens } = repositories;

  /** Refuses a token minted by a token when it would outlive its minter or be usable from further. */
  const assertNoWiderThanMinter = async (principal: Principal, expiresAt: Date | null, ipAllowlist: readonly string[]): Promise<void> => {
    if (principal.via !== 'token' || !principal.tokenId) return;
    const minter = await tokens.findById(principal.tokenId);
    if (!minter) throw new AppError('invalid_token');
    // The same measure as revocation's (widerThan); the scopes were checked against the caller's already.
    const { wider, ranges } = widerThan(
      { scopes: principal.scopes, expiresAt: minter.expires_at, ipAllowlist: minter.ip_allowlist },
      { scopes: [], expiresAt, ipAllowlist },
    );
    if (wider.includes('expires_at')) {
      throw new AppError('forbidden', { reason: expiresAt ? 'expiry_beyond_token' : 'expiry_required', max_expires_at: minter.expires_at!.toISOString() });
    }
    if (wider.includes('ip_allowlist')) {
      if (ipAllowlist.length === 0) throw new AppError('forbidden', { reason: 'ip_allowlist_required', allowed_ranges: minter.ip_allowlist });
      // The ranges named as the client sent them.
      throw new AppError('forbidden', { reason: 'ip_allowlist_beyond_token', ranges, allowed_ranges: minter.ip_allowlist });
    }
  };

  return {
    async create(principal: Principal, input: NewTokenInput): Promise<TokenView & { token: string }> {
      const scopes = [...new Set(input.scopes)];
      if (scopes.includes('admin') && principal.role !== 'staff') {
        throw new AppError('forbidden', { reason: 'admin_scope_is_for_staff', scopes: ['admin'] });
      }
      const notHeld = scopes.filter((scope) => !principal.scopes.has(scope));
      if (notHeld.length > 0) throw new AppError('forbidden', { reason: 'scopes_not_held', scopes: notHeld });
      const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
      // A past expiry is not refused (no schema can say "in the future"): the token is created expired.
      await assertNoWiderThanMinter(principal, expiresAt, input.ip_allowlist ?? []);
      const ipAllowlist = [...new Set((input.ip_allowlist ?? []).map((entry) => normalizeRange(entry)!))];
      if ((await tokens.countActive(principal.userId)) >= MAX_ACTIVE_TOKENS) {
        throw new AppError('forbidden', { reason: 'limit_reached', limit: MAX_ACTIVE_TOKENS, hint: 'revoke a token first' });
      }
      const prefix = `svc_u_${randomBytes(6).toString('hex')}`;
      const token = `${prefix}_${randomBytes(32).toString('base64url')}`;
      const row = await tokens.insert({
        userId: principal.userId,
        name: input.name,
        prefix,
        tokenHash: secretHash(token),
        scopes,
        ipAllowlist,
        expiresAt,
        createdVia: principal.via,
      });
      return { ...toTokenView(row), token };
    },
    /** The caller's account's tokens, for a session or any token. */
    async list(principal: Principal): Promise<TokenView[]> {
      return (await tokens.listByUser(principal.userId)).map(toTokenView);
    },
    /**
     * Revokes a token of one's account (staff holding `admin`: anyone's); idempotent. A token revokes
     * itself, or another no wider than itself (403 `forbidden`, `token_wider_than_caller`).
     */
    async revoke(principal: Principal, id: string): Promise<TokenView> {
      const row = await tokens.findById(id);
      if (!row) throw new AppError('not_found', { token: id });
      if (!canManage(principal, row.user_id)) throw new AppError('not_owner');
      if (principal.via === 'token' && principal.tokenId !== id && !principal.scopes.has('admin')) {
        const caller = await tokens.findById(principal.tokenId!);
        if (!caller) throw new AppError('invalid_token');
        const { wider, scopes, ranges } = widerThan(
          { scopes: principal.scopes, expiresAt: caller.expires_at, ipAllowlist: caller.ip_allowlist },
          { scopes: row.scopes, expiresAt: row.expires_at, ipAllowlist: row.ip_allowlist },
        );
        if (wider.length > 0) {
          throw new AppError('forbidden', {
            reason: 'token_wider_than_caller',
            wider,
            ...(scopes.length > 0 ? { scopes } : {}),
            ...(wider.includes('expires_at') ? { max_expires_at: caller.expires_at!.toISOString() } : {}),
            ...(wider.includes('ip_allowlist') ? { ranges, allowed_ranges: caller.ip_allowlist } : {}),
          });
        }
      }
      const revoked = (await tokens.revoke(id))!;
      // Voids every node's cached token records before the answer leaves: the next request re-reads.
      await cache.bump(TOKENS_VERSION_KEY);
      return toTokenView(revoked);
    },
  };
}
