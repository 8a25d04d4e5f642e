import { sql, type Kysely } from 'kysely';
import type { DB } from '#shared/db/schema.js';

/** A session as its owner's list shows it. */
export interface SessionRow {
  id: string;
  ip: string | null;
  user_agent: string | null;
  created_at: Date;
  last_seen_at: Date | null;
  expires_at: Date;
  current: boolean;
}

/** SQL for sessions: the only place that queries the sessions table. */
export function sessionsRepository(db: Kysely<DB>) {
  return {
    async insert(session: { idHash: string; userId: string; ip: string; userAgent: string | null; expiresAt: Date }): Promise<void> {
      await db
        .insertInto('sessions')
        .values({
          id_hash: session.idHash,
          user_id: session.userId,
          ip: session.ip,
          user_agent: session.userAgent,
          expires_at: session.expiresAt,
        })
        .execute();
    },
    /** The live session with its user: not revoked, not expired (`disabled_at` set: the account is disabled). */
    async findLiveWithUser(idHash: string) {
      return db
        .selectFrom('sessions')
        .innerJoin('users', 'users.id', 'sessions.user_id')
        .select(['sessions.id_hash', 'sessions.expires_at', 'sessions.last_seen_at', 'users.id as user_id', 'users.email', 'users.role', 'users.disabled_at'])
        .where('sessions.id_hash', '=', idHash)
        .where('sessions.revoked_at', 'is', null)
        .where('sessions.expires_at', '>', new Date())
        .executeTakeFirst();
    },
    /** Records that the session was used now. */
    async touch(idHash: string, at: Date): Promise<void> {
      await db.updateTable('sessions').set({ last_seen_at: at }).where('id_hash', '=', idHash).execute();
    },
    async revoke(idHash: string): Promise<void> {
      await db.updateTable('sessions').set({ revoked_at: new Date() }).where('id_hash', '=', idHash).where('revoked_at', 'is', null).execute();
    },
    /** The account's live sessions, most recently used first; `current` marks the one whose secret hashes to `currentHash`. */
    async listLive(userId: string, currentHash: string | undefined): Promise<SessionRow[]> {
      return db
        .selectFrom('sessions')
        .select([
          'id',
          'ip',
          'user_agent',
          'created_at',
          'last_seen_at',
          'expires_at',
          sql<boolean>`coalesce(id_hash = ${currentHash ?? null}, false)`.as('current'),
        ])
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', new Date())
        .orderBy(sql`coalesce(last_seen_at, created_at)`, 'desc')
        .orderBy('id')
        .execute();
    },
    /**
     * Revokes one live session of the account by its public id; answers the hash of the revoked
     * session's secret, or undefined when the account has no such live session (another account's
     * id included).
     */
    async revokeOwn(userId: string, id: string): Promise<string | undefined> {
      const row = await db
        .updateTable('sessions')
        .set({ revoked_at: new Date() })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', new Date())
        .returning('id_hash')
        .executeTakeFirst();
      return row?.id_hash;
    },
    /** Revokes every live session of the account but `exceptHash`'s (none spared without it); answers how many. */
    async revokeAllOf(userId: string, exceptHash?: string): Promise<number> {
      let query = db
        .updateTable('sessions')
        .set({ revoked_at: new Date() })
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', new Date());
      if (exceptHash) query = query.where('id_hash', '!=', exceptHash);
      const result = await query.executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}
