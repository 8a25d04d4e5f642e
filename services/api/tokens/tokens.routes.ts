import { z } from 'zod';
import { dateTimeField, textField } from '../../../shared/http/fields.js';
import { defineRoute, SCOPES, type RouteDef } from '../../../shared/http/route.js';
import { IP_RANGE } from '../../../shared/ip.js';
import type { tokensService } from './tokens.service.js';

const tags = ['tokens'];

const TokenSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    prefix: z.string().meta({ description: 'Short prefix of the form `svc_u_<hex>`, to recognise the token in a list.' }),
    scopes: z.array(z.enum(SCOPES)),
    ip_allowlist: z.array(z.string()).meta({ description: 'CIDR ranges the token may be used from; empty means anywhere.' }),
    expires_at: z.iso.datetime().nullable(),
    last_used_at: z.iso.datetime().nullable().meta({ description: 'Written behind: current within a few seconds.' }),
    last_used_ip: z.string().nullable(),
    created_at: z.iso.datetime(),
    revoked_at: z.iso.datetime().nullable(),
    state: z.enum(['active', 'revoked', 'expired']),
  })
  .meta({ id: 'ApiToken' });

const NewTokenSchema = z.strictObject({
  name: textField(100),
  scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length),
  ip_allowlist: z
    .array(z.string().max(64).regex(IP_RANGE, 'must be an IPv4 or IPv6 address or CIDR range'))
    .max(50)
    .optional(),
  expires_at: dateTimeField().optional().meta({ description: 'ISO 8601; without it the token does not expire; a time already past creates the token expired (state `expired`).' }),
});

/** API token endpoints: both accept a session or a bearer token. */
export function tokensRoutes(service: ReturnType<typeof tokensService>): RouteDef[] {
  return [
    defineRoute({
      operationId: 'createToken',
      method: 'POST',
      path: '/api/v1/tokens',
      summary: 'Create an API token; the secret is in data.token, shown this once',
      description:
        'Scopes must be held by the caller (a token cannot mint a token with scopes it does not hold: 403 `forbidden`); ' +
        '`admin` can be granted only by and to staff. At most 100 active tokens per account.',
      tags,
      auth: { kind: 'account' },
      bucket: 'api',
      body: NewTokenSchema,
      response: TokenSchema.extend({ token: z.string().meta({ description: 'The full secret. It is not stored and cannot be shown again.' }) }),
      status: 201,
      handler: async ({ principal, body }) => service.create(principal!, body),
    }),
    defineRoute({
      operationId: 'listTokens',
      method: 'GET',
      path: '/api/v1/tokens',
      summary: "List the caller's API tokens (never their secrets)",
      tags,
      auth: { kind: 'account' },
      bucket: 'api',
      response: z.object({ tokens: z.array(TokenSchema) }),
      handler: async ({ principal, respond }) => {
        const tokens = await service.list(principal!);
        respond.meta({ count: tokens.length, total: tokens.length });
        return { tokens };
      },
    }),
    defineRoute({
      operationId: 'revokeToken',
      method: 'DELETE',
      path: '/api/v1/tokens/{id}',
      summary: 'Revoke an API token; it is refused from the very next request, on every node',
      tags,
      auth: { kind: 'account' },
      bucket: 'api',
      params: z.object({ id: z.uuid() }),
      response: TokenSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params }) => service.revoke(principal!, params.id),
    }),
  ];
}
