import type { Kysely, Selectable, Updateable } from 'kysely';
import type { DB, SubdomainsTable } from '../db/schema.js';

export type SubdomainRow = Selectable<SubdomainsTable>;
export type SubdomainChanges = Omit<Updateable<SubdomainsTable>, 'name' | 'owner_id' | 'created_at' | 'updated_at'>;

/** SQL for subdomains and their policies: the only place that queries the subdomains table. */
export function subdomainsRepository(db: Kysely<DB>) {
  return {
    /** Claims a name; undefined when it is taken. */
    async insertIfFree(name: string, ownerId: string, title: string | null): Promise<SubdomainRow | undefined> {
      return db
        .insertInto('subdomains')
        .values({ name, owner_id: ownerId, title })
        .onConflict((oc) => oc.column('name').doNothing())
        .returningAll()
        .executeTakeFirst();
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
    async listByOwner(ownerId: string): Promise<SubdomainRow[]> {
      return db.selectFrom('subdomains').selectAll().where('owner_id', '=', ownerId).orderBy('name').execute();
    },
    async countByOwner(ownerId: string): Promise<number> {
      const row = await db
        .selectFrom('subdomains')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('owner_id', '=', ownerId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
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
