import { FLAG_COLUMNS, OWNER_VISIT_COLUMNS, type VisitFilters } from '#shared/analytics/visits.repository.js';
import { AppError } from '#shared/errors.js';
import { requireScope, type Principal } from '#shared/http/auth.js';
import { collectionMeta, type Paging } from '#shared/http/pagination.js';
import { publicVisitRow, type PublicView } from '#shared/policy/policy.js';
import type { Repositories } from '#services/repositories.js';
import { linkOfCaller } from '../links/link-access.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';

/** The filters a public list takes: the others would tell about hidden columns or ids. */
const PUBLIC_FILTERS = new Set<keyof VisitFilters>(['subdomain', 'since', 'until', 'kind', 'kinds', 'ip']);

const TIMES = new Set(['ts', 'beacon_at']);

/**
 * Cursors are opaque: the time (ms) and the 64-bit hash (hex) of the visit id of the last row, the key
 * the list is ordered by (newest first). The hash, not the id: a public cursor must not carry a visit id.
 * Every value of the pattern is a position (the query schema admits nothing else).
 */
export const VISIT_CURSOR = /^v2\.[0-9]{1,13}\.[0-9a-f]{16}$/;
function encodeCursor(ts: number, hash: string): string {
  return `v2.${ts}.${BigInt(hash).toString(16).padStart(16, '0')}`;
}
function decodeCursor(cursor: string): { ts: number; hash: string } {
  const [, ts, hex] = cursor.split('.');
  return { ts: Number(ts), hash: BigInt(`0x${hex}`).toString() };
}

/** `2026-11-21 10:00:00.123` (ClickHouse, UTC) as ISO 8601. */
const isoOf = (value: unknown) => (typeof value === 'string' && value !== '' ? `${value.replace(' ', 'T')}Z` : null);

/** A row from ClickHouse as the API answers it: times in ISO 8601, flags as booleans. */
function present(row: Record<string, unknown>, columns: readonly string[]): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const column of columns) {
    const value = row[column];
    item[column] = TIMES.has(column) ? isoOf(value) : FLAG_COLUMNS.has(column) ? Number(value) === 1 : column === 'asn' ? Number(value) : value;
  }
  return item;
}

export type VisitsService = ReturnType<typeof visitsService>;

/**
 * Visit lists read from ClickHouse `visits`, one row per visit (its newest version: a beacon's
 * signals merged in), newest first, keyset-paged on (time, hash of the visit id).
 */
export function visitsService({ repositories, subdomains }: { repositories: Pick<Repositories, 'visits' | 'links'>; subdomains: SubdomainsService }) {
  const { visits, links } = repositories;

  /**
   * The owner of a link named by `link_id`, as the rest of the API treats other owners' objects
   * (and the export the same filter): 404 `not_found` unknown, 403 `not_owner` another owner's.
   */
  const linkOf = (principal: Principal, id: string) => linkOfCaller(links, subdomains, principal, id, 'viewer');
  const linkOwner = async (principal: Principal, id: string): Promise<string> => (await linkOf(principal, id)).owner_id;

  /** One page of an owner's list: its items, the total matching and the next cursor. */
  const ownerPage = async (ownerId: string, filters: VisitFilters, paging: Paging) => {
    const after = paging.cursor ? decodeCursor(paging.cursor) : undefined;
    const offset = paging.page !== undefined ? (paging.page - 1) * paging.limit : 0;
    // The page and one more row: whether there is a next page.
    const { rows: found, total } = await visits.ownerPage(ownerId, filters, { after, take: paging.limit + 1, skip: offset });
    const items = found.slice(0, paging.limit);
    const last = items.at(-1);
    const next = found.length > paging.limit && last ? encodeCursor(Number(last.ts_ms), String(last.h)) : null;
    return { items: items.map((row) => present(row, OWNER_VISIT_COLUMNS)), meta: collectionMeta(items.length, total, paging, next) };
  };

  /**
   * A subdomain's public list: the newest stats_max_items visits older than the publish delay,
   * only the policy's columns selected, paged within that window.
   */
  const publicPage = async (name: string, ownerId: string, view: PublicView, filters: VisitFilters, paging: Paging) => {
    const refused = (Object.keys(filters) as (keyof VisitFilters)[]).filter((key) => filters[key] !== undefined && !PUBLIC_FILTERS.has(key));
    if (refused.length > 0)
      throw new AppError(
        'bad_request',
        { unknown: refused, in: 'query' },
        { messageKey: 'error.bad_request.unknown_parameter', params: { names: refused.join(', ') } },
      );
    // Looking visits up by IP would tell hidden IPs apart: only where the policy shows them.
    if (filters.ip !== undefined && !view.details.ip) throw new AppError('forbidden', { reason: 'ips_not_public', subdomain: name });
    const published = Math.min(view.publishedBefore.getTime(), filters.until ? Date.parse(filters.until) : Infinity);
    const window = await visits.publicWindow(
      ownerId,
      { subdomain: name, since: filters.since, kind: filters.kind, kinds: filters.kinds, ip: filters.ip },
      view.visitColumns,
      published,
      view.maxItems,
    );
    let start = 0;
    if (paging.page !== undefined) start = (paging.page - 1) * paging.limit;
    else if (paging.cursor) {
      const after = decodeCursor(paging.cursor);
      const index = window.findIndex((row) => Number(row.ts_ms) < after.ts || (Number(row.ts_ms) === after.ts && BigInt(String(row.h)) < BigInt(after.hash)));
      start = index < 0 ? window.length : index;
    }
    const items = window.slice(start, start + paging.limit);
    const last = items.at(-1);
    const next = start + paging.limit < window.length && last ? encodeCursor(Number(last.ts_ms), String(last.h)) : null;
    return {
      items: items.map((row) => publicVisitRow(present(row, view.visitColumns), view)),
      meta: collectionMeta(items.length, window.length, paging, next),
    };
  };

  return {
    /**
     * The caller's visits (stats:read), or a subdomain's public list: without credentials, or
     * with them for another owner's subdomain whose list is public (403 not_owner when it is not).
     * A `link_id` must name one of the caller's links (404 unknown, 403 not_owner), as in the export.
     */
    async list(principal: Principal | undefined, filters: VisitFilters, paging: Paging) {
      const since = (page: { items: Record<string, unknown>[]; meta: ReturnType<typeof collectionMeta> }, cutoff: Date | null) => ({
        items: page.items,
        meta: { ...page.meta, raw_visits_since: cutoff?.toISOString() ?? null },
      });
      if (!principal) {
        if (filters.subdomain === undefined) throw new AppError('unauthorized', { hint: 'send credentials, or name a subdomain for its public visits' });
        const name = filters.subdomain.toLowerCase();
        const { ownerId, view, rawVisitsSince } = await subdomains.policyView(name);
        if (!view.visitsList) throw new AppError('forbidden', { reason: 'visits_not_public', subdomain: name });
        return since(await publicPage(name, ownerId, view, filters, paging), rawVisitsSince);
      }
      if (filters.subdomain !== undefined) {
        const name = filters.subdomain.toLowerCase();
        const { ownerId, view, rawVisitsSince } = await subdomains.policyView(name);
        if (!(await subdomains.roleFor(principal, { ownerId, subdomain: name }))) {
          if (!view.visitsList) throw new AppError('not_owner', { subdomain: name });
          return since(await publicPage(name, ownerId, view, filters, paging), rawVisitsSince);
        }
        requireScope(principal, 'stats:read');
        if (filters.link_id !== undefined) await linkOwner(principal, filters.link_id);
        return since(await ownerPage(ownerId, { ...filters, subdomain: name }, paging), rawVisitsSince);
      }
      requireScope(principal, 'stats:read');
      // Staff with `admin` read the link's owner's visits; anyone else only their own.
      const link = filters.link_id !== undefined ? await linkOf(principal, filters.link_id) : undefined;
      const ownerId = link?.owner_id ?? principal.userId;
      return since(await ownerPage(ownerId, filters, paging), await subdomains.rawVisitsSinceOf(ownerId, link?.subdomain));
    },
  };
}
