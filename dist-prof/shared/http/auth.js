import { AppError } from '../errors.js';
/** 403 `forbidden` (missing_scope) unless the principal holds the scope. */
export function requireScope(principal, scope) {
    if (!principal.scopes.has(scope))
        throw new AppError('forbidden', { reason: 'missing_scope', required_scope: scope });
}
/** Who may manage an object: its owner, or staff acting with the admin scope. */
export function canManage(principal, ownerId) {
    return ownerId === principal.userId || principal.scopes.has('admin');
}
//# sourceMappingURL=auth.js.map