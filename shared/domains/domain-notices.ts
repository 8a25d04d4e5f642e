import type { Cache } from '../cache/cache.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

/** Channel of custom-domain notices on the shared cache (Redis pub/sub, or in-process). */
const DOMAIN_NOTICES_CHANNEL = 'domains.changed';

/**
 * Publishes that the set of served custom domains may have changed (a domain verified, lapsed or
 * removed): every node re-reads it. A failed publish is counted and logged, not thrown: the change
 * is stored, and the nodes re-read the set periodically anyway.
 */
export async function publishDomainNotice(deps: { cache: Cache; log: Logger; metrics: Metrics }, domain: string): Promise<void> {
  try {
    await deps.cache.publish(DOMAIN_NOTICES_CHANNEL, JSON.stringify({ domain, at: Date.now() }));
  } catch (error) {
    deps.metrics.eventPublishFailures.inc({ event: 'domain_notice' });
    deps.log.error({ err: error, domain }, 'custom-domain notice could not be published');
  }
}

/** Subscribes to custom-domain notices; resolves with a function that unsubscribes. */
export function subscribeDomainNotices(cache: Cache, handler: () => void): Promise<() => Promise<void>> {
  return cache.subscribe(DOMAIN_NOTICES_CHANNEL, () => handler());
}
