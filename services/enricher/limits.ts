import { LRUCache } from 'lru-cache';
import type { Context } from '#shared/context.js';
import type { EventDraft } from '#shared/events/events.js';
import { publishLinkNotice, subscribeLinkNotices, toRedirectLink } from '#shared/links/link-notices.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import type { Repositories } from '../repositories.js';

/** What the limit check needs of a link: its limit, and whether it was already reached. */
interface Limit {
  maxVisits: number | null;
  reached: boolean;
}

/** How long a link's limit is trusted without a notice. */
const LIMIT_TTL_MS = 60_000;

/**
 * `max_visits`: after a batch is stored, links of the batch that have a limit and have not reached
 * it get their people's visits counted in ClickHouse; the batch that reaches the limit marks the
 * link in Postgres (once: the first enricher to mark it wins), announces the change to every
 * ingest node (the link stops redirecting) and raises `link.limit_reached`.
 */
export async function limitWatcher(context: Pick<Context, 'cache' | 'log' | 'metrics'> & { repositories: Pick<Repositories, 'links' | 'visits'> }) {
  const { links, visits: visitRows } = context.repositories;
  const limits = new LRUCache<string, Limit>({ max: 100_000, ttl: LIMIT_TTL_MS });
  const unsubscribe = await subscribeLinkNotices(context.cache, (notice) => {
    limits.set(notice.link.id, { maxVisits: notice.link.max_visits, reached: notice.link.limit_reached || notice.kind === 'delete' });
  });

  const limitOf = async (linkId: string): Promise<Limit> => {
    const held = limits.get(linkId);
    if (held) return held;
    const row = await links.findById(linkId);
    const limit = { maxVisits: row?.max_visits ?? null, reached: !row || row.deleted_at !== null || row.limit_reached_at !== null };
    limits.set(linkId, limit);
    return limit;
  };

  /**
   * Links this enricher marked whose link.limit_reached is not known to be published: a batch that
   * failed after the mark (its events not published) is redelivered, finds the link marked, and
   * raises the event again, with the same stable id.
   */
  const unannounced = new Set<string>();

  return {
    /**
     * The link.limit_reached events of a stored batch (the links are marked and announced first);
     * `announced` is told once they are published.
     */
    async check(stored: RawVisit[]): Promise<EventDraft[]> {
      // The last visit of each link in the batch (the one named if the batch reaches the limit).
      const lastOf = new Map<string, RawVisit>();
      for (const visit of stored) if (visit.link_id) lastOf.set(visit.link_id, visit);
      const watched: { linkId: string; maxVisits: number }[] = [];
      for (const linkId of lastOf.keys()) {
        const limit = await limitOf(linkId);
        if (limit.maxVisits !== null && (!limit.reached || unannounced.has(linkId))) watched.push({ linkId, maxVisits: limit.maxVisits });
      }
      if (watched.length === 0) return [];
      const counts = await visitRows.visitCounts(watched.map((entry) => entry.linkId));
      const events = [];
      for (const { linkId, maxVisits } of watched) {
        const visits = counts.get(linkId) ?? 0;
        if (visits < maxVisits) continue;
        // Marked now, or marked by this enricher before and not announced; marked by another enricher: its event.
        const row = (await links.markLimitReached(linkId)) ?? (unannounced.has(linkId) ? await links.findById(linkId) : undefined);
        limits.set(linkId, { maxVisits, reached: true });
        if (!row?.limit_reached_at || row.deleted_at !== null) {
          unannounced.delete(linkId);
          continue;
        }
        unannounced.add(linkId);
        await publishLinkNotice(context, { kind: 'upsert', link: toRedirectLink(row) });
        const last = lastOf.get(linkId)!;
        events.push({
          type: 'link.limit_reached' as const,
          ownerId: row.owner_id,
          subdomain: row.subdomain,
          origin: { key: row.id, at: row.limit_reached_at.getTime() },
          data: {
            link_id: row.id,
            slug: row.slug,
            subdomain: row.subdomain,
            max_visits: maxVisits,
            visits,
            visit_id: last.visit_id,
            reached_at: row.limit_reached_at.toISOString(),
          },
        });
      }
      return events;
    },
    /** The events of `check` were published. */
    announced(events: EventDraft[]) {
      for (const event of events) if (event.type === 'link.limit_reached') unannounced.delete((event.data as { link_id: string }).link_id);
    },
    close: unsubscribe,
  };
}
