import { z } from 'zod';
import { dateTimeField } from '#shared/http/fields.js';
import { cursorParam, PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery } from '#shared/http/pagination.js';
import { LINK_ID } from '#shared/ids.js';
import { SUBDOMAIN_NAME_ANY_CASE } from '#shared/links/hosts.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { VISIT_KINDS } from '#shared/analytics/visits.repository.js';
import { VISIT_CURSOR, type VisitsService } from './visits.service.js';
import { rule } from '#shared/i18n/index.js';

const tags = ['stats'];
const text = z.string();
const flag = z.boolean();

export const VisitSchema = z
  .object({
    visit_id: z.uuid().meta({ description: 'UUIDv7 assigned by the redirect (or the tracker for a visit it started).' }),
    ts: z.iso.datetime(),
    kind: z
      .enum(VISIT_KINDS)
      .meta({ description: 'visit (a redirect), beacon (a visit the tracker started), bot, or attack (an attack attempt answered 404).' }),
    subdomain: text,
    link_id: text.meta({ description: 'Empty for an attack attempt or a visit the tracker started.' }),
    slug: text,
    ip_public: text.meta({ description: 'Server-determined: the socket peer, or X-Forwarded-For from a TRUST_PROXY peer.' }),
    ip_lan: text.meta({ description: 'From the tracker, only with lan_ip consent.' }),
    country: text,
    region: text,
    city: text,
    latitude: z.number().nullable(),
    longitude: z.number().nullable(),
    asn: z.number().int(),
    user_agent: text,
    browser: text,
    browser_version: text,
    os: text,
    os_version: text,
    device_type: text,
    is_bot: flag,
    bot_name: text,
    is_attack: flag,
    attack_type: text,
    referrer: text,
    referrer_host: text,
    accept_language: text,
    query: text,
    utm_source: text,
    utm_medium: text,
    utm_campaign: text,
    utm_term: text,
    utm_content: text,
    is_unique: flag.meta({ description: "The visitor's first visit to the link within the uniqueness window." }),
    consent_analytics: flag,
    consent_lan_ip: flag,
    timezone: text,
    screen: text,
    network: text,
    capabilities: text,
    beacon_at: z.iso.datetime().nullable(),
    imported_from: text.meta({
      description: 'The shortener whose history this visit was imported from (`shlink`, `yourls`); empty for a visit this platform answered.',
    }),
  })
  .meta({ id: 'Visit' });

export const PublicVisitSchema = VisitSchema.pick({
  ts: true,
  kind: true,
  slug: true,
  ip_public: true,
  ip_lan: true,
  country: true,
  region: true,
  city: true,
  user_agent: true,
  browser: true,
  browser_version: true,
  os: true,
  os_version: true,
  device_type: true,
  referrer: true,
  referrer_host: true,
})
  .partial()
  .meta({
    id: 'PublicVisit',
    description:
      'A visit as the public sees it: `ts` and `kind`, plus ip_public (stats_show_ip), ip_lan (stats_show_internal_ip), country, region, city ' +
      '(stats_show_geo), user_agent, browser, browser_version, os, os_version, device_type (stats_show_ua), referrer, ' +
      'referrer_host (stats_show_referrer) and slug (stats_show_links; on an attack attempt, the path it asked for, only with stats_show_attack_paths). ' +
      'Never the visit id, the link id, the owner or the coordinates (latitude, longitude).',
  });

/** The moment raw visits are complete from, as the visit list's meta and the JSON export's meta say it. */
export const RAW_VISITS_SINCE = z.iso
  .datetime()
  .nullable()
  .meta({
    description:
      "From when raw visits exist: visits before it may have been deleted by the subdomain's retention (visits_retention_days, " +
      'VISITS_RETENTION_DAYS_MAX); the statistics still count them. Over several subdomains (no `subdomain` filter), the latest of ' +
      'their cutoffs. null: no raw visit has been deleted for age. An erasure (POST /api/v1/erasures) removes visits of any age.',
  });

const VisitPageMetaSchema = PageMetaSchema.extend({ raw_visits_since: RAW_VISITS_SINCE }).meta({ id: 'VisitPageMeta' });

const valueFilter = (column: string) =>
  z
    .string()
    .max(200)
    .optional()
    .meta({ description: `Visits whose ${column} is exactly this (case-sensitive, as stored and as breakdowns show it); empty: those without one.` });

/**
 * The filters on what a visit is (not where or when): the same for the visit list, its exports and
 * the owner's statistics. Each names one value; several narrow together (AND).
 */
export const VISIT_VALUE_FILTERS = {
  country: z
    .string()
    .regex(/^[A-Za-z]{2}$/, rule('country_code'))
    .optional()
    .meta({ description: 'ISO 3166-1 alpha-2 country code (either case).' }),
  is_bot: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional(),
  kind: z.enum(VISIT_KINDS).optional(),
  referrer_host: valueFilter('referrer host (empty: direct traffic)'),
  browser: valueFilter('browser (as `Chrome`, `Firefox`)'),
  os: valueFilter('operating system (as `Windows`, `iOS`)'),
  device: valueFilter('device type (`desktop`, `mobile`, `tablet`, or empty)'),
  utm_source: valueFilter('utm_source'),
  utm_medium: valueFilter('utm_medium'),
  utm_campaign: valueFilter('utm_campaign'),
};

/** The filters of a visit list, the same for the list and its exports (GET /api/v1/export). */
export const VISIT_FILTER_QUERY = {
  subdomain: z.string().regex(SUBDOMAIN_NAME_ANY_CASE, rule('subdomain_name')).optional(),
  link_id: z.string().regex(LINK_ID, rule('link_id')).optional(),
  since: dateTimeField().optional(),
  until: dateTimeField().optional(),
  ...VISIT_VALUE_FILTERS,
};

/** The visit list: an owner's visits, or a subdomain's public list. */
export function visitsRoutes(service: VisitsService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'listVisits',
      method: 'GET',
      path: '/api/v1/visits',
      summary: "List visits: the caller's (stats:read), or a subdomain's public list without credentials",
      description:
        "With credentials: the caller's visits (stats:read), newest first, filtered by `subdomain`, `link_id`, `since` (at or after), " +
        "`until` (before), `country` (ISO code), `is_bot`, `kind`, `referrer_host`, `browser`, `os`, `device`, `utm_source`, `utm_medium` and `utm_campaign` (exact values, AND); a visit appears once, with the beacon's signals when they came. " +
        "Another owner's `subdomain` answers its public list, or 403 `not_owner` when its policy hides it. A `link_id` must name one " +
        "of the caller's links, as in the export: another owner's is 403 `not_owner`, an unknown one 404 `not_found`. Without credentials, " +
        '`subdomain` is required and the answer is its public list: only when its policy has stats_show_visits_list (else 403 ' +
        '`forbidden`), only visits older than stats_publish_delay_sec, at most its stats_max_items newest (`meta.total` counts that ' +
        'window), as PublicVisit objects with only the columns the policy shows; the public list takes `since`, `until` and `kind` ' +
        'only (400 `bad_request` for the other filters). ' +
        PAGINATION_NOTE,
      tags,
      auth: { kind: 'optional' },
      bucket: 'api',
      query: z.object({
        ...VISIT_FILTER_QUERY,
        ...pagingQuery,
        cursor: cursorParam(VISIT_CURSOR),
      }),
      response: z.object({ visits: z.array(z.union([VisitSchema, PublicVisitSchema])) }),
      meta: VisitPageMetaSchema,
      errors: ['unauthorized', 'not_found', 'not_owner'],
      handler: async ({ principal, query, respond }) => {
        const { limit, cursor, page, ...filters } = query;
        const result = await service.list(principal, filters, pagingOf({ limit, cursor, page }));
        respond.meta(result.meta);
        return { visits: result.items };
      },
    }),
  ];
}
