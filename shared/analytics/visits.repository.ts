import { createHash } from 'node:crypto';
import { deduplicatedBy, selectRows, toClickHouseTime, type Analytics, type EncodedInsert } from './analytics.js';

/** What a row of `visits` records (its `kind`): a redirect, a bot's visit, an attack attempt, a visit the tracker started. */
export const VISIT_KINDS = ['visit', 'bot', 'attack', 'beacon'] as const;
export type VisitKind = (typeof VISIT_KINDS)[number];

/** A link's breakdown dimensions, as (dim, value) pairs of a `visits` row: its report reads them from `visits` and `stats_link_dims`. */
export const LINK_DIMS = `('country', toString(country)),
  ('city', if(city = '', '', concat(toString(country), '|', toString(city)))),
  ('browser', toString(browser)),
  ('os', toString(os)),
  ('device_type', toString(device_type)),
  ('referrer_host', toString(referrer_host)),
  ('utm_source', toString(utm_source))`;

/** What an erasure names: exactly one of a link, a subdomain, a visitor's IP address, or a visit. */
export interface ErasureTarget {
  link_id?: string;
  subdomain?: string;
  ip?: string;
  visit_id?: string;
}

/** Which visits a list or an export reads (conditions over `visits`: visitConditions). */
export interface VisitFilters {
  subdomain?: string;
  link_id?: string;
  since?: string;
  until?: string;
  country?: string;
  is_bot?: boolean;
  kind?: VisitKind;
  /** Exact values of a visit's columns ('' matches the visits without one: direct traffic has no referrer host). */
  referrer_host?: string;
  browser?: string;
  os?: string;
  /** The `device_type` column. */
  device?: string;
  utm_source?: string;
  utm_medium?: string;
  utm_campaign?: string;
  /** Internal (the legacy API): any of these kinds. */
  kinds?: readonly VisitKind[];
  /** Internal (the legacy API): the visits of one public IP; public lists only with stats_show_ip. */
  ip?: string;
}

/** Columns of a visit as its owner reads it (everything but the visitor hash and the row's bookkeeping). */
export const OWNER_VISIT_COLUMNS = [
  'visit_id',
  'ts',
  'kind',
  'subdomain',
  'link_id',
  'slug',
  'ip_public',
  'ip_lan',
  'country',
  'region',
  'city',
  'latitude',
  'longitude',
  'asn',
  'user_agent',
  'browser',
  'browser_version',
  'os',
  'os_version',
  'device_type',
  'is_bot',
  'bot_name',
  'is_attack',
  'attack_type',
  'referrer',
  'referrer_host',
  'accept_language',
  'query',
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_term',
  'utm_content',
  'is_unique',
  'consent_analytics',
  'consent_lan_ip',
  'timezone',
  'screen',
  'network',
  'capabilities',
  'beacon_at',
  'imported_from',
] as const;
/** Columns stored as UInt8 0/1 that the API answers as booleans. */
export const FLAG_COLUMNS: ReadonlySet<string> = new Set(['is_bot', 'is_attack', 'is_unique', 'consent_analytics', 'consent_lan_ip']);

/** The filters on a column's exact value, and their columns. */
export const VALUE_FILTER_COLUMNS = [
  ['referrer_host', 'referrer_host'],
  ['browser', 'browser'],
  ['os', 'os'],
  ['device', 'device_type'],
  ['utm_source', 'utm_source'],
  ['utm_medium', 'utm_medium'],
  ['utm_campaign', 'utm_campaign'],
] as const satisfies readonly (readonly [keyof VisitFilters, string])[];

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
  for (const [filter, column] of VALUE_FILTER_COLUMNS) {
    const value = filters[filter];
    if (value !== undefined) add(`${column} = {f_${filter}:String}`, `f_${filter}`, value);
  }
  if (filters.ip !== undefined) add('ip_public = {ip:String}', 'ip', filters.ip);
  return { where, params };
}

/** The windows a newest-first list is asked in before it is asked whole: an hour, a day, a week, five weeks. */
const NEWEST_WINDOWS_MS = [3_600_000, 86_400_000, 7 * 86_400_000, 35 * 86_400_000];
/** The first window starts a minute ahead of this node's clock (no row is ever cut above it: only a floor is set). */
const CLOCK_SKEW_MS = 60_000;

/** A visit's place in a newest-first list: its time (ms) and the 64-bit hash of its id (decimal), the key the list is ordered by. */
export interface ListPosition {
  ts: number;
  hash: string;
}

/** What is stored of a visit that its events repeat: how it was judged (kind, bot, unique) and whose it is. */
export interface StoredVisit {
  visit_id: string;
  kind: string;
  is_bot: number;
  bot_name: string;
  is_unique: number;
  owner_id: string;
  /** The deduplication token of the insert that stored it ('' for rows stored before migration 0006). */
  insert_token: string;
}

/** The query of storedVisits (exported for the test that a first delivery never sends it). */
export const STORED_VISITS_QUERY = `SELECT visit_id, kind, is_bot, bot_name, is_unique, owner_id, insert_token FROM visits
  WHERE ts BETWEEN {from:DateTime64(3, 'UTC')} AND {to:DateTime64(3, 'UTC')} AND visit_id IN {ids:Array(UUID)}
  LIMIT 1 BY visit_id`;

/** The rows `visits` holds of the inserts with these tokens, within the time range (a day of slack), as encodeVisits wrote them. */
const BLOCK_ROWS_QUERY = (columns: string) => `SELECT ${columns} FROM visits
  WHERE ts BETWEEN {from:DateTime64(3, 'UTC')} AND {to:DateTime64(3, 'UTC')} AND insert_token = {token:String}
  LIMIT 1 BY visit_id`;

/**
 * The queries of ClickHouse `visits`: the enricher's inserts and the reads that keep them exactly
 * once (stored visits, blocks inserted again, first visitors of a day, visit counts, beacon merges),
 * and the API's visit lists. The only place that reads or writes `visits` outside the rollups.
 */
export function visitsRepository(analytics: Analytics) {
  const { client } = analytics;
  const rows = (query: string, params: Record<string, unknown>) => selectRows<Record<string, unknown>>(client, query, params);
  /**
   * Deletes the visits matching `where` and their beacon states, waiting until the mutations are
   * done (mutations_sync = 2): the next read no longer sees them. The rollups are other tables, filled
   * when a visit was inserted, and keep counting them; a link's breakdowns, read from `visits`, get
   * the deleted rows folded into `stats_link_dims` first, deduplicated by `token` (a retry of the same
   * deletion adds them once). Beacon states go before the visits, while the visits still name them.
   */
  const removeVisits = async (where: string, params: Record<string, unknown>, token: string) => {
    await client.command({
      query: `INSERT INTO stats_link_dims
        SELECT owner_id, subdomain, link_id, tupleElement(pair, 1) AS dim, toStartOfFifteenMinutes(ts) AS bucket,
               tupleElement(pair, 2) AS value, toUInt64(count()) AS visits
        FROM visits
        ARRAY JOIN [${LINK_DIMS}] AS pair
        WHERE (${where}) AND version = 0 AND owner_id != '' AND link_id != '' AND kind IN ('visit', 'beacon')
        GROUP BY owner_id, subdomain, link_id, dim, bucket, value`,
      query_params: params,
      clickhouse_settings: deduplicatedBy(token),
    });
    const wait = { mutations_sync: '2' } as const;
    await client.command({
      query: `ALTER TABLE visit_beacons DELETE WHERE visit_id IN (SELECT visit_id FROM visits WHERE ${where})`,
      query_params: params,
      clickhouse_settings: wait,
    });
    await client.command({ query: `ALTER TABLE visits DELETE WHERE ${where}`, query_params: params, clickhouse_settings: wait });
  };

  /**
   * The newest `needed` rows of a list that ends at `top` (ms): asked first of the last hour before
   * it, then the last day, week and five weeks, then without a bound. A list's newest rows are
   * nearly always recent, and a bound on `ts` lets ClickHouse skip the older granules (the sort key
   * is subdomain, link, ts) instead of sorting every visit of an owner or a subdomain; a bounded
   * answer with `needed` rows is the unbounded answer, since every row it left out is older. A list
   * with few recent rows pays a few cheap extra queries. `since` (ms) already bounds the list: no
   * window reaches past it.
   */
  const newestRows = async (
    query: (floorCondition: string) => string,
    params: Record<string, unknown>,
    needed: number,
    top: number,
    since: number | undefined,
  ) => {
    for (const window of NEWEST_WINDOWS_MS) {
      const floor = top - window;
      if (since !== undefined && floor <= since) break;
      const found = await rows(query('AND ts > fromUnixTimestamp64Milli({window_floor:Int64})'), { ...params, window_floor: floor });
      if (found.length >= needed) return found;
    }
    return rows(query(''), params);
  };

  return {
    /** Inserts a batch encoded by the visit writer (encodeVisits), with its deduplication settings. */
    async insertBatch(insert: EncodedInsert): Promise<void> {
      await analytics.insertEncoded(insert);
    },

    /**
     * The visits `visits` holds of these ids, any version, by the exact time range [from, to] (ms)
     * of the batch that names them (storedVisits in the visit writer says why this query).
     */
    async storedVisits(ids: string[], from: number, to: number): Promise<StoredVisit[]> {
      return selectRows<StoredVisit>(client, STORED_VISITS_QUERY, { from: toClickHouseTime(from), to: toClickHouseTime(to), ids });
    },

    /**
     * The rows of the insert with this token between `from` and `to` (ms), one per visit, as
     * JSONCompactEachRow lines of `columns`: the block as it was inserted, to insert it again.
     */
    async blockRows(columns: readonly string[], token: string, from: number, to: number): Promise<Buffer> {
      const result = await client.query({
        query: BLOCK_ROWS_QUERY(columns.join(', ')),
        query_params: { from: toClickHouseTime(from), to: toClickHouseTime(to), token },
        format: 'JSONCompactEachRow',
      });
      return Buffer.from(await result.text());
    },

    /**
     * The earliest stored time (ClickHouse text) of each (link, visitor hash) of a day, over the
     * links and subdomains named, leaving out the visits `ids` (a redelivered batch's own).
     */
    async firstVisitorTimes(day: string, subdomains: string[], links: string[], ids: string[]) {
      return selectRows<{ link_id: string; visitor_hash: string; first_ts: string }>(
        client,
        `SELECT link_id, visitor_hash, toString(min(ts)) AS first_ts FROM visits
                WHERE subdomain IN {subdomains:Array(String)} AND link_id IN {links:Array(String)} AND toDate(ts) = {day:Date}
                  AND visitor_hash != '' AND visit_id NOT IN {ids:Array(UUID)}
                GROUP BY link_id, visitor_hash`,
        { subdomains, links, day, ids },
      );
    },

    /** Distinct redirects (kind `visit`) stored of each link, by link id; links without any are left out. */
    async visitCounts(linkIds: string[]): Promise<Map<string, number>> {
      const counts = await selectRows<{ link_id: string; visits: number }>(
        client,
        `SELECT link_id, uniqExact(visit_id) AS visits FROM visits WHERE link_id IN {links:Array(String)} AND kind = 'visit' GROUP BY link_id`,
        { links: linkIds },
      );
      return new Map(counts.map((row) => [row.link_id, Number(row.visits)]));
    },

    /** The stored rows (merged: FINAL) of these visits, whole, within [from, to] (ClickHouse times) for partition pruning. */
    async rowsOf(ids: string[], from: string, to: string): Promise<Record<string, unknown>[]> {
      return rows('SELECT * FROM visits FINAL WHERE visit_id IN {ids:Array(UUID)} AND ts BETWEEN {from:DateTime64(3)} AND {to:DateTime64(3)}', {
        ids,
        from,
        to,
      });
    },

    /** Inserts whole rows (newer versions of stored visits), deduplicated by `token`. */
    async insertRows(rows: Record<string, unknown>[], token: string): Promise<void> {
      await client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(token) });
    },

    /**
     * Deletes the raw visits older than their subdomain's cutoff (ms): `cutoffs` by subdomain name,
     * `fallback` for every other subdomain (0: none deleted), and their beacon states with them.
     * Counts first, so that an hour with nothing to delete rewrites no part. Answers the rows deleted
     * (every stored version of a visit counts).
     */
    async pruneOlderThan(cutoffs: Map<string, number>, fallback: number): Promise<number> {
      // The same cutoffs (the job rounds them to the hour) make the same token: a retry folds nothing twice.
      const token = `prune:${createHash('sha256')
        .update(JSON.stringify([[...cutoffs], fallback]))
        .digest('hex')}`;
      const latest = Math.max(fallback, ...cutoffs.values());
      if (latest <= 0) return 0;
      const where =
        'ts < fromUnixTimestamp64Milli({latest:Int64}) AND toUnixTimestamp64Milli(ts) < transform(toString(subdomain), {names:Array(String)}, {cutoffs:Array(Int64)}, {fallback:Int64})';
      const params = { latest, names: [...cutoffs.keys()], cutoffs: [...cutoffs.values()], fallback };
      const [counted] = await rows(`SELECT count() AS n FROM visits WHERE ${where}`, params);
      const deleted = Number(counted?.n ?? 0);
      if (deleted === 0) return 0;
      await removeVisits(where, params, token);
      return deleted;
    },

    /**
     * Erases raw visits: those of `ownerId` (every owner's when undefined: staff) matching `target`
     * (a link, a subdomain, a public IP, or one visit id, with every version of it), with their beacon
     * states; the rollups keep counting them (see removeVisits). `token` deduplicates the fold into the
     * link rollup (a retry of the same request). Answers the rows deleted and the IP addresses and user
     * agents they held, so that copies of them kept elsewhere can be scrubbed.
     */
    async erase(ownerId: string | undefined, target: ErasureTarget, token: string) {
      // The owner, the link and the subdomain as every list and export names them.
      const { where, params } = visitConditions(ownerId, { link_id: target.link_id, subdomain: target.subdomain });
      // A visitor is theirs by either address (the lists' `ip` filter reads the public one only).
      if (target.ip !== undefined) {
        where.push('(ip_public = {ip:String} OR ip_lan = {ip:String})');
        params.ip = target.ip;
      }
      if (target.visit_id !== undefined) {
        where.push('visit_id = {visit:UUID}');
        params.visit = target.visit_id;
      }
      // Nothing named would be every visit: never.
      if (where.length === 0) throw new Error('an erasure names an owner or a target');
      const condition = where.join(' AND ');
      const [found] = await rows(
        `SELECT count() AS n, groupUniqArray(1000)(ip_public) AS ips, groupUniqArray(1000)(ip_lan) AS lan, groupUniqArray(1000)(user_agent) AS agents FROM visits WHERE ${condition}`,
        params,
      );
      const deleted = Number(found?.n ?? 0);
      const personal = [...((found?.ips as string[]) ?? []), ...((found?.lan as string[]) ?? []), ...((found?.agents as string[]) ?? [])].filter(
        (value) => value !== '',
      );
      if (deleted > 0) await removeVisits(condition, params, token);
      return { deleted, personal };
    },

    /** When the oldest raw visit kept was made (ms), or null when none is. */
    async oldestTs(): Promise<number | null> {
      const [row] = await rows('SELECT count() AS n, toUnixTimestamp64Milli(min(ts)) AS ms FROM visits', {});
      return Number(row?.n ?? 0) > 0 ? Number(row!.ms) : null;
    },

    /**
     * A page of an owner's list (one row per visit, its newest version), newest first: after
     * `after` or `skip` rows in, `take` rows at most, with each row's `ts_ms` and hash `h`; and how
     * many visits match in all.
     */
    async ownerPage(ownerId: string, filters: VisitFilters, page: { after?: ListPosition; take: number; skip: number }) {
      const { where, params } = visitConditions(ownerId, filters);
      const base = where.length > 0 ? where.join(' AND ') : '1';
      const paged = [...where];
      const { after } = page;
      if (after) {
        paged.push('(ts, cityHash64(visit_id)) < (fromUnixTimestamp64Milli({after_ts:Int64}), {after_hash:UInt64})');
        Object.assign(params, { after_ts: after.ts, after_hash: after.hash });
      }
      const top = Math.min(Date.now() + CLOCK_SKEW_MS, after ? after.ts + 1 : Infinity, filters.until ? Date.parse(filters.until) + 1 : Infinity);
      const [found, [counted]] = await Promise.all([
        newestRows(
          (floor) => `SELECT ${OWNER_VISIT_COLUMNS.join(', ')}, toUnixTimestamp64Milli(ts) AS ts_ms, toString(cityHash64(visit_id)) AS h
           FROM visits WHERE ${paged.length > 0 ? paged.join(' AND ') : '1'} ${floor}
           ORDER BY ts DESC, cityHash64(visit_id) DESC, version DESC
           LIMIT 1 BY visit_id
           LIMIT {take:UInt32} OFFSET {skip:UInt32}`,
          { ...params, take: page.take, skip: page.skip },
          // Enough: the page and one more row after it (the window then held the offset's rows too).
          page.take,
          top,
          filters.since ? Date.parse(filters.since) : undefined,
        ),
        // FINAL: one row per visit, whichever of its versions (first insert, beacon merges, redelivered copies) merges have kept.
        rows(`SELECT count() AS total FROM visits FINAL WHERE ${base}`, params),
      ]);
      return { rows: found, total: Number(counted?.total ?? 0) };
    },

    /**
     * The newest `max` visits of a subdomain's public list up to `published` (ms), one row per
     * visit, only `columns` selected (the policy's), each with its `ts_ms` and hash `h`.
     */
    async publicWindow(ownerId: string, filters: VisitFilters & { subdomain: string }, columns: readonly string[], published: number, max: number) {
      const { where, params } = visitConditions(ownerId, filters);
      where.push('ts <= fromUnixTimestamp64Milli({published:Int64})');
      params.published = published;
      return newestRows(
        (floor) => `SELECT ${columns.join(', ')}, toUnixTimestamp64Milli(ts) AS ts_ms, toString(cityHash64(visit_id)) AS h
         FROM visits WHERE ${where.join(' AND ')} ${floor}
         ORDER BY ts DESC, cityHash64(visit_id) DESC, version DESC
         LIMIT 1 BY cityHash64(visit_id)
         LIMIT {max:UInt32}`,
        { ...params, max },
        max,
        published + 1,
        filters.since ? Date.parse(filters.since) : undefined,
      );
    },
  };
}
