import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, retryLater, type ErrorDetails } from '../errors.js';
import { LANG_TAG, t, zodErrorMap, type Locale } from '../i18n/index.js';
import { UNSTORABLE } from './fields.js';
import { buildMeta, success } from './envelope.js';
import { setRateLimitHeaders, type RateLimiter } from './rate-limit.js';
import type { RateBucket } from '../config.js';
import { requireScope, type AbuseHooks, type Authenticator, type Principal } from './auth.js';
import { fastifyPath, type RawBody, type RouteDef } from './route.js';

declare module 'fastify' {
  interface FastifyRequest {
    locale: Locale;
  }
  interface FastifyContextConfig {
    /** The route declaration, for hooks and metrics. */
    routeDef?: RouteDef;
    /** Label of a route registered outside the declarations (the short hosts), for metrics and logs. */
    routeLabel?: string;
  }
}

/** `?lang=` is accepted by every operation; it is added to each query schema. */
const langParam = z
  .string()
  .regex(LANG_TAG, 'must be a language tag such as en, de or fr-CA')
  .optional()
  .meta({ description: 'Locale of messages (see GET /api/v1/languages); falls back to Accept-Language, then English.' });

/** The query schema as validated and documented: the route's own fields, `lang`, nothing else. */
export function effectiveQuery(route: RouteDef): z.ZodObject {
  return z.strictObject({ ...(route.query?.shape ?? {}), lang: langParam });
}

type Part = 'params' | 'query' | 'body';

const isMissing = (input: unknown, path: PropertyKey[]) => {
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return true;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value === undefined;
};

/**
 * A failed union (a body that is one of several shapes) reports the problems of the shape it came
 * closest to (fewest issues), so that the caller learns which field is wrong rather than "invalid input".
 */
function closestBranch(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union' || !('errors' in issue) || issue.errors.length === 0) return [issue];
  const best = issue.errors.reduce((a, b) => (b.length < a.length ? b : a));
  return best.flatMap((inner) => closestBranch({ ...inner, path: [...issue.path, ...inner.path] }));
}

type Checked<T> = { ok: true; data: T } | { ok: false; error: AppError };

/**
 * Fields (dotted paths) of `input` holding a string, or a key, that storage cannot hold (UNSTORABLE),
 * in document order. A walk with its own stack, not recursion: however deep the input, it cannot
 * run out of call stack.
 */
export function unstorableFields(input: unknown): string[] {
  const found: string[] = [];
  // Each entry: a value, its path, and (for an object's member) the key that leads to it.
  const stack: { value: unknown; path: string; key?: string; parent?: string }[] = [{ value: input, path: '' }];
  const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);
  while (stack.length > 0) {
    const { value, path, key, parent } = stack.pop()!;
    if (key !== undefined && UNSTORABLE.test(key)) {
      found.push(parent!);
      continue;
    }
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) found.push(path);
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) stack.push({ value: value[index] as unknown, path: join(path, String(index)) });
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [member, inner] = entries[index] as [string, unknown];
        stack.push({ value: inner, path: join(path, member), key: member, parent: path });
      }
    }
  }
  return found;
}

/**
 * Checks one part of the request. Unknown keys → 400 bad_request, absent required fields →
 * 400 missing_parameter, anything else → 422 validation_error with each field mapped to its rule
 * in the caller's language.
 */
function checkPart<T extends z.ZodType>(schema: T, input: unknown, part: Part, locale: Locale): Checked<z.output<T>> {
  if (part === 'body' && input === undefined) {
    return { ok: false, error: missingError(['body'], part) };
  }
  // One rule for every declared string, before its own: nothing storage would refuse or rewrite.
  const unstorable = unstorableFields(input);
  if (unstorable.length > 0) {
    const message = t(locale, 'rule.unstorable_text');
    return { ok: false, error: new AppError('validation_error', Object.fromEntries(unstorable.map((field) => [field || part, message]))) };
  }
  const result = schema.safeParse(input, { error: zodErrorMap(locale) });
  if (result.success) return { ok: true, data: result.data };
  const issues = result.error.issues.flatMap(closestBranch);
  const unknown = issues.flatMap((issue) => (issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key].join('.')) : []));
  if (unknown.length > 0) {
    return {
      ok: false,
      error: new AppError('bad_request', { unknown, in: part }, { messageKey: 'error.bad_request.unknown_parameter', params: { names: unknown.join(', ') } }),
    };
  }
  const missing = issues
    .filter((issue) => (issue.code === 'invalid_type' || issue.code === 'invalid_value') && isMissing(input, issue.path))
    .map((issue) => issue.path.join('.') || part);
  if (missing.length > 0) return { ok: false, error: missingError(missing, part) };
  const details: Record<string, string> = {};
  for (const issue of issues) {
    const field = issue.path.join('.') || part;
    details[field] ??= issue.message;
  }
  return { ok: false, error: new AppError('validation_error', details) };
}

const missingError = (missing: string[], part: Part) =>
  new AppError('missing_parameter', { missing, in: part }, { messageKey: 'error.missing_parameter.named', params: { names: missing.join(', ') } });

/**
 * Validates params, query and body together so one answer names every problem. The most basic
 * problem wins: an unknown parameter, then a missing one, then invalid values (all fields merged).
 */
export function validateRequest(parts: { part: Part; schema: z.ZodType | undefined; input: unknown }[], locale: Locale): Record<Part, unknown> {
  const data: Record<Part, unknown> = { params: {}, query: {}, body: undefined };
  const errors: AppError[] = [];
  for (const { part, schema, input } of parts) {
    if (!schema) continue;
    const result = checkPart(schema, input, part, locale);
    if (result.ok) data[part] = result.data;
    else errors.push(result.error);
  }
  for (const code of ['bad_request', 'missing_parameter'] as const) {
    const first = errors.find((error) => error.code === code);
    if (first) throw first;
  }
  if (errors.length > 0) {
    throw new AppError('validation_error', Object.assign({}, ...errors.map((error) => error.details)) as ErrorDetails);
  }
  return data;
}

/**
 * Refuses a body on a route that takes none, as an unknown parameter is refused: a client that
 * sends fields (say, overrides to a duplicate) learns they were not applied. None, `{}` or an empty
 * text pass.
 */
export function assertNoBody(body: unknown): void {
  if (body === undefined || body === null || body === '') return;
  if (typeof body === 'object' && !Array.isArray(body)) {
    const unknown = Object.keys(body);
    if (unknown.length === 0) return;
    throw new AppError('bad_request', { unknown, in: 'body' }, { messageKey: 'error.bad_request.unknown_parameter', params: { names: unknown.join(', ') } });
  }
  throw new AppError('bad_request', { body: 'this operation takes no body' });
}

/** Serialises an envelope; a value JSON cannot encode becomes encode_error, not a broken body. */
export function encodeJson(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError('value is not JSON-encodable');
    return text;
  } catch (error) {
    throw new AppError('encode_error', {}, { cause: error });
  }
}

/**
 * Key of the caller in a bucket, as the spec's table says: `api` by API token, then IP; `auth` by
 * IP and the account named in the body; the others by IP (session and user are not used to widen
 * what one address may do).
 */
function rateKey(bucket: RateBucket, request: FastifyRequest, principal: Principal | undefined): string {
  if (bucket === 'api' && principal?.tokenId) return principal.identity;
  if (bucket === 'auth') {
    const email = (request.body as { email?: unknown } | undefined)?.email;
    return `${request.ip}|${typeof email === 'string' ? email.trim().toLowerCase() : ''}`;
  }
  return request.ip;
}

/** The identity a request presents, for the anti-spam count of identities per IP. */
function identityOf(bucket: RateBucket, request: FastifyRequest, principal: Principal | undefined): string | undefined {
  if (principal) return principal.identity;
  const email = (request.body as { email?: unknown } | undefined)?.email;
  return bucket === 'auth' && typeof email === 'string' ? `login:${email.trim().toLowerCase()}` : undefined;
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * CSRF guard for cookie-authenticated writes: the request must come from the platform's own origin
 * (PUBLIC_URL, or the origin of the Host it was sent to), told by Origin or, without it, Referer.
 */
export function assertSameOrigin(request: FastifyRequest, publicUrl: string, { allowMissing = false } = {}): void {
  const allowed = new Set([new URL(publicUrl).origin, `${request.protocol}://${request.host}`]);
  const origin = request.headers.origin;
  let source: string | undefined;
  if (typeof origin === 'string' && origin !== 'null') source = origin;
  else if (typeof request.headers.referer === 'string') {
    try {
      source = new URL(request.headers.referer).origin;
    } catch {
      source = undefined;
    }
  }
  if (!source && allowMissing) return;
  if (!source || !allowed.has(source)) {
    throw new AppError('forbidden', { reason: 'cross_site_request', origin: source ?? null });
  }
}

/**
 * What the registrar checks requests with. A process composes only what its routes use: routes with
 * a rate bucket need the limiter and the anti-spam hooks, routes that take credentials the
 * authenticator (health and metrics, served by every process, need neither).
 */
export interface RegistrarDeps {
  limiter?: RateLimiter;
  authenticator?: Authenticator;
  abuse?: AbuseHooks;
  publicUrl: string;
}

/** A part of the registrar's deps a route needs: its absence is a wiring mistake, refused at start-up rather than on a request. */
function needed<T>(part: T | undefined, route: RouteDef, what: string): T {
  if (part === undefined) throw new Error(`${route.method} ${route.path} needs ${what}, and the app registering it has none`);
  return part;
}

/**
 * Checks what the route's auth requires of the (possibly absent) principal. A session held to
 * enrolling in TOTP is refused by every route that reads credentials but the enrolment's own, even an
 * `optional` one: answered as anonymous, it would get a confusing 401 or a public view instead.
 */
function authorize(route: RouteDef, principal: Principal | undefined): void {
  const auth = route.auth;
  if (principal?.totpEnrolmentRequired && !route.duringTotpEnrolment) {
    throw new AppError('forbidden', { reason: 'totp_enrolment_required' }, { messageKey: 'error.forbidden.totp_enrolment_required' });
  }
  if (auth.kind === 'none' || auth.kind === 'optional') return;
  if (!principal) throw new AppError('unauthorized');
  if (auth.kind === 'session' && principal.via !== 'session') throw new AppError('unauthorized', { reason: 'session_required' });
  if (auth.kind === 'scope') requireScope(principal, auth.scope);
}

/** Registers each route declaration on the Fastify instance, with auth, rate limit, validation and envelope. */
export function registerRoutes(app: FastifyInstance, routes: RouteDef[], deps: RegistrarDeps): void {
  for (const route of routes) {
    const query = effectiveQuery(route);
    const authenticator = route.auth.kind === 'none' ? undefined : needed(deps.authenticator, route, 'an authenticator');
    const limits = route.bucket
      ? { bucket: route.bucket, limiter: needed(deps.limiter, route, 'a rate limiter'), abuse: needed(deps.abuse, route, 'the anti-spam hooks') }
      : undefined;
    app.route({
      method: route.method,
      url: fastifyPath(route.path),
      ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
      config: { routeDef: route },
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        // Credentials are resolved first so that the api bucket can count per token; a bad token is
        // still counted (per IP) before it is refused, so guessing tokens is rate-limited too.
        let principal: Principal | undefined;
        let authError: unknown;
        if (authenticator) {
          try {
            const authenticated = authenticator.authenticate(request);
            principal = authenticated instanceof Promise ? await authenticated : authenticated;
          } catch (error) {
            authError = error;
          }
        }
        if (limits) {
          const { bucket, limiter, abuse } = limits;
          if (route.beforeLimit) await route.beforeLimit(request);
          const admitted = abuse.admit(request.ip, principal, identityOf(bucket, request, principal));
          if (admitted) await admitted;
          const key = route.rateKey ? route.rateKey(request) : rateKey(bucket, request, principal);
          const checked = limiter.check(bucket, key);
          const decision = checked instanceof Promise ? await checked : checked;
          setRateLimitHeaders(reply, decision);
          if (!decision.allowed) {
            await abuse.limited(bucket, key, request.ip, principal, decision.resetSec);
            throw retryLater('rate_limited', decision.resetSec, { bucket, limit: decision.limit });
          }
        }
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the authenticator's own error, rethrown once the rate limit is counted
        if (authError) throw authError;
        authorize(route, principal);
        if (principal?.via === 'session' && UNSAFE_METHODS.has(request.method)) assertSameOrigin(request, deps.publicUrl);
        const {
          params,
          query: parsedQuery,
          body,
        } = validateRequest(
          [
            { part: 'params', schema: route.params, input: request.params },
            { part: 'query', schema: query, input: request.query ?? {} },
            { part: 'body', schema: route.body, input: request.body },
          ],
          request.locale,
        );
        delete (parsedQuery as Record<string, unknown>).lang;
        let status = route.status ?? 200;
        let extraMeta: Record<string, unknown> = {};
        const result = await route.handler({
          params: params as never,
          query: parsedQuery as never,
          body: body,
          locale: request.locale,
          principal,
          request,
          reply,
          respond: {
            status: (code) => void (status = code),
            meta: (fields) => void (extraMeta = { ...extraMeta, ...fields }),
          },
        });
        if (route.raw) {
          const raw = result as RawBody;
          return reply.code(status).type(raw.contentType).send(raw.body);
        }
        const text = encodeJson(success(result, buildMeta(request.id, reply.elapsedTime, extraMeta)));
        return reply.code(status).type('application/json; charset=utf-8').send(text);
      },
    });
  }
  // A method that a parametric route would take on a path declared as it is: 405 with that path's Allow.
  const allowed = createMethodIndex(routes);
  for (const { path, methods } of shadowedMethods(routes)) {
    for (const method of methods) {
      app.route({
        method,
        url: fastifyPath(path),
        handler: async (request: FastifyRequest) => {
          throw routeMissError(allowed, request.method, request.url.split('?', 1)[0]!);
        },
      });
    }
  }
}

/** A declared path as a regular expression over concrete paths (`{name}` is one segment). */
const pathPattern = (path: string) =>
  new RegExp(
    '^' +
      path
        .split(/(\{\w+\})/)
        .map((part) => (/^\{\w+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('') +
      '/?$',
  );

/**
 * Matches concrete paths against the declared patterns, to answer 405 with the right Allow list. A
 * path declared as it is (`/api/v1/links/bulk`) is that resource alone: the methods of a pattern
 * that would also match it (`/api/v1/links/{id}`) are not its methods.
 */
export function createMethodIndex(routes: RouteDef[]): (path: string) => string[] {
  const patterns = routes.map((route) => ({ method: route.method, fixed: !route.path.includes('{'), regex: pathPattern(route.path) }));
  return (path) => {
    const matching = patterns.filter((pattern) => pattern.regex.test(path));
    const fixed = matching.filter((pattern) => pattern.fixed);
    const methods = new Set<string>();
    for (const pattern of fixed.length > 0 ? fixed : matching) {
      methods.add(pattern.method);
      if (pattern.method === 'GET') methods.add('HEAD');
    }
    return [...methods].sort();
  };
}

/**
 * Paths declared as they are that a parametric pattern of another method would also take (PATCH
 * `/api/v1/links/{id}` takes PATCH `/api/v1/links/bulk`), with those methods: each must answer 405.
 */
export function shadowedMethods(routes: RouteDef[]): { path: string; methods: string[] }[] {
  const parametric = routes.filter((route) => route.path.includes('{')).map((route) => ({ method: route.method, regex: pathPattern(route.path) }));
  const fixedPaths = [...new Set(routes.filter((route) => !route.path.includes('{')).map((route) => route.path))];
  return fixedPaths
    .map((path) => {
      const own = new Set(routes.filter((route) => route.path === path).map((route) => route.method));
      const methods = [...new Set(parametric.filter((route) => !own.has(route.method) && route.regex.test(path)).map((route) => route.method))];
      return { path, methods: methods.sort() };
    })
    .filter((entry) => entry.methods.length > 0);
}

/** The answer to a request no route matched: 405 with Allow when the path exists under other methods, else 404. */
export function routeMissError(allowedMethods: (path: string) => string[], method: string, path: string): AppError {
  const allow = allowedMethods(path);
  return allow.length > 0
    ? new AppError(
        'method_not_allowed',
        { method, allow },
        {
          headers: { Allow: allow.join(', ') },
          messageKey: 'error.method_not_allowed.allowed',
          params: { method, allow: allow.join(', ') },
        },
      )
    : new AppError('not_found', { path: path.slice(0, 200) });
}
