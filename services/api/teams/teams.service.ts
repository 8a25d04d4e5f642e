import { randomBytes } from 'node:crypto';
import type { Context } from '#shared/context.js';
import type { AuditEntry } from '#shared/audit/audit.repository.js';
import type { TeamRole } from '#shared/db/schema.js';
import { AppError } from '#shared/errors.js';
import type { Principal } from '#shared/http/auth.js';
import { t, type Locale } from '#shared/i18n/index.js';
import type { InvitationRow, MemberRow, TeamRow } from '#shared/teams/teams.repository.js';
import type { Repositories } from '#services/repositories.js';
import { secretHash } from '../auth/authenticator.js';
import type { Mailer } from '../auth/mailer.js';
import { roleAtLeast } from './roles.js';

/** How long an invitation link is valid. */
export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

/** Members and open invitations one team may have. */
export const MAX_TEAM_SEATS = 100;

/** The dashboard page an invitation link opens; the secret rides in the fragment, which no server log sees. */
export const INVITATION_LINK_PATH = '/invitations/accept';

export interface TeamView {
  id: string;
  name: string;
  role: TeamRole;
  members: number;
  created_at: string;
  updated_at: string;
}

export interface MemberView {
  id: string;
  email: string;
  display_name: string | null;
  role: TeamRole;
  created_at: string;
}

/** One entry of a team's audit log; the IP address stays with staff. */
export interface TeamAuditView {
  id: string;
  action: string;
  actor_id: string | null;
  actor_email: string | null;
  details: Record<string, unknown>;
  created_at: string;
}

/** How many of a team's newest audit entries are listed. */
export const TEAM_AUDIT_LIMIT = 1000;

export type InvitationState = 'pending' | 'expired' | 'accepted' | 'revoked';

export interface InvitationView {
  id: string;
  team_id: string;
  email: string;
  role: TeamRole;
  invited_by: string | null;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  revoked_at: string | null;
  state: InvitationState;
}

const toTeamView = (team: TeamRow, role: TeamRole, members: number): TeamView => ({
  id: team.id,
  name: team.name,
  role,
  members,
  created_at: team.created_at.toISOString(),
  updated_at: team.updated_at.toISOString(),
});

const toMemberView = (member: MemberRow): MemberView => ({
  id: member.user_id,
  email: member.email,
  display_name: member.display_name,
  role: member.role,
  created_at: member.created_at.toISOString(),
});

/** The state of an invitation now. */
export function invitationState(row: Pick<InvitationRow, 'accepted_at' | 'revoked_at' | 'expires_at'>, now = Date.now()): InvitationState {
  if (row.accepted_at) return 'accepted';
  if (row.revoked_at) return 'revoked';
  if (row.expires_at.getTime() <= now) return 'expired';
  return 'pending';
}

const toInvitationView = (row: InvitationRow): InvitationView => ({
  id: row.id,
  team_id: row.team_id,
  email: row.email,
  role: row.role,
  invited_by: row.invited_by,
  created_at: row.created_at.toISOString(),
  expires_at: row.expires_at.toISOString(),
  accepted_at: row.accepted_at?.toISOString() ?? null,
  revoked_at: row.revoked_at?.toISOString() ?? null,
  state: invitationState(row),
});

const lastOwner = (team: string) => new AppError('conflict', { reason: 'last_team_owner', team }, { messageKey: 'error.conflict.last_team_owner' });

/** Where a change is made from, for its audit entry. */
export interface Actor {
  principal: Principal;
  ip: string;
}

/**
 * Team rules. Any signed-in account creates a team and is its owner. Roles, widest first: owner
 * (everything, renaming and deleting the team included), admin (members and invitations), editor,
 * viewer; a member may leave. Only an owner makes or unmakes owners, and the last owner can neither
 * leave nor be demoted (409 `conflict`, `last_team_owner`). Staff holding `admin` act as an owner of
 * every team. An unknown team is 404 `not_found`; a team the caller is not a member of is 403
 * `not_owner`; a role too narrow is 403 `forbidden` (`team_role_too_low`). Every change is audited.
 */
export function teamsService(
  context: Pick<Context, 'config' | 'log' | 'metrics'> & { repositories: Pick<Repositories, 'teams' | 'users' | 'subdomains' | 'audit'> },
  audit: (entry: AuditEntry) => void,
  mailer: Mailer | undefined,
) {
  const { teams, users, subdomains, audit: auditLog } = context.repositories;
  const { config, log, metrics } = context;

  /** The team and the caller's role in it, refused unless that role is at least `required`. */
  const access = async (principal: Principal, teamId: string, required: TeamRole): Promise<{ team: TeamRow; role: TeamRole }> => {
    const team = await teams.findById(teamId);
    if (!team) throw new AppError('not_found', { team: teamId });
    const role = (await teams.roleOf(teamId, principal.userId)) ?? (principal.scopes.has('admin') ? 'owner' : undefined);
    if (!role) throw new AppError('not_owner', { team: teamId });
    if (!roleAtLeast(role, required)) throw new AppError('forbidden', { reason: 'team_role_too_low', role, required_role: required });
    return { team, role };
  };

  const record = (actor: Actor, action: string, teamId: string, details: Record<string, unknown> = {}) =>
    audit({ action, actorId: actor.principal.userId, target: teamId, ip: actor.ip, details: { team_id: teamId, ...details } });

  return {
    async create(actor: Actor, name: string): Promise<TeamView> {
      const team = await teams.create(name, actor.principal.userId);
      record(actor, 'team.created', team.id, { name });
      return toTeamView(team, 'owner', 1);
    },
    /** The teams the caller is a member of, with its role in each. */
    async list(principal: Principal): Promise<TeamView[]> {
      return (await teams.listForUser(principal.userId)).map((team) => toTeamView(team, team.role, team.members));
    },
    async get(principal: Principal, teamId: string): Promise<TeamView> {
      const { team, role } = await access(principal, teamId, 'viewer');
      return toTeamView(team, role, await teams.memberCount(teamId));
    },
    /** Renames the team: owners only. */
    async rename(actor: Actor, teamId: string, name: string): Promise<TeamView> {
      const { team, role } = await access(actor.principal, teamId, 'owner');
      const renamed = await teams.rename(teamId, name);
      if (!renamed) throw new AppError('not_found', { team: teamId });
      record(actor, 'team.renamed', teamId, { from: team.name, to: name });
      return toTeamView(renamed, role, await teams.memberCount(teamId));
    },
    /** Deletes the team with its memberships and invitations: owners only. */
    async delete(actor: Actor, teamId: string): Promise<{ id: string; deleted: true }> {
      const { team } = await access(actor.principal, teamId, 'owner');
      if (!(await teams.delete(teamId))) throw new AppError('not_found', { team: teamId });
      record(actor, 'team.deleted', teamId, { name: team.name });
      return { id: teamId, deleted: true };
    },
    /** The team's audit log, newest first (admins and owners). */
    async audit(principal: Principal, teamId: string): Promise<TeamAuditView[]> {
      await access(principal, teamId, 'admin');
      return (await auditLog.listForTarget(teamId, TEAM_AUDIT_LIMIT)).map((row) => ({
        id: String(row.id),
        action: row.action,
        actor_id: row.actor_id,
        actor_email: row.actor_email ?? null,
        details: row.details,
        created_at: row.created_at.toISOString(),
      }));
    },
    async members(principal: Principal, teamId: string): Promise<MemberView[]> {
      await access(principal, teamId, 'viewer');
      return (await teams.listMembers(teamId)).map(toMemberView);
    },
    /**
     * Changes a member's role: admins change admins, editors and viewers among themselves; only an
     * owner makes an owner or changes an owner's role, and the last owner stays one.
     */
    async setRole(actor: Actor, teamId: string, userId: string, role: TeamRole): Promise<MemberView> {
      const { role: callerRole } = await access(actor.principal, teamId, 'admin');
      const member = await teams.findMember(teamId, userId);
      if (!member) throw new AppError('not_found', { team: teamId, member: userId });
      if ((member.role === 'owner' || role === 'owner') && callerRole !== 'owner') {
        throw new AppError('forbidden', { reason: 'team_role_too_low', role: callerRole, required_role: 'owner' });
      }
      const changed = await teams.setRole(teamId, userId, role);
      if (!changed) throw new AppError('not_found', { team: teamId, member: userId });
      if ('refused' in changed) throw lastOwner(teamId);
      if (changed.before !== role) {
        record(actor, 'team.member_role_changed', teamId, { user_id: userId, email: member.email, from: changed.before, to: role });
      }
      return toMemberView({ ...member, role });
    },
    /**
     * Removes a member, or lets the caller leave (any role). Admins remove admins, editors and
     * viewers; only an owner removes an owner, and the last owner stays; a member owning subdomains
     * of the team stays until they are taken back (409 `team_subdomains`). Access ends with the
     * membership: the next request of the removed account, by session or token, is refused.
     */
    async removeMember(actor: Actor, teamId: string, userId: string): Promise<{ id: string; removed: true }> {
      const leaving = userId === actor.principal.userId;
      const { role: callerRole } = await access(actor.principal, teamId, leaving ? 'viewer' : 'admin');
      const member = await teams.findMember(teamId, userId);
      if (!member) throw new AppError('not_found', { team: teamId, member: userId });
      if (!leaving && member.role === 'owner' && callerRole !== 'owner') {
        throw new AppError('forbidden', { reason: 'team_role_too_low', role: callerRole, required_role: 'owner' });
      }
      // A member whose subdomains the team works on stays until they are taken back: the team would work on an outsider's subdomain.
      const owned = await subdomains.ownedInTeam(userId, teamId);
      if (owned.length > 0) {
        throw new AppError('conflict', { reason: 'team_subdomains', subdomains: owned }, { messageKey: 'error.conflict.team_subdomains' });
      }
      const removed = await teams.removeMember(teamId, userId);
      if (!removed) throw new AppError('not_found', { team: teamId, member: userId });
      if ('refused' in removed) throw lastOwner(teamId);
      // The entry names who was removed (or left): the actor alone does not say it, and the account may be erased later.
      record(actor, leaving ? 'team.member_left' : 'team.member_removed', teamId, { user_id: userId, email: member.email, role: removed.role });
      return { id: userId, removed: true };
    },
    /**
     * Invites an address: admins invite admins, editors and viewers; owners invite owners too. The
     * link (valid 7 days, single use) is mailed through SMTP_URL; without it, or when the mail
     * fails, it is answered to the inviter instead (`link`), and `mailed` says which.
     */
    async invite(
      actor: Actor,
      teamId: string,
      input: { email: string; role: TeamRole },
      locale: Locale,
    ): Promise<InvitationView & { mailed: boolean; link: string | null }> {
      const { team, role: callerRole } = await access(actor.principal, teamId, 'admin');
      if (input.role === 'owner' && callerRole !== 'owner') {
        throw new AppError('forbidden', { reason: 'team_role_too_low', role: callerRole, required_role: 'owner' });
      }
      const invitee = await users.findByEmail(input.email);
      if (invitee && (await teams.roleOf(teamId, invitee.id))) throw new AppError('conflict', { reason: 'already_member', email: input.email });
      if ((await teams.seatsTaken(teamId, new Date())) >= MAX_TEAM_SEATS) {
        throw new AppError('forbidden', { reason: 'limit_reached', limit: MAX_TEAM_SEATS, hint: 'remove a member or revoke an invitation first' });
      }
      const secret = randomBytes(32).toString('base64url');
      const inserted = await teams.insertInvitation({
        teamId,
        email: input.email,
        role: input.role,
        tokenHash: secretHash(secret),
        invitedBy: actor.principal.userId,
        expiresAt: new Date(Date.now() + INVITATION_TTL_MS),
      });
      if ('refused' in inserted) throw new AppError('conflict', { reason: 'invitation_pending', email: input.email });
      const link = `${config.publicUrl}${INVITATION_LINK_PATH}#token=${secret}`;
      let mailed = false;
      if (mailer) {
        const mailLocale = invitee?.locale ?? locale;
        try {
          await mailer.send({
            to: input.email,
            subject: t(mailLocale, 'mail.team_invitation.subject', { team: team.name }),
            text: t(mailLocale, 'mail.team_invitation.body', {
              inviter: actor.principal.email,
              team: team.name,
              role: input.role,
              email: input.email,
              link,
            }),
          });
          mailed = true;
        } catch (error) {
          // The inviter gets the link instead; the failure is counted and logged without the message (it can quote the link).
          metrics.accountMailFailures.inc({ mail: 'team_invitation' });
          log.error(
            { err: { message: error instanceof Error ? error.message.slice(0, 200).replace(/token=[\w-]+/g, 'token=[redacted]') : 'unknown' } },
            'team invitation mail failed',
          );
        }
      }
      record(actor, 'team.invitation_created', teamId, { invitation_id: inserted.id, email: input.email, role: input.role, mailed });
      return { ...toInvitationView(inserted), mailed, link: mailed ? null : link };
    },
    /** The team's open invitations (pending and expired): admins and owners. */
    async invitations(principal: Principal, teamId: string): Promise<InvitationView[]> {
      await access(principal, teamId, 'admin');
      return (await teams.listOpenInvitations(teamId)).map(toInvitationView);
    },
    /** Revokes an invitation of the team; revoking twice is harmless. */
    async revokeInvitation(actor: Actor, teamId: string, invitationId: string): Promise<InvitationView> {
      await access(actor.principal, teamId, 'admin');
      const invitation = await teams.findInvitation(invitationId);
      if (!invitation || invitation.team_id !== teamId) throw new AppError('not_found', { team: teamId, invitation: invitationId });
      const revoked = (await teams.revokeInvitation(invitationId))!;
      if (invitation.revoked_at === null && revoked.revoked_at !== null) {
        record(actor, 'team.invitation_revoked', teamId, { invitation_id: invitationId, email: invitation.email });
      }
      return toInvitationView(revoked);
    },
    /**
     * Accepts an invitation for the signed-in account, whose address must be the one invited.
     * Refusals: unknown link 404 `not_found`; used, revoked, expired or another address's 403
     * `forbidden` (`details.reason`); already a member 409 `conflict`.
     */
    async accept(actor: Actor, token: string): Promise<TeamView> {
      const result = await teams.accept(secretHash(token), { id: actor.principal.userId, email: actor.principal.email }, new Date());
      if (result.refused === 'unknown') throw new AppError('not_found', { invitation: 'unknown' });
      if (result.refused === 'already_member') throw new AppError('conflict', { reason: 'already_member' });
      if (result.refused) throw new AppError('forbidden', { reason: `invitation_${result.refused}` });
      const { invitation } = result;
      record(actor, 'team.invitation_accepted', invitation.team_id, { invitation_id: invitation.id, user_id: actor.principal.userId, role: invitation.role });
      const team = await teams.findById(invitation.team_id);
      if (!team) throw new AppError('not_found', { team: invitation.team_id });
      return toTeamView(team, invitation.role, await teams.memberCount(team.id));
    },
  };
}

export type TeamsService = ReturnType<typeof teamsService>;
