import { selectRows } from '../../../shared/analytics/analytics.js';
import type { Context } from '../../../shared/context.js';
import { AppError } from '../../../shared/errors.js';
import { canManage, requireScope, type Principal } from '../../../shared/http/auth.js';
import { collectionMeta, type Paging } from '../../../shared/http/pagination.js';
import type { PublicView } from '../../../shared/policy/policy.js';
import { subdomainsService } from '../subdomains/subdomains.service.js';

export const VISIT_KINDS = ['visit', 'bot', 'attack', 'beacon'] as const;
export type VisitKind = (typeof VISIT_KINDS)[number];

export interface VisitFilters {
  subdomain?: string;
  link_id?: string;
  since?: string;
  until?: string;
  country?: string;
  is_bot?: boolean;
  kind?: VisitKind;
  /** Internal (the legacy API): any of these kinds. */
  kinds?: readonly VisitKind[];
  /** Internal (the legacy API): the visits of one public IP; public lists only with stats_show_ip. */
  ip?: string;
}

/** The filters a public list takes: the others would tell about hidden columns or ids. */
const PUBLIC_FILTERS = new Set<keyof VisitFilters>(['subdomain', 'since', 'until', 'kind', 'kinds', 'ip']);

/** Columns of a visit as its owner reads it (everything but the visitor hash and the row's bookkeeping). */
export const OWNER_VISIT_COLUMNS = [
  'visit_id', 'ts', 'kind', 'subdomain', 'link_id', 'slug', 'ip_public', 'ip_lan', 'country', 'region', 'city', 'latitude', 'longitude',
  'asn', 'user_agent', 'browser', 'browser_version', 'os', 'os_version', 'device_type', 'is_bot', 'bot_name', 'is_attack', 'attack_type',
  'referrer', 'referrer_host', 'accept_language', 'query', 'utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content',
  'is_unique', 'consent_analytics', 'consent_lan_ip', 'timezone', 'screen', 'network', 'capabilities', 'beacon_at',
] as const;
/** Columns stored as UInt8 0/1 that the API answers as booleans. */
export const FLAG_COLUMNS: ReadonlySet<string> = new Set(['is_bot', 'is_attack', 'is_unique', 'consent_analytics', 'consent_lan_ip']);
const TIMES = new Set(['ts', 'beacon_at']);

/** WHERE conditions over `visits` and their parameters, for a filter set (with the owner when given). */
export function visitConditions(ownerId: string | undefined, filters: VisitFilters): { where: string[]; params: Record<string, unknown> } {
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  const add = (condition: string, name: string, value: unknown) => {
    where.push(condition);
    params[name] = value;
  };
  if (ownerId !== undefined) add('owner_id = {owner:String}', 'owner', ownerId);
  if (filters.subdomain !== undefined) add('subdomain = {subdomain:String}', 'subdomain', filters.subdomain);
  if (filters.link_id !== undefined) add('link_id = {link:String}', 'link', filters.link_id);
  if (filters.since !== undefined) add('ts >= fromUnixTimestamp64Milli({since:Int64})', 'since', Date.parse(filters.since));
  if (filters.until !== undefined) add('ts < fromUnixTimestamp64Milli({until:Int64})', 'until', Date.parse(filters.until));
  if (filters.country !== undefined) add('country = {country:String}', 'country', filters.country.toUpperCase());
  if (filters.is_bot !== undefined) add('is_bot = {bot:UInt8}', 'bot', filters.is_bot ? 1 : 0);
  if (filters.kind !== undefined) add('kind = {kind:String}', 'kind', filters.kind);
  if (filters.kinds !== undefined) add('kind IN {kinds:Array(String)}', 'kinds', filters.kinds);
  if (filters.ip !== undefined) add('ip_public = {ip:String}', 'ip', filters.ip);
  return { where, params };
}

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

/**
 * Visit lists read from ClickHouse `visits`, one row per visit (its newest version: a beacon's
 * signals merged in), newest first, keyset-paged on (time, hash of the visit id).
 */
/** The windows a newest-first list is asked in before it is asked whole: an hour, a day, a week, five weeks. */
const NEWEST_WINDOWS_MS = [3_600_000, 86_400_000, 7 * 86_400_000, 35 * 86_400_000];
/** The first window starts a minute ahead of this node's clock (no row is ever cut above it: only a floor is set). */
const CLOCK_SKEW_MS = 60_000;

export function visitsService(context: Context) {
  const { client } = context.analytics;
  const subdomains = subdomainsService(context);

  const rows = (query: string, params: Record<string, unknown>) => selectRows<Record<string, unknown>>(client, query, params);

  /**
   * The newest `needed` rows of a list that ends at `top` (ms): asked first of the last hour before
   * it, then the last day, week and five weeks, then without a bound. A list's newest rows are
   * nearly always recent, and a bound on `ts` lets ClickHouse skip the older granules (the sort key
   * is subdomain, link, ts) instead of sorting every visit of an owner or a subdomain; a bounded
   * answer with `needed` rows is the unbounded answer, since every row it left out is older. A list
   * with few recent rows pays a few cheap extra queries. `since` (ms) already bounds the list: no
   * window reaches past it.
   */
  const newestRows = async (query: (floorCondition: string) => string, params: Record<string, unknown>, needed: number, top: number, since: number | undefined) => {
    for (const window of NEWEST_WINDOWS_MS) {
      const floor = top - window;
      if (since !== undefined && floor <= since) break;
      const found = await rows(query('AND ts > fromUnixTimestamp64Milli({window_floor:Int64})'), { ...params, window_floor: floor });
      if (found.length >= needed) return found;
    }
    return rows(query(''), params);
  };

  /** One page of an owner's list: its items, the total matching and the next cursor. */
  const ownerPage = async (ownerId: string, filters: VisitFilters, paging: Paging) => {
    const { where, params } = visitConditions(ownerId, filters);
    const base = where.length > 0 ? where.join(' AND ') : '1';
    const paged = [...where];
    const after = paging.cursor ? decodeCursor(paging.cursor) : undefined;
    if (after) {
      paged.push('(ts, cityHash64(visit_id)) < (fromUnixTimestamp64Milli({after_ts:Int64}), {after_hash:UInt64})');
      Object.assign(params, { after_ts: after.ts, after_hash: after.hash });
    }
    const offset = paging.page !== undefined ? (paging.page - 1) * paging.limit : 0;
    const top = Math.min(Date.now() + CLOCK_SKEW_MS, after ? after.ts + 1 : Infinity, filters.until ? Date.parse(filters.until) + 1 : Infinity);
    const [found, [counted]] = await Promise.all([
      newestRows(
        (floor) => `SELECT ${OWNER_VISIT_COLUMNS.join(', ')}, toUnixTimestamp64Milli(ts) AS ts_ms, toString(cityHash64(visit_id)) AS h
         FROM visits WHERE ${paged.length > 0 ? paged.join(' AND ') : '1'} ${floor}
         ORDER BY ts DESC, cityHash64(visit_id) DESC, version DESC
         LIMIT 1 BY visit_id
         LIMIT {take:UInt32} OFFSET {skip:UInt32}`,
        { ...params, take: paging.limit + 1, skip: offset },
        // Enough: the page and one more row after it (the window then held the offset's rows too).
        paging.limit + 1,
        top,
        filters.since ? Date.parse(filters.since) : undefined,
      ),
      // FINAL: one row per visit, whichever of its versions (first insert, beacon merges, redelivered copies) merges have kept.
      rows(`SELECT count() AS total FROM visits FINAL WHERE ${base}`, params),
    ]);
    const items = found.slice(0, paging.limit);
    const last = items.at(-1);
    const next = found.length > paging.limit && last ? encodeCursor(Number(last.ts_ms), String(last.h)) : null;
    return { items: items.map((row) => present(row, OWNER_VISIT_COLUMNS)), meta: collectionMeta(items.length, Number(counted?.total ?? 0), paging, next) };
  };

  /**
   * A subdomain's public list: the newest stats_max_items visits older than the publish delay,
   * only the policy's columns selected, paged within that window.
   */
  const publicPage = async (name: string, ownerId: string, view: PublicView, filters: VisitFilters, paging: Paging) => {
    const refused = (Object.keys(filters) as (keyof VisitFilters)[]).filter((key) => filters[key] !== undefined && !PUBLIC_FILTERS.has(key));
    if (refused.length > 0) throw new AppError('bad_request', { unknown: refused, in: 'query' }, { messageKey: 'error.bad_request.unknown_parameter', params: { names: refused.join(', ') } });
    // Looking visits up by IP would tell hidden IPs apart: only where the policy shows them.
    if (filters.ip !== undefined && !view.details.ip) throw new AppError('forbidden', { reason: 'ips_not_public', subdomain: name });
    const published = Math.min(view.publishedBefore.getTime(), filters.until ? Date.parse(filters.until) : Infinity);
    const { where, params } = visitConditions(ownerId, { subdomain: name, since: filters.since, kind: filters.kind, kinds: filters.kinds, ip: filters.ip });
    where.push('ts <= fromUnixTimestamp64Milli({published:Int64})');
    params.published = published;
    const window = await newestRows(
      (floor) => `SELECT ${view.visitColumns.join(', ')}, toUnixTimestamp64Milli(ts) AS ts_ms, toString(cityHash64(visit_id)) AS h
       FROM visits WHERE ${where.join(' AND ')} ${floor}
       ORDER BY ts DESC, cityHash64(visit_id) DESC, version DESC
       LIMIT 1 BY cityHash64(visit_id)
       LIMIT {max:UInt32}`,
      { ...params, max: view.maxItems },
      view.maxItems,
      published + 1,
      filters.since ? Date.parse(filters.since) : undefined,
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
    return { items: items.map((row) => present(row, view.visitColumns)), meta: collectionMeta(items.length, window.length, paging, next) };
  };

  return {
    /**
     * The caller's visits (stats:read), or a subdomain's public list: without credentials, or
     * with them for another owner's subdomain whose list is public (403 not_owner when it is not).
     */
    async list(principal: Principal | undefined, filters: VisitFilters, paging: Paging) {
      if (!principal) {
        if (filters.subdomain === undefined) throw new AppError('unauthorized', { hint: 'send credentials, or name a subdomain for its public visits' });
        const name = filters.subdomain.toLowerCase();
        const { ownerId, view } = await subdomains.policyView(name);
        if (!view.visitsList) throw new AppError('forbidden', { reason: 'visits_not_public', subdomain: name });
        return publicPage(name, ownerId, view, filters, paging);
      }
      if (filters.subdomain !== undefined) {
        const name = filters.subdomain.toLowerCase();
        const { ownerId, view } = await subdomains.policyView(name);
        if (!canManage(principal, ownerId)) {
          if (!view.visitsList) throw new AppError('not_owner', { subdomain: name });
          return publicPage(name, ownerId, view, filters, paging);
        }
        requireScope(principal, 'stats:read');
        return ownerPage(ownerId, { ...filters, subdomain: name }, paging);
      }
      requireScope(principal, 'stats:read');
      return ownerPage(principal.userId, filters, paging);
    },
  };
}
