import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { canManage, type Principal } from '#shared/http/auth.js';
import { seqPage, type Paging } from '#shared/http/pagination.js';
import { GuardRefusal, checkSubscription } from '#shared/webhooks/guard.js';
import { WEBHOOKS_VERSION_KEY, createDeliverer, type WebhookEvent } from '#shared/webhooks/delivery.js';
import type { DeliveryAttempt, DeliveryRow, NotificationRow, WebhookRow } from '#shared/webhooks/webhooks.repository.js';
import { webhookSecrets } from '#shared/webhooks/secrets.js';
import type { Repositories } from '#services/repositories.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';

/** Webhooks one account may have. */
export const MAX_WEBHOOKS_PER_ACCOUNT = 25;

/** A webhook as its owner sees it: never the secret (only at creation and rotation). */
export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  subdomain: string | null;
  description: string | null;
  secret_prefix: string;
  enabled: boolean;
  disabled_at: string | null;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** One attempt of the delivery log as the API answers it: the stored attempt, with its row id and without its webhook's. */
export interface DeliveryView extends Omit<DeliveryAttempt, 'webhook_id'> {
  id: string;
}

export const toWebhookView = (row: WebhookRow): WebhookView => ({
  id: row.id,
  url: row.url,
  events: row.events,
  subdomain: row.subdomain,
  description: row.description,
  secret_prefix: row.secret_prefix,
  enabled: row.enabled,
  disabled_at: row.disabled_at?.toISOString() ?? null,
  disabled_reason: row.disabled_reason,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

const toDeliveryView = (row: DeliveryRow): DeliveryView => ({
  // A bigint column: Postgres (pg) reads it as a string, PGlite as a number (a BigInt past 2^53),
  // whatever the row type says; the API answers a string on both, as WebhookDelivery documents.
  id: String(row.seq),
  delivery_id: row.delivery_id,
  event: row.event,
  event_id: row.event_id,
  attempt: row.attempt,
  attempted_at: row.attempted_at.toISOString(),
  status_code: row.status_code,
  latency_ms: row.latency_ms,
  success: row.success,
  error: row.error,
  response_excerpt: row.response_excerpt,
});

const toNotificationView = (row: NotificationRow) => ({
  id: row.id,
  kind: row.kind,
  title: row.title,
  body: row.body,
  data: row.data,
  created_at: row.created_at.toISOString(),
  read_at: row.read_at?.toISOString() ?? null,
  emailed_at: row.emailed_at?.toISOString() ?? null,
});

export interface NewWebhookInput {
  url: string;
  events: WebhookEvent[];
  subdomain?: string | null;
  description?: string | null;
}

export interface WebhookChanges extends Partial<NewWebhookInput> {
  enabled?: boolean;
}

export type WebhooksService = ReturnType<typeof webhooksService>;

/** Webhook rules: the owner's subscriptions, their secrets, the test button and the delivery log. */
export function webhooksService(
  deps: Pick<Context, 'config' | 'cache' | 'secrets' | 'metrics'> & { repositories: Pick<Repositories, 'webhooks' | 'audit'>; subdomains: SubdomainsService },
) {
  const { config, cache, subdomains } = deps;
  const { webhooks, audit: audits } = deps.repositories;
  // The test button's attempts are logged through the same repository.
  const deliverer = createDeliverer({ webhooks, secrets: deps.secrets, config, metrics: deps.metrics });
  const secrets = webhookSecrets(deps.secrets);

  /**
   * The URL after the SSRF guard. A refusal is 403 `forbidden` (reason `destination_not_allowed`,
   * the guard's reason in `details.url`): the URL is well formed (the schema checked it), but the
   * platform does not deliver there. A host that does not resolve yet is accepted.
   */
  const guarded = async (url: string): Promise<string> => {
    try {
      return (await checkSubscription(url, { allowlist: config.webhooks.allowlist })).toString();
    } catch (error) {
      if (error instanceof GuardRefusal) {
        throw new AppError(
          'forbidden',
          { reason: 'destination_not_allowed', url: error.message },
          { messageKey: 'error.forbidden.destination_not_allowed', params: { reason: error.message } },
        );
      }
      throw error;
    }
  };

  /**
   * A subdomain filter: a subdomain the webhook's owner has (404 unknown, 403 someone else's). Only
   * the owner lifts the filter: a team's admin would otherwise reach every subdomain of the owner's.
   */
  const subdomainOf = async (principal: Principal, ownerId: string, name: string | null | undefined): Promise<string | null> => {
    if (name === undefined || name === null) {
      if (!canManage(principal, ownerId)) throw new AppError('not_owner', { user: ownerId });
      return null;
    }
    const row = await subdomains.managed(principal, name, 'admin');
    if (row.owner_id !== ownerId) throw new AppError('not_owner', { subdomain: name });
    return row.name;
  };

  /**
   * Its owner (or staff) manages a webhook; one on a subdomain given to a team, the team's admins
   * and owners too, with their role read at each request (editors and viewers: 403 team_role_too_low).
   */
  const managed = async (principal: Principal, id: string): Promise<WebhookRow> => {
    const row = await webhooks.findById(id);
    if (!row) throw new AppError('not_found', { webhook: id });
    if (canManage(principal, row.owner_id)) return row;
    if (row.subdomain === null) throw new AppError('not_owner', { webhook: id });
    const subdomain = await subdomains.managed(principal, row.subdomain, 'admin').catch((error: unknown) => {
      if (error instanceof AppError && error.code === 'not_found') throw new AppError('not_owner', { webhook: id });
      throw error;
    });
    if (subdomain.owner_id !== row.owner_id) throw new AppError('not_owner', { webhook: id });
    return row;
  };

  /** Every change is seen by the dispatchers and deliverers of every node before the answer leaves. */
  const changed = () => cache.bump(WEBHOOKS_VERSION_KEY);

  const audit = (principal: Principal, action: string, webhookId: string, ip: string, details: Record<string, unknown> = {}) =>
    audits.insert({ action, actorId: principal.userId, target: webhookId, ip, details });

  return {
    async create(principal: Principal, input: NewWebhookInput, ip: string): Promise<WebhookView & { secret: string }> {
      // On a subdomain (the caller's, or a team's where the caller is an admin or owner) the webhook is the
      // subdomain owner's, as its links are: it outlives its creator's membership and the team's admins manage it.
      const target = input.subdomain ? await subdomains.managed(principal, input.subdomain, 'admin') : undefined;
      const ownerId = target?.owner_id ?? principal.userId;
      if ((await webhooks.countByOwner(ownerId)) >= MAX_WEBHOOKS_PER_ACCOUNT) {
        throw new AppError('forbidden', { reason: 'limit_reached', limit: MAX_WEBHOOKS_PER_ACCOUNT, hint: 'delete a webhook first' });
      }
      const url = await guarded(input.url);
      const subdomain = target?.name ?? null;
      // The id is chosen here: the sealed secret is bound to it.
      const id = randomUUID();
      const { secret, columns } = secrets.issue(id);
      const row = await webhooks.insert({
        id,
        owner_id: ownerId,
        url,
        events: [...new Set(input.events)],
        subdomain,
        description: input.description ?? null,
        ...columns,
      });
      await changed();
      await audit(principal, 'webhook.create', row.id, ip, { url, events: row.events });
      return { ...toWebhookView(row), secret };
    },
    async list(principal: Principal): Promise<WebhookView[]> {
      return (await webhooks.listManagedBy(principal.userId)).map(toWebhookView);
    },
    async get(principal: Principal, id: string): Promise<WebhookView> {
      return toWebhookView(await managed(principal, id));
    },
    async update(principal: Principal, id: string, changes: WebhookChanges, ip: string): Promise<WebhookView> {
      const current = await managed(principal, id);
      const set: Parameters<typeof webhooks.update>[1] = {};
      if (changes.url !== undefined) set.url = await guarded(changes.url);
      if (changes.events !== undefined) set.events = [...new Set(changes.events)];
      if (changes.subdomain !== undefined) set.subdomain = await subdomainOf(principal, current.owner_id, changes.subdomain);
      if (changes.description !== undefined) set.description = changes.description;
      let row = Object.keys(set).length > 0 ? await webhooks.update(id, set) : current;
      if (!row) throw new AppError('not_found', { webhook: id });
      if (changes.enabled === true && !row.enabled) row = (await webhooks.enable(id)) ?? row;
      if (changes.enabled === false && row.enabled) row = (await webhooks.disable(id, 'disabled by its owner')) ?? row;
      await changed();
      await audit(principal, 'webhook.update', id, ip, { fields: Object.keys(changes) });
      return toWebhookView(row);
    },
    async remove(principal: Principal, id: string, ip: string): Promise<WebhookView> {
      const row = await managed(principal, id);
      await webhooks.delete(id);
      await changed();
      await audit(principal, 'webhook.delete', id, ip, { url: row.url });
      return toWebhookView(row);
    },
    async rotateSecret(principal: Principal, id: string, ip: string): Promise<WebhookView & { secret: string }> {
      await managed(principal, id);
      const { secret, columns } = secrets.issue(id);
      const row = await webhooks.update(id, columns);
      if (!row) throw new AppError('not_found', { webhook: id });
      await changed();
      await audit(principal, 'webhook.rotate_secret', id, ip);
      return { ...toWebhookView(row), secret };
    },
    async enable(principal: Principal, id: string, ip: string): Promise<WebhookView> {
      await managed(principal, id);
      const row = await webhooks.enable(id);
      if (!row) throw new AppError('not_found', { webhook: id });
      await changed();
      await audit(principal, 'webhook.enable', id, ip);
      return toWebhookView(row);
    },
    /** Sends `webhook.test` now, whatever the subscription and whether enabled; one attempt, logged, never retried. */
    async test(principal: Principal, id: string): Promise<Omit<DeliveryView, 'id'>> {
      const row = await managed(principal, id);
      const event = {
        id: uuidv7(),
        type: 'webhook.test' as const,
        occurred_at: new Date().toISOString(),
        subdomain: row.subdomain,
        data: { webhook_id: row.id, url: row.url, message: 'A test delivery, sent on request. Verify its signature as you would any other.' },
      };
      const { webhook_id: _webhook, ...attempt } = await deliverer.attempt(row, event, randomUUID(), 1);
      return attempt;
    },
    async deliveries(principal: Principal, id: string, paging: Paging) {
      const row = await managed(principal, id);
      const page = await seqPage(
        paging,
        (limit, at) => webhooks.listAttempts(row.id, limit, at),
        () => webhooks.countAttempts(row.id),
      );
      return { deliveries: page.items.map(toDeliveryView), meta: page.meta };
    },
    async notifications(principal: Principal, paging: Paging & { unread?: boolean }) {
      const unreadOnly = paging.unread === true;
      const counted = webhooks.countNotifications(principal.userId, true);
      // The unread count is the filtered list's total too: counted once.
      const [page, unread] = await Promise.all([
        seqPage(
          paging,
          (limit, at) => webhooks.listNotifications(principal.userId, limit, at, unreadOnly),
          () => (unreadOnly ? counted : webhooks.countNotifications(principal.userId)),
        ),
        counted,
      ]);
      return { notifications: page.items.map(toNotificationView), meta: { ...page.meta, unread } };
    },
    async markRead(principal: Principal, id: string) {
      const row = await webhooks.markNotificationRead(principal.userId, id);
      if (!row) throw new AppError('not_found', { notification: id });
      return toNotificationView(row);
    },
    /** Marks all the caller's notifications read, not only a loaded page: the badge counts them all. */
    async markAllRead(principal: Principal) {
      return { marked: await webhooks.markAllNotificationsRead(principal.userId) };
    },
  };
}
