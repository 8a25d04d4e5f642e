import { isIP } from 'node:net';
import { z } from 'zod';
import { openGeoLookup } from '#shared/geo.js';
import type { Principal } from '#shared/http/auth.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { integerParam } from '#shared/http/fields.js';
import { IP_ADDRESS } from '#shared/ip.js';
import type { StatsService } from '../stats/stats.service.js';
import type { VisitFilters, VisitKind } from '#shared/analytics/visits.repository.js';
import type { VisitsService } from '../visits/visits.service.js';
import { rule } from '#shared/i18n/index.js';

/*
 * The legacy v0 API, frozen: these shapes are defined once, here, and pinned by snapshot tests
 * (legacy.int.test.ts). Change nothing but security fixes; new fields belong to /api/v1/.
 */

const tags = ['legacy'];
const LEGACY_NOTE =
  "Frozen (v0): security fixes only; use /api/v1/. With a bearer token (stats:read): the token owner's data, of all their subdomains or of " +
  "`subdomain`; another owner's `subdomain`, or no credentials with `subdomain`: its public data under its privacy policy (403 otherwise).";

/** A visit in v0: `id` for owners only; the public gets `time`, `kind` and what the policy shows. */
export const LegacyVisitSchema = z
  .object({
    id: z.string().optional(),
    time: z.iso.datetime(),
    kind: z.enum(['visit', 'bot', 'attack', 'beacon']),
    ip: z.string().optional(),
    country: z.string().optional(),
    city: z.string().optional(),
    user_agent: z.string().optional(),
    browser: z.string().optional(),
    os: z.string().optional(),
    referrer: z.string().optional(),
    page: z.string().optional().meta({ description: 'The slug of the visited link.' }),
  })
  .meta({ id: 'LegacyVisit' });
type LegacyVisit = z.infer<typeof LegacyVisitSchema>;

/** v0 names of the v1 visit columns. */
const LEGACY_NAMES: [string, keyof LegacyVisit][] = [
  ['visit_id', 'id'],
  ['ts', 'time'],
  ['kind', 'kind'],
  ['ip_public', 'ip'],
  ['country', 'country'],
  ['city', 'city'],
  ['user_agent', 'user_agent'],
  ['browser', 'browser'],
  ['os', 'os'],
  ['referrer', 'referrer'],
  ['slug', 'page'],
];

/** A v1 visit (owner or public) in the v0 shape: only the fields it carries. */
function legacyVisit(visit: Record<string, unknown>): LegacyVisit {
  const legacy: Record<string, unknown> = {};
  for (const [name, legacyName] of LEGACY_NAMES) if (name in visit) legacy[legacyName] = visit[name];
  return legacy as LegacyVisit;
}

const listQuery = z.object({
  subdomain: z.string().min(1).max(63).optional(),
  limit: integerParam(1, 200).default(50).meta({ description: 'Visits, 1 to 200 (default 50; public lists at most stats_max_items).' }),
});
const VisitsData = z.object({ visits: z.array(LegacyVisitSchema) });

/** The v0 API under /api/rest.php/. */
export function legacyRoutes({ visits, stats }: { visits: VisitsService; stats: StatsService }): RouteDef[] {
  const recent = async (principal: Principal | undefined, query: { subdomain?: string; limit: number }, filters: VisitFilters) => {
    const result = await visits.list(principal, { ...filters, subdomain: query.subdomain }, { limit: query.limit });
    return { items: result.items.map(legacyVisit), total: result.meta.total };
  };
  const listRoute = (operationId: string, path: string, summary: string, kinds: readonly VisitKind[]) =>
    defineRoute({
      operationId,
      method: 'GET',
      path,
      summary,
      description: `${summary}, newest first. ${LEGACY_NOTE}`,
      tags,
      deprecated: true,
      auth: { kind: 'optional' },
      bucket: 'api',
      query: listQuery,
      response: VisitsData,
      errors: ['unauthorized', 'not_found', 'not_owner'],
      handler: async ({ principal, query }) => ({ visits: (await recent(principal, query, { kinds })).items }),
    });

  return [
    defineRoute({
      operationId: 'legacyIp',
      method: 'GET',
      path: '/api/rest.php/ip',
      summary: 'The current visitor as the server sees it (v0)',
      description: "The caller's address (the socket peer, or X-Forwarded-For from a TRUST_PROXY peer), its version, user agent and location. Frozen (v0).",
      tags,
      deprecated: true,
      auth: { kind: 'none' },
      bucket: 'api',
      response: z.object({
        ip: z.string(),
        ip_version: z.union([z.literal(4), z.literal(6)]),
        user_agent: z.string(),
        country: z.string(),
        region: z.string(),
        city: z.string(),
      }),
      handler: async ({ request }) => {
        const geo = (await openGeoLookup()).lookup(request.ip);
        return {
          ip: request.ip,
          ip_version: isIP(request.ip) === 6 ? (6 as const) : (4 as const),
          user_agent: request.headers['user-agent'] ?? '',
          country: geo?.country ?? '',
          region: geo?.region ?? '',
          city: geo?.city ?? '',
        };
      },
    }),
    defineRoute({
      operationId: 'legacyVisitor',
      method: 'GET',
      path: '/api/rest.php/ip/{ip}',
      summary: 'Visits of one IP address (v0)',
      description: `The visits from \`ip\`, newest first, and how many there are. The public gets them only when the policy shows IPs. ${LEGACY_NOTE}`,
      tags,
      deprecated: true,
      auth: { kind: 'optional' },
      bucket: 'api',
      params: z.object({ ip: z.string().regex(IP_ADDRESS, rule('ip_address')) }),
      query: listQuery,
      response: z.object({ ip: z.string(), total: z.number().int(), visits: z.array(LegacyVisitSchema) }),
      errors: ['unauthorized', 'not_found', 'not_owner', 'forbidden'],
      handler: async ({ principal, params, query }) => {
        const found = await recent(principal, query, { ip: params.ip });
        return { ip: params.ip, total: found.total, visits: found.items };
      },
    }),
    listRoute('legacyVisits', '/api/rest.php/visits', 'Recent visits (v0): redirects and visits the tracker started', ['visit', 'beacon']),
    listRoute('legacyBots', '/api/rest.php/bots', 'Recent bot visits (v0)', ['bot']),
    listRoute('legacyHacks', '/api/rest.php/hacks', 'Recent attack attempts (v0)', ['attack']),
    defineRoute({
      operationId: 'legacyStats',
      method: 'GET',
      path: '/api/rest.php/stats',
      summary: 'Counters since ever (v0)',
      description: `Visits, unique visitors, bots and attack attempts ("hacks") since ever. The public gets them only with stats_public, older than the publish delay. ${LEGACY_NOTE}`,
      tags,
      deprecated: true,
      auth: { kind: 'optional' },
      bucket: 'api',
      query: z.object({ subdomain: z.string().min(1).max(63).optional() }),
      response: z.object({ visits: z.number().int(), unique_visitors: z.number().int(), bots: z.number().int(), hacks: z.number().int() }),
      errors: ['unauthorized', 'not_found', 'not_owner', 'forbidden'],
      handler: async ({ principal, query }) => {
        const totals = await stats.counters(principal, query.subdomain);
        return { visits: totals.visits, unique_visitors: totals.unique_visitors, bots: totals.bots, hacks: totals.attacks };
      },
    }),
  ];
}
