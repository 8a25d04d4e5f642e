import { AppError } from '#shared/errors.js';
import { canManage, type Principal } from '#shared/http/auth.js';
import type { LinkRow } from '#shared/links/links.repository.js';
import type { Repositories } from '#services/repositories.js';

/**
 * A link whose visits and statistics the caller may read or erase, deleted ones included (their
 * history stays theirs): 404 `not_found` when unknown, 403 `not_owner` when someone else's (staff
 * with `admin` manage every owner's). The links API's own `managed` also refuses deleted links.
 */
export async function linkOfCaller(links: Pick<Repositories['links'], 'findById'>, principal: Principal, id: string): Promise<LinkRow> {
  const row = await links.findById(id);
  if (!row) throw new AppError('not_found', { link: id });
  if (!canManage(principal, row.owner_id)) throw new AppError('not_owner', { link: id });
  return row;
}
