import { isIP } from 'node:net';
import { z } from 'zod';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { LINK_ID } from '#shared/ids.js';
import { rule } from '#shared/i18n/index.js';
import type { ErasuresService } from './erasures.service.js';

const tags = ['erasures'];

const ErasureBody = z
  .strictObject({
    link_id: z.string().regex(LINK_ID, rule('link_id')).optional().meta({ description: "Every raw visit of one of the caller's links." }),
    subdomain: z.string().max(63).optional().meta({ description: "Every raw visit of one of the caller's subdomains." }),
    ip: z
      .string()
      .refine((value) => isIP(value) !== 0, rule('ip_address'))
      .optional()
      .meta({
        description: "One visitor: every raw visit whose public or LAN IP address is this one (the caller's visits; staff: everyone's).",
        anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }],
      }),
    visit_id: z.uuid().optional().meta({ description: 'One visit, every stored version of it.' }),
  })
  .refine((body) => Object.values(body).filter((value) => value !== undefined).length === 1, { error: rule('exactly_one_field') })
  .meta({ minProperties: 1, maxProperties: 1, description: 'Exactly one of link_id, subdomain, ip, visit_id.' });

const ErasureSchema = z
  .object({
    target: z.object({ link_id: z.string(), subdomain: z.string(), ip: z.string(), visit_id: z.string() }).partial(),
    visits_deleted: z.number().int().min(0).meta({ description: 'Rows removed from `visits` (every stored version of a visit counts).' }),
    webhook_deliveries_scrubbed: z
      .number()
      .int()
      .min(0)
      .meta({ description: "Webhook delivery-log rows whose kept response excerpt or error held an erased visit's IP address or user agent, now cleared." }),
    dead_letters_removed: z
      .number()
      .int()
      .min(0)
      .meta({
        description:
          'Dead letters (`visits.dlq`, pending or replayed) removed: those holding the erased IP address (any of its textual forms) or visit id, ' +
          'or belonging to the erased link or subdomain (with an owner erasing, not those naming another owner).',
      }),
  })
  .meta({ id: 'Erasure' });

/** POST /api/v1/erasures: erase raw visits. */
export function erasuresRoutes(service: ErasuresService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'createErasure',
      method: 'POST',
      path: '/api/v1/erasures',
      summary: "Erase raw visits: a link's, a subdomain's, or one visitor's (by IP address or visit id)",
      description:
        'Removes the rows from `visits` and the beacon states (so from the visit list and exports) and clears the webhook delivery-log ' +
        "excerpts that hold the erased visits' IP addresses or user agents. The statistics keep their counts (they hold no IP address " +
        'or user agent). Needs `stats:read` or a session; staff with `admin` may erase any owner’s visits. Another owner’s link or ' +
        'subdomain is 403 `not_owner`, an unknown one 404 `not_found`. Audited (`erasure`; the IP address asked for is not kept). ' +
        'Removes the matching dead letters (`visits.dlq`): on Kafka, in a partition holding one, the other pending dead letters are ' +
        'published again at its end and those already replayed there are dropped. First waits until the enricher has stored every visit ' +
        'and beacon the message log held when the request began, so that none of them is stored after the answer: when it has not within ' +
        '30 s, 503 `service_unavailable` and nothing is erased (try again). A 503 after that (the dead letters could not be removed) ' +
        'names in `details` what was erased already; the same request again finishes it.',
      tags,
      auth: { kind: 'scope', scope: 'stats:read' },
      bucket: 'api',
      body: ErasureBody,
      response: ErasureSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, body, request }) => service.erase(principal!, body, { id: request.id, ip: request.ip }),
    }),
  ];
}
