import type { Context } from '../context.js';
import { subscribeDomainNotices } from './domain-notices.js';
import type { DomainsRepository } from './domains.repository.js';

/** How often the set is re-read without a notice: bounds how long a missed notice can matter. */
const REREAD_MS = 60_000;

export interface CustomHosts {
  /** The subdomain a served custom domain belongs to (a host name as the request names it), or undefined. From memory. */
  subdomainOf(hostname: string): string | undefined;
  /** Re-reads the set now (after a notice, or a test's change). */
  reread(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The served custom domains, held in memory by every process that answers short hosts: read whole
 * at start (one query; the set is small, a domain per owner's brand), again on every custom-domain
 * notice and every minute. A request never waits for the database: a host that is not in the set is
 * not a short host. A failed re-read keeps the set held and is logged.
 */
export async function createCustomHosts(
  context: Pick<Context, 'cache' | 'log'> & { repositories: { domains: Pick<DomainsRepository, 'served'> } },
  { rereadMs = REREAD_MS }: { rereadMs?: number } = {},
): Promise<CustomHosts> {
  const { log } = context;
  const { domains } = context.repositories;
  let held = new Map<string, string>();
  let reading: Promise<void> | undefined;
  let again = false;

  const readOnce = async () => {
    const rows = await domains.served();
    held = new Map(rows.map((row) => [row.domain, row.subdomain]));
  };
  /** One read at a time; a notice during a read asks for one more after it (the read may predate the change). */
  const reread = (): Promise<void> => {
    if (reading) {
      again = true;
      return reading;
    }
    reading = (async () => {
      do {
        again = false;
        try {
          await readOnce();
        } catch (error) {
          log.warn({ err: error }, 'custom domains re-read failed: the held set is served meanwhile');
        }
      } while (again);
      reading = undefined;
    })();
    return reading;
  };

  const unsubscribe = await subscribeDomainNotices(context.cache, () => void reread());
  await readOnce();
  log.info({ domains: held.size }, 'custom domains read');
  const timer = setInterval(() => void reread(), rereadMs);
  timer.unref();

  return {
    subdomainOf(hostname) {
      if (held.size === 0) return undefined;
      let host = hostname.toLowerCase();
      if (host.endsWith('.')) host = host.slice(0, -1);
      return held.get(host);
    },
    reread,
    async close() {
      clearInterval(timer);
      await unsubscribe();
    },
  };
}
