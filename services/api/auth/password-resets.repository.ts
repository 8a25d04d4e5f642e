import type { Kysely } from 'kysely';
import type { DB } from '#shared/db/schema.js';

/** What a presented reset link is: usable, or why not. */
export type ResetLinkState = { state: 'valid'; userId: string; email: string } | { state: 'unknown' | 'used' | 'expired' | 'account_disabled' };

/** SQL for password resets: the only place that queries the password_resets table. */
export function passwordResetsRepository(db: Kysely<DB>) {
  return {
    async insert(reset: { tokenHash: string; userId: string; issuedBy: string | null; ip: string; expiresAt: Date }): Promise<void> {
      await db
        .insertInto('password_resets')
        .values({ token_hash: reset.tokenHash, user_id: reset.userId, issued_by: reset.issuedBy, ip: reset.ip, expires_at: reset.expiresAt })
        .execute();
    },
    /** The state of the link whose secret hashes to `tokenHash`, with its account when it can still be used. */
    async stateOf(tokenHash: string): Promise<ResetLinkState> {
      const row = await db
        .selectFrom('password_resets')
        .innerJoin('users', 'users.id', 'password_resets.user_id')
        .select(['password_resets.user_id', 'password_resets.expires_at', 'password_resets.used_at', 'users.email', 'users.disabled_at'])
        .where('password_resets.token_hash', '=', tokenHash)
        .executeTakeFirst();
      if (!row) return { state: 'unknown' };
      if (row.used_at) return { state: 'used' };
      if (row.expires_at.getTime() <= Date.now()) return { state: 'expired' };
      if (row.disabled_at) return { state: 'account_disabled' };
      return { state: 'valid', userId: row.user_id, email: row.email };
    },
    /**
     * Spends the link and sets the password, in one transaction: the link is taken only if still
     * unused and unexpired and its account not disabled (of two parallel uses, one wins), every other open link of the account is
     * spent with it, and every live session of the account is revoked. Answers the account and how
     * many sessions were revoked, or undefined when the link could not be taken.
     */
    async redeem(tokenHash: string, passwordHash: string): Promise<{ userId: string; sessionsRevoked: number } | undefined> {
      return db.transaction().execute(async (trx) => {
        const now = new Date();
        const taken = await trx
          .updateTable('password_resets')
          .set({ used_at: now })
          .where('token_hash', '=', tokenHash)
          .where('used_at', 'is', null)
          .where('expires_at', '>', now)
          .where((eb) =>
            eb.not(
              eb.exists(eb.selectFrom('users').select('id').whereRef('users.id', '=', 'password_resets.user_id').where('users.disabled_at', 'is not', null)),
            ),
          )
          .returning('user_id')
          .executeTakeFirst();
        if (!taken) return undefined;
        await trx.updateTable('password_resets').set({ used_at: now }).where('user_id', '=', taken.user_id).where('used_at', 'is', null).execute();
        await trx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', taken.user_id).execute();
        const revoked = await trx
          .updateTable('sessions')
          .set({ revoked_at: now })
          .where('user_id', '=', taken.user_id)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', now)
          .executeTakeFirst();
        return { userId: taken.user_id, sessionsRevoked: Number(revoked.numUpdatedRows) };
      });
    },
  };
}
