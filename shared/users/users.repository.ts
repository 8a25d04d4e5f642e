import { sql, type Kysely, type Selectable } from 'kysely';
import { orphanedBy } from '../teams/teams.repository.js';
import type { DB, UsersTable } from '../db/schema.js';

export type UserRow = Selectable<UsersTable>;

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
        .select(['id', 'email', 'role', 'display_name', 'created_at', 'disabled_at'])
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit);
      if ('offset' in at) query = query.offset(at.offset);
      else if (at.afterId) query = query.where(sql<boolean>`(created_at, id) < (select u.created_at, u.id from users u where u.id = ${at.afterId})`);
      return query.execute();
    },
    /**
     * Deletes an account and, by the schema's cascades, its sessions, API tokens, subdomains, links
     * (which then redirect no more), webhooks with their delivery log, and notifications; audit rows
     * keep their action with the actor emptied. Answers what it deleted, counted in the same
     * transaction, or undefined when there is no such account.
     */
    async deleteAccount(id: string) {
      return db.transaction().execute(async (trx) => {
        const counted = await trx
          .selectNoFrom((eb) => [
            eb.selectFrom('links').select(eb.fn.countAll<string>().as('n')).where('owner_id', '=', id).as('links'),
            eb.selectFrom('subdomains').select(eb.fn.countAll<string>().as('n')).where('owner_id', '=', id).as('subdomains'),
            eb.selectFrom('webhooks').select(eb.fn.countAll<string>().as('n')).where('owner_id', '=', id).as('webhooks'),
            eb.selectFrom('api_tokens').select(eb.fn.countAll<string>().as('n')).where('user_id', '=', id).as('tokens'),
            eb.selectFrom('sessions').select(eb.fn.countAll<string>().as('n')).where('user_id', '=', id).as('sessions'),
          ])
          .executeTakeFirstOrThrow();
        // A team the account alone owns while others are members would be left without an owner: refused
        // (checked again here, holding the members' rows, after the service's check before the erasure).
        const orphaned = await orphanedBy(trx, id);
        if (orphaned.length > 0) return { refused: 'last_team_owner' as const, orphaned };
        // Its subdomains a team with other members works on would go with it: refused as well (the service checked before the erasure).
        const shared = await trx
          .selectFrom('subdomains')
          .select('name')
          .where('owner_id', '=', id)
          .where((eb) =>
            eb.exists(
              eb
                .selectFrom('team_members')
                .select('team_members.user_id')
                .whereRef('team_members.team_id', '=', 'subdomains.team_id')
                .where('team_members.user_id', '!=', id),
            ),
          )
          .orderBy('name')
          .execute();
        if (shared.length > 0) return { refused: 'team_subdomains' as const, subdomains: shared.map((row) => row.name) };
        // The teams it is the only member of go with it.
        const solo = await trx
          .deleteFrom('teams')
          .where('id', 'in', (eb) => eb.selectFrom('team_members').select('team_id').where('user_id', '=', id).where('role', '=', 'owner'))
          .where((eb) =>
            eb.not(
              eb.exists(
                eb.selectFrom('team_members as other').select('other.user_id').whereRef('other.team_id', '=', 'teams.id').where('other.user_id', '!=', id),
              ),
            ),
          )
          .executeTakeFirst();
        const live = await trx.selectFrom('links').selectAll().where('owner_id', '=', id).where('deleted_at', 'is', null).execute();
        const deleted = await trx.deleteFrom('users').where('id', '=', id).executeTakeFirst();
        if (Number(deleted.numDeletedRows) === 0) return undefined;
        return {
          /** The links that redirected until now: the edges drop them from their caches. */
          live,
          links: Number(counted.links),
          subdomains: Number(counted.subdomains),
          webhooks: Number(counted.webhooks),
          tokens: Number(counted.tokens),
          sessions: Number(counted.sessions),
          teams: Number(solo.numDeletedRows),
        };
      });
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
    /** How many active (not disabled) staff accounts there are besides the given one. */
    async countActiveStaffExcept(id: string): Promise<number> {
      const row = await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('role', '=', 'staff')
        .where('disabled_at', 'is', null)
        .where('id', '!=', id)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    /**
     * Disables or re-enables an account, in one transaction that holds the rows of the active staff
     * accounts (FOR UPDATE), so that two staff disabling each other at once cannot leave none.
     * Disabling spends the account's open reset links; re-enabling revokes every session it still
     * had (they were refused while it was disabled, and are not brought back). Answers the account
     * after the change, whether it changed, and how many sessions were revoked; `refused` says why
     * nothing was done, undefined for an unknown account.
     */
    async setDisabled(
      id: string,
      disabled: boolean,
    ): Promise<{ refused?: undefined; user: UserRow; changed: boolean; sessionsRevoked: number } | { refused: 'last_active_staff' } | undefined> {
      return db.transaction().execute(async (trx) => {
        const activeStaff = await trx
          .selectFrom('users')
          .select('id')
          .where('role', '=', 'staff')
          .where('disabled_at', 'is', null)
          .orderBy('id')
          .forUpdate()
          .execute();
        const user = await trx.selectFrom('users').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
        if (!user) return undefined;
        if ((user.disabled_at !== null) === disabled) return { user, changed: false, sessionsRevoked: 0 };
        const now = new Date();
        let sessionsRevoked = 0;
        if (disabled) {
          if (user.role === 'staff' && activeStaff.every((staff) => staff.id === id)) return { refused: 'last_active_staff' as const };
          await trx.updateTable('password_resets').set({ used_at: now }).where('user_id', '=', id).where('used_at', 'is', null).execute();
        } else {
          const revoked = await trx
            .updateTable('sessions')
            .set({ revoked_at: now })
            .where('user_id', '=', id)
            .where('revoked_at', 'is', null)
            .where('expires_at', '>', now)
            .executeTakeFirst();
          sessionsRevoked = Number(revoked.numUpdatedRows);
        }
        const changed = await trx
          .updateTable('users')
          .set({ disabled_at: disabled ? now : null, updated_at: now })
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return { user: changed, changed: true, sessionsRevoked };
      });
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
