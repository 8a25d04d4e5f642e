import { z } from 'zod';
import { cursorParam, NAME_CURSOR, pageByName, PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery } from '#shared/http/pagination.js';
import { textField } from '#shared/http/fields.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { PolicyPatchShape, PolicySchema } from '#shared/policy/policy.js';
import { TrackerOriginsInput } from '#shared/tracker/origins.js';
import { PublicLinkSchema } from '../links/links.routes.js';
import { MAX_RETENTION_DAYS, MAX_SUBDOMAINS_PER_OWNER, IDNA_FORM, RESERVED_SUBDOMAINS, SUBDOMAIN_NAME, type SubdomainsService } from './subdomains.service.js';
import { rule } from '#shared/i18n/index.js';
import type { AuditEntry } from '#shared/audit/audit.repository.js';

const tags = ['subdomains'];

const nameSchema = z
  .string()
  // First, so that its message is the one a punycode label gets; the pattern below says it too.
  .refine((name) => !IDNA_FORM.test(name), rule('not_punycode'))
  .regex(SUBDOMAIN_NAME, rule('dns_label'))
  .meta({
    description:
      'A DNS label. Punycode labels (`xn--…`) and any other label with `--` in positions 3–4 (the form IDNA reserves) are ' +
      `refused with 422: shown as Unicode, they can imitate other names. Reserved names are 409 \`conflict\`, as taken ones: ${RESERVED_SUBDOMAINS.join(', ')}.`,
    example: 'alice',
  });
const titleSchema = textField(200);

const SubdomainSchema = z
  .object({
    name: z.string(),
    title: z.string().nullable(),
    url: z.string().meta({ description: 'Origin of the short links of this subdomain.' }),
    owner_id: z.uuid(),
    team_id: z
      .uuid()
      .nullable()
      .meta({ description: "The team whose members reach the subdomain by their role (PUT /api/v1/subdomains/{name}/team); null: its owner's alone." }),
    role: z.enum(['owner', 'admin', 'editor', 'viewer']).meta({
      description:
        "The caller's standing in the subdomain: `owner` of its own, else its role in the subdomain's team (listed with `include=teams`): " +
        'viewers read its statistics, visits and exports, editors manage its links, admins its policy and webhooks too.',
    }),
    links_count: z.number().int().meta({ description: 'Live (not deleted) links of the subdomain.' }),
    tracker_origins: z.array(z.string()).meta({
      description: 'The site origins the tracker may run on for this subdomain (canonical); empty: any site. See the request field.',
      example: ['https://example.org'],
    }),
    forward_query: z.boolean().meta({
      description:
        'The `forward_query` a link of the subdomain is created with when its create omits it (POST /api/v1/links, bulk). A change ' +
        'applies to links created afterwards; existing links keep theirs.',
    }),
    visits_retention_days: z
      .number()
      .int()
      .min(1)
      .nullable()
      .meta({
        description:
          "Days the subdomain's raw visits (the visit list, exports) are kept; older ones are deleted by the hourly retention job, " +
          'while the statistics keep counting them. null: as long as the operator allows (VISITS_RETENTION_DAYS_MAX; forever when it is 0).',
      }),
    raw_visits_since: z.iso.datetime().nullable().meta({
      description: 'The moment before which raw visits may have been deleted by that retention (now less the days in force); null: none are.',
    }),
    ...PolicySchema.shape,
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Subdomain', description: 'A subdomain with its privacy policy, as its owner sees it.' });

const PublicPageSchema = z
  .object({
    name: z.string(),
    title: z.string().nullable(),
    url: z.string(),
    public: z
      .object({
        stats: z.boolean().meta({ description: 'Aggregates are public (stats_public).' }),
        visits_list: z.boolean().meta({ description: 'The recent-visits list is public (stats_show_visits_list).' }),
        links: z.boolean(),
        owner: z.boolean(),
        ip: z.boolean(),
        internal_ip: z.boolean(),
        geo: z.boolean(),
        ua: z.boolean(),
        referrer: z.boolean(),
        publish_delay_sec: z.number().int(),
        max_items: z.number().int(),
      })
      .meta({ description: 'Which statistics and visit details the policy makes public.' }),
    links: z
      .array(PublicLinkSchema)
      .optional()
      .meta({ description: 'Only when stats_show_links: the newest live links, at most stats_max_items. Absent otherwise.' }),
    owner: z
      .object({ display_name: z.string().nullable() })
      .optional()
      .meta({ description: 'Only when stats_show_owner. Absent otherwise; never the e-mail.' }),
  })
  .meta({ id: 'PublicPage' });

/** Subdomain endpoints: claim, list one's own, set the policy, and the public page payload. */
export function subdomainsRoutes(service: SubdomainsService, audit: (entry: AuditEntry) => void): RouteDef[] {
  return [
    defineRoute({
      operationId: 'claimSubdomain',
      method: 'POST',
      path: '/api/v1/subdomains',
      summary: 'Claim a subdomain',
      description: `Taken → 409 \`conflict\`; reserved or invalid name → 422. At most ${MAX_SUBDOMAINS_PER_OWNER} per account. The policy starts private.`,
      tags,
      auth: { kind: 'scope', scope: 'subdomain:write' },
      bucket: 'api',
      body: z.strictObject({ name: nameSchema, title: titleSchema.optional(), tracker_origins: TrackerOriginsInput.optional() }),
      response: SubdomainSchema,
      status: 201,
      errors: ['conflict'],
      links: {
        GetSubdomainSettings: { operationId: 'getSubdomain', parameters: { name: '$response.body#/data/name' } },
        UpdateSubdomain: { operationId: 'updateSubdomain', parameters: { name: '$response.body#/data/name' } },
        PublicPage: { operationId: 'getPublicPage', parameters: { name: '$response.body#/data/name' } },
        SubdomainStats: { operationId: 'getStats', parameters: { scope: 'subdomain', id: '$response.body#/data/name' } },
        CreateLinkThere: { operationId: 'createLink', requestBody: { subdomain: '$response.body#/data/name' }, description: 'A link on the new subdomain.' },
        WebhookForIt: { operationId: 'createWebhook', requestBody: { subdomain: '$response.body#/data/name' }, description: 'A webhook of its events.' },
      },
      handler: async ({ principal, body }) => service.claim(principal!, body),
    }),
    defineRoute({
      operationId: 'listSubdomains',
      method: 'GET',
      path: '/api/v1/subdomains',
      summary: "List the caller's subdomains with their policies",
      description:
        `Needs \`links:read\` or a session. Ordered by name (an account holds at most ${MAX_SUBDOMAINS_PER_OWNER}). With \`include=teams\`, ` +
        "the subdomains of the caller's teams follow among them, each with the caller's `role` in it (what the dashboard's pickers offer). " +
        PAGINATION_NOTE,
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      query: z.object({
        ...pagingQuery,
        cursor: cursorParam(NAME_CURSOR),
        include: z
          .enum(['teams'])
          .optional()
          .meta({ description: "`teams`: the subdomains of the caller's teams too (a member's role in each is `role`). Without it, the caller's own." }),
      }),
      response: z.object({ subdomains: z.array(SubdomainSchema) }),
      meta: PageMetaSchema,
      handler: async ({ principal, query, respond }) => {
        const page = pageByName(await service.list(principal!, { teams: query.include === 'teams' }), pagingOf(query));
        respond.meta(page.meta);
        return { subdomains: page.items };
      },
    }),
    defineRoute({
      operationId: 'getSubdomain',
      method: 'GET',
      path: '/api/v1/subdomains/{name}/settings',
      summary: 'One subdomain with its title and policy, as its owner sees it',
      description:
        "What PATCH /api/v1/subdomains/{name} edits, for the owner (or staff): unknown → 404 `not_found`, someone else's → 403 `not_owner`. Needs `links:read` or a session, like the list. The public sees GET /api/v1/subdomains/{name} instead.",
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      params: z.object({ name: z.string().max(63) }),
      response: SubdomainSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params }) => service.get(principal!, params.name),
    }),
    defineRoute({
      operationId: 'updateSubdomain',
      method: 'PATCH',
      path: '/api/v1/subdomains/{name}',
      summary: 'Set the title, the tracker origins and any of the policy fields',
      description:
        'Fields sit at the top level of the body, by their spec names; absent fields keep their value. At least one field. ' +
        '`tracker_origins` replaces the whole list (`[]`: any site again); the ingest edge applies a change within moments (a ' +
        'change notice), at the latest within a minute. `visits_retention_days` sets how long raw visits are kept; `forward_query` the default of new links.',
      tags,
      auth: { kind: 'scope', scope: 'subdomain:write' },
      bucket: 'api',
      params: z.object({ name: z.string().max(63) }),
      body: z
        .strictObject({
          title: titleSchema.nullable().optional(),
          tracker_origins: TrackerOriginsInput.optional(),
          forward_query: z
            .boolean()
            .optional()
            .meta({ description: 'Links created without `forward_query` take this (default false); existing links keep theirs.' }),
          visits_retention_days: z
            .number()
            // The schema's bound is fixed (the OpenAPI document is one for every server); the message names this server's maximum.
            .int(rule('retention_days', { max: service.retentionMaxDays }))
            .min(1, rule('retention_days', { max: service.retentionMaxDays }))
            .max(MAX_RETENTION_DAYS, rule('retention_days', { max: service.retentionMaxDays }))
            .nullable()
            .optional()
            .meta({
              description:
                'Days raw visits are kept (null: as long as the operator allows). More than VISITS_RETENTION_DAYS_MAX (when it is not 0) is 422 `validation_error`. A shorter retention applies at the next hourly run.',
            }),
          ...PolicyPatchShape,
        })
        .refine((body) => Object.keys(body).length > 0, { error: rule('at_least_one_field') })
        .meta({ minProperties: 1 }),
      response: SubdomainSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, body }) => service.update(principal!, params.name, body),
    }),
    defineRoute({
      operationId: 'getPublicPage',
      method: 'GET',
      path: '/api/v1/subdomains/{name}',
      summary: 'Public page payload of a subdomain (no authentication; filtered by its privacy policy)',
      description: 'Parts the policy hides are absent from the JSON, not null: `links` without stats_show_links, `owner` without stats_show_owner.',
      tags,
      auth: { kind: 'none' },
      bucket: 'default',
      params: z.object({ name: z.string().max(63) }),
      response: PublicPageSchema,
      errors: ['not_found'],
      handler: async ({ params }) => service.publicPage(params.name),
    }),
    defineRoute({
      operationId: 'setSubdomainTeam',
      method: 'PUT',
      path: '/api/v1/subdomains/{name}/team',
      summary: 'Give the subdomain to a team',
      description:
        "The subdomain's owner (or staff), who must be an owner or admin of the team (403 `forbidden`, `team_role_too_low`; not a " +
        "member: 403 `not_owner`). The subdomain stays its owner's (its links and visits are stored under that account), and the " +
        "team's members reach it by their role: viewers read its statistics and visits, editors manage its links, admins its " +
        'policy too, owners everything. Audited (`subdomain.team_assigned`).',
      tags,
      auth: { kind: 'scope', scope: 'subdomain:write' },
      bucket: 'api',
      params: z.object({ name: z.string().max(63) }),
      body: z.strictObject({ team_id: z.uuid() }),
      response: SubdomainSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, body, request }) => service.setTeam(principal!, params.name.toLowerCase(), body.team_id, request.ip, audit),
    }),
    defineRoute({
      operationId: 'unsetSubdomainTeam',
      method: 'DELETE',
      path: '/api/v1/subdomains/{name}/team',
      summary: 'Take the subdomain back from its team',
      description:
        "Its owner, or an owner or admin of its team. The team's members lose access from their next request. Harmless when it " +
        'has no team. Audited (`subdomain.team_unassigned`).',
      tags,
      auth: { kind: 'scope', scope: 'subdomain:write' },
      bucket: 'api',
      params: z.object({ name: z.string().max(63) }),
      response: SubdomainSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => service.setTeam(principal!, params.name.toLowerCase(), null, request.ip, audit),
    }),
  ];
}
