import { BUCKET_SEC, DIMENSIONS, type Dimension } from '#shared/analytics/rollups.js';
import type { Figures, Range, Target } from '#shared/analytics/stats.repository.js';
import type { VisitFilters } from '#shared/analytics/visits.repository.js';
import { AppError } from '#shared/errors.js';
import { requireScope, type Principal } from '#shared/http/auth.js';
import { publicReportFilters, type PublicReportFilters, type PublicView } from '#shared/policy/policy.js';
import { isTimeZone, isUtcZone, reportTimeZones } from '#shared/time.js';
import { isUuid } from '#shared/ids.js';
import type { RuleCondition } from '#shared/links/rules.js';
import type { LinkRow } from '#shared/links/links.repository.js';
import { linkOfCaller } from '../links/link-access.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';
import type { Repositories } from '#services/repositories.js';
import { rule } from '#shared/i18n/index.js';

/** Without `since`, a report covers this many days before `until`. */
export const DEFAULT_RANGE_DAYS = 30;
/** Most points a time series may have (a range too long for its granularity answers 422). */
export const MAX_SERIES_POINTS = 2_000;
/** Breakdown rows per dimension: default and most. */
export const DEFAULT_TOP = 10;
export const MAX_TOP = 100;

export const STATS_SCOPES = ['subdomain', 'link', 'user'] as const;
export type StatsScope = (typeof STATS_SCOPES)[number];
export const GRANULARITIES = ['hour', 'day'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export const COMPARISONS = ['previous'] as const;

export interface StatsQuery {
  since?: string;
  until?: string;
  granularity?: Granularity;
  tz?: string;
  limit?: number;
  compare?: (typeof COMPARISONS)[number];
}

/** The filters an owner's report takes: what a visit is, and for a subdomain or a user, which link. */
export type ReportFilters = Pick<
  VisitFilters,
  'link_id' | 'country' | 'is_bot' | 'kind' | 'referrer_host' | 'browser' | 'os' | 'device' | 'utm_source' | 'utm_medium' | 'utm_campaign'
>;
const REPORT_FILTERS = [
  'link_id',
  'country',
  'is_bot',
  'kind',
  'referrer_host',
  'browser',
  'os',
  'device',
  'utm_source',
  'utm_medium',
  'utm_campaign',
] as const satisfies readonly (keyof ReportFilters)[];

/** The filters given (undefined ones left out); none: the report reads the rollups. */
export function reportFiltersOf(query: ReportFilters): ReportFilters {
  const given: ReportFilters = Object.fromEntries(REPORT_FILTERS.filter((key) => query[key] !== undefined).map((key) => [key, query[key]]));
  if (given.country !== undefined) given.country = given.country.toUpperCase();
  return given;
}

export interface Totals {
  visits: number;
  unique_visitors: number;
  bots: number;
  attacks: number;
}
export type Point = Totals & { t: string };
type TopItem = { value: string; visits: number; country?: string; link_id?: string; slug?: string | null };

/** How far back "right now" looks: visitors of the last 5 minutes. */
export const LIVE_WINDOW_SEC = 300;

/** Visitors right now: the caller's subdomains together and each (all of them, quiet ones at 0). */
export interface Live {
  window_sec: number;
  since: string;
  visitors: number;
  visits: number;
  subdomains: { name: string; visitors: number; visits: number }[];
}

/** Each total's change against the previous period: (now − before) ÷ before, null when before is 0. */
export type Change = Record<keyof Totals, number | null>;

export interface Report {
  scope: StatsScope;
  id: string;
  range: { since: string; until: string; tz: string; granularity: Granularity };
  totals: Totals;
  series: Point[];
  top: Partial<Record<Dimension, TopItem[]>>;
  /** With `compare=previous`: the period of the same length just before, and each total's change. */
  previous?: { range: { since: string; until: string }; totals: Totals; series: Point[] };
  change?: Change;
  /** The filters applied (a filtered report reads raw visits); a public report's link by its slug. */
  filters?: ReportFilters & PublicReportFilters;
  /** A link's visits by redirect rule and by A/B variant (a link's report; a public report narrowed to a link). */
  routes?: Routes;
}

/**
 * Human visits and unique visitors by the rule (`index` in the link's rules) or variant that sent
 * them; -1: none did. The owner sees what each index is now (`condition`, `target_url`, `weight`;
 * null when the link no longer has it); the public only indexes and counts, never a target.
 */
export interface RouteItem {
  index: number;
  visits: number;
  unique_visitors: number;
  condition?: RuleCondition | null;
  target_url?: string | null;
  weight?: number | null;
}
export interface Routes {
  rules: RouteItem[];
  variants: RouteItem[];
}

/** The period of the same length that ends where the range starts (an empty range's is empty too). */
export function previousRange(range: Range): Range {
  return { ...range, since: range.since - (range.until - range.since), until: range.since };
}

/** Each total's change: a ratio rounded to 4 decimals (0.25 is +25 %), null when there was nothing before. */
export function changeOf(now: Totals, before: Totals): Change {
  const ratio = (a: number, b: number) => (b === 0 ? null : Math.round(((a - b) / b) * 10_000) / 10_000);
  return {
    visits: ratio(now.visits, before.visits),
    unique_visitors: ratio(now.unique_visitors, before.unique_visitors),
    bots: ratio(now.bots, before.bots),
    attacks: ratio(now.attacks, before.attacks),
  };
}

const floorBucket = (ms: number) => Math.floor(ms / 1000 / BUCKET_SEC) * BUCKET_SEC;
const ceilBucket = (ms: number) => Math.ceil(ms / 1000 / BUCKET_SEC) * BUCKET_SEC;
const iso = (sec: number) => new Date(sec * 1000).toISOString();

/**
 * The bounds a report covers. Rollups count quarter hours, so `since` is rounded down to one and
 * `until` up (the owner's report includes the quarter hour in progress), or down for the public
 * (nothing younger than the publish delay: `publishedBefore`).
 */
function rangeOf(query: StatsQuery, publishedBefore?: Date): Range {
  const now = Date.now();
  const untilMs = query.until ? Date.parse(query.until) : now;
  const sinceMs = query.since ? Date.parse(query.since) : untilMs - DEFAULT_RANGE_DAYS * 86_400_000;
  const tz = query.tz ?? 'UTC';
  if (!isTimeZone(tz)) throw new AppError('validation_error', { tz: rule('time_zone') });
  const granularity = query.granularity ?? 'day';
  const until = publishedBefore ? floorBucket(Math.min(untilMs, publishedBefore.getTime())) : ceilBucket(untilMs);
  // An empty or inverted range counts nothing; a range of more than MAX_SERIES_POINTS periods keeps
  // its last ones (data.range says what was counted).
  const period = granularity === 'hour' ? 3_600 : 86_400;
  // (MAX − 1 periods: a range not aligned to periods touches one more than its length holds.)
  const since = Math.min(until, Math.max(floorBucket(sinceMs), until - (MAX_SERIES_POINTS - 1) * period));
  return { since, until, tz, granularity };
}

/**
 * Statistics of a subdomain, a link or a user, read from the rollups of ClickHouse
 * (clickhouse/migrations/0003_stats_rollups.sql, 0004_stats_visitors_sketch.sql); a link's
 * breakdowns from its rows of `visits`.
 * Public reports go through the policy module's view: hidden breakdowns are never queried.
 */
export function statsService({
  repositories,
  subdomains,
}: {
  repositories: Pick<Repositories, 'stats' | 'links' | 'users' | 'subdomains'>;
  subdomains: SubdomainsService;
}) {
  const { stats: analytics, links, users } = repositories;

  const totalsOf = (row: Figures | undefined): Totals => ({
    visits: Number(row?.human ?? 0),
    unique_visitors: Number(row?.distinct_visitors ?? 0),
    bots: Number(row?.bot_visits ?? 0),
    attacks: Number(row?.attack_visits ?? 0),
  });

  const totals = async (target: Target, range: Range): Promise<Totals> => {
    return totalsOf(await analytics.totals(target, range));
  };

  /**
   * Totals and every period of the range, empty ones at zero, from one read: ROLLUP merges the
   * periods' visitor states into the totals row (`grouping(t)` = 1). Unfiltered, the rollups: days in
   * UTC (or a zone that never leaves UTC) use the daily rollup for whole days; hours, and days
   * elsewhere, sum quarter hours. Filtered, the cubes of value combinations: the daily one for whole
   * UTC days, the quarter-hour one (or, past its 100 days, `visits`) for the rest.
   */
  const seriesAndTotals = async (target: Target, range: Range, filters: ReportFilters = {}): Promise<{ totals: Totals; series: Point[] }> => {
    const daily = range.granularity === 'day' && isUtcZone(range.tz);
    const read = Object.keys(filters).length > 0 ? analytics.filteredByPeriod(target, range, filters, daily) : analytics.figuresByPeriod(target, range, daily);
    const [filled, periods] = await Promise.all([read, analytics.periods(range)]);
    const byPeriod = new Map(filled.filter((row) => Number(row.whole) === 0).map((row) => [Number(row.t), row]));
    return {
      totals: totalsOf(filled.find((row) => Number(row.whole) === 1)),
      series: periods.map(({ t }) => ({ t: iso(Number(t)), ...totalsOf(byPeriod.get(Number(t))) })),
    };
  };

  /**
   * Top values of each dimension, most visits first (ties by value), at most `limit` each but the
   * `whole` dimensions, read whole. Subdomains and users read the `stats_dims` rollup, a link its own
   * rows of `visits`; a filtered report, the cubes (the daily one for whole UTC days, the quarter hours or `visits` for the range's edges).
   */
  const breakdowns = async (
    target: Target,
    range: Range,
    dims: readonly Dimension[],
    limit: number,
    whole: readonly Dimension[],
    filters: ReportFilters = {},
  ) => {
    if (dims.length === 0) return new Map<Dimension, { value: string; visits: number }[]>();
    const found =
      Object.keys(filters).length > 0
        ? await analytics.filteredBreakdowns(target, range, filters, dims, limit, whole)
        : await analytics.breakdowns(target, range, dims, limit, whole);
    const byDim = new Map<Dimension, { value: string; visits: number }[]>(dims.map((dim) => [dim, []]));
    for (const row of found) byDim.get(row.dim)?.push({ value: row.value, visits: Number(row.visits) });
    return byDim;
  };

  /** Breakdown rows as a report shows them: a city with its country, a link with its slug. */
  const presented = async (byDim: Map<Dimension, { value: string; visits: number }[]>, publicLinks?: { before: Date; max: number }) => {
    const top: Partial<Record<Dimension, TopItem[]>> = {};
    for (const [dim, items] of byDim) {
      if (dim === 'city') {
        top.city = items.map(({ value, visits }) => {
          const cut = value.indexOf('|');
          return cut < 0 ? { value, country: '', visits } : { value: value.slice(cut + 1), country: value.slice(0, cut), visits };
        });
      } else if (dim === 'link') {
        const rowsById = new Map((await links.summaries(items.map((item) => item.value).filter(Boolean))).map((row) => [row.id, row]));
        if (publicLinks) {
          // The public sees a link's slug only while the public list would show the link.
          const now = Date.now();
          top.link = items
            .map(({ value, visits }) => ({ row: rowsById.get(value), visits }))
            .filter(
              ({ row }) =>
                row && row.deleted_at === null && row.created_at <= publicLinks.before && (row.expires_at === null || row.expires_at.getTime() > now),
            )
            .slice(0, publicLinks.max)
            .map(({ row, visits }) => ({ value: row!.slug, slug: row!.slug, visits }));
        } else {
          top.link = items.map(({ value, visits }) => ({ value, link_id: value, slug: rowsById.get(value)?.slug ?? null, visits }));
        }
      } else top[dim] = items;
    }
    return top;
  };

  /** The target of an owner's report, after the ownership checks (404 unknown, 403 not_owner). */
  const targetOf = async (principal: Principal, scope: StatsScope, id: string): Promise<Target> => {
    if (scope === 'subdomain') {
      const row = await subdomains.managed(principal, id.toLowerCase(), 'viewer');
      return { ownerId: row.owner_id, scope, id: row.name, subdomain: row.name };
    }
    if (scope === 'link') {
      const row = await linkOfCaller(links, subdomains, principal, id, 'viewer');
      return { ownerId: row.owner_id, scope, id: row.id, subdomain: row.subdomain };
    }
    const userId = id === 'me' ? principal.userId : id;
    if (userId !== principal.userId) {
      if (!principal.scopes.has('admin')) throw new AppError('not_owner', { user: id });
      if (!isUuid(userId) || !(await users.findById(userId))) throw new AppError('not_found', { user: id });
    }
    return { ownerId: userId, scope, id: userId };
  };

  /** A report's figures. For the public, links are filtered to the public ones before the cut, so their breakdown is read whole. */
  const report = async (
    target: Target,
    range: Range,
    dims: readonly Dimension[],
    top: number,
    publicLinks?: { before: Date; max: number },
    filters: ReportFilters = {},
  ) => {
    const [figured, byDim] = await Promise.all([
      seriesAndTotals(target, range, filters),
      breakdowns(target, range, dims, top, publicLinks ? ['link'] : [], filters),
    ]);
    return { ...figured, top: await presented(byDim, publicLinks) };
  };
  /** A link's visits by rule and by variant; `link` (the owner's) labels each index with what it is now, else only counts. */
  const routesOf = async (target: Target, range: Range, filters: ReportFilters, link?: Pick<LinkRow, 'rules' | 'variants'>, max?: number): Promise<Routes> => {
    const found = await analytics.routes(target, range, filters);
    const items = (by: 'rule' | 'variant') =>
      found
        .filter((row) => row.by === by)
        .map((row): RouteItem => {
          const index = Number(row.index);
          const item: RouteItem = { index, visits: Number(row.visits), unique_visitors: Number(row.visitors) };
          if (!link) return item;
          if (by === 'rule') {
            const rule = index >= 0 ? link.rules?.[index] : undefined;
            return { ...item, condition: rule?.condition ?? null, target_url: rule?.target_url ?? null };
          }
          const variant = index >= 0 ? link.variants?.[index] : undefined;
          return { ...item, target_url: variant?.target_url ?? null, weight: variant?.weight ?? null };
        })
        .slice(0, max);
    return { rules: items('rule'), variants: items('variant') };
  };
  const rangeView = (range: Range) => ({ since: iso(range.since), until: iso(range.until), tz: range.tz, granularity: range.granularity });

  /** A subdomain's public totals since ever (stats_public), older than the publish delay. */
  const publicCounters = async (name: string, ownerId: string, view: PublicView): Promise<Totals> => {
    if (!view.stats) throw new AppError('forbidden', { reason: 'stats_not_public', subdomain: name });
    const until = floorBucket(view.publishedBefore.getTime());
    return totals({ ownerId, scope: 'subdomain', id: name }, { since: 0, until, tz: 'UTC', granularity: 'day' });
  };

  return {
    targetOf,
    /**
     * Totals since ever (the legacy API's counters): the caller's (stats:read), of all their
     * subdomains or of one; another owner's subdomain, or no credentials, its public totals.
     */
    async counters(principal: Principal | undefined, subdomain: string | undefined): Promise<Totals> {
      const until = ceilBucket(Date.now());
      if (subdomain !== undefined) {
        const name = subdomain.toLowerCase();
        const { ownerId, view } = await subdomains.policyView(name);
        if (!principal || !(await subdomains.roleFor(principal, { ownerId, subdomain: name }))) {
          if (principal && !view.stats) throw new AppError('not_owner', { subdomain: name });
          return publicCounters(name, ownerId, view);
        }
        requireScope(principal, 'stats:read');
        return totals({ ownerId, scope: 'subdomain', id: name }, { since: 0, until, tz: 'UTC', granularity: 'day' });
      }
      if (!principal) throw new AppError('unauthorized', { hint: 'send credentials, or name a subdomain for its public counters' });
      requireScope(principal, 'stats:read');
      return totals({ ownerId: principal.userId, scope: 'user', id: principal.userId }, { since: 0, until, tz: 'UTC', granularity: 'day' });
    },

    /**
     * Visitors right now (stats:read): human visits and distinct visitors of the last
     * LIVE_WINDOW_SEC seconds, of all the caller's subdomains and of each, or of one (`subdomain`).
     */
    async live(principal: Principal, subdomain?: string): Promise<Live> {
      requireScope(principal, 'stats:read');
      const rows =
        subdomain !== undefined
          ? [await subdomains.managed(principal, subdomain.toLowerCase(), 'viewer')]
          : await repositories.subdomains.listByOwner(principal.userId);
      const ownerId = rows[0]?.owner_id ?? principal.userId;
      const sinceMs = Date.now() - LIVE_WINDOW_SEC * 1000;
      const found = await analytics.live(
        ownerId,
        rows.map((row) => row.name),
        sinceMs,
      );
      const whole = found.find((row) => Number(row.whole) === 1);
      const bySubdomain = new Map(found.filter((row) => Number(row.whole) === 0).map((row) => [row.subdomain, row]));
      return {
        window_sec: LIVE_WINDOW_SEC,
        since: new Date(sinceMs).toISOString(),
        visitors: Number(whole?.visitors ?? 0),
        visits: Number(whole?.visits ?? 0),
        subdomains: rows.map((row) => ({
          name: row.name,
          visitors: Number(bySubdomain.get(row.name)?.visitors ?? 0),
          visits: Number(bySubdomain.get(row.name)?.visits ?? 0),
        })),
      };
    },

    /** An owner's report (stats:read): everything, bots and attack attempts beside human visits. */
    async ownerReport(principal: Principal, scope: StatsScope, id: string, query: StatsQuery & ReportFilters): Promise<Report> {
      requireScope(principal, 'stats:read');
      const target = await targetOf(principal, scope, id);
      const range = rangeOf(query);
      const filters = reportFiltersOf(query);
      if (scope === 'link' && filters.link_id !== undefined && filters.link_id !== target.id) {
        throw new AppError('validation_error', { link_id: rule('link_filter_of_link') });
      }
      const dims = scope === 'link' ? DIMENSIONS.filter((dim) => dim !== 'link') : DIMENSIONS;
      const before = query.compare === 'previous' ? previousRange(range) : undefined;
      const [found, earlier, routes] = await Promise.all([
        report(target, range, dims, query.limit ?? DEFAULT_TOP, undefined, filters),
        before ? seriesAndTotals(target, before, filters) : undefined,
        scope === 'link' ? links.findById(target.id).then((row) => routesOf(target, range, filters, row ?? { rules: null, variants: null })) : undefined,
      ]);
      const answer: Report = { scope, id: target.id, range: rangeView(range), ...found };
      if (routes) answer.routes = routes;
      if (Object.keys(filters).length > 0) answer.filters = filters;
      if (before && earlier) {
        answer.previous = { range: { since: iso(before.since), until: iso(before.until) }, ...earlier };
        answer.change = changeOf(found.totals, earlier.totals);
      }
      return answer;
    },

    /**
     * A subdomain's public report: only when its policy has stats_public (else 403), only
     * breakdowns whose switch is on, only data older than the publish delay, at most
     * stats_max_items items in any list (the newest series points). A filter by link (its slug)
     * applies only with stats_show_links and to a link the public list shows; any other filter, or
     * that one otherwise, is ignored: the answer is the unfiltered report and `filters` is absent.
     */
    async publicReport(name: string, query: StatsQuery & PublicReportFilters): Promise<Report> {
      const { ownerId, view } = await subdomains.policyView(name.toLowerCase());
      if (!view.stats) throw new AppError('forbidden', { reason: 'stats_not_public', subdomain: name });
      const range = rangeOf(query, view.publishedBefore);
      const dims = DIMENSIONS.filter((dim) => view.breakdowns.includes(dim));
      const max = view.maxItems;
      const top = Math.min(query.limit ?? DEFAULT_TOP, max);
      const target: Target = { ownerId, scope: 'subdomain', id: name.toLowerCase(), subdomain: name.toLowerCase() };
      const allowed = publicReportFilters(view, { link: query.link });
      const linkId = allowed.link ? await links.publicIdBySlug(target.id, allowed.link, view.publishedBefore) : undefined;
      const filters: ReportFilters = linkId ? { link_id: linkId } : {};
      const found = await report(target, range, dims, top, { before: view.publishedBefore, max: top }, filters);
      const answer: Report = {
        scope: 'subdomain',
        id: target.id,
        range: rangeView(range),
        totals: found.totals,
        series: found.series.slice(-max),
        top: found.top,
      };
      if (linkId) {
        answer.filters = { link: allowed.link };
        // Narrowed to a link the public list shows (stats_show_links): its visits by rule and variant, as indexes and counts only.
        answer.routes = await routesOf({ ...target, scope: 'subdomain' }, range, filters, undefined, max);
      }
      return answer;
    },
  };
}

export type StatsService = ReturnType<typeof statsService>;

/** The time zones reports offer (reportTimeZones), from ClickHouse's `system.time_zones`, read once. */
export async function reportZonesOf({ stats }: Pick<Repositories, 'stats'>): Promise<[string, ...string[]]> {
  return reportTimeZones(await stats.timeZones());
}
