import { sql, type Kysely } from 'kysely';
import type { DB } from '#shared/db/schema.js';

/** An account's TOTP as stored: the sealed secret, whether it is enabled, the last accepted time-step. */
export interface TotpRow {
  user_id: string;
  secret: string;
  created_at: Date;
  enabled_at: Date | null;
  last_step: number | null;
}

/** The live challenge of a sign-in's second step, with its account. */
export interface ChallengeRow {
  user_id: string;
  email: string;
  expires_at: Date;
}

/** SQL for two-factor sign-in: TOTP secrets, recovery codes and sign-in challenges. */
export function totpRepository(db: Kysely<DB>) {
  return {
    async find(userId: string): Promise<TotpRow | undefined> {
      const row = await db.selectFrom('user_totp').selectAll().where('user_id', '=', userId).executeTakeFirst();
      return row && { ...row, last_step: row.last_step === null ? null : Number(row.last_step) };
    },
    /** Starts (or starts again) an enrolment: a pending secret, not enabled; refused (false) while TOTP is enabled. */
    async startEnrolment(userId: string, sealedSecret: string): Promise<boolean> {
      const row = await db
        .insertInto('user_totp')
        .values({ user_id: userId, secret: sealedSecret })
        .onConflict((conflict) => conflict.column('user_id').doUpdateSet({ secret: sealedSecret, last_step: null }).where('user_totp.enabled_at', 'is', null))
        .returning('user_id')
        .executeTakeFirst();
      return row !== undefined;
    },
    /**
     * Enables a pending enrolment whose first code was accepted at `step`, with its recovery codes
     * (replacing any left from before); false when it is no longer pending (a parallel confirm).
     */
    async enable(userId: string, step: number, codeHashes: string[]): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .updateTable('user_totp')
          .set({ enabled_at: new Date(), last_step: step })
          .where('user_id', '=', userId)
          .where('enabled_at', 'is', null)
          .returning('user_id')
          .executeTakeFirst();
        if (!row) return false;
        await trx.deleteFrom('totp_recovery_codes').where('user_id', '=', userId).execute();
        await trx
          .insertInto('totp_recovery_codes')
          .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash })))
          .execute();
        return true;
      });
    },
    /**
     * Takes the time-step of an accepted code: true when it is later than every step taken before
     * for this account (so a code is never accepted twice, nor an older one after a newer), atomically.
     */
    async takeStep(userId: string, step: number): Promise<boolean> {
      const row = await db
        .updateTable('user_totp')
        .set({ last_step: step })
        .where('user_id', '=', userId)
        .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', String(step))]))
        .returning('user_id')
        .executeTakeFirst();
      return row !== undefined;
    },
    /** Spends an unused recovery code of the account, atomically: false when unknown or used. */
    async useRecoveryCode(userId: string, codeHash: string): Promise<boolean> {
      const row = await db
        .updateTable('totp_recovery_codes')
        .set({ used_at: new Date() })
        .where('user_id', '=', userId)
        .where('code_hash', '=', codeHash)
        .where('used_at', 'is', null)
        .returning('user_id')
        .executeTakeFirst();
      return row !== undefined;
    },
    async countRecoveryCodesLeft(userId: string): Promise<number> {
      const row = await db
        .selectFrom('totp_recovery_codes')
        .select((eb) => eb.fn.countAll<string>().as('left'))
        .where('user_id', '=', userId)
        .where('used_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(row.left);
    },
    /** Replaces the account's recovery codes. */
    async replaceRecoveryCodes(userId: string, codeHashes: string[]): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('totp_recovery_codes').where('user_id', '=', userId).execute();
        await trx
          .insertInto('totp_recovery_codes')
          .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash })))
          .execute();
      });
    },
    /** Removes the account's TOTP, pending or enabled, with its recovery codes and open challenges; answers whether it had one. */
    async remove(userId: string): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const row = await trx.deleteFrom('user_totp').where('user_id', '=', userId).returning('user_id').executeTakeFirst();
        await trx.deleteFrom('totp_recovery_codes').where('user_id', '=', userId).execute();
        await trx.deleteFrom('login_challenges').where('user_id', '=', userId).execute();
        return row !== undefined;
      });
    },
    /** Whether the account signs in with TOTP (enrolment confirmed). */
    async isEnabled(userId: string): Promise<boolean> {
      const row = await db.selectFrom('user_totp').select('user_id').where('user_id', '=', userId).where('enabled_at', 'is not', null).executeTakeFirst();
      return row !== undefined;
    },
    /** Stores a new sign-in challenge, dropping the account's spent and expired ones. */
    async insertChallenge(challenge: { idHash: string; userId: string; expiresAt: Date }): Promise<void> {
      await db
        .deleteFrom('login_challenges')
        .where('user_id', '=', challenge.userId)
        .where((eb) => eb.or([eb('expires_at', '<=', new Date()), eb('used_at', 'is not', null)]))
        .execute();
      await db.insertInto('login_challenges').values({ id_hash: challenge.idHash, user_id: challenge.userId, expires_at: challenge.expiresAt }).execute();
    },
    /** The live (unused, unexpired) challenge with its account, or undefined. */
    async findLiveChallenge(idHash: string): Promise<ChallengeRow | undefined> {
      return db
        .selectFrom('login_challenges')
        .innerJoin('users', 'users.id', 'login_challenges.user_id')
        .select(['login_challenges.user_id', 'users.email', 'login_challenges.expires_at'])
        .where('login_challenges.id_hash', '=', idHash)
        .where('login_challenges.used_at', 'is', null)
        .where('login_challenges.expires_at', '>', new Date())
        .executeTakeFirst();
    },
    /** Spends a live challenge, atomically: false when it was used (by a parallel request) or expired meanwhile. */
    async spendChallenge(idHash: string): Promise<boolean> {
      const row = await db
        .updateTable('login_challenges')
        .set({ used_at: new Date() })
        .where('id_hash', '=', idHash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', new Date())
        .returning('id_hash')
        .executeTakeFirst();
      return row !== undefined;
    },
    /** Sealed secrets not sealed with `keyId`, in user-id order after `after`: what a key rotation re-seals. */
    async listSecretsNotSealedWith(keyId: string, after: string | undefined, limit: number): Promise<{ user_id: string; secret: string }[]> {
      let query = db
        .selectFrom('user_totp')
        .select(['user_id', 'secret'])
        // Not LIKE: a key id may hold `_`, a LIKE wildcard.
        .where(sql<string>`left(secret, ${keyId.length + 4})`, '<>', `v1:${keyId}:`)
        .orderBy('user_id')
        .limit(limit);
      if (after) query = query.where('user_id', '>', after);
      return query.execute();
    },
    async countSecretsNotSealedWith(keyId: string): Promise<number> {
      const row = await db
        .selectFrom('user_totp')
        .select((eb) => eb.fn.countAll<string>().as('count'))
        .where(sql<string>`left(secret, ${keyId.length + 4})`, '<>', `v1:${keyId}:`)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },
    /** Replaces a secret only if it still holds the value read (a parallel enrolment wins). */
    async replaceSecret(userId: string, previous: string, next: string): Promise<boolean> {
      const row = await db
        .updateTable('user_totp')
        .set({ secret: next })
        .where('user_id', '=', userId)
        .where('secret', '=', previous)
        .returning('user_id')
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type TotpRepository = ReturnType<typeof totpRepository>;
