import { OpenAPIRegistry, OpenApiGeneratorV31, extendZodWithOpenApi, type ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ERROR_CATALOGUE, ERROR_CODES, type ErrorCode } from '../errors.js';
import { failureSchema, successSchema } from './envelope.js';
import { effectiveQuery } from './register.js';
import { SESSION_COOKIE, routeErrorCodes, type RouteDef } from './route.js';
import { STORABLE_TEXT_PATTERN } from './fields.js';

// registry.register() needs zod's `.openapi()` extension (component registration by name).
extendZodWithOpenApi(z);

const RATE_HEADERS = {
  'RateLimit-Limit': { description: "Requests allowed in the window of this route's bucket.", schema: { type: 'integer' as const } },
  'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' as const } },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' as const } },
  'X-RateLimit-Limit': { description: 'Same as RateLimit-Limit.', schema: { type: 'integer' as const } },
  'X-RateLimit-Remaining': { description: 'Same as RateLimit-Remaining.', schema: { type: 'integer' as const } },
  'X-RateLimit-Reset': { description: 'Unix time, in seconds, at which the window resets.', schema: { type: 'integer' as const } },
};
const RETRY_AFTER_HEADER = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' as const } } };
const REQUEST_ID_HEADER = {
  'X-Request-Id': { description: 'Request id; the same value as meta.request_id and in the access log.', schema: { type: 'string' as const } },
};

/** How an operation may be authenticated, as OpenAPI security requirements. */
function securityOf(route: RouteDef): Record<string, string[]>[] {
  switch (route.auth.kind) {
    case 'none':
      return [];
    case 'optional':
      return [{}, { bearerToken: [] }, { sessionCookie: [] }];
    case 'account':
      return [{ bearerToken: [] }, { sessionCookie: [] }];
    case 'scope':
      return [{ bearerToken: [route.auth.scope] }, { sessionCookie: [] }];
    case 'session':
      return [{ sessionCookie: [] }];
  }
}

export interface OpenApiInfo {
  version: string;
  serverUrl: string;
}

/** Generates the OpenAPI 3.1 document from the route declarations: the only source of the document. */
export function buildOpenApiDocument(routes: RouteDef[], info: OpenApiInfo): Record<string, unknown> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerToken', {
    type: 'http',
    scheme: 'bearer',
    description:
      'API token (`svc_u_…`) created with POST /api/v1/tokens. Not affected by two-factor sign-in (TOTP): a token is already a second ' +
      'credential, and keeps working for an account with TOTP on or held to enrolling in it.',
  });
  registry.registerComponent('securitySchemes', 'sessionCookie', {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description:
      "Session from POST /auth/login (and POST /auth/login/totp for an account with two-factor sign-in). Writes with it must come from the platform's own origin (Origin or Referer), or answer 403 `forbidden`.",
  });
  registry.register('FailureEnvelope', failureSchema());
  const errorResponse = errorResponses(registry);

  for (const route of routes) {
    const codes = routeErrorCodes(route);
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of codes) {
      const { status } = ERROR_CATALOGUE[code];
      if (status < 400) continue;
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    const headers = { ...REQUEST_ID_HEADER, ...(route.bucket ? RATE_HEADERS : {}) };
    const responses: Record<string, ResponseConfig | { $ref: string }> = {};
    const okStatus = String(route.status ?? 200);
    if (route.response) {
      const ok: ResponseConfig = route.raw
        ? {
            description: route.raw.description,
            headers,
            content: Object.fromEntries([route.raw.contentType].flat().map((type) => [type, { schema: route.raw!.schemas?.[type] ?? route.response! }])),
          }
        : { description: route.summary, headers, content: { 'application/json': { schema: successSchema(route.response, route.meta) } } };
      if (route.links) ok.links = route.links;
      responses[okStatus] = ok;
      if (route.alsoStatus) responses[String(route.alsoStatus)] = ok;
    }
    for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
      responses[String(status)] = errorResponse(status, statusCodes, route.bucket !== null);
    }
    registry.registerPath({
      operationId: route.operationId,
      method: route.method.toLowerCase() as 'get',
      path: route.path,
      summary: route.summary,
      description: route.description,
      tags: route.tags,
      deprecated: route.deprecated,
      security: securityOf(route),
      request: {
        params: route.params,
        query: effectiveQuery(route),
        body: route.body ? { required: true, content: { 'application/json': { schema: route.body } } } : undefined,
      },
      responses,
    });
  }

  for (const route of routes) if (route.jsonQuery) registry.register(route.jsonQuery.component, route.jsonQuery.schema);

  const generator = new OpenApiGeneratorV31(registry.definitions);
  const document = generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Link-tracking platform API',
      version: info.version,
      description:
        'Short links on per-owner subdomains, privacy-governed statistics, a consent-gated browser tracker, signed webhooks and exports. ' +
        'Every JSON response uses the envelope `{ok, data|error, meta}`; this document itself is the one exception and is served raw. ' +
        'Errors are the failure envelope (application/json), declared once each under components/responses; a client whose Accept prefers ' +
        'text/html to application/json (a browser) gets an HTML error page with the same status instead. ' +
        'Every operation accepts `?lang=` (en, de, fr, es) to localise messages. Unknown query parameters answer 400 `bad_request`. ' +
        'Authentication: `Authorization: Bearer <token>` or the session cookie; no credentials → 401 `unauthorized`; unknown, malformed, ' +
        "revoked or expired token → 401 `invalid_token`; a scope the caller lacks or an IP outside the token's allowlist → 403 `forbidden`. " +
        'Rate limits: fixed windows per bucket (see GET /api/v1/status); `RateLimit-Reset` is seconds left, `X-RateLimit-Reset` the Unix time ' +
        'of the reset in seconds; 429 carries `Retry-After`. Buckets are keyed as follows: `api` by token, else IP; `auth` by IP and e-mail; ' +
        'the others by IP. Identities caught sharding limits (SPAM_* settings) get 429 `spam_detected` for a cooldown.',
      license: { name: 'AGPL-3.0-only', identifier: 'AGPL-3.0-only' },
    },
    servers: [{ url: info.serverUrl }],
    tags: [
      { name: 'discovery', description: 'Index, health, status, the error catalogue, languages, metrics.' },
      {
        name: 'auth',
        description:
          'Login (session cookie; a second step with a TOTP code for an account with two-factor sign-in), logout, CAPTCHA challenges, the ' +
          'current account, its password (change, reset by e-mail), its two-factor sign-in (TOTP; API tokens are not affected) and its ' +
          'sessions (list, sign out).',
      },
      { name: 'tokens', description: 'API tokens: `Authorization: Bearer svc_u_…`. Only their SHA-256 is stored; the secret is shown once.' },
      { name: 'users', description: 'Accounts, created by staff, who can also issue password-reset links for them.' },
      {
        name: 'teams',
        description:
          'Teams of accounts with roles (owner, admin, editor, viewer), their members and e-mailed invitations (7 days, single use). Reads take `team:read`; changes take a session.',
      },
      {
        name: 'admin',
        description: 'Staff operations (the admin scope): the dead-letter topic `visits.dlq`, its pending dead letters and their replay.',
      },
      {
        name: 'subdomains',
        description:
          'Subdomains (`{name}.{BASE_DOMAIN}`) and their privacy policies. Private by default. GET /api/v1/subdomains/{name} is the public page payload.',
      },
      { name: 'erasures', description: "Erasure of raw visits (a link's, a subdomain's, a visitor's); the statistics keep their counts." },
      { name: 'links', description: 'Short links: create (idempotent with client_id), list, read, update, soft delete, duplicate, QR code.' },
      {
        name: 'imports',
        description: "Imports of other shorteners' CSV exports (Bitly, Dub, Shlink) into a subdomain, as background jobs with progress and a per-row report.",
      },
      {
        name: 'tracker',
        description: 'The consent-gated browser tracker, served by ingest nodes on every host: /tracker.js, consent (a signed short-lived token) and collect.',
      },
      {
        name: 'stats',
        description:
          "Reports (totals, time series, top breakdowns) and visit lists: an owner's with stats:read, a subdomain's public ones under its privacy policy.",
      },
      {
        name: 'legacy',
        description:
          'The frozen v0 API under /api/rest.php/ (deprecated; security fixes only): the same bearer tokens (stats:read), or `?subdomain=` ' +
          "for public data under that subdomain's policy. New integrations use /api/v1/.",
      },
      {
        name: 'webhooks',
        description:
          'Signed deliveries of platform events to your receivers (subdomain:write): subscriptions, secrets, the test button and the log of every attempt. ' +
          'Verify `X-Svc-Signature` in constant time over the raw body, refuse a `delivered_at` older than 5 minutes, and deduplicate on `X-Svc-Delivery`.',
      },
      {
        name: 'domains',
        description:
          "Custom domains (subdomain:write): an owner's own host names attached to a subdomain, proven by a DNS TXT record and re-verified " +
          "periodically; once verified, the edge answers the host as it answers the subdomain. `GET /api/v1/tls-ask` is the TLS proxy's `ask`.",
      },
      {
        name: 'notifications',
        description: 'What the platform tells an account owner (a webhook disabled after failing deliveries); e-mailed too when SMTP_URL is set.',
      },
      { name: 'swarm', description: 'Named routes of the swarm API; registered, not implemented (501).' },
    ],
  });
  for (const route of routes) {
    if (!route.jsonQuery) continue;
    const operation = (document.paths?.[route.path] as Record<string, { parameters?: Record<string, unknown>[] }>)[route.method.toLowerCase()]!;
    const { name, component } = route.jsonQuery;
    operation.parameters = operation.parameters?.map((parameter) =>
      parameter.name === name && parameter.in === 'query'
        ? {
            name,
            in: 'query',
            required: false,
            description: parameter.description,
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${component}` } } },
          }
        : parameter,
    );
  }
  tightenStrings(document);
  return document as unknown as Record<string, unknown>;
}

/** `not_found` → NotFound. */
const pascal = (code: string) => code.replace(/(?:^|_)([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());

/**
 * The error answers, each declared once under components/responses and referenced by every operation
 * that can give it (inline, they were three quarters of the document): one per status, set of codes and
 * whether the route counts a rate limit (its headers). Named after the codes (`NotFound`,
 * `BadRequestOrMissingParameter`; `…Unmetered` without rate-limit headers), their body schema likewise
 * (`NotFoundFailure`). Only the JSON envelope is declared: it is what every client that does not prefer
 * text/html gets; a browser's HTML error page is described in the document's introduction.
 */
function errorResponses(registry: OpenAPIRegistry): (status: number, codes: ErrorCode[], metered: boolean) => { $ref: string } {
  const declared = new Set<string>();
  return (status, unordered, metered) => {
    // In the catalogue's order, so that one set of codes is one name whatever order a route lists them in.
    const codes = [...unordered].sort((a, b) => ERROR_CODES.indexOf(a) - ERROR_CODES.indexOf(b));
    const named = codes.map(pascal).join('Or');
    const name = metered ? named : `${named}Unmetered`;
    if (!declared.has(name)) {
      declared.add(name);
      // Every code at once is the FailureEnvelope component (registered by the caller).
      const schemaName = codes.length === Object.keys(ERROR_CATALOGUE).length ? 'FailureEnvelope' : `${named}Failure`;
      if (!declared.has(schemaName)) {
        declared.add(schemaName);
        if (schemaName !== 'FailureEnvelope') registry.register(schemaName, failureSchema(codes));
      }
      registry.registerComponent('responses', name, {
        description: codes.map((code) => `\`${code}\`: ${ERROR_CATALOGUE[code].condition}`).join('; '),
        headers: { ...REQUEST_ID_HEADER, ...(metered ? RATE_HEADERS : {}), ...(status === 429 ? RETRY_AFTER_HEADER : {}) },
        content: { 'application/json': { schema: { $ref: `#/components/schemas/${schemaName}` } } },
      });
    }
    return { $ref: `#/components/responses/${name}` };
  };
}

const UUID_PATTERN = z.regexes.uuid().source;
const EMAIL_PATTERN = z.regexes.email.source;

/**
 * States the rules zod applies but the generator leaves out, so that the document is exactly as
 * strict as the server: the UUID and e-mail patterns of zod's formats, and the one rule every string
 * of a request obeys (no NUL: shared/http/fields.ts UNSTORABLE) on each free-text string.
 */
function tightenStrings(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) tightenStrings(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as Record<string, unknown>;
  if (schema.type === 'string' && schema.enum === undefined && schema.const === undefined && schema.pattern === undefined) {
    if (schema.format === 'uuid') schema.pattern = UUID_PATTERN;
    else if (schema.format === 'email') schema.pattern = EMAIL_PATTERN;
    else if (schema.format === undefined) schema.pattern = STORABLE_TEXT_PATTERN;
  }
  for (const value of Object.values(schema)) tightenStrings(value);
}
