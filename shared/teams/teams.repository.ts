import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { DB, TeamInvitationsTable, TeamRole, TeamsTable } from '../db/schema.js';

export type TeamRow = Selectable<TeamsTable>;
export type InvitationRow = Selectable<TeamInvitationsTable>;

/** A team with the caller's role in it and how many members it has. */
export type TeamOfMember = TeamRow & { role: TeamRole; members: number };

/** A member with what the team shows of the account. */
export interface MemberRow {
  user_id: string;
  email: string;
  display_name: string | null;
  role: TeamRole;
  created_at: Date;
}

/** Why a change of members was refused: it would leave the team without an owner. */
export type MembershipRefusal = { refused: 'last_owner' };

/** The owners of a team, their rows held until the transaction ends: two owners stepping down at once leave one. */
async function lockOwners(trx: Transaction<DB>, teamId: string): Promise<string[]> {
  const rows = await trx.selectFrom('team_members').select('user_id').where('team_id', '=', teamId).where('role', '=', 'owner').forUpdate().execute();
  return rows.map((row) => row.user_id);
}

/**
 * The teams `userId` is the only owner of while other accounts are members. Inside a transaction
 * (account deletion), the rows of those teams' members are held until it ends, so that no owner
 * steps down in between.
 */
export async function orphanedBy(db: Kysely<DB> | Transaction<DB>, userId: string): Promise<string[]> {
  const mine = db.selectFrom('team_members').select('team_id').where('user_id', '=', userId).where('role', '=', 'owner');
  let query = db.selectFrom('team_members').select(['team_id', 'user_id', 'role']).where('team_id', 'in', mine);
  if (db.isTransaction) query = query.forUpdate();
  const rows = await query.execute();
  const byTeam = new Map<string, { owners: number; others: number }>();
  for (const row of rows) {
    const team = byTeam.get(row.team_id) ?? { owners: 0, others: 0 };
    if (row.role === 'owner') team.owners++;
    if (row.user_id !== userId) team.others++;
    byTeam.set(row.team_id, team);
  }
  return [...byTeam].filter(([, team]) => team.owners === 1 && team.others > 0).map(([teamId]) => teamId);
}

/** SQL for teams, their members and invitations: the only place that queries them. */
export function teamsRepository(db: Kysely<DB>) {
  return {
    /** Creates a team with its creator as its owner, in one transaction. */
    async create(name: string, ownerId: string): Promise<TeamRow> {
      return db.transaction().execute(async (trx) => {
        const team = await trx.insertInto('teams').values({ name }).returningAll().executeTakeFirstOrThrow();
        await trx.insertInto('team_members').values({ team_id: team.id, user_id: ownerId, role: 'owner' }).execute();
        return team;
      });
    },
    async findById(id: string): Promise<TeamRow | undefined> {
      return db.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** The account's role in the team, or undefined when it is not a member. */
    async roleOf(teamId: string, userId: string): Promise<TeamRole | undefined> {
      const row = await db.selectFrom('team_members').select('role').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
      return row?.role;
    },
    /** The account's role in the team the subdomain belongs to, or undefined (no team, or not a member). */
    async roleViaSubdomain(subdomain: string, userId: string): Promise<TeamRole | undefined> {
      const row = await db
        .selectFrom('subdomains')
        .innerJoin('team_members', 'team_members.team_id', 'subdomains.team_id')
        .select('team_members.role')
        .where('subdomains.name', '=', subdomain)
        .where('team_members.user_id', '=', userId)
        .executeTakeFirst();
      return row?.role;
    },
    /** The teams the account is a member of, with its role and each team's member count. */
    async listForUser(userId: string): Promise<TeamOfMember[]> {
      const rows = await db
        .selectFrom('team_members as mine')
        .innerJoin('teams', 'teams.id', 'mine.team_id')
        .selectAll('teams')
        .select('mine.role')
        .select((eb) => eb.selectFrom('team_members as all').select(eb.fn.countAll<string>().as('n')).whereRef('all.team_id', '=', 'teams.id').as('members'))
        .where('mine.user_id', '=', userId)
        .execute();
      return rows.map((row) => ({ ...row, members: Number(row.members) }));
    },
    async memberCount(teamId: string): Promise<number> {
      const row = await db
        .selectFrom('team_members')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('team_id', '=', teamId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    async rename(id: string, name: string): Promise<TeamRow | undefined> {
      return db.updateTable('teams').set({ name, updated_at: new Date() }).where('id', '=', id).returningAll().executeTakeFirst();
    },
    /** Deletes the team with its memberships and invitations; answers whether it existed. */
    async delete(id: string): Promise<boolean> {
      const result = await db.deleteFrom('teams').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
    async listMembers(teamId: string): Promise<MemberRow[]> {
      return db
        .selectFrom('team_members')
        .innerJoin('users', 'users.id', 'team_members.user_id')
        .select(['team_members.user_id', 'users.email', 'users.display_name', 'team_members.role', 'team_members.created_at'])
        .where('team_members.team_id', '=', teamId)
        .execute();
    },
    async findMember(teamId: string, userId: string): Promise<MemberRow | undefined> {
      return db
        .selectFrom('team_members')
        .innerJoin('users', 'users.id', 'team_members.user_id')
        .select(['team_members.user_id', 'users.email', 'users.display_name', 'team_members.role', 'team_members.created_at'])
        .where('team_members.team_id', '=', teamId)
        .where('team_members.user_id', '=', userId)
        .executeTakeFirst();
    },
    /**
     * Changes a member's role, in one transaction that holds the team's owner rows: the last owner
     * is not demoted. Answers the role before, or undefined when the account is not a member.
     */
    async setRole(teamId: string, userId: string, role: TeamRole): Promise<{ before: TeamRole } | MembershipRefusal | undefined> {
      return db.transaction().execute(async (trx) => {
        const owners = await lockOwners(trx, teamId);
        const member = await trx
          .selectFrom('team_members')
          .select('role')
          .where('team_id', '=', teamId)
          .where('user_id', '=', userId)
          .forUpdate()
          .executeTakeFirst();
        if (!member) return undefined;
        if (member.role === 'owner' && role !== 'owner' && owners.every((owner) => owner === userId)) return { refused: 'last_owner' as const };
        await trx.updateTable('team_members').set({ role }).where('team_id', '=', teamId).where('user_id', '=', userId).execute();
        return { before: member.role };
      });
    },
    /**
     * Removes a member (or lets one leave), in one transaction that holds the team's owner rows: the
     * last owner stays. Answers the role it had, or undefined when the account is not a member.
     */
    async removeMember(teamId: string, userId: string): Promise<{ role: TeamRole } | MembershipRefusal | undefined> {
      return db.transaction().execute(async (trx) => {
        const owners = await lockOwners(trx, teamId);
        const member = await trx
          .selectFrom('team_members')
          .select('role')
          .where('team_id', '=', teamId)
          .where('user_id', '=', userId)
          .forUpdate()
          .executeTakeFirst();
        if (!member) return undefined;
        if (member.role === 'owner' && owners.every((owner) => owner === userId)) return { refused: 'last_owner' as const };
        await trx.deleteFrom('team_members').where('team_id', '=', teamId).where('user_id', '=', userId).execute();
        return { role: member.role };
      });
    },
    /** The teams the account is the only owner of while other accounts are members: its deletion would orphan them. */
    async orphanedBy(userId: string): Promise<string[]> {
      return orphanedBy(db, userId);
    },
    /** Members and open, unexpired invitations of the team: the seats it uses. */
    async seatsTaken(teamId: string, now: Date): Promise<number> {
      const row = await db
        .selectNoFrom((eb) => [
          eb.selectFrom('team_members').select(eb.fn.countAll<string>().as('n')).where('team_id', '=', teamId).as('members'),
          eb
            .selectFrom('team_invitations')
            .select(eb.fn.countAll<string>().as('n'))
            .where('team_id', '=', teamId)
            .where('accepted_at', 'is', null)
            .where('revoked_at', 'is', null)
            .where('expires_at', '>', now)
            .as('invitations'),
        ])
        .executeTakeFirstOrThrow();
      return Number(row.members) + Number(row.invitations);
    },
    /**
     * Records an invitation. An expired open invitation of the same address is revoked first; an
     * unexpired one stays and the new one is refused (`pending`).
     */
    async insertInvitation(invitation: {
      teamId: string;
      email: string;
      role: TeamRole;
      tokenHash: string;
      invitedBy: string;
      expiresAt: Date;
    }): Promise<InvitationRow | { refused: 'pending' }> {
      return db.transaction().execute(async (trx) => {
        const now = new Date();
        const open = await trx
          .selectFrom('team_invitations')
          .select(['id', 'expires_at'])
          .where('team_id', '=', invitation.teamId)
          .where(sql<string>`lower(email)`, '=', invitation.email.toLowerCase())
          .where('accepted_at', 'is', null)
          .where('revoked_at', 'is', null)
          .forUpdate()
          .executeTakeFirst();
        if (open && open.expires_at.getTime() > now.getTime()) return { refused: 'pending' as const };
        if (open) await trx.updateTable('team_invitations').set({ revoked_at: now }).where('id', '=', open.id).execute();
        return trx
          .insertInto('team_invitations')
          .values({
            team_id: invitation.teamId,
            email: invitation.email,
            role: invitation.role,
            token_hash: invitation.tokenHash,
            invited_by: invitation.invitedBy,
            expires_at: invitation.expiresAt,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
      });
    },
    /** The team's invitations that are neither accepted nor revoked (expired ones included, marked by their expiry). */
    async listOpenInvitations(teamId: string): Promise<InvitationRow[]> {
      return db
        .selectFrom('team_invitations')
        .selectAll()
        .where('team_id', '=', teamId)
        .where('accepted_at', 'is', null)
        .where('revoked_at', 'is', null)
        .execute();
    },
    async findInvitation(id: string): Promise<InvitationRow | undefined> {
      return db.selectFrom('team_invitations').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** Revokes an open invitation; answers the row as it is now (a used or revoked one unchanged). */
    async revokeInvitation(id: string): Promise<InvitationRow | undefined> {
      await db
        .updateTable('team_invitations')
        .set({ revoked_at: new Date() })
        .where('id', '=', id)
        .where('accepted_at', 'is', null)
        .where('revoked_at', 'is', null)
        .execute();
      return db.selectFrom('team_invitations').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /**
     * Spends an invitation for an account, in one transaction holding the invitation's row (two
     * uses at once: one wins). Answers why it was refused, or the invitation and the membership made.
     */
    async accept(
      tokenHash: string,
      user: { id: string; email: string },
      now: Date,
    ): Promise<
      | { refused: 'unknown' | 'used' | 'revoked' | 'expired' | 'other_address' | 'already_member'; invitation?: InvitationRow }
      | { refused?: undefined; invitation: InvitationRow }
    > {
      return db.transaction().execute(async (trx) => {
        const invitation = await trx.selectFrom('team_invitations').selectAll().where('token_hash', '=', tokenHash).forUpdate().executeTakeFirst();
        if (!invitation) return { refused: 'unknown' as const };
        if (invitation.accepted_at) return { refused: 'used' as const, invitation };
        if (invitation.revoked_at) return { refused: 'revoked' as const, invitation };
        if (invitation.expires_at.getTime() <= now.getTime()) return { refused: 'expired' as const, invitation };
        if (invitation.email.toLowerCase() !== user.email.toLowerCase()) return { refused: 'other_address' as const, invitation };
        const inserted = await trx
          .insertInto('team_members')
          .values({ team_id: invitation.team_id, user_id: user.id, role: invitation.role })
          .onConflict((oc) => oc.columns(['team_id', 'user_id']).doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) return { refused: 'already_member' as const, invitation };
        const accepted = await trx
          .updateTable('team_invitations')
          .set({ accepted_at: now, accepted_by: user.id })
          .where('id', '=', invitation.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return { invitation: accepted };
      });
    },
  };
}

export type TeamsRepository = ReturnType<typeof teamsRepository>;
