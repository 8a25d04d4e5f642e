import type { Kysely, Selectable } from 'kysely';
import type { CustomDomainsTable, DB, TeamRole } from '../db/schema.js';

export type CustomDomainRow = Selectable<CustomDomainsTable>;

/** A domain with what the caller's listing needs of its subdomain: the owner, and the caller's team role there. */
export type ReachableDomainRow = CustomDomainRow & { owner_id: string; member_role: TeamRole | null };

/** What a check of a domain's TXT record wrote. */
export interface CheckOutcome {
  status: CustomDomainRow['status'];
  verified_at?: Date | null;
  failing_since: Date | null;
  checked_at: Date;
  check_error: string | null;
}

/** A served domain whose record was not found: failing from now (or still), lapsed once the grace period has passed since it started failing. */
export function lapseOrFail(row: Pick<CustomDomainRow, 'failing_since'>, message: string, now: Date, graceMs: number) {
  const since = row.failing_since ?? now;
  const lapsed = now.getTime() - since.getTime() >= graceMs;
  return { status: lapsed ? ('lapsed' as const) : ('failing' as const), failing_since: since, checked_at: now, check_error: message };
}

/** The statuses under which the edge serves a domain: verified, and failing within its grace period. */
export const SERVED_STATUSES = ['verified', 'failing'] as const;

/** SQL for custom domains: the only place that queries the custom_domains table. */
export function domainsRepository(db: Kysely<DB>) {
  return {
    /** Attaches a domain; undefined when the name is taken (by anyone). */
    async insertIfFree(row: { domain: string; subdomain: string; token: string; created_by: string }): Promise<CustomDomainRow | undefined> {
      return db
        .insertInto('custom_domains')
        .values(row)
        .onConflict((oc) => oc.column('domain').doNothing())
        .returningAll()
        .executeTakeFirst();
    },
    async find(domain: string): Promise<(CustomDomainRow & { owner_id: string }) | undefined> {
      return db
        .selectFrom('custom_domains')
        .innerJoin('subdomains', 'subdomains.name', 'custom_domains.subdomain')
        .selectAll('custom_domains')
        .select('subdomains.owner_id')
        .where('custom_domains.domain', '=', domain)
        .executeTakeFirst();
    },
    /** The domains of the subdomains `userId` owns or reaches through a team, with the role there; by name. */
    async listReachable(userId: string): Promise<ReachableDomainRow[]> {
      return db
        .selectFrom('custom_domains')
        .innerJoin('subdomains', 'subdomains.name', 'custom_domains.subdomain')
        .leftJoin('team_members', (join) => join.onRef('team_members.team_id', '=', 'subdomains.team_id').on('team_members.user_id', '=', userId))
        .selectAll('custom_domains')
        .select(['subdomains.owner_id', 'team_members.role as member_role'])
        .where((eb) => eb.or([eb('subdomains.owner_id', '=', userId), eb('team_members.user_id', '=', userId)]))
        .orderBy('custom_domains.domain')
        .execute();
    },
    async countBySubdomain(subdomain: string): Promise<number> {
      const row = await db
        .selectFrom('custom_domains')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('subdomain', '=', subdomain)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    /** Every served domain with its subdomain (the edge holds them all in memory). */
    async served(): Promise<{ domain: string; subdomain: string }[]> {
      return db.selectFrom('custom_domains').select(['domain', 'subdomain']).where('status', 'in', SERVED_STATUSES).execute();
    },
    /** Whether a domain is served now: what the TLS `ask` endpoint answers. */
    async isServed(domain: string): Promise<boolean> {
      const row = await db.selectFrom('custom_domains').select('domain').where('domain', '=', domain).where('status', 'in', SERVED_STATUSES).executeTakeFirst();
      return row !== undefined;
    },
    /** Served domains last checked before `before` (or never), oldest check first: what re-verification reads. */
    async dueForRecheck(before: Date, limit: number): Promise<(CustomDomainRow & { owner_id: string })[]> {
      return db
        .selectFrom('custom_domains')
        .innerJoin('subdomains', 'subdomains.name', 'custom_domains.subdomain')
        .selectAll('custom_domains')
        .select('subdomains.owner_id')
        .where('custom_domains.status', 'in', SERVED_STATUSES)
        .where((eb) => eb.or([eb('custom_domains.checked_at', 'is', null), eb('custom_domains.checked_at', '<', before)]))
        .orderBy('custom_domains.checked_at', (ob) => ob.asc().nullsFirst())
        .limit(limit)
        .execute();
    },
    /** Records a check's outcome; undefined when the domain was removed meanwhile. */
    async recordCheck(domain: string, outcome: CheckOutcome): Promise<CustomDomainRow | undefined> {
      return db
        .updateTable('custom_domains')
        .set({ ...outcome, updated_at: outcome.checked_at })
        .where('domain', '=', domain)
        .returningAll()
        .executeTakeFirst();
    },
    async delete(domain: string): Promise<boolean> {
      const result = await db.deleteFrom('custom_domains').where('domain', '=', domain).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
  };
}

export type DomainsRepository = ReturnType<typeof domainsRepository>;
