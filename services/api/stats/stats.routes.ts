import { z } from 'zod';
import { dateTimeField, integerParam } from '#shared/http/fields.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { timeZoneVarNames } from '#shared/time.js';
import { BUCKET_SEC, DIMENSIONS } from '#shared/analytics/rollups.js';
import { LINK_ID } from '#shared/ids.js';
import { rule } from '#shared/i18n/index.js';
import { VISIT_KINDS } from '#shared/analytics/visits.repository.js';
import { RuleConditionSchema } from '#shared/links/rules.js';
import { VISIT_VALUE_FILTERS } from '../visits/visits.routes.js';
import {
  COMPARISONS,
  DEFAULT_RANGE_DAYS,
  LIVE_WINDOW_SEC,
  DEFAULT_TOP,
  GRANULARITIES,
  MAX_SERIES_POINTS,
  MAX_TOP,
  STATS_SCOPES,
  type StatsService,
} from './stats.service.js';

const tags = ['stats'];

const count = z.number().int().min(0);
const TotalsSchema = z
  .object({
    visits: count.meta({ description: 'Human visits: redirects and visits the tracker started, bots and attack attempts excluded.' }),
    unique_visitors: count.meta({
      description:
        'Distinct visitors among the human visits (by the daily-salted visitor hash, so the same person on two days counts twice). ' +
        'An estimate (ClickHouse `uniqCombined(12)`): exact up to 256, beyond that a HyperLogLog estimate with a standard error of ' +
        'about 1.6 % (within 5 % nearly always), so a total need not equal what the points suggest.',
    }),
    bots: count.meta({ description: 'Visits classified as bots (user agent or behaviour).' }),
    attacks: count.meta({ description: 'Attack attempts (scanner paths, traversal, SQL/XSS patterns) answered 404.' }),
  })
  .meta({ id: 'StatsTotals' });
const PointSchema = TotalsSchema.extend({ t: z.iso.datetime().meta({ description: 'Start of the period (hour or day in `tz`), as a UTC instant.' }) }).meta({
  id: 'StatsPoint',
});
const TopItemSchema = z
  .object({
    value: z.string().meta({ description: 'The value; empty when unknown or absent (direct traffic has no referrer host).' }),
    visits: count,
    country: z.string().optional().meta({ description: 'city only: its country (ISO 3166-1 alpha-2).' }),
    link_id: z.string().optional().meta({ description: 'link only, owners only.' }),
    slug: z.string().nullable().optional().meta({ description: 'link only.' }),
  })
  .meta({ id: 'StatsTopItem' });

const ratio = z
  .number()
  .nullable()
  .meta({ description: '(this period − the previous) ÷ the previous, rounded to 4 decimals (0.25 is +25 %); null when the previous period had none.' });
const PreviousSchema = z
  .object({
    range: z
      .object({ since: z.iso.datetime(), until: z.iso.datetime() })
      .meta({ description: 'The period of the same length that ends where `range` starts (its tz and granularity are `range`’s).' }),
    totals: TotalsSchema,
    series: z.array(PointSchema).meta({ description: "The previous period's points, as `series` (overlay them point by point: the nth on the nth)." }),
  })
  .meta({ id: 'StatsPrevious', description: 'Only with `compare=previous`.' });

const RouteItemSchema = z
  .object({
    index: z.number().int().min(-1).meta({ description: "The rule's (or variant's) index in the link's list; -1: none sent the visit on." }),
    visits: z.number().int(),
    unique_visitors: z.number().int(),
    condition: RuleConditionSchema.nullable()
      .optional()
      .meta({ description: "Owners, rules: the rule's condition at that index now (null: the link has no rule there any more, or -1)." }),
    target_url: z
      .string()
      .nullable()
      .optional()
      .meta({ description: 'Owners only: the target at that index now (null: none there any more, or -1). Never in a public report.' }),
    weight: z.number().int().nullable().optional().meta({ description: "Owners, variants: the variant's weight now." }),
  })
  .meta({ id: 'StatsRouteItem' });

const RoutesSchema = z
  .object({
    rules: z.array(RouteItemSchema).meta({ description: 'Human visits and unique visitors by the redirect rule that matched, -1 first.' }),
    variants: z.array(RouteItemSchema).meta({ description: 'Human visits and unique visitors by A/B variant, -1 (no split) first.' }),
  })
  .meta({
    id: 'StatsRoutes',
    description:
      "A link's report (and a public report narrowed to a link, with indexes and counts only): its visits by redirect rule and by A/B " +
      'variant, read from raw visits with the same filters. Visits before migration 0009 count as -1.',
  });

const ReportSchema = z
  .object({
    scope: z.enum(STATS_SCOPES),
    id: z.string(),
    range: z
      .object({
        since: z.iso.datetime(),
        until: z.iso.datetime(),
        tz: z.string(),
        granularity: z.enum(GRANULARITIES),
      })
      .meta({ description: 'The bounds applied: since rounded down, until rounded up (owners) or down (public) to a quarter hour.' }),
    totals: TotalsSchema,
    series: z.array(PointSchema).meta({ description: 'One point per period of the range, empty periods at zero, oldest first.' }),
    top: z
      .object(
        Object.fromEntries(DIMENSIONS.map((dim) => [dim, z.array(TopItemSchema).optional()])) as Record<
          (typeof DIMENSIONS)[number],
          z.ZodOptional<z.ZodArray<typeof TopItemSchema>>
        >,
      )
      .meta({ description: 'Top values of human visits per dimension, most visits first, at most `limit` each.' }),
    previous: PreviousSchema.optional(),
    routes: RoutesSchema.optional(),
    filters: z
      .object({
        link_id: z.string().optional(),
        country: z.string().optional(),
        is_bot: z.boolean().optional(),
        kind: z.enum(VISIT_KINDS).optional(),
        referrer_host: z.string().optional(),
        browser: z.string().optional(),
        os: z.string().optional(),
        device: z.string().optional(),
        utm_source: z.string().optional(),
        utm_medium: z.string().optional(),
        utm_campaign: z.string().optional(),
        // Public reports (GET /api/v1/stats?subdomain=): the link, by slug.
        link: z.string().optional().meta({ description: 'Public reports only: the slug of the link the report is narrowed to.' }),
      })
      .optional()
      .meta({
        description:
          "The filters applied, when any: the figures are those of the visits that match them all (the operation's description says where they are read).",
      }),
    change: z
      .object({ visits: ratio, unique_visitors: ratio, bots: ratio, attacks: ratio })
      .optional()
      .meta({ id: 'StatsChange', description: "Only with `compare=previous`: each total's change against `previous.totals`." }),
  })
  .meta({ id: 'StatsReport' });

const RANGE_NOTE =
  `Figures are kept per quarter hour (${BUCKET_SEC} s): \`since\` and \`until\` are rounded to quarter hours and \`data.range\` gives ` +
  `the bounds applied. Without \`until\`, now; without \`since\`, ${DEFAULT_RANGE_DAYS} days before \`until\`. The series has one ` +
  `point per \`granularity\` (hour or day, default day) in \`tz\` (IANA name, default UTC), at most ${MAX_SERIES_POINTS} points: a longer range keeps its last ${MAX_SERIES_POINTS} periods, and an empty or inverted one counts nothing (\`data.range\` says what was counted). ` +
  `Breakdowns: country, city, browser, os, device_type, referrer_host, utm_source and (not for a link) link, each at most \`limit\` ` +
  `rows (default ${DEFAULT_TOP}, at most ${MAX_TOP}).`;

/** The query of a report; `zones` are the time zones offered (reportTimeZones). */
const reportQueryOf = (zones: [string, ...string[]]) => ({
  since: dateTimeField().optional(),
  until: dateTimeField().optional(),
  granularity: z.enum(GRANULARITIES).optional(),
  tz: z
    .enum(zones)
    .meta({
      id: 'TimeZone',
      description:
        'IANA time zone of the periods (default UTC): a name both the server and ClickHouse know, canonical or a link to one (Asia/Kolkata, Asia/Calcutta).',
      example: 'Europe/Paris',
      'x-enum-varnames': timeZoneVarNames(zones),
    })
    .optional(),
  limit: integerParam(1, MAX_TOP).optional(),
});

/** Statistics: an owner's reports (subdomain, link, user) and a subdomain's public report. */
export function statsRoutes(service: StatsService, zones: [string, ...string[]]): RouteDef[] {
  const reportQuery = reportQueryOf(zones);
  return [
    defineRoute({
      operationId: 'getStats',
      method: 'GET',
      path: '/api/v1/stats/{scope}/{id}',
      summary: 'Report of a subdomain, a link or a user: totals, time series and top breakdowns (stats:read)',
      description:
        "`{scope}` `subdomain` (id: its name), `link` (id: the link id, deleted links included) or `user` (id: the caller's user id or `me`; " +
        "staff with the admin scope may name any user). Another owner's object answers 403 `not_owner`. Bots and attack attempts are " +
        'excluded from the human figures and reported beside them. ' +
        RANGE_NOTE +
        ' Filters (`link_id`, `country`, `is_bot`, `kind`, `referrer_host`, `browser`, `os`, `device`, `utm_source`, `utm_medium`, ' +
        '`utm_campaign`: exact values, all applied together, as the visit list takes them) narrow every figure: totals, series, ' +
        'breakdowns and the comparison; `data.filters` names what applied. A filtered report reads rollups of the value combinations ' +
        '(whole UTC days from a daily one, the rest from one by quarter hour that keeps 100 days), which keep counting visits that ' +
        'retention or an erasure removed, as the unfiltered rollups do. In a range that starts more than 99 days ago, a series by hour ' +
        'or in a zone other than UTC, and the partial days at either end, read the raw visits, where such visits are missing ' +
        "(the subdomain's `raw_visits_since` says from when raw visits exist).",
      tags,
      auth: { kind: 'scope', scope: 'stats:read' },
      bucket: 'api',
      params: z.object({ scope: z.enum(STATS_SCOPES), id: z.string().min(1).max(64) }),
      query: z.object({
        ...reportQuery,
        link_id: z
          .string()
          .regex(LINK_ID, rule('link_id'))
          .optional()
          .meta({ description: "Only this link's visits (a subdomain's or a user's report; a link's report takes only its own id)." }),
        ...VISIT_VALUE_FILTERS,
        compare: z
          .enum(COMPARISONS)
          .optional()
          .meta({
            description:
              '`previous` adds `previous` (the totals and series of the period of the same length just before `range`) and `change` ' +
              '(each total against it). Owners only.',
          }),
      }),
      response: ReportSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, query }) => service.ownerReport(principal!, params.scope, params.id, query),
    }),
    defineRoute({
      operationId: 'getLiveStats',
      method: 'GET',
      path: '/api/v1/stats/live',
      summary: "Visitors right now: the last 5 minutes of the caller's subdomains (stats:read)",
      description:
        `Human visits and distinct visitors of the last ${LIVE_WINDOW_SEC / 60} minutes, read from the raw visits (reports count whole quarter ` +
        "hours): of all the caller's subdomains together and of each (every one listed, quiet ones at 0), or of one with `subdomain` " +
        "(another owner's: 403 `not_owner`). A visit counts once the enricher has stored it, usually within a second or two. " +
        'The dashboard asks every 15 s while its page is visible.',
      tags,
      auth: { kind: 'scope', scope: 'stats:read' },
      bucket: 'api',
      query: z.object({ subdomain: z.string().min(1).max(63).optional() }),
      response: z
        .object({
          window_sec: count.meta({ description: 'The window: 300 s.' }),
          since: z.iso.datetime().meta({ description: 'Its start.' }),
          visitors: count.meta({ description: 'Distinct visitors (the reports’ estimate, exact up to 256).' }),
          visits: count.meta({ description: 'Human visits.' }),
          subdomains: z.array(z.object({ name: z.string(), visitors: count, visits: count })),
        })
        .meta({ id: 'LiveStats' }),
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, query }) => service.live(principal!, query.subdomain),
    }),
    defineRoute({
      operationId: 'getPublicStats',
      method: 'GET',
      path: '/api/v1/stats',
      summary: "A subdomain's public report, when its policy makes statistics public",
      description:
        'No credentials needed, and credentials change nothing (owners read `/api/v1/stats/subdomain/{name}`). 403 `forbidden` unless the ' +
        'policy has stats_public. Breakdowns appear only with their switch: country and city with stats_show_geo; browser, os and ' +
        'device_type with stats_show_ua; referrer_host and utm_source with stats_show_referrer; link (slugs of the links the public ' +
        'list shows, never ids) with stats_show_links. Only data older than stats_publish_delay_sec is counted (`until` is rounded ' +
        'down), and no list has more than stats_max_items items: breakdowns are cut to it and the series keeps its newest points. ' +
        '`link` (a slug) narrows the report to that link with stats_show_links, when the public list shows the link (`data.filters.link` ' +
        'then names it); otherwise it is ignored and the report is the unfiltered one, so it reveals nothing. No other filter is taken. ' +
        RANGE_NOTE,
      tags,
      auth: { kind: 'none' },
      bucket: 'api',
      query: z.object({
        subdomain: z.string().min(1).max(63),
        ...reportQuery,
        link: z.string().min(1).max(200).optional().meta({ description: 'Slug of a public link: the report of its visits alone (stats_show_links).' }),
      }),
      response: ReportSchema,
      errors: ['not_found', 'forbidden'],
      handler: async ({ query }) => {
        const { subdomain, ...report } = query;
        return service.publicReport(subdomain, report);
      },
    }),
  ];
}
