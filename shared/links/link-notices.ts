import type { RedirectRule, Variant } from './rules.js';
import type { Cache } from '../cache/cache.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

/** What a redirect needs of a link: the record the ingest nodes cache. */
export interface RedirectLink {
  id: string;
  owner_id: string;
  subdomain: string;
  slug: string;
  target_url: string;
  redirect_type: number;
  /** Append `lt_visit=<visit id>` to the target (for the tracker on the target page). */
  append_visit_id: boolean;
  expires_at: string | null;
  max_visits: number | null;
  /** Its visits reached max_visits: the link no longer redirects. */
  limit_reached: boolean;
  /** Where the link sends visitors once expired or at its visit limit, instead of 410 (issue 40). */
  fallback_url: string | null;
  /** The scrypt hash of the password the edge asks before redirecting (issue 40); null: none. */
  password_hash: string | null;
  /** From one sequence, taken by every insert and change: a cache keeps the highest it saw per slug. */
  version: number;
  // Issue 40: evaluated by the edge (shared/links/rules.ts).
  rules: RedirectRule[] | null;
  variants: Variant[] | null;
  forward_query: boolean;
}

/** The columns of a link row a redirect record is made of (redirect caches read only these). */
export const REDIRECT_LINK_COLUMNS = [
  'id',
  'owner_id',
  'subdomain',
  'slug',
  'target_url',
  'redirect_type',
  'append_visit_id',
  'expires_at',
  'max_visits',
  'limit_reached_at',
  'version',
  'fallback_url',
  'password_hash',
  'rules',
  'variants',
  'forward_query',
] as const;

/** The redirect record of a stored link row. */
export function toRedirectLink(
  row: Omit<RedirectLink, 'expires_at' | 'limit_reached' | 'version' | 'fallback_url' | 'password_hash' | 'rules' | 'variants' | 'forward_query'> & {
    fallback_url?: string | null;
    password_hash?: string | null;
    expires_at: Date | null;
    limit_reached_at: Date | null;
    version: string | number;
    rules?: RedirectLink['rules'];
    variants?: RedirectLink['variants'];
    forward_query?: boolean;
  },
): RedirectLink {
  return {
    id: row.id,
    owner_id: row.owner_id,
    subdomain: row.subdomain,
    slug: row.slug,
    target_url: row.target_url,
    redirect_type: row.redirect_type,
    append_visit_id: row.append_visit_id,
    expires_at: row.expires_at?.toISOString() ?? null,
    max_visits: row.max_visits,
    limit_reached: row.limit_reached_at !== null,
    fallback_url: row.fallback_url ?? null,
    password_hash: row.password_hash ?? null,
    version: Number(row.version),
    rules: row.rules ?? null,
    variants: row.variants ?? null,
    forward_query: row.forward_query ?? false,
  };
}

/**
 * A link changed. `upsert` carries the whole redirect record (created, updated, limits changed,
 * duplicated); `delete` says the link stopped redirecting. `previous` names the subdomain and slug
 * the link answered on before, when a change moved it, so caches drop the old key.
 */
export interface LinkNotice {
  kind: 'upsert' | 'delete';
  link: RedirectLink;
  previous?: { subdomain: string; slug: string };
  /** Milliseconds since the epoch at publication (for delay metrics; ordering uses link.version). */
  at: number;
}

/** Channel of link-change notices on the shared cache (Redis pub/sub, or in-process). */
const LINK_NOTICES_CHANNEL = 'links.changed';

/**
 * Publishes a link-change notice to every node (Redis pub/sub when nodes share Redis, in-process
 * otherwise). A failed publish is counted and logged, not thrown: the change is stored, and caches
 * bound how long they trust an entry without a notice.
 */
export async function publishLinkNotice(deps: { cache: Cache; log: Logger; metrics: Metrics }, notice: Omit<LinkNotice, 'at'>): Promise<void> {
  try {
    await deps.cache.publish(LINK_NOTICES_CHANNEL, JSON.stringify({ ...notice, at: Date.now() }));
  } catch (error) {
    deps.metrics.eventPublishFailures.inc({ event: `link_notice.${notice.kind}` });
    deps.log.error({ err: error, link_id: notice.link.id }, 'link-change notice could not be published');
  }
}

/** Subscribes to link-change notices; resolves with a function that unsubscribes. */
export function subscribeLinkNotices(cache: Cache, handler: (notice: LinkNotice) => void): Promise<() => Promise<void>> {
  return cache.subscribe(LINK_NOTICES_CHANNEL, (message) => handler(JSON.parse(message) as LinkNotice));
}
