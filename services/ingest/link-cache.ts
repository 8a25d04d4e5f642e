import { LRUCache } from 'lru-cache';
import type { Context } from '#shared/context.js';
import { counterChildren } from '#shared/metrics.js';
import { subscribeLinkNotices, toRedirectLink, type LinkNotice, type RedirectLink } from '#shared/links/link-notices.js';
import type { Repositories } from '../repositories.js';

/** How long an entry is served without a notice before it is re-read (in the background, stale meanwhile). */
const FRESH_MS = 60_000;
/** How long "no such link" is remembered: a new link is announced by a notice anyway. */
const NEGATIVE_MS = 5_000;
/** After a failed re-read (Postgres unreachable), how long the entry is served as it was before the next try. */
const REFRESH_RETRY_MS = 5_000;
/** Most links read (newest first, one query) to warm the cache at start. */
const WARM_MAX = 100_000;

/**
 * A cached answer: the link, or null for "no live link with that slug"; `version` is the link
 * version it reflects (0 when read as absent), so an out-of-order notice cannot undo a newer one.
 */
type Entry = { link: RedirectLink | null; version: number };

export interface LinkCache {
  /** The live link for `subdomain/slug`, or null. From memory when held; one shared load on a miss. */
  lookup(subdomain: string, slug: string): RedirectLink | null | Promise<RedirectLink | null>;
  close(): Promise<void>;
}

const keyOf = (subdomain: string, slug: string) => `${subdomain}/${slug}`;

/**
 * The redirect cache of an ingest node: bounded (LINK_CACHE_SIZE, least recently used out),
 * warmed with the newest live links, kept fresh by link-change notices (applied in the order they
 * were published), with concurrent misses for one key sharing one Postgres read and negative
 * answers kept NEGATIVE_MS. An entry older than FRESH_MS without a notice is served while it is
 * re-read in the background, which bounds how long a missed notice (a Redis reconnect) can matter.
 */
export async function createLinkCache(
  context: Pick<Context, 'config' | 'cache' | 'metrics' | 'log'> & { repositories: Pick<Repositories, 'links'> },
  /** How long an entry is fresh, and how long after a failed re-read it is tried again (tests shorten them). */
  { freshMs = FRESH_MS, refreshRetryMs = REFRESH_RETRY_MS }: { freshMs?: number; refreshRetryMs?: number } = {},
): Promise<LinkCache> {
  const { links } = context.repositories;
  const { metrics, log } = context;
  const outcome = counterChildren(metrics.linkCache, 'outcome');
  const [hits, negatives, misses] = [outcome('hit'), outcome('negative'), outcome('miss')];
  const cache = new LRUCache<string, Entry>({
    // Bounded by count through maxSize, not `max`: lru-cache preallocates its arrays for `max` entries
    // (about 4.5 MB for 100 000, resident on an idle ingest node); these grow with what is cached.
    maxSize: context.config.linkCacheSize,
    sizeCalculation: () => 1,
    ttl: freshMs,
    allowStale: true,
    noDeleteOnStaleGet: true,
    // A notice that sets an entry aborts its read in flight. Without this, lru-cache rejects the
    // waiting redirects at once with the abort (a 500 for a link's first visit); with it the read
    // completes, the cache keeps the notice's newer entry, and lookup answers from that.
    ignoreFetchAbort: true,
    fetchMethod: async (key, stale, { options }) => {
      const slash = key.indexOf('/');
      let row: Awaited<ReturnType<typeof links.findLiveBySlug>>;
      try {
        row = await links.findLiveBySlug(key.slice(0, slash), key.slice(slash + 1));
      } catch (error) {
        // Postgres unreachable: a cached link keeps redirecting, re-read in refreshRetryMs rather than on every redirect.
        if (stale === undefined) throw error;
        log.warn({ err: error, key, retry_ms: refreshRetryMs }, 'link refresh failed: the cached link is served meanwhile');
        options.ttl = refreshRetryMs;
        return stale;
      }
      if (!row) options.ttl = NEGATIVE_MS;
      const link = row ? toRedirectLink(row) : null;
      return { link, version: link?.version ?? 0 };
    },
  });

  const apply = (notice: LinkNotice) => {
    const key = keyOf(notice.link.subdomain, notice.link.slug);
    const held = cache.peek(key, { allowStale: true });
    // Notices can arrive out of order (two nodes publishing): a lower version than held is stale.
    if (held && held.version > notice.link.version) return;
    if (notice.previous) {
      const previousKey = keyOf(notice.previous.subdomain, notice.previous.slug);
      const previous = cache.peek(previousKey, { allowStale: true });
      if (!previous || previous.link?.id === notice.link.id) cache.delete(previousKey);
    }
    if (notice.kind === 'delete') cache.set(key, { link: null, version: notice.link.version }, { ttl: NEGATIVE_MS });
    else cache.set(key, { link: notice.link, version: notice.link.version });
  };
  const unsubscribe = await subscribeLinkNotices(context.cache, apply);

  // Warm with the newest links, up to the cache size; notices received meanwhile keep their newer versions.
  const warmStarted = performance.now();
  const newest = await links.newestLive(Math.min(context.config.linkCacheSize, WARM_MAX));
  for (const row of newest.reverse()) {
    const key = keyOf(row.subdomain, row.slug);
    if (cache.has(key)) continue;
    const link = toRedirectLink(row);
    cache.set(key, { link, version: link.version });
  }
  log.info({ links: newest.length, took_ms: Math.round(performance.now() - warmStarted) }, 'redirect cache warmed');

  return {
    lookup(subdomain, slug) {
      const key = keyOf(subdomain, slug);
      const held = cache.get(key);
      if (held !== undefined) {
        (held.link ? hits : negatives).inc();
        // Stale entries are served and refreshed behind the answer.
        if (cache.getRemainingTTL(key) <= 0) void cache.fetch(key).catch((error: unknown) => log.warn({ err: error, key }, 'link refresh failed'));
        return held.link;
      }
      misses.inc();
      // What the cache holds once the read is done: the read itself, or a notice's newer entry that
      // replaced it meanwhile (the read's own result is then older than what the node knows).
      return cache.fetch(key).then((entry) => (cache.peek(key, { allowStale: true }) ?? entry)?.link ?? null);
    },
    async close() {
      await unsubscribe();
      cache.clear();
    },
  };
}
