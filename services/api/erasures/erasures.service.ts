import type { ErasureTarget } from '#shared/analytics/visits.repository.js';
import { requireScope, type Principal } from '#shared/http/auth.js';
import type { Repositories } from '#services/repositories.js';
import { linkOfCaller } from '../links/link-access.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';

/** What an erasure answers: what it named and what it removed. */
export interface ErasureResult {
  target: ErasureTarget;
  visits_deleted: number;
  webhook_deliveries_scrubbed: number;
}

export type ErasuresService = ReturnType<typeof erasuresService>;

/**
 * Erasure of raw visits (issue 38): a link's, a subdomain's, or one visitor's (by IP address or by a
 * visit id). The caller's own visits; staff with `admin` anyone's. The statistics keep their counts.
 */
export function erasuresService({
  repositories,
  subdomains,
}: {
  repositories: Pick<Repositories, 'visits' | 'links' | 'webhooks' | 'audit'>;
  subdomains: Pick<SubdomainsService, 'managed'>;
}) {
  const { visits, links, webhooks, audit } = repositories;
  return {
    /**
     * Erases the raw visits `target` names, with their beacon states, and scrubs the webhook
     * delivery-log rows that hold one of their IP addresses or user agents. A link or subdomain of
     * someone else is 403 `not_owner`, an unknown one 404, as elsewhere; by IP or visit id, only the
     * caller's visits (staff: everyone's). Audited.
     */
    async erase(principal: Principal, target: ErasureTarget, request: { id: string; ip: string }): Promise<ErasureResult> {
      requireScope(principal, 'stats:read');
      let ownerId: string | undefined = principal.scopes.has('admin') ? undefined : principal.userId;
      if (target.link_id !== undefined) ownerId = (await linkOfCaller(links, principal, target.link_id)).owner_id;
      if (target.subdomain !== undefined) ownerId = (await subdomains.managed(principal, target.subdomain)).owner_id;
      const { deleted, personal } = await visits.erase(ownerId, target, `erasure:${request.id}`);
      const scrubbed = await webhooks.scrubAttempts(personal, ownerId);
      const result = { target, visits_deleted: deleted, webhook_deliveries_scrubbed: scrubbed };
      // The audit row names what was erased, never the IP address asked for: that would keep it.
      const named = target.ip !== undefined ? { ip: 'erased' } : target;
      await audit.insert({
        action: 'erasure',
        actorId: principal.userId,
        target: Object.entries(named).map(([key, value]) => `${key}:${value}`)[0],
        ip: request.ip,
        details: { ...result, target: named },
      });
      return { ...result, target };
    },
  };
}
