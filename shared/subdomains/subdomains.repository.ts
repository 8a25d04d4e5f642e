import { sql, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { DB, SubdomainsTable, TeamRole } from '../db/schema.js';

export type SubdomainRow = Selectable<SubdomainsTable>;
export type SubdomainChanges = Omit<Updateable<SubdomainsTable>, 'name' | 'owner_id' | 'team_id' | 'created_at' | 'updated_at'>;

/** SQL for subdomains and their policies: the only place that queries the subdomains table. */
export function subdomainsRepository(db: Kysely<DB>) {
  return {
    /** Claims a name; undefined when it is taken. */
    async insertIfFree(name: string, ownerId: string, title: string | null, trackerOrigins: string[] = []): Promise<SubdomainRow | undefined> {
      return db
        .insertInto('subdomains')
        .values({ name, owner_id: ownerId, title, tracker_origins: trackerOrigins })
        .onConflict((oc) => oc.column('name').doNothing())
        .returningAll()
        .executeTakeFirst();
    },
    /** The subdomain's QR-code logo (a normalised PNG), if it has one. */
    async qrLogo(name: string): Promise<{ png: Uint8Array; width: number; height: number; digest: string; updated_at: Date } | undefined> {
      return db.selectFrom('subdomain_qr_logos').select(['png', 'width', 'height', 'digest', 'updated_at']).where('subdomain', '=', name).executeTakeFirst();
    },
    /** Sets (or replaces) the subdomain's QR-code logo. */
    async setQrLogo(name: string, logo: { png: Uint8Array; width: number; height: number; digest: string }, by: string): Promise<Date> {
      const row = await db
        .insertInto('subdomain_qr_logos')
        .values({ subdomain: name, ...logo, updated_by: by })
        .onConflict((oc) => oc.column('subdomain').doUpdateSet({ ...logo, updated_by: by, updated_at: new Date() }))
        .returning('updated_at')
        .executeTakeFirstOrThrow();
      return row.updated_at;
    },
    /** Removes the subdomain's QR-code logo; false when it had none. */
    async deleteQrLogo(name: string): Promise<boolean> {
      const result = await db.deleteFrom('subdomain_qr_logos').where('subdomain', '=', name).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
    async find(name: string): Promise<SubdomainRow | undefined> {
      return db.selectFrom('subdomains').selectAll().where('name', '=', name).executeTakeFirst();
    },
    /** A subdomain with its owner's display name (the public page names the owner by it). */
    async findWithOwner(name: string): Promise<(SubdomainRow & { owner_display_name: string | null }) | undefined> {
      return db
        .selectFrom('subdomains')
        .innerJoin('users', 'users.id', 'subdomains.owner_id')
        .selectAll('subdomains')
        .select('users.display_name as owner_display_name')
        .where('subdomains.name', '=', name)
        .executeTakeFirst();
    },
    /** The site origins a subdomain's tracker may run on ([] for any site), or undefined when no such subdomain exists. */
    async trackerOriginsOf(name: string): Promise<string[] | undefined> {
      const row = await db.selectFrom('subdomains').select('tracker_origins').where('name', '=', name).executeTakeFirst();
      return row?.tracker_origins;
    },
    /** Subdomains that list tracker origins, at most `limit` (the edge warms its cache with them). */
    async withTrackerOrigins(limit: number): Promise<{ name: string; tracker_origins: string[] }[]> {
      return db
        .selectFrom('subdomains')
        .select(['name', 'tracker_origins'])
        .where(sql<boolean>`cardinality(tracker_origins) > 0`)
        .orderBy('name')
        .limit(limit)
        .execute();
    },
    /** The subdomains with a retention of their own (their name and days). */
    async withVisitsRetention(): Promise<{ name: string; visits_retention_days: number }[]> {
      const found = await db.selectFrom('subdomains').select(['name', 'visits_retention_days']).where('visits_retention_days', 'is not', null).execute();
      return found.map((row) => ({ name: row.name, visits_retention_days: row.visits_retention_days! }));
    },
    async listByOwner(ownerId: string): Promise<SubdomainRow[]> {
      return db.selectFrom('subdomains').selectAll().where('owner_id', '=', ownerId).orderBy('name').execute();
    },
    /** The account's subdomains and those of the teams it is a member of, with its role in that team (null for its own). */
    async listReachable(userId: string): Promise<(SubdomainRow & { member_role: TeamRole | null })[]> {
      return db
        .selectFrom('subdomains')
        .leftJoin('team_members', (join) => join.onRef('team_members.team_id', '=', 'subdomains.team_id').on('team_members.user_id', '=', userId))
        .selectAll('subdomains')
        .select('team_members.role as member_role')
        .where((eb) => eb.or([eb('subdomains.owner_id', '=', userId), eb('team_members.user_id', '=', userId)]))
        .orderBy('subdomains.name')
        .execute();
    },
    async countByOwner(ownerId: string): Promise<number> {
      const row = await db
        .selectFrom('subdomains')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('owner_id', '=', ownerId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    /** Gives the subdomain to a team, or back to its owner alone (null). */
    async setTeam(name: string, teamId: string | null): Promise<SubdomainRow | undefined> {
      return db.updateTable('subdomains').set({ team_id: teamId, updated_at: new Date() }).where('name', '=', name).returningAll().executeTakeFirst();
    },
    /** The account's subdomains that belong to the team. */
    async ownedInTeam(ownerId: string, teamId: string): Promise<string[]> {
      const rows = await db.selectFrom('subdomains').select('name').where('owner_id', '=', ownerId).where('team_id', '=', teamId).orderBy('name').execute();
      return rows.map((row) => row.name);
    },
    /** The account's subdomains that belong to a team with other members (its deletion would take them from the team). */
    async sharedWithTeams(ownerId: string): Promise<string[]> {
      const rows = await db
        .selectFrom('subdomains')
        .select('subdomains.name')
        .where('subdomains.owner_id', '=', ownerId)
        .where('subdomains.team_id', 'is not', null)
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('team_members')
              .select('team_members.user_id')
              .whereRef('team_members.team_id', '=', 'subdomains.team_id')
              .where('team_members.user_id', '!=', ownerId),
          ),
        )
        .orderBy('subdomains.name')
        .execute();
      return rows.map((row) => row.name);
    },
    async update(name: string, changes: SubdomainChanges): Promise<SubdomainRow | undefined> {
      return db
        .updateTable('subdomains')
        .set({ ...changes, updated_at: new Date() })
        .where('name', '=', name)
        .returningAll()
        .executeTakeFirst();
    },
  };
}
