import type { Kysely } from 'kysely';
import type { DB } from '#shared/db/schema.js';

/** SQL for sessions: the only place that queries the sessions table. */
export function sessionsRepository(db: Kysely<DB>) {
  return {
    async insert(session: { idHash: string; userId: string; ip: string; userAgent: string | null; expiresAt: Date }): Promise<void> {
      await db
        .insertInto('sessions')
        .values({ id_hash: session.idHash, user_id: session.userId, ip: session.ip, user_agent: session.userAgent, expires_at: session.expiresAt })
        .execute();
    },
    /** The live session with its user: not revoked, not expired. */
    async findLiveWithUser(idHash: string) {
      return db
        .selectFrom('sessions')
        .innerJoin('users', 'users.id', 'sessions.user_id')
        .select(['sessions.id_hash', 'sessions.expires_at', 'users.id as user_id', 'users.email', 'users.role'])
        .where('sessions.id_hash', '=', idHash)
        .where('sessions.revoked_at', 'is', null)
        .where('sessions.expires_at', '>', new Date())
        .executeTakeFirst();
    },
    async revoke(idHash: string): Promise<void> {
      await db.updateTable('sessions').set({ revoked_at: new Date() }).where('id_hash', '=', idHash).where('revoked_at', 'is', null).execute();
    },
  };
}
