import { AppError } from '#shared/errors.js';
import type { Principal } from '#shared/http/auth.js';
import type { TeamRole } from '#shared/db/schema.js';
import type { LinkRow } from '#shared/links/links.repository.js';
import type { Repositories } from '#services/repositories.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';

/**
 * A link whose visits and statistics the caller may read or erase, deleted ones included (their
 * history stays theirs): 404 `not_found` when unknown, 403 when the subdomains' one ownership check
 * (`SubdomainsService.access`: owner, staff with `admin`, or a team member of role `need`) refuses.
 * The links API's own `managed` also refuses deleted links.
 */
export async function linkOfCaller(
  links: Pick<Repositories['links'], 'findById'>,
  subdomains: Pick<SubdomainsService, 'access'>,
  principal: Principal,
  id: string,
  need: TeamRole,
): Promise<LinkRow> {
  const row = await links.findById(id);
  if (!row) throw new AppError('not_found', { link: id });
  await subdomains.access(principal, { ownerId: row.owner_id, subdomain: row.subdomain }, need, { link: id });
  return row;
}
