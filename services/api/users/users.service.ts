import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { Principal } from '#shared/http/auth.js';
import type { Repositories } from '#services/repositories.js';
import type { AbuseGuard } from '../auth/abuse.js';
import { TOKENS_VERSION_KEY } from '../auth/authenticator.js';
import { toUserView, type UserView } from './users.view.js';

/**
 * User administration by staff: disabling and re-enabling accounts, and the refused delete.
 *
 * A disabled account is refused where authentication already reads its user row: a session's
 * look-up joins the row on every request (no cache), and a token's cached record is read again on
 * every node once the tokens version is bumped (as a revocation does), so disabling costs no
 * read per request. Tokens are kept: re-enabling gives an integration its tokens back; sessions are
 * revoked at re-enabling, so the person signs in again.
 */
export function usersService(context: Pick<Context, 'cache'> & { repositories: Pick<Repositories, 'users'> }, abuse: Pick<AbuseGuard, 'audit'>) {
  const { users } = context.repositories;
  return {
    /**
     * Disables or re-enables an account. Staff cannot disable their own account, nor the last active
     * staff account (409 `conflict`, `details.reason` saying which). Setting the state it already has
     * changes nothing and is not audited.
     */
    async setDisabled(principal: Principal, id: string, disabled: boolean, ip: string): Promise<UserView> {
      if (disabled && id === principal.userId) {
        if (!(await users.findById(id))) throw new AppError('not_found', { resource: 'user' });
        throw new AppError('conflict', { reason: 'cannot_disable_self' }, { messageKey: 'error.conflict.cannot_disable_self' });
      }
      const result = await users.setDisabled(id, disabled);
      if (!result) throw new AppError('not_found', { resource: 'user' });
      if (result.refused) throw new AppError('conflict', { reason: result.refused }, { messageKey: 'error.conflict.last_active_staff' });
      if (result.changed) {
        // Every node's cached token records are voided before the answer leaves: the next request of a
        // token of the account reads its user row again, and sees it disabled (or enabled).
        await context.cache.bump(TOKENS_VERSION_KEY);
        abuse.audit({
          action: disabled ? 'user.disabled' : 'user.enabled',
          actorId: principal.userId,
          target: id,
          ip,
          details: disabled ? {} : { sessions_revoked: result.sessionsRevoked },
        });
      }
      return toUserView(result.user);
    },

    /**
     * Deleting an account waits for the data-lifecycle rules (issue 38): what happens to its links,
     * visits and exports is not decided yet, so the delete is refused (409 `conflict`,
     * `details.reason` `user_delete_unavailable`) and the refusal audited (`user.delete_refused`).
     */
    async delete(principal: Principal, id: string, ip: string): Promise<never> {
      if (!(await users.findById(id))) throw new AppError('not_found', { resource: 'user' });
      abuse.audit({ action: 'user.delete_refused', actorId: principal.userId, target: id, ip, details: { reason: 'user_delete_unavailable' } });
      throw new AppError('conflict', { reason: 'user_delete_unavailable', instead: 'disable' }, { messageKey: 'error.conflict.user_delete_unavailable' });
    },
  };
}

export type UsersService = ReturnType<typeof usersService>;
