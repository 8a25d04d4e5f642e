import { sql, type Kysely } from 'kysely';
import type { DB } from '#shared/db/schema.js';

/** SQL for visitor_salts: the daily salts of the visitor hash, shared by every enricher. */
export function visitorSaltsRepository(db: Kysely<DB>) {
  return {
    /** The salt of a day (`YYYY-MM-DD`), storing `salt` first when the day has none (the first enricher to ask wins). */
    async saltOrInsert(day: string, salt: string): Promise<string> {
      await db
        .insertInto('visitor_salts')
        .values({ day, salt })
        .onConflict((oc) => oc.column('day').doNothing())
        .execute();
      const row = await db.selectFrom('visitor_salts').select('salt').where('day', '=', day).executeTakeFirstOrThrow();
      return row.salt;
    },
    /** Deletes the salts of the days before `oldest` (`YYYY-MM-DD`). */
    async deleteBefore(oldest: string): Promise<void> {
      await db
        .deleteFrom('visitor_salts')
        .where('day', '<', sql<string>`${oldest}::date`)
        .execute();
    },
  };
}
