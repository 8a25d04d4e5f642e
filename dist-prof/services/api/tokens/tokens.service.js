import { randomBytes } from 'node:crypto';
import { AppError } from '../../../shared/errors.js';
import { canManage } from '../../../shared/http/auth.js';
import { normalizeRange } from '../../../shared/ip.js';
import { TOKENS_VERSION_KEY, secretHash } from '../auth/authenticator.js';
import { tokensRepository } from './tokens.repository.js';
/** Active (neither revoked nor expired) tokens one account may hold. */
export const MAX_ACTIVE_TOKENS = 100;
/** The state of a token now. */
export function tokenState(row, now = Date.now()) {
    if (row.revoked_at)
        return 'revoked';
    if (row.expires_at && row.expires_at.getTime() <= now)
        return 'expired';
    return 'active';
}
export function toTokenView(row) {
    return {
        id: row.id,
        name: row.name,
        prefix: row.prefix,
        scopes: row.scopes,
        ip_allowlist: row.ip_allowlist,
        expires_at: row.expires_at?.toISOString() ?? null,
        last_used_at: row.last_used_at?.toISOString() ?? null,
        last_used_ip: row.last_used_ip,
        created_at: row.created_at.toISOString(),
        revoked_at: row.revoked_at?.toISOString() ?? null,
        state: tokenState(row),
    };
}
/** Token rules: minting within the caller's own scopes, listing and revoking one's own. */
export function tokensService(context) {
    const tokens = tokensRepository(context.db.db);
    return {
        async create(principal, input) {
            const scopes = [...new Set(input.scopes)];
            if (scopes.includes('admin') && principal.role !== 'staff') {
                throw new AppError('forbidden', { reason: 'admin_scope_is_for_staff', scopes: ['admin'] });
            }
            const notHeld = scopes.filter((scope) => !principal.scopes.has(scope));
            if (notHeld.length > 0)
                throw new AppError('forbidden', { reason: 'scopes_not_held', scopes: notHeld });
            const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
            if (expiresAt && expiresAt.getTime() <= Date.now())
                throw new AppError('validation_error', { expires_at: 'must be in the future' });
            if ((await tokens.countActive(principal.userId)) >= MAX_ACTIVE_TOKENS) {
                throw new AppError('validation_error', { scopes: `at most ${MAX_ACTIVE_TOKENS} active tokens per account; revoke one first` });
            }
            const prefix = `svc_u_${randomBytes(6).toString('hex')}`;
            const token = `${prefix}_${randomBytes(32).toString('base64url')}`;
            const row = await tokens.insert({
                userId: principal.userId,
                name: input.name,
                prefix,
                tokenHash: secretHash(token),
                scopes,
                ipAllowlist: [...new Set((input.ip_allowlist ?? []).map((entry) => normalizeRange(entry)))],
                expiresAt,
                createdVia: principal.via,
            });
            return { ...toTokenView(row), token };
        },
        async list(principal) {
            return (await tokens.listByUser(principal.userId)).map(toTokenView);
        },
        /** Revokes one's own token (staff holding `admin` may revoke anyone's); idempotent. */
        async revoke(principal, id) {
            const row = await tokens.findById(id);
            if (!row)
                throw new AppError('not_found', { token: id });
            if (!canManage(principal, row.user_id))
                throw new AppError('not_owner');
            const revoked = (await tokens.revoke(id));
            // Voids every node's cached token records before the answer leaves: the next request re-reads.
            await context.cache.bump(TOKENS_VERSION_KEY);
            return toTokenView(revoked);
        },
    };
}
//# sourceMappingURL=tokens.service.js.map