import type { Context } from '../context.js';
import type { PlatformEvent } from '../events/events.js';
import { isUuid } from '../ids.js';
import { WEBHOOKS_VERSION_KEY } from './delivery.js';
import type { WebhookRow, WebhooksRepository } from './webhooks.repository.js';

/** How long a cached webhook record is used without reading the version key's change. */
const CACHE_TTL_MS = 30_000;
/**
 * Webhook records cached per owner, valid under the current WEBHOOKS_VERSION_KEY (every change
 * bumps it, on every node) and for CACHE_TTL_MS at most. The webhook dispatcher reads it per batch
 * of events and per delivery; the enricher per batch of visits, to raise visit events only for
 * owners with a webhook subscribed to them.
 */
export type WebhookCache = ReturnType<typeof webhookCache>;

/** One per process: services/platform.ts hands the same cache to the enricher and the webhook worker. */
export function webhookCache({ webhooks: repository, cache }: { webhooks: WebhooksRepository } & Pick<Context, 'cache'>) {
  const byOwner = new Map<string, { rows: WebhookRow[]; version: number; at: number }>();
  // Deliveries that start while a read of the version is on its way share it: at thousands of
  // deliveries a second, one Redis GET each was a round trip and a command per delivery. Here, not
  // in Cache.read: a request authenticated after a token's revocation must not join a read sent
  // before it, while a delivery may (it was queued before anyway).
  let reading: Promise<number> | undefined;
  const version = (): number | Promise<number> => {
    if (reading) return reading;
    const value = cache.read(WEBHOOKS_VERSION_KEY);
    if (typeof value === 'number') return value;
    reading = value.finally(() => (reading = undefined));
    return reading;
  };
  return {
    /** The enabled webhooks of each owner. */
    async enabledOf(ownerIds: string[]): Promise<Map<string, WebhookRow[]>> {
      const current = await version();
      const now = Date.now();
      const missing = ownerIds.filter((owner) => {
        const hit = byOwner.get(owner);
        return !hit || hit.version !== current || now - hit.at >= CACHE_TTL_MS;
      });
      if (missing.length > 0) {
        // An owner id that is not a UUID (a visit of no user's, a message keyed otherwise) has no
        // webhook, and Postgres would refuse the whole lookup over it.
        const rows = await repository.listEnabledByOwners(missing.filter(isUuid));
        if (byOwner.size > 50_000) byOwner.clear();
        for (const owner of missing) byOwner.set(owner, { rows: [], version: current, at: now });
        for (const row of rows) byOwner.get(row.owner_id)!.rows.push(row);
      }
      return new Map(ownerIds.map((owner) => [owner, byOwner.get(owner)!.rows]));
    },
    /** The current record of a webhook (undefined once deleted). */
    async get(id: string, ownerId: string): Promise<WebhookRow | undefined> {
      const current = await version();
      const hit = byOwner.get(ownerId);
      if (hit && hit.version === current && Date.now() - hit.at < CACHE_TTL_MS) {
        const row = hit.rows.find((candidate) => candidate.id === id);
        if (row) return row;
      }
      return repository.findById(id);
    },
  };
}

/** Which of an owner's webhooks receive an event: subscribed to its type, and of its subdomain when they name one. */
export function matches(webhook: Pick<WebhookRow, 'events' | 'subdomain'>, event: Pick<PlatformEvent, 'type' | 'subdomain'>): boolean {
  return webhook.events.includes(event.type) && (webhook.subdomain === null || webhook.subdomain === event.subdomain);
}
