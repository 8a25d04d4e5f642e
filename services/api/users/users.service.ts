import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { Principal } from '#shared/http/auth.js';
import type { Repositories } from '#services/repositories.js';
import type { AbuseGuard } from '../auth/abuse.js';
import { publishLinkNotice, toRedirectLink } from '#shared/links/link-notices.js';
import { TOKENS_VERSION_KEY } from '../auth/authenticator.js';
import { toUserView, type UserView } from './users.view.js';
import type { ErasuresService } from '../erasures/erasures.service.js';

const lastTeamOwner = (teams: string[]) => new AppError('conflict', { reason: 'last_team_owner', teams }, { messageKey: 'error.conflict.last_team_owner' });

/** How many of an account's newest audit entries staff can read. */
export const USER_AUDIT_LIMIT = 1000;

/** An entry of an account's audit trail, as staff read it. */
export interface UserAuditView {
  id: string;
  action: string;
  actor_id: string | null;
  actor_email: string | null;
  target: string | null;
  ip: string | null;
  details: Record<string, unknown>;
  created_at: string;
}

/** An entry of one's own account activity: who acted is said as `self`, `staff` or `platform`; staff's identity and address are not told. */
export interface OwnAuditView {
  id: string;
  action: string;
  by: 'self' | 'staff' | 'platform';
  ip: string | null;
  details: Record<string, unknown>;
  created_at: string;
}

const teamSubdomains = (subdomains: string[]) =>
  new AppError('conflict', { reason: 'team_subdomains', subdomains }, { messageKey: 'error.conflict.team_subdomains' });

/**
 * User administration by staff: disabling and re-enabling accounts, and the refused delete.
 *
 * A disabled account is refused where authentication already reads its user row: a session's
 * look-up joins the row on every request (no cache), and a token's cached record is read again on
 * every node once the tokens version is bumped (as a revocation does), so disabling costs no
 * read per request. Tokens are kept: re-enabling gives an integration its tokens back; sessions are
 * revoked at re-enabling, so the person signs in again.
 */
export function usersService(
  context: Pick<Context, 'cache' | 'log' | 'metrics'> & { repositories: Pick<Repositories, 'users' | 'teams' | 'subdomains' | 'audit'> },
  abuse: Pick<AbuseGuard, 'audit'>,
  erasures: Pick<ErasuresService, 'eraseAccount'>,
) {
  const { users, teams, subdomains, audit: auditLog } = context.repositories;
  /**
   * The deletion itself, once the caller may delete the account: refusals checked before any erasure
   * (teams), then raw visits and dead letters, then the account with what it owns. Audited as staff's
   * (`actorId`), or, for the account's own deletion, with no actor (the audit log's actor refers to an
   * account, and this one is gone) and `details.by` `self`.
   */
  const erase = async (actorId: string | null, id: string, ip: string, requestId: string) => {
    // Refused before any erasure: nothing is deleted when a team would be left without an owner.
    const orphaned = await teams.orphanedBy(id);
    if (orphaned.length > 0) throw lastTeamOwner(orphaned);
    // Its subdomains would go with it: a team working on one would lose it (and its links and statistics).
    const shared = await subdomains.sharedWithTeams(id);
    if (shared.length > 0) throw teamSubdomains(shared);
    // Visits and dead letters first: should the account's deletion fail after, a retry finds the account and erases nothing twice.
    const { visits, dead_letters } = await erasures.eraseAccount(id, requestId);
    const removed = await users.deleteAccount(id);
    if (!removed) throw new AppError('not_found', { resource: 'user' });
    // An owner stepped down between the check and the deletion: the deletion's own check refused it.
    if (removed.refused === 'last_team_owner') throw lastTeamOwner(removed.orphaned);
    if (removed.refused === 'team_subdomains') throw teamSubdomains(removed.subdomains);
    const { live, ...counts } = removed;
    await context.cache.bump(TOKENS_VERSION_KEY);
    for (const row of live) await publishLinkNotice(context, { kind: 'delete', link: toRedirectLink(row) });
    const deleted = { ...counts, visits, dead_letters };
    abuse.audit({ action: 'user.deleted', actorId, target: id, ip, details: actorId === null ? { ...deleted, by: 'self' } : deleted });
    return { id, deleted };
  };

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
     * An account's audit trail for staff: what it did (actor) and what was done to it (target: staff's
     * disabling, re-enabling, reset links and deletion, its own password and TOTP changes), newest
     * first, at most USER_AUDIT_LIMIT entries. A deleted account's trail stays readable by its id
     * (the deletion's entry among it); an id with neither an account nor an entry is 404.
     */
    async audit(id: string): Promise<UserAuditView[]> {
      const rows = await auditLog.listForAccount(id, USER_AUDIT_LIMIT);
      if (rows.length === 0 && !(await users.findById(id))) throw new AppError('not_found', { resource: 'user' });
      return rows.map((row) => ({
        id: String(row.id),
        action: row.action,
        actor_id: row.actor_id,
        actor_email: row.actor_email ?? null,
        target: row.target,
        ip: row.ip,
        details: row.details,
        created_at: row.created_at.toISOString(),
      }));
    },

    /**
     * The caller's own account activity: the same trail as staff read, newest first, but an entry
     * another account made (staff's disabling, re-enabling, a reset link they issued) names neither
     * that account nor its IP address: `by` is `staff` (or `platform` when no account acted).
     */
    async ownAudit(userId: string): Promise<OwnAuditView[]> {
      const rows = await auditLog.listForAccount(userId, USER_AUDIT_LIMIT);
      return rows.map((row) => {
        const self = row.actor_id === userId;
        return {
          id: String(row.id),
          action: row.action,
          by: self ? 'self' : row.actor_id ? 'staff' : 'platform',
          ip: self ? row.ip : null,
          details: self ? row.details : {},
          created_at: row.created_at.toISOString(),
        };
      });
    },

    /**
     * Deletes an account (staff; not one's own: 409 `conflict` `cannot_delete_self`): its raw visits
     * in the analytics store, once the enricher stored what the log held (the statistics rows of its
     * subdomains go with nothing to read them), and the dead letters naming it; then
     * the account with its sessions, API tokens, subdomains, links, webhooks and their delivery log, and
     * the teams it is the only member of. Refused (409 `last_team_owner`) while it is the only owner of a
     * team with other members.
     * The edges drop its links, every node its cached tokens. Audited (`user.deleted`, with the counts).
     */
    async delete(principal: Principal, id: string, ip: string, requestId: string) {
      if (!(await users.findById(id))) throw new AppError('not_found', { resource: 'user' });
      if (id === principal.userId) throw new AppError('conflict', { reason: 'cannot_delete_self' }, { messageKey: 'error.conflict.cannot_delete_self' });
      return erase(principal.userId, id, ip, requestId);
    },

    /**
     * Deletes the caller's own account (DELETE /api/v1/me, once the route checked its password and
     * second factor), as staff's deletion does, with the same refusals and counts, audited
     * (`user.deleted`, `details.by` `self`). The last active staff account is refused (409 `last_staff`): the
     * platform would be left without anyone to administer it.
     */
    async deleteOwn(userId: string, ip: string, requestId: string) {
      const user = await users.findById(userId);
      if (!user) throw new AppError('unauthorized');
      if (user.role === 'staff' && (await users.countActiveStaffExcept(userId)) === 0) {
        throw new AppError('conflict', { reason: 'last_staff' }, { messageKey: 'error.conflict.last_staff' });
      }
      return erase(null, userId, ip, requestId);
    },
  };
}

export type UsersService = ReturnType<typeof usersService>;
