import { LRUCache } from 'lru-cache';
import type { Context } from '#shared/context.js';
import { subscribeSubdomainNotices } from '#shared/subdomains/subdomain-notices.js';
import type { Repositories } from '../repositories.js';

/** How long an entry is served without a notice before it is re-read (in the background, stale meanwhile). */
const FRESH_MS = 60_000;
/** After a failed re-read (Postgres unreachable), how long the entry is served as it was before the next try. */
const REFRESH_RETRY_MS = 5_000;
/** Most subdomains held; the ones that list origins are read at start (one query). */
const MAX_ENTRIES = 100_000;

/** A subdomain's tracker origins as held: a set (empty: any site, or no such subdomain). */
type Entry = { origins: ReadonlySet<string> };
const ANY_SITE: Entry = { origins: new Set() };

export interface TrackerOrigins {
  /** The site origins the subdomain's tracker accepts (empty: any). From memory when held; one shared read on a miss. */
  of(subdomain: string): ReadonlySet<string> | Promise<ReadonlySet<string>>;
  close(): Promise<void>;
}

/**
 * The tracker origins of subdomains at an ingest node, kept as the link cache keeps links: bounded,
 * warmed at start with every subdomain that lists origins, re-read on a subdomain-change notice,
 * an entry older than `freshMs` served while it is re-read in the background (which bounds how long
 * a missed notice can matter), concurrent misses of one name sharing one Postgres read. So no
 * beacon waits for the database, except the first for a subdomain this node has not seen.
 */
export async function createTrackerOrigins(
  context: Pick<Context, 'cache' | 'log'> & { repositories: Pick<Repositories, 'subdomains'> },
  /** How long an entry is fresh (tests shorten it). */
  { freshMs = FRESH_MS }: { freshMs?: number } = {},
): Promise<TrackerOrigins> {
  const { subdomains } = context.repositories;
  const { log } = context;
  const cache = new LRUCache<string, Entry>({
    // Bounded by count through maxSize, not `max`: lru-cache preallocates its arrays for `max` entries
    // (about 4.5 MB for 100 000, resident on an idle ingest node); these grow with what is cached.
    maxSize: MAX_ENTRIES,
    sizeCalculation: () => 1,
    ttl: freshMs,
    allowStale: true,
    noDeleteOnStaleGet: true,
    // A notice that drops an entry aborts its read in flight. Without this, lru-cache rejects the
    // waiting beacons at once with the abort (they answered 500); with it, they get what the read
    // returns, and the cache keeps none of it (the entry was dropped, so the read no longer owns it).
    ignoreFetchAbort: true,
    fetchMethod: async (name, stale, { options }) => {
      let origins: string[] | undefined;
      try {
        origins = await subdomains.trackerOriginsOf(name);
      } catch (error) {
        // Postgres unreachable: what was held stays in force, re-read in REFRESH_RETRY_MS.
        if (stale === undefined) throw error;
        log.warn({ err: error, subdomain: name, retry_ms: REFRESH_RETRY_MS }, 'tracker origins refresh failed: the held list is served meanwhile');
        options.ttl = REFRESH_RETRY_MS;
        return stale;
      }
      // Aborted by a notice meanwhile: the callers waiting get what was read, the cache keeps nothing of it.
      return origins && origins.length > 0 ? { origins: new Set(origins) } : ANY_SITE;
    },
  });

  const refresh = (name: string, force: boolean) =>
    void cache.fetch(name, { forceRefresh: force }).catch((error: unknown) => log.warn({ err: error, subdomain: name }, 'tracker origins refresh failed'));
  const unsubscribe = await subscribeSubdomainNotices(context.cache, ({ name }) => {
    // Dropped first, so that a read in flight from before the change is not kept; read again at
    // once when it was held (one not held is read when a beacon first names it).
    const held = cache.peek(name, { allowStale: true });
    cache.delete(name);
    if (held) refresh(name, false);
  });

  const warm = await subdomains.withTrackerOrigins(MAX_ENTRIES);
  for (const row of warm) if (!cache.has(row.name)) cache.set(row.name, { origins: new Set(row.tracker_origins) });
  log.info({ subdomains: warm.length }, 'tracker origins warmed');

  return {
    of(subdomain) {
      const held = cache.get(subdomain);
      if (held !== undefined) {
        if (cache.getRemainingTTL(subdomain) <= 0) refresh(subdomain, true);
        return held.origins;
      }
      return cache.fetch(subdomain).then((entry) => (entry ?? ANY_SITE).origins);
    },
    async close() {
      await unsubscribe();
      cache.clear();
    },
  };
}
