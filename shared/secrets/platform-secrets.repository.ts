import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

export type PlatformSecretsRepository = ReturnType<typeof platformSecretsRepository>;

/** SQL for platform_secrets: keys the platform generates once and every node shares. */
export function platformSecretsRepository(db: Kysely<DB>) {
  return {
    /** The value stored under `name`, storing `value` first when there is none (the first node to ask wins). */
    async valueOrInsert(name: string, value: string): Promise<string> {
      await db
        .insertInto('platform_secrets')
        .values({ name, value })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      const row = await db.selectFrom('platform_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
      return row.value;
    },
  };
}
