import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

export interface AuditEntry {
  action: string;
  actorId?: string | null;
  target?: string | null;
  ip?: string | null;
  details?: Record<string, unknown>;
}

/** SQL for the audit log: the only place that writes (and prunes) audit_log. */
export function auditRepository(db: Kysely<DB>) {
  return {
    async insert(entry: AuditEntry): Promise<void> {
      await db
        .insertInto('audit_log')
        .values({
          actor_id: entry.actorId ?? null,
          action: entry.action,
          target: entry.target ?? null,
          ip: entry.ip ?? null,
          details: JSON.stringify(entry.details ?? {}),
        })
        .execute();
    },
    async list(filter: { action?: string; actorId?: string; limit?: number }) {
      let query = db
        .selectFrom('audit_log')
        .selectAll()
        .orderBy('created_at', 'desc')
        .limit(filter.limit ?? 100);
      if (filter.action) query = query.where('action', '=', filter.action);
      if (filter.actorId) query = query.where('actor_id', '=', filter.actorId);
      return query.execute();
    },
    /** The newest entries about one target (a team's id for `team.*`), with the actor's address when the account still exists. */
    async listForTarget(target: string, limit = 1000) {
      return db
        .selectFrom('audit_log')
        .leftJoin('users', 'users.id', 'audit_log.actor_id')
        .select(['audit_log.id', 'audit_log.action', 'audit_log.actor_id', 'users.email as actor_email', 'audit_log.details', 'audit_log.created_at'])
        .where('audit_log.target', '=', target)
        .orderBy('audit_log.created_at', 'desc')
        .limit(limit)
        .execute();
    },
    /**
     * The newest entries an account made or that are about it (its id as the target: what staff did
     * to it), with the actor's address while that account exists, the target and the IP address.
     */
    async listForAccount(userId: string, limit = 1000) {
      return db
        .selectFrom('audit_log')
        .leftJoin('users', 'users.id', 'audit_log.actor_id')
        .select([
          'audit_log.id',
          'audit_log.action',
          'audit_log.actor_id',
          'users.email as actor_email',
          'audit_log.target',
          'audit_log.ip',
          'audit_log.details',
          'audit_log.created_at',
        ])
        .where((eb) => eb.or([eb('audit_log.target', '=', userId), eb('audit_log.actor_id', '=', userId)]))
        .orderBy('audit_log.created_at', 'desc')
        .limit(limit)
        .execute();
    },
    /**
     * Deletes at most `limit` entries made before `cutoff`, oldest first; returns how many. Rows
     * another deleter holds are skipped, not waited for (two workers share the work).
     */
    async deleteBefore(cutoff: Date, limit: number): Promise<number> {
      const result = await db
        .deleteFrom('audit_log')
        .where('id', 'in', (eb) =>
          eb.selectFrom('audit_log').select('id').where('created_at', '<', cutoff).orderBy('created_at').limit(limit).forUpdate().skipLocked(),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
