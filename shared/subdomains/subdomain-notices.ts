import type { Cache } from '../cache/cache.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

/**
 * A subdomain's settings the edge holds changed (its tracker origins): caches re-read the row.
 * The notice names the subdomain only, so that the read after it sees the latest committed row
 * whatever order notices from several nodes arrive in.
 */
export interface SubdomainNotice {
  name: string;
  /** Milliseconds since the epoch at publication. */
  at: number;
}

/** Channel of subdomain-change notices on the shared cache (Redis pub/sub, or in-process). */
const SUBDOMAIN_NOTICES_CHANNEL = 'subdomains.changed';

/**
 * Publishes a subdomain-change notice to every node. A failed publish is counted and logged, not
 * thrown: the change is stored, and caches bound how long they trust an entry without a notice.
 */
export async function publishSubdomainNotice(deps: { cache: Cache; log: Logger; metrics: Metrics }, name: string): Promise<void> {
  try {
    await deps.cache.publish(SUBDOMAIN_NOTICES_CHANNEL, JSON.stringify({ name, at: Date.now() } satisfies SubdomainNotice));
  } catch (error) {
    deps.metrics.eventPublishFailures.inc({ event: 'subdomain_notice' });
    deps.log.error({ err: error, subdomain: name }, 'subdomain-change notice could not be published');
  }
}

/** Subscribes to subdomain-change notices; resolves with a function that unsubscribes. */
export function subscribeSubdomainNotices(cache: Cache, handler: (notice: SubdomainNotice) => void): Promise<() => Promise<void>> {
  return cache.subscribe(SUBDOMAIN_NOTICES_CHANNEL, (message) => handler(JSON.parse(message) as SubdomainNotice));
}
