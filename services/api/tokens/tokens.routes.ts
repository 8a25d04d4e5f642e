import { z } from 'zod';
import { cursorParam, pageByTime, PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery, TIME_CURSOR } from '#shared/http/pagination.js';
import { dateTimeField, textField } from '#shared/http/fields.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { SCOPES } from '#shared/http/scopes.js';
import { IP_RANGE } from '#shared/ip.js';
import type { tokensService } from './tokens.service.js';
import { rule } from '#shared/i18n/index.js';

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
    .array(z.string().max(64).regex(IP_RANGE, rule('ip_or_cidr')))
    .max(50)
    .optional(),
  expires_at: dateTimeField()
    .optional()
    .meta({ description: 'ISO 8601; without it the token does not expire; a time already past creates the token expired (state `expired`).' }),
});

/** API token endpoints: a session manages its account's tokens; a token lists them and mints and revokes no wider than itself. */
export function tokensRoutes(service: ReturnType<typeof tokensService>): RouteDef[] {
  return [
    defineRoute({
      operationId: 'createToken',
      method: 'POST',
      path: '/api/v1/tokens',
      summary: 'Create an API token; the secret is in data.token, shown this once',
      description:
        'A session or any token may mint. The new token is never wider than its minter; every refusal is 403 `forbidden` with ' +
        '`details.reason`: its scopes must be held by the caller (`scopes_not_held`, listing them), and `admin` is granted only by ' +
        'and to staff (`admin_scope_is_for_staff`). A token minting a token also bounds its expiry and allowlist: when the minting ' +
        'token expires, `expires_at` is required and no later than its expiry (`expiry_required`, `expiry_beyond_token`, with ' +
        '`max_expires_at`); when it has an IP allowlist, `ip_allowlist` is required, non-empty, and each of its ranges must lie inside ' +
        "one of the minting token's ranges (`ip_allowlist_required`, `ip_allowlist_beyond_token` listing the ranges outside, with " +
        '`allowed_ranges`). At most 100 active tokens per account.',
      tags,
      auth: { kind: 'account' },
      bucket: 'api',
      body: NewTokenSchema,
      response: TokenSchema.extend({ token: z.string().meta({ description: 'The full secret. It is not stored and cannot be shown again.' }) }),
      status: 201,
      links: {
        RevokeToken: { operationId: 'revokeToken', parameters: { id: '$response.body#/data/id' } },
      },
      handler: async ({ principal, body }) => service.create(principal!, body),
    }),
    defineRoute({
      operationId: 'listTokens',
      method: 'GET',
      path: '/api/v1/tokens',
      summary: "List the caller's account's API tokens (never their secrets)",
      description:
        "A session or any token, whatever its scopes, lists the tokens of its own account (never another's, `admin` included): " +
        'their prefixes, scopes, allowlists, expiries, states and last use, never a secret or its hash. ' +
        PAGINATION_NOTE,
      tags,
      auth: { kind: 'account' },
      bucket: 'api',
      query: z.object({ ...pagingQuery, cursor: cursorParam(TIME_CURSOR) }),
      response: z.object({ tokens: z.array(TokenSchema) }),
      meta: PageMetaSchema,
      handler: async ({ principal, query, respond }) => {
        const page = pageByTime(await service.list(principal!), pagingOf(query));
        respond.meta(page.meta);
        return { tokens: page.items };
      },
    }),
    defineRoute({
      operationId: 'revokeToken',
      method: 'DELETE',
      path: '/api/v1/tokens/{id}',
      summary: 'Revoke an API token; it is refused from the very next request, on every node',
      description:
        'A session revokes any token of its account. A token revokes itself, or another token of its account no wider than itself: ' +
        "the target's scopes all held by the caller, and when the caller expires, the target expiring no later; when the caller has " +
        "an IP allowlist, the target's allowlist non-empty with each range inside one of the caller's. A wider target is refused " +
        'with 403 `forbidden` (`details.reason` `token_wider_than_caller`, `details.wider` naming `scopes`, `expires_at` and/or ' +
        '`ip_allowlist`, with the `scopes` not held, `max_expires_at`, or the `ranges` outside and `allowed_ranges`). Another ' +
        "account's token is 403 `not_owner` unless the caller holds `admin` (staff), which revokes any token. Revoking twice " +
        'is harmless and keeps the first revocation time.',
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
