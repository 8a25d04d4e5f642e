import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { DB, NotificationsTable, WebhookDeliveriesTable, WebhooksTable } from '../db/schema.js';
import { withoutUnstorable } from '../http/fields.js';
import type { SeqPageAt } from '../http/pagination.js';
import { pageBySeq } from '../db/paging.js';

export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type NotificationRow = Selectable<NotificationsTable>;

/** One attempt as the delivery log stores it. */
export interface DeliveryAttempt {
  webhook_id: string;
  delivery_id: string;
  event_id: string;
  event: string;
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  latency_ms: number;
  success: boolean;
  error: string | null;
  response_excerpt: string | null;
}

/** Text Postgres can store: no NUL, no lone surrogate, at most `max` characters. */
const storable = (text: string | null, max: number) => (text === null ? null : withoutUnstorable(text.slice(0, max)));

async function countOf(query: SelectQueryBuilder<DB, 'webhooks' | 'webhook_deliveries' | 'notifications', object>): Promise<number> {
  const row = await query.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export type WebhooksRepository = ReturnType<typeof webhooksRepository>;

/** SQL for webhooks, their delivery log and notifications: the only place that queries them. */
export function webhooksRepository(db: Kysely<DB>) {
  return {
    /** Inserts a webhook; its id comes from the caller, since the sealed secret is bound to it. */
    async insert(values: {
      id: string;
      owner_id: string;
      url: string;
      events: string[];
      subdomain: string | null;
      description: string | null;
      secret: string;
      secret_prefix: string;
    }): Promise<WebhookRow> {
      return db.insertInto('webhooks').values(values).returningAll().executeTakeFirstOrThrow();
    },
    async findById(id: string): Promise<WebhookRow | undefined> {
      return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async listByOwner(ownerId: string): Promise<WebhookRow[]> {
      return db.selectFrom('webhooks').selectAll().where('owner_id', '=', ownerId).orderBy('seq', 'desc').execute();
    },
    /**
     * The webhooks a user manages: their own, and those on subdomains given to a team where the user
     * is an admin or owner (a webhook on a subdomain belongs to the subdomain's owner).
     */
    async listManagedBy(userId: string): Promise<WebhookRow[]> {
      return db
        .selectFrom('webhooks')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb('owner_id', '=', userId),
            eb(
              'subdomain',
              'in',
              eb
                .selectFrom('subdomains')
                .innerJoin('team_members', 'team_members.team_id', 'subdomains.team_id')
                .select('subdomains.name')
                .where('team_members.user_id', '=', userId)
                .where('team_members.role', 'in', ['owner', 'admin'])
                .whereRef('subdomains.owner_id', '=', 'webhooks.owner_id'),
            ),
          ]),
        )
        .orderBy('seq', 'desc')
        .execute();
    },
    /** The enabled webhooks of some owners (the dispatcher's view). */
    async listEnabledByOwners(ownerIds: string[]): Promise<WebhookRow[]> {
      if (ownerIds.length === 0) return [];
      return db.selectFrom('webhooks').selectAll().where('owner_id', 'in', ownerIds).where('enabled', '=', true).execute();
    },
    async countByOwner(ownerId: string): Promise<number> {
      return countOf(db.selectFrom('webhooks').where('owner_id', '=', ownerId));
    },
    async update(
      id: string,
      changes: Partial<Pick<WebhookRow, 'url' | 'events' | 'subdomain' | 'description' | 'secret' | 'secret_prefix'>>,
    ): Promise<WebhookRow | undefined> {
      return db
        .updateTable('webhooks')
        .set({ ...changes, updated_at: new Date() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
    },
    async enable(id: string): Promise<WebhookRow | undefined> {
      return db
        .updateTable('webhooks')
        .set({ enabled: true, disabled_at: null, disabled_reason: null, updated_at: new Date() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
    },
    /** Disables an enabled webhook; undefined when it was already disabled (or gone), so one caller wins. */
    async disable(id: string, reason: string): Promise<WebhookRow | undefined> {
      return db
        .updateTable('webhooks')
        .set({ enabled: false, disabled_at: new Date(), disabled_reason: reason.slice(0, 500), updated_at: new Date() })
        .where('id', '=', id)
        .where('enabled', '=', true)
        .returningAll()
        .executeTakeFirst();
    },
    async delete(id: string): Promise<void> {
      await db.deleteFrom('webhooks').where('id', '=', id).execute();
    },
    /** A page, in id order after `afterId`, of the webhooks whose secret is not sealed with key `keyId` (plaintext, or another key). */
    async listSecretsNotSealedWith(keyId: string, afterId: string | undefined, limit: number): Promise<Pick<WebhookRow, 'id' | 'secret'>[]> {
      let query = db
        .selectFrom('webhooks')
        .select(['id', 'secret'])
        // Not LIKE: a key id may hold `_`, a LIKE wildcard.
        .where(sql<string>`left(secret, ${keyId.length + 4})`, '<>', `v1:${keyId}:`);
      if (afterId) query = query.where('id', '>', afterId);
      return query.orderBy('id').limit(limit).execute();
    },
    /** How many webhooks hold a secret not sealed with key `keyId`. */
    async countSecretsNotSealedWith(keyId: string): Promise<number> {
      return countOf(db.selectFrom('webhooks').where(sql<string>`left(secret, ${keyId.length + 4})`, '<>', `v1:${keyId}:`));
    },
    /** Replaces a webhook's stored secret if it still holds `from` (a rotation meanwhile wins); true when replaced. */
    async replaceSecret(id: string, from: string, to: string): Promise<boolean> {
      const result = await db.updateTable('webhooks').set({ secret: to }).where('id', '=', id).where('secret', '=', from).executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
    /**
     * Appends attempts to the delivery log in one statement. Attempts of a webhook deleted meanwhile
     * are skipped (its log went with it). With `skipRecorded` (rows written late, which an earlier
     * try may have stored before its connection was cut), an attempt already in the log (same
     * delivery, attempt and time) is skipped too: one probe of the attempted_at index a row.
     */
    async insertAttempts(attempts: DeliveryAttempt[], { skipRecorded = false }: { skipRecorded?: boolean } = {}): Promise<void> {
      if (attempts.length === 0) return;
      const recorded = skipRecorded
        ? sql`AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.attempted_at = r.attempted_at AND d.delivery_id = r.delivery_id AND d.attempt = r.attempt)`
        : sql``;
      const json = JSON.stringify(
        attempts.map((attempt) => ({ ...attempt, error: storable(attempt.error, 1000), response_excerpt: storable(attempt.response_excerpt, 1024) })),
      );
      await sql`
        INSERT INTO webhook_deliveries (webhook_id, delivery_id, event_id, event, attempt, attempted_at, status_code, latency_ms, success, error, response_excerpt)
        SELECT r.webhook_id, r.delivery_id, r.event_id, r.event, r.attempt, r.attempted_at, r.status_code, r.latency_ms, r.success, r.error, r.response_excerpt
        FROM jsonb_to_recordset(${json}::jsonb) AS r(webhook_id uuid, delivery_id uuid, event_id uuid, event text, attempt smallint, attempted_at timestamptz,
          status_code smallint, latency_ms integer, success boolean, error text, response_excerpt text)
        WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = r.webhook_id) ${recorded}`.execute(db);
    },
    /** A page of a webhook's delivery log, newest first. */
    async listAttempts(webhookId: string, limit: number, at: SeqPageAt): Promise<DeliveryRow[]> {
      return pageBySeq(db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId), limit, at).execute();
    },
    async countAttempts(webhookId: string): Promise<number> {
      return countOf(db.selectFrom('webhook_deliveries').where('webhook_id', '=', webhookId));
    },
    /**
     * Clears the kept response excerpt and error of delivery-log rows that contain any of `needles`
     * (a visitor's IP address or user agent: a receiver may echo the payload), of the webhooks of
     * `ownerId` (all when undefined). Answers the rows scrubbed.
     */
    async scrubAttempts(needles: string[], ownerId: string | undefined): Promise<number> {
      if (needles.length === 0) return 0;
      const patterns = needles.map((needle) => `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      let query = db
        .updateTable('webhook_deliveries')
        .set({ response_excerpt: null, error: null })
        .where((eb) => eb.or([eb('response_excerpt', 'like', eb.fn.any(eb.val(patterns))), eb('error', 'like', eb.fn.any(eb.val(patterns)))]));
      if (ownerId !== undefined) query = query.where('webhook_id', 'in', (eb) => eb.selectFrom('webhooks').select('id').where('owner_id', '=', ownerId));
      const result = await query.executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
    /**
     * Deletes at most `limit` delivery-log rows attempted before `cutoff`, oldest first; returns how
     * many. Rows another deleter holds are skipped, not waited for (two workers share the work).
     */
    async deleteAttemptsBefore(cutoff: Date, limit: number): Promise<number> {
      const result = await db
        .deleteFrom('webhook_deliveries')
        .where('seq', 'in', (eb) =>
          eb.selectFrom('webhook_deliveries').select('seq').where('attempted_at', '<', cutoff).orderBy('attempted_at').limit(limit).forUpdate().skipLocked(),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    async insertNotification(values: { user_id: string; kind: string; title: string; body: string; data: Record<string, unknown> }): Promise<NotificationRow> {
      return db
        .insertInto('notifications')
        .values({ ...values, data: JSON.stringify(values.data) })
        .returningAll()
        .executeTakeFirstOrThrow();
    },
    async markEmailed(id: string): Promise<void> {
      await db.updateTable('notifications').set({ emailed_at: new Date() }).where('id', '=', id).execute();
    },
    /** A page of an account's notifications (only the unread ones with `unreadOnly`), newest first. */
    async listNotifications(userId: string, limit: number, at: SeqPageAt, unreadOnly = false): Promise<NotificationRow[]> {
      let query = db.selectFrom('notifications').selectAll().where('user_id', '=', userId);
      if (unreadOnly) query = query.where('read_at', 'is', null);
      return pageBySeq(query, limit, at).execute();
    },
    async countNotifications(userId: string, unreadOnly = false): Promise<number> {
      let query = db.selectFrom('notifications').where('user_id', '=', userId);
      if (unreadOnly) query = query.where('read_at', 'is', null);
      return countOf(query);
    },
    async markNotificationRead(userId: string, id: string): Promise<NotificationRow | undefined> {
      await db
        .updateTable('notifications')
        .set({ read_at: new Date() })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .where('read_at', 'is', null)
        .execute();
      return db.selectFrom('notifications').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    },
    /** Marks every unread notification of an account read; returns how many were unread. */
    async markAllNotificationsRead(userId: string): Promise<number> {
      const result = await db
        .updateTable('notifications')
        .set({ read_at: new Date() })
        .where('user_id', '=', userId)
        .where('read_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}
