import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

export interface NewUser {
  email: string;
  passwordHash: string;
  role: 'staff' | 'user';
  displayName?: string;
}

export type UsersRepository = ReturnType<typeof usersRepository>;

/** SQL for users: the only place that queries the users table. */
export function usersRepository(db: Kysely<DB>) {
  return {
    async count(): Promise<number> {
      const row = await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    /** Inserts the user unless the e-mail (case-insensitive) exists; returns the id, or undefined if it existed. */
    async insertIfAbsent(user: NewUser): Promise<string | undefined> {
      const row = await db
        .insertInto('users')
        .values({
          id: crypto.randomUUID(),
          email: user.email,
          password_hash: user.passwordHash,
          role: user.role,
          display_name: user.displayName ?? null,
        })
        .onConflict((conflict) => conflict.expression(sql`lower(email)`).doNothing())
        .returning('id')
        .executeTakeFirst();
      return row?.id;
    },
    /**
     * A page of accounts, newest first, never their password hashes: after the account `afterId`
     * (a cursor: compared on created_at and id in SQL, so no timestamp precision is lost in a
     * cursor) or at an offset (page numbers).
     */
    async listPage(limit: number, at: { afterId?: string } | { offset: number }) {
      let query = db
        .selectFrom('users')
        .select(['id', 'email', 'role', 'display_name', 'created_at'])
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit);
      if ('offset' in at) query = query.offset(at.offset);
      else if (at.afterId) query = query.where(sql<boolean>`(created_at, id) < (select u.created_at, u.id from users u where u.id = ${at.afterId})`);
      return query.execute();
    },
    async findById(id: string) {
      return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** The e-mail address of an account (what a notification is mailed to), or undefined. */
    async emailOf(id: string): Promise<string | undefined> {
      const row = await db.selectFrom('users').select('email').where('id', '=', id).executeTakeFirst();
      return row?.email;
    },
    /** Sets the account's password hash. */
    async setPasswordHash(id: string, passwordHash: string): Promise<void> {
      await db.updateTable('users').set({ password_hash: passwordHash, updated_at: new Date() }).where('id', '=', id).execute();
    },
    /** Records the language the account signed in with, when it changed (its e-mails are written in it). */
    async setLocale(id: string, locale: 'en' | 'de' | 'fr' | 'es'): Promise<void> {
      await db
        .updateTable('users')
        .set({ locale })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('locale', 'is', null), eb('locale', '!=', locale)]))
        .execute();
    },
    async findByEmail(email: string) {
      return db
        .selectFrom('users')
        .selectAll()
        .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
        .executeTakeFirst();
    },
  };
}
