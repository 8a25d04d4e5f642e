import { LRUCache } from 'lru-cache';
import { SUBDOMAIN_LABEL } from '#shared/links/hosts.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import type { Repositories } from '../repositories.js';

/** How long a subdomain's owner (or its absence) is remembered: a released name changes hands rarely. */
const OWNER_TTL_MS = 60_000;

export interface SubdomainOwners {
  /** The owner of a claimed subdomain, or null. */
  ownerOf: (subdomain: string) => Promise<string | null>;
  /** The visits with their subdomain's owner filled in where the edge left it empty. */
  withOwners(visits: RawVisit[]): Promise<RawVisit[]>;
}

/**
 * The owners of subdomains, read from Postgres and remembered a minute (absences too: attack
 * probes come with any host name). The enricher's side of what the edge leaves out: the edge
 * knows a link's owner, not a subdomain's, and does no I/O on a request to find it.
 */
export function subdomainOwners({ subdomains }: Pick<Repositories, 'subdomains'>): SubdomainOwners {
  const owners = new LRUCache<string, { owner: string | null }>({ max: 50_000, ttl: OWNER_TTL_MS });
  const ownerOf = async (subdomain: string): Promise<string | null> => {
    let held = owners.get(subdomain);
    if (!held) owners.set(subdomain, (held = { owner: (await subdomains.find(subdomain))?.owner_id ?? null }));
    return held.owner;
  };
  return {
    ownerOf,
    // Attack probes on a short host match no link, so the edge leaves their owner empty.
    async withOwners(visits: RawVisit[]): Promise<RawVisit[]> {
      if (!visits.some((visit) => visit.owner_id === '' && visit.subdomain !== '')) return visits;
      const found = new Map<string, string | null>();
      for (const visit of visits) {
        if (visit.owner_id !== '' || visit.subdomain === '' || found.has(visit.subdomain)) continue;
        // A host that is not a short host (an attack probe on the bare domain) names no subdomain.
        found.set(visit.subdomain, SUBDOMAIN_LABEL.test(visit.subdomain) ? await ownerOf(visit.subdomain) : null);
      }
      return visits.map((visit) => {
        const owner = visit.owner_id === '' ? found.get(visit.subdomain) : undefined;
        return owner ? { ...visit, owner_id: owner } : visit;
      });
    },
  };
}
