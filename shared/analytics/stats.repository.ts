import { selectRows, type Analytics } from './analytics.js';
import { BUCKET_SEC, type Dimension } from './rollups.js';
import { LINK_DIMS, visitConditions, type VisitFilters } from './visits.repository.js';

/**
 * Merges the rollups' visitor sketches (clickhouse/migrations/0004_stats_visitors_sketch.sql):
 * `uniqCombined(12)` counts up to 256 distinct hashes exactly, then estimates with a HyperLogLog of
 * 4 096 cells (standard error about 1.6 %), a state of at most 3 KiB however many visitors. The
 * precision must be the one the columns were created with.
 */
const VISITORS_MERGE_IF = 'uniqCombinedMergeIf(12)';

/** Human visits: redirects and visits the tracker started; bots and attack attempts are counted beside them. */
const HUMAN_KINDS = `('visit', 'beacon')`;

/** What a report reads: whose rows, which rollup scope, and for a link its place in `visits`. */
export interface Target {
  ownerId: string;
  scope: 'subdomain' | 'link' | 'user';
  id: string;
  subdomain?: string;
}

/** Applied bounds of a report, in whole buckets. */
export interface Range {
  since: number;
  until: number;
  tz: string;
  granularity: 'hour' | 'day';
}

const periodStart = (granularity: Range['granularity']) => (granularity === 'hour' ? 'toStartOfHour' : 'toStartOfDay');

/**
 * The rows of a target in the rollups, over {owner}, {scope}, {id}: whole UTC days [d1, d2) from
 * the daily table, the quarter hours of [since, d1) and [d2, until) from the quarter-hour one.
 */
const seriesTarget = (target: Target) => `owner_id = {owner:String} AND scope = {scope:String}${target.scope === 'user' ? '' : ' AND scope_id = {id:String}'}`;
const edges = `((bucket >= toDateTime({since:UInt32}) AND bucket < toDateTime({d1:UInt32})) OR (bucket >= toDateTime({d2:UInt32}) AND bucket < toDateTime({until:UInt32})))`;
const days = `day >= toDate(toDateTime({d1:UInt32})) AND day < toDate(toDateTime({d2:UInt32}))`;
/** The whole UTC days inside a range (d1 = d2 = until when there are none). */
const splitOf = (range: Range) => {
  const d1 = Math.ceil(range.since / 86_400) * 86_400;
  const d2 = Math.floor(range.until / 86_400) * 86_400;
  return d1 < d2 ? { d1, d2 } : { d1: range.until, d2: range.until };
};
const seriesParams = (target: Target, range: Range) => ({
  owner: target.ownerId,
  scope: target.scope === 'user' ? 'subdomain' : target.scope,
  id: target.id,
  since: range.since,
  until: range.until,
  tz: range.tz,
  ...splitOf(range),
});
/** Kind, visits and visitor states of a target's range: quarter-hour edges and whole days, with the period start `t` of each row. */
const seriesRows = (target: Target, t: { quarter: string; day: string }) =>
  `SELECT ${t.quarter} AS t, kind, visits, visitors FROM stats_series WHERE ${seriesTarget(target)} AND ${edges}
   UNION ALL
   SELECT ${t.day} AS t, kind, visits, visitors FROM stats_series_daily WHERE ${seriesTarget(target)} AND ${days}`;
// Aliases differ from the column names: `AS visits` would shadow the column inside the other aggregates.
const figures =
  `toUInt64(sumIf(visits, kind IN ${HUMAN_KINDS})) AS human, toUInt64(${VISITORS_MERGE_IF}(visitors, kind IN ${HUMAN_KINDS})) AS distinct_visitors, ` +
  `toUInt64(sumIf(visits, kind = 'bot')) AS bot_visits, toUInt64(sumIf(visits, kind = 'attack')) AS attack_visits`;
export type Figures = { human: unknown; distinct_visitors: unknown; bot_visits: unknown; attack_visits: unknown };

/** Each breakdown of a filtered report: its dimension, the column it is grouped by (distinct names), and how that is made of a row of `visits`. */
const FILTERED_DIMS: readonly (readonly [Dimension, string, string])[] = [
  ['country', 'd_country', 'toString(country)'],
  ['city', 'd_city', "if(city = '', '', concat(toString(country), '|', toString(city)))"],
  ['browser', 'd_browser', 'toString(browser)'],
  ['os', 'd_os', 'toString(os)'],
  ['device_type', 'd_device_type', 'toString(device_type)'],
  ['referrer_host', 'd_referrer_host', 'toString(referrer_host)'],
  ['utm_source', 'd_utm_source', 'toString(utm_source)'],
  ['link', 'd_link', 'link_id'],
];

/**
 * The conditions of a filtered report over `visits`: the target's rows (its owner; its subdomain;
 * its link), the range, the first version of each visit, and the filters.
 */
function filteredConditions(target: Target, range: Range, filters: VisitFilters) {
  const scoped = scopedFilters(target, filters);
  const { where, params } = visitConditions(target.ownerId, {
    ...scoped,
    since: new Date(range.since * 1000).toISOString(),
    until: new Date(range.until * 1000).toISOString(),
  });
  return { where: [...where, 'version = 0'], params };
}

/** A report's filters with its target's subdomain and link. */
const scopedFilters = (target: Target, filters: VisitFilters): VisitFilters => ({
  ...filters,
  subdomain: target.scope === 'user' ? undefined : target.subdomain,
  link_id: target.scope === 'link' ? target.id : filters.link_id,
});

/**
 * How far back the quarter-hour cube `stats_cube` reaches (clickhouse/migrations/0012: a TTL of 100
 * days), less a day: its rows of a quarter hour younger than this are all there.
 */
export const CUBE_QUARTER_HOURS_SEC = 99 * 86_400;

/**
 * A filtered read split in two (clickhouse/migrations/0011_stats_cube.sql, 0012): the whole UTC days
 * of the range from the daily cube `stats_cube_daily`, and the partial days at its edges from the
 * quarter-hour cube `stats_cube` or, when an edge is older than it keeps, from `visits`. The cubes'
 * columns are named as those of `visits`, so the same conditions apply to all three. `edges` is the
 * edges' source: its table and conditions, its time column, how many visits a row counts and its
 * visitor sketch. Undefined when a filter is one the cubes do not keep (the legacy API's IP
 * address): the caller reads `visits`.
 */
function cubeSplit(target: Target, range: Range, filters: VisitFilters) {
  if (filters.ip !== undefined) return undefined;
  const { d1, d2 } = splitOf(range);
  const scoped = visitConditions(target.ownerId, scopedFilters(target, filters));
  const cube = [...scoped.where, days].join(' AND ');
  if (range.since >= Date.now() / 1000 - CUBE_QUARTER_HOURS_SEC) {
    return {
      cube,
      edges: {
        table: 'stats_cube',
        time: 'bucket',
        where: [...scoped.where, edges].join(' AND '),
        counted: 'visits',
        sketch: 'uniqCombinedMergeState(12)(visitors)',
      },
      /** The whole range in quarter hours, for a series by hour or in another zone (every zone's offset is a multiple of 15 minutes). */
      quarterHours: [...scoped.where, 'bucket >= toDateTime({since:UInt32}) AND bucket < toDateTime({until:UInt32})'].join(' AND '),
      params: { ...scoped.params, since: range.since, until: range.until, d1, d2 },
    };
  }
  const raw = filteredConditions(target, range, filters);
  return {
    cube,
    edges: {
      table: 'visits',
      time: 'ts',
      where: [...raw.where, '(ts < toDateTime64({d1:UInt32}, 3) OR ts >= toDateTime64({d2:UInt32}, 3))'].join(' AND '),
      counted: 'toUInt64(1)',
      sketch: 'uniqCombinedState(12)(visitor_hash)',
    },
    quarterHours: undefined,
    params: { ...raw.params, d1, d2 },
  };
}

/**
 * The statistics queries: a subdomain's, a link's or a user's rows of the rollups
 * (clickhouse/migrations/0003_stats_rollups.sql, 0004_stats_visitors_sketch.sql), a link's
 * breakdowns from its rows of `visits`, filtered reports from the cubes (0011, 0012). The only
 * place that reads the rollups.
 */
export function statsRepository(analytics: Analytics) {
  const { client } = analytics;
  const rows = <T>(query: string, params: Record<string, unknown>) => selectRows<T>(client, query, params);

  return {
    /** The figures of a target's range, summed over the whole range. */
    async totals(target: Target, range: Range): Promise<Figures | undefined> {
      const [row] = await rows<Figures>(`SELECT ${figures} FROM (${seriesRows(target, { quarter: '0', day: '0' })})`, seriesParams(target, range));
      return row;
    },

    /**
     * The figures of each period of the range that has rows, and their totals (`whole` = 1), from one
     * read: ROLLUP merges the periods' visitor states into the totals row (`grouping(t)` = 1). With
     * `daily`, whole UTC days come from the daily rollup; otherwise every period sums quarter hours.
     */
    async figuresByPeriod(target: Target, range: Range, daily: boolean) {
      const start = periodStart(range.granularity);
      const params = daily ? seriesParams(target, range) : { ...seriesParams(target, range), d1: range.until, d2: range.until };
      return rows<Figures & { t: number; whole: number }>(
        `SELECT t, grouping(t) AS whole, ${figures}
         FROM (${seriesRows(target, { quarter: `toUnixTimestamp(${start}(bucket, {tz:String}))`, day: "toUnixTimestamp(toDateTime(day, 'UTC'))" })})
         GROUP BY ROLLUP(t)`,
        params,
      );
    },

    /** The start (epoch seconds) of every period of the range in its time zone, empty ones too, in order. */
    async periods(range: Range) {
      const start = periodStart(range.granularity);
      return rows<{ t: number }>(
        `SELECT DISTINCT toUnixTimestamp(${start}(toDateTime(b, 'UTC'), {tz:String})) AS t
         FROM (SELECT arrayJoin(range({since:UInt32}, {until:UInt32}, ${BUCKET_SEC})) AS b) ORDER BY t`,
        { since: range.since, until: range.until, tz: range.tz },
      );
    },

    /**
     * Top values of each dimension, most visits first (ties by value), at most `limit` each but the
     * `whole` dimensions, read whole. Subdomains and users read the `stats_dims` rollup, a link its own
     * rows of `visits` and, for those retention or an erasure deleted, `stats_link_dims`.
     */
    async breakdowns(target: Target, range: Range, dims: readonly Dimension[], limit: number, whole: readonly Dimension[]) {
      // One query for both: a whole dimension is limited by (dim, value), which is one row each.
      const limitBy = ` LIMIT ${limit} BY dim, if(dim IN {whole:Array(String)}, value, '')`;
      const dimsTarget = `owner_id = {owner:String}${target.scope === 'subdomain' ? ' AND subdomain = {sub:String}' : ''} AND dim IN {dims:Array(String)}`;
      const params = { owner: target.ownerId, sub: target.subdomain ?? target.id, link: target.id, dims, whole, since: range.since, until: range.until };
      return target.scope === 'link'
        ? rows<{ dim: Dimension; value: string; visits: number }>(
            `SELECT dim, value, toUInt64(sum(count)) AS visits FROM (
               SELECT tupleElement(pair, 1) AS dim, tupleElement(pair, 2) AS value, count() AS count
               FROM visits
               ARRAY JOIN [${LINK_DIMS}] AS pair
               WHERE subdomain = {sub:String} AND link_id = {link:String} AND owner_id = {owner:String} AND version = 0
                 AND kind IN ${HUMAN_KINDS} AND ts >= toDateTime64({since:UInt32}, 3) AND ts < toDateTime64({until:UInt32}, 3)
                 AND dim IN {dims:Array(String)}
               GROUP BY dim, value
               UNION ALL
               SELECT dim, value, visits AS count FROM stats_link_dims
               WHERE owner_id = {owner:String} AND subdomain = {sub:String} AND link_id = {link:String} AND dim IN {dims:Array(String)}
                 AND bucket >= toDateTime({since:UInt32}) AND bucket < toDateTime({until:UInt32})
             )
             GROUP BY dim, value ORDER BY dim, visits DESC, value${limitBy}`,
            params,
          )
        : rows<{ dim: Dimension; value: string; visits: number }>(
            `SELECT dim, value, toUInt64(sum(count)) AS visits FROM (
               SELECT dim, value, visits AS count FROM stats_dims WHERE ${dimsTarget} AND ${edges}
               UNION ALL
               SELECT dim, value, visits AS count FROM stats_dims_daily WHERE ${dimsTarget} AND ${days}
             )
             GROUP BY dim, value ORDER BY dim, visits DESC, value${limitBy}`,
            { ...params, ...splitOf(range) },
          );
    },

    /**
     * A filtered report's figures: each period's and, `whole` = 1, the range's (ROLLUP, as
     * figuresByPeriod), from the cubes (cubeSplit). With `daily` (days in UTC), whole days from the
     * daily cube and the partial ones from the quarter hours; hours, and days in another zone, from
     * the quarter hours alone. A range older than the quarter hours reach reads `visits` for what the
     * daily cube does not give: its edges, or every period of a series by hour or in another zone.
     * The first version of each visit, as the rollups count it; the visitor sketch is the rollups'
     * function, so the estimates agree with theirs.
     */
    async filteredByPeriod(target: Target, range: Range, filters: VisitFilters, daily: boolean) {
      const split = cubeSplit(target, range, filters);
      if (split?.quarterHours !== undefined && !daily) {
        return rows<Figures & { t: number; whole: number }>(
          `SELECT t, grouping(t) AS whole, ${figures}
           FROM (SELECT toUnixTimestamp(${periodStart(range.granularity)}(bucket, {tz:String})) AS t, kind, visits, visitors FROM stats_cube WHERE ${split.quarterHours})
           GROUP BY ROLLUP(t)`,
          { ...split.params, tz: range.tz },
        );
      }
      if (split && daily) {
        return rows<Figures & { t: number; whole: number }>(
          `SELECT t, grouping(t) AS whole, ${figures}
           FROM (
             SELECT toUnixTimestamp(toStartOfDay(${split.edges.time}, 'UTC')) AS t, kind, toUInt64(sum(${split.edges.counted})) AS visits,
                    ${split.edges.sketch} AS visitors
             FROM ${split.edges.table} WHERE ${split.edges.where} GROUP BY t, kind
             UNION ALL
             SELECT toUnixTimestamp(toDateTime(day, 'UTC')) AS t, kind, visits, visitors FROM stats_cube_daily WHERE ${split.cube}
           )
           GROUP BY ROLLUP(t)`,
          split.params,
        );
      }
      const { where, params } = filteredConditions(target, range, filters);
      return rows<Figures & { t: number; whole: number }>(
        `SELECT toUnixTimestamp(${periodStart(range.granularity)}(ts, {tz:String})) AS t, grouping(t) AS whole,
                toUInt64(countIf(kind IN ${HUMAN_KINDS})) AS human, toUInt64(uniqCombinedIf(12)(visitor_hash, kind IN ${HUMAN_KINDS})) AS distinct_visitors,
                toUInt64(countIf(kind = 'bot')) AS bot_visits, toUInt64(countIf(kind = 'attack')) AS attack_visits
         FROM visits WHERE ${where.join(' AND ')}
         GROUP BY ROLLUP(t)`,
        { ...params, tz: range.tz },
      );
    },

    /**
     * A filtered report's breakdowns: as `breakdowns`, the link among them for subdomains and users.
     * The whole UTC days of the range from the daily cube, its partial days from the quarter hours or
     * `visits` (cubeSplit; by UTC day whatever the report's zone: a breakdown has no periods). One pass with a grouping set
     * per dimension (a quarter faster than pairing each row with every dimension by ARRAY JOIN,
     * measured on 2 000 000 visits: 65–84 against 103–112 ms).
     */
    async filteredBreakdowns(target: Target, range: Range, filters: VisitFilters, dims: readonly Dimension[], limit: number, whole: readonly Dimension[]) {
      const asked = FILTERED_DIMS.filter(([dim]) => dims.includes(dim) && (dim !== 'link' || target.scope !== 'link'));
      if (asked.length === 0) return [];
      const columns = asked.map(([, column, expression]) => `${expression} AS ${column}`).join(', ');
      const split = cubeSplit(target, range, filters);
      let source: string;
      let params: Record<string, unknown>;
      if (split) {
        source = `SELECT ${columns}, ${split.edges.counted} AS n FROM ${split.edges.table} WHERE ${split.edges.where} AND kind IN ${HUMAN_KINDS}
                  UNION ALL
                  SELECT ${columns}, visits AS n FROM stats_cube_daily WHERE ${split.cube} AND kind IN ${HUMAN_KINDS}`;
        params = split.params;
      } else {
        const conditions = filteredConditions(target, range, filters);
        source = `SELECT ${columns}, toUInt64(1) AS n FROM visits WHERE ${conditions.where.join(' AND ')} AND kind IN ${HUMAN_KINDS}`;
        params = conditions.params;
      }
      // grouping(x) is 0 in the rows of the set that groups by x (standard SQL, ClickHouse's default).
      const dimOf = `multiIf(${asked.map(([, column]) => `grouping(${column}) = 0, '${column}'`).join(', ')}, '')`;
      const valueOf = `multiIf(${asked.map(([, column]) => `grouping(${column}) = 0, toString(${column})`).join(', ')}, '')`;
      const found = await rows<{ column: string; value: string; visits: number }>(
        `SELECT ${dimOf} AS column, ${valueOf} AS value, toUInt64(sum(n)) AS visits
         FROM (${source})
         GROUP BY GROUPING SETS (${asked.map(([, column]) => `(${column})`).join(', ')})
         ORDER BY column, visits DESC, value LIMIT ${limit} BY column, if(column IN {whole:Array(String)}, value, '')`,
        { ...params, whole: asked.filter(([dim]) => whole.includes(dim)).map(([, column]) => column) },
      );
      const dimByColumn = new Map(asked.map(([dim, column]) => [column, dim]));
      return found.map((row) => ({ dim: dimByColumn.get(row.column)!, value: row.value, visits: row.visits }));
    },

    /**
     * A link's human visits and distinct visitors by the redirect rule that sent them (`matched_rule`)
     * and by A/B variant (`variant`), -1 for none (ClickHouse 0009), with the report's filters: one
     * pass over the link's rows of `visits` (no rollup keeps them; the sort key bounds the read to the
     * link), a grouping set each.
     */
    async routes(target: Target, range: Range, filters: VisitFilters) {
      const { where, params } = filteredConditions(target, range, filters);
      return rows<{ by: 'rule' | 'variant'; index: number; visits: number; visitors: number }>(
        `SELECT if(grouping(matched_rule) = 0, 'rule', 'variant') AS by, toInt32(if(grouping(matched_rule) = 0, matched_rule, variant)) AS index,
                toUInt64(count()) AS visits, toUInt64(uniqCombined(12)(visitor_hash)) AS visitors
         FROM visits WHERE ${where.join(' AND ')} AND kind IN ${HUMAN_KINDS}
         GROUP BY GROUPING SETS ((matched_rule), (variant))
         ORDER BY by, index`,
        params,
      );
    },

    /**
     * Visitors right now: human visits and distinct visitors per subdomain since `sinceMs`, and over
     * them all (`whole` = 1), from `visits` (the rollups count by quarter hours). The subdomains
     * bound the read by the sort key.
     */
    async live(ownerId: string, subdomains: readonly string[], sinceMs: number) {
      if (subdomains.length === 0) return [];
      return rows<{ subdomain: string; whole: number; visitors: unknown; visits: unknown }>(
        `SELECT subdomain, grouping(subdomain) AS whole, toUInt64(uniqCombinedIf(12)(visitor_hash, kind IN ${HUMAN_KINDS})) AS visitors,
                toUInt64(countIf(kind IN ${HUMAN_KINDS})) AS visits
         FROM visits
         WHERE owner_id = {owner:String} AND subdomain IN {subs:Array(String)} AND ts >= fromUnixTimestamp64Milli({since:Int64}) AND version = 0
         GROUP BY ROLLUP(subdomain)`,
        { owner: ownerId, subs: subdomains, since: sinceMs },
      );
    },

    /**
     * Human visits of each of an owner's links, from the daily rollup: one row per link and UTC day
     * since `firstDay` (epoch seconds of its midnight; `d`, the day's), and one row (`d` 0) for all days before it.
     * Links without visits have no row.
     */
    async linkClicks(ownerId: string, linkIds: readonly string[], firstDay: number) {
      if (linkIds.length === 0) return [];
      // Aliases differ from the columns (`day`, `visits`): an alias named as a column shadows it inside the aggregates.
      return rows<{ link_id: string; d: number; human: unknown }>(
        `SELECT scope_id AS link_id, if(day >= toDate(toDateTime({first:UInt32})), toUnixTimestamp(toDateTime(day, 'UTC')), 0) AS d,
                toUInt64(sumIf(visits, kind IN ${HUMAN_KINDS})) AS human
         FROM stats_series_daily
         WHERE owner_id = {owner:String} AND scope = 'link' AND scope_id IN {ids:Array(String)}
         GROUP BY link_id, d`,
        { owner: ownerId, ids: linkIds, first: firstDay },
      );
    },

    /** The time zones ClickHouse knows (`system.time_zones`). */
    async timeZones(): Promise<string[]> {
      return (await rows<{ time_zone: string }>('SELECT time_zone FROM system.time_zones', {})).map((row) => row.time_zone);
    },
  };
}
