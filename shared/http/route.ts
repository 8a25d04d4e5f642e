import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { RateBucket } from '../config.js';
import type { ErrorCode, LiveErrorCode } from '../errors.js';
import type { Locale } from '../i18n/index.js';
import type { Principal } from './auth.js';
import type { Scope } from './scopes.js';

/** Name of the session cookie set by POST /auth/login. */
export const SESSION_COOKIE = 'lt_session';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route: anyone (`none`: credentials are not even read); anyone, identified when
 * credentials are sent (`optional`); any signed-in caller, session or token (`account`); a caller
 * holding a scope (`scope`; a session holds every scope of its user's role); or only a session
 * (`session`).
 */
export type RouteAuth = { kind: 'none' } | { kind: 'optional' } | { kind: 'account' } | { kind: 'scope'; scope: Scope } | { kind: 'session' };

type AnyObject = z.ZodObject<z.ZodRawShape>;

/** What a handler receives: validated input plus a small response handle. */
export interface HandlerInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  locale: Locale;
  /** The caller, when the route reads credentials and some were sent. */
  principal: Principal | undefined;
  request: FastifyRequest;
  reply: FastifyReply;
  /** Sets the success status (default 200) and extra `meta` fields of the envelope. */
  respond: { status(code: number): void; meta(fields: Record<string, unknown>): void };
}

/** A non-envelope response (the OpenAPI document, metrics, images): sent as is. */
export interface RawBody {
  contentType: string;
  body: string | Buffer | Readable;
}

/**
 * A route as a value: the registrar turns it into a Fastify route (validation included) and
 * into an OpenAPI operation. Paths use OpenAPI's `{param}` form.
 */
export interface RouteDef<
  P extends AnyObject | undefined = AnyObject | undefined,
  Q extends AnyObject | undefined = AnyObject | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  R extends z.ZodType = z.ZodType,
> {
  operationId: string;
  method: HttpMethod;
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: RouteAuth;
  /**
   * Admits a session held to enrolling in TOTP (Principal.totpEnrolmentRequired): the enrolment
   * routes, GET /api/v1/me and logout. Every other route that reads credentials refuses it (403).
   */
  duringTotpEnrolment?: boolean;
  /** Rate bucket counted for this route, or null for none. */
  bucket: RateBucket | null;
  /**
   * Runs before the rate limit is counted: an explicit block (the brute-force lockout) answers
   * here and so takes precedence over the counter.
   */
  beforeLimit?: (request: FastifyRequest) => Promise<void>;
  /** Key of the caller in the route's bucket, where the bucket is keyed by more than the registrar knows (the tracker: IP and visit id). */
  rateKey?: (request: FastifyRequest) => string;
  params?: P;
  query?: Q;
  body?: B;
  /** The largest body of this route in bytes, when it is not BODY_LIMIT (an import's file). */
  bodyLimit?: number;
  /** Schema of `data` in the success envelope, or of the raw body when `raw` is set; absent for routes that never succeed (501). */
  response?: R;
  /**
   * A query parameter whose value is JSON (the tracker's GET collect): validated by the handler, and
   * documented as a parameter with `content: application/json` and this schema (component `component`).
   */
  jsonQuery?: { name: string; schema: z.ZodType; component: string };
  /**
   * Schema of `meta` in the success envelope when the handler adds fields to it (`respond.meta`):
   * a collection's PageMetaSchema (shared/http/pagination.ts), or an extension of it. Default: Meta.
   */
  meta?: z.ZodType;
  /**
   * OpenAPI links of the success response: operations that take a value of this answer (the id a
   * create returns) as a parameter, so that clients and stateful test generators chain them.
   */
  links?: Record<string, { operationId: string; parameters?: Record<string, string>; requestBody?: Record<string, string>; description?: string }>;
  /** Success status (default 200). */
  status?: number;
  /** A second success status with the same body, set by the handler (`respond.status`): a bulk upload that created nothing answers 200 beside its 201. */
  alsoStatus?: number;
  /** Codes this operation can answer beyond those the registrar derives from auth, bucket and schemas. */
  errors?: LiveErrorCode[];
  /** Set for routes that answer a raw body rather than the envelope (`schemas`: a content type whose body is not `response`). */
  raw?: { contentType: string | string[]; description: string; schemas?: Record<string, z.ZodType> };
  deprecated?: boolean;
  handler: (
    input: HandlerInput<
      P extends AnyObject ? z.output<P> : Record<string, never>,
      Q extends AnyObject ? z.output<Q> : Record<string, never>,
      B extends z.ZodType ? z.output<B> : undefined
    >,
  ) => Promise<R extends z.ZodType ? z.input<R> | RawBody : never>;
}

/** Declares a route with full type inference of its handler. */
export function defineRoute<
  P extends AnyObject | undefined = undefined,
  Q extends AnyObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  R extends z.ZodType = z.ZodType,
>(def: RouteDef<P, Q, B, R>): RouteDef {
  return def;
}

/** The `{param}` path in Fastify's `:param` form. */
export function fastifyPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** Error codes an operation can answer: derived from its declaration plus its own list. */
export function routeErrorCodes(route: RouteDef): ErrorCode[] {
  const codes = new Set<ErrorCode>(['bad_request', 'internal_error', 'encode_error', 'service_unavailable']);
  // Every operation takes `?lang=`, so every one can answer validation_error.
  codes.add('validation_error');
  if (route.params || route.query || route.body) codes.add('missing_parameter');
  if (route.body) codes.add('payload_too_large');
  if (route.bucket) codes.add('rate_limited');
  if (route.auth.kind !== 'none') {
    for (const code of ['invalid_token', 'forbidden'] as const) codes.add(code);
    if (route.auth.kind !== 'optional') codes.add('unauthorized');
  }
  for (const code of route.errors ?? []) codes.add(code);
  return [...codes];
}
