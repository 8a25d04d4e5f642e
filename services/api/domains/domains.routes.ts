import { z } from 'zod';
import { DOMAIN_CURSOR, cursorParam, pageByDomain, PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery } from '#shared/http/pagination.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { SUBDOMAIN_NAME_ANY_CASE } from '#shared/links/hosts.js';
import { CHALLENGE_LABEL } from '#shared/domains/dns-check.js';
import { rule } from '#shared/i18n/index.js';
import { AppError, type LiveErrorCode } from '#shared/errors.js';
import { MAX_DOMAINS_PER_SUBDOMAIN, type DomainsService } from './domains.service.js';

const tags = ['domains'];
/** A host name as the body takes it: labels of letters, digits and inner hyphens, the last one starting with a letter (so never an IP address). */
const HOST_NAME = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?$/;
const auth = { kind: 'scope', scope: 'subdomain:write' } as const;

const domainParam = z.object({
  domain: z.string().min(1).max(253).meta({ description: 'The custom domain, as attached (either case, a trailing dot ignored).', example: 'go.example.org' }),
});

const DomainSchema = z
  .object({
    domain: z.string().meta({ description: 'The host name, in lower case.', example: 'go.example.org' }),
    subdomain: z.string().meta({ description: 'The subdomain whose links, public page and tracker the domain serves.' }),
    status: z.enum(['pending', 'verified', 'failing', 'lapsed']).meta({
      description:
        '`pending`: never verified, not served. `verified`: served. `failing`: served, but its TXT record was not found at the last check; it lapses ' +
        'at `serve_until` unless found again. `lapsed`: no longer served (its record went missing past the grace period); verify again to serve it.',
    }),
    served: z.boolean().meta({ description: 'Whether the edge answers the host now (`verified` or `failing`).' }),
    verification: z
      .object({
        type: z.literal('TXT'),
        name: z.string().meta({ example: `${CHALLENGE_LABEL}.go.example.org` }),
        value: z.string().meta({ example: 'linktrack-verify=3f5c0d6e9b2a4c1f8e7d6c5b4a392817' }),
      })
      .meta({ description: 'The DNS record that proves control of the domain: create it, then POST …/verify. Keep it: re-verification checks it.' }),
    verified_at: z.iso.datetime().nullable().meta({ description: 'When the record was first found.' }),
    failing_since: z.iso.datetime().nullable(),
    serve_until: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'While `failing`: when the domain lapses unless its record is found again (DOMAIN_GRACE_HOURS after it went missing).' }),
    checked_at: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'The last check of the record (POST …/verify, or re-verification every DOMAIN_RECHECK_HOURS).' }),
    check_error: z.string().nullable().meta({ description: 'Why the last check did not find the record; null when it did.' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'CustomDomain', description: 'A domain of its owner attached to a subdomain.' });

/** What reading, verifying and detaching one domain share: its path parameter, answer, credentials and refusals. */
const onOneDomain = {
  tags,
  auth,
  bucket: 'api' as const,
  params: domainParam,
  response: DomainSchema,
  errors: ['not_found', 'not_owner'] as LiveErrorCode[],
};

/** Custom domains (issue 40): attach, list, read, verify, detach; and the TLS proxy's `ask`. */
export function domainsRoutes(service: DomainsService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'createDomain',
      method: 'POST',
      path: '/api/v1/domains',
      summary: 'Attach a domain of your own to a subdomain',
      description:
        `The answer names the TXT record to create (\`${CHALLENGE_LABEL}.{domain}\`); then POST /api/v1/domains/{domain}/verify. Point the domain itself ` +
        "at the platform's edge (a CNAME to the subdomain's host, or the edge's addresses); TLS is the operator's proxy's (docs/operations.md). " +
        `Owner of the subdomain, or an admin of its team. A host name of two labels or more; not an IP address, not the platform's own domain ` +
        `or one under it (422). Taken by anyone → 409 \`conflict\`. At most ${MAX_DOMAINS_PER_SUBDOMAIN} per subdomain.`,
      tags,
      auth,
      bucket: 'api',
      body: z.strictObject({
        domain: z.string().min(4).max(254).regex(HOST_NAME, rule('domain_name')).meta({
          description:
            "A host name of two labels or more, the last one starting with a letter (either case, a trailing dot allowed); not the platform's own domain or one under it (422).",
          example: 'go.example.org',
        }),
        subdomain: z.string().regex(SUBDOMAIN_NAME_ANY_CASE, rule('dns_label')).meta({ example: 'alice' }),
      }),
      response: DomainSchema,
      status: 201,
      errors: ['not_found', 'not_owner', 'conflict'],
      links: {
        GetDomain: { operationId: 'getDomain', parameters: { domain: '$response.body#/data/domain' } },
        VerifyDomain: { operationId: 'verifyDomain', parameters: { domain: '$response.body#/data/domain' } },
        DeleteDomain: { operationId: 'deleteDomain', parameters: { domain: '$response.body#/data/domain' } },
      },
      handler: async ({ principal, body, request }) => service.create(principal!, body, request.ip),
    }),
    defineRoute({
      operationId: 'listDomains',
      method: 'GET',
      path: '/api/v1/domains',
      summary: "List the custom domains of the caller's subdomains and of the subdomains of teams the caller is an admin or owner of",
      description: `Ordered by domain. ${PAGINATION_NOTE}`,
      tags,
      auth,
      bucket: 'api',
      query: z.object({ ...pagingQuery, cursor: cursorParam(DOMAIN_CURSOR) }),
      response: z.object({ domains: z.array(DomainSchema) }),
      meta: PageMetaSchema,
      handler: async ({ principal, query, respond }) => {
        const page = pageByDomain(await service.list(principal!), pagingOf(query));
        respond.meta(page.meta);
        return { domains: page.items };
      },
    }),
    defineRoute({
      operationId: 'getDomain',
      method: 'GET',
      path: '/api/v1/domains/{domain}',
      summary: 'Read a custom domain, its record to create and its last check',
      ...onOneDomain,
      handler: async ({ principal, params }) => service.get(principal!, params.domain),
    }),
    defineRoute({
      operationId: 'verifyDomain',
      method: 'POST',
      path: '/api/v1/domains/{domain}/verify',
      summary: 'Check the TXT record now',
      description:
        'Found: `verified`, served within a second on every node. Not found: 200 with the domain as it stands and the reason in `check_error` ' +
        '(a served domain becomes `failing`, as at re-verification). The lookup goes through DNS_RESOLVERS; a resolver may cache a missing ' +
        'record for its negative TTL.',
      ...onOneDomain,
      handler: async ({ principal, params, request }) => service.verify(principal!, params.domain, request.ip),
    }),
    defineRoute({
      operationId: 'deleteDomain',
      method: 'DELETE',
      path: '/api/v1/domains/{domain}',
      summary: 'Detach a custom domain: no longer served; answers it as it was',
      ...onOneDomain,
      handler: async ({ principal, params, request }) => service.remove(principal!, params.domain, request.ip),
    }),
    defineRoute({
      operationId: 'askTlsDomain',
      method: 'GET',
      path: '/api/v1/tls-ask',
      summary: "On-demand TLS's `ask`: 200 for a host the platform serves, 404 otherwise",
      description:
        "For a TLS proxy that obtains certificates on demand (Caddy's `on_demand_tls { ask … }`): 200 for a verified custom domain (also while " +
        "`failing`) and for an existing subdomain's short host `{name}.{BASE_DOMAIN}`; 404 `not_found` for anything else, so that no certificate is " +
        'requested for a name nobody attached. Counted in the default bucket per address.',
      tags,
      auth: { kind: 'none' },
      bucket: 'default',
      query: z.object({ domain: z.string().min(1).max(253).meta({ example: 'go.example.org' }) }),
      response: z.object({ domain: z.string(), served: z.literal(true) }),
      errors: ['not_found'],
      handler: async ({ query }) => {
        const host = query.domain.trim().toLowerCase().replace(/\.$/, '');
        if (!(await service.servesHost(host))) throw new AppError('not_found', { domain: query.domain });
        return { domain: host, served: true as const };
      },
    }),
  ];
}
