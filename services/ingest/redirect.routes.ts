import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '#shared/context.js';
import { redactUrl } from '#shared/logger.js';
import { uuidv7At } from '#shared/ids.js';
import { isoTimeAt } from '#shared/time.js';
import { counterChildren } from '#shared/metrics.js';
import { AppError, retryLater } from '#shared/errors.js';
import { sendError } from '#shared/http/error-response.js';
import { ASSIGNED_REQUEST_ID, clientAddressOf, errorOptionsOf, incomingRequestId, localized, requestRecorder } from '#shared/http/fastify-base.js';
import { API_SECURITY_HEADER_LIST } from '#shared/http/security-headers.js';
import { rateLimitHeaderList, setRateLimitHeaders, type RateDecision, type RateLimiter } from '#shared/http/rate-limit.js';
import { VISIT_PARAM } from '#shared/tracker/beacon.js';
import { classifyAttack } from '#shared/visits/attack.js';
import { visitText, type RawVisit } from '#shared/visits/raw-visit.js';
import { subdomainMatcher } from '#shared/links/hosts.js';
import { SLUG } from '#shared/links/slugs.js';
import type { RedirectLink } from '#shared/links/link-notices.js';
import { routeOf, type RouteRequest } from '#shared/links/rules.js';
import { openGeoLookup, type GeoLookup } from '#shared/geo.js';
import type { CustomHosts } from '#shared/domains/custom-hosts.js';
import type { LinkCache } from './link-cache.js';
import type { VisitProducer } from './visit-producer.js';
import type { PublicPages } from '../public-page/public-page.js';
import { assertSameOrigin, countTry, createPasswordChecker, passwordForm, sendPasswordPage } from './protected.js';

export interface ShortHostDeps {
  /** The config, and the metrics and logger the redirects and their access-log lines go to. */
  context: Pick<Context, 'config' | 'metrics' | 'log'>;
  links: LinkCache;
  visits: VisitProducer;
  limiter: RateLimiter;
  /** The subdomains' public pages, answered on `GET /` of a short host. */
  publicPages?: PublicPages;
  /** A path the edge declares under other methods (the tracker's): 405 with Allow, not a redirect's 404. */
  methodMiss?: (method: string, path: string) => AppError | undefined;
  /** What a request no route answers gets (404, or 405 with Allow): a POST that is no password try. */
  routeMiss?: (request: FastifyRequest) => AppError;
  /** The served custom domains: their hosts answer as their subdomain's `{name}.{BASE_DOMAIN}` does. */
  customHosts?: Pick<CustomHosts, 'subdomainOf'>;
}

/** The headers every redirect ends with, the same for all: built once, not per redirect. */
const REDIRECT_HEADER_TAIL: readonly string[] = ['Cache-Control', 'private, max-age=0', 'Content-Length', '0', ...API_SECURITY_HEADER_LIST];

/** The target with `lt_visit=<visit id>` appended to its query, before any fragment. */
function withVisitId(target: string, visitId: string): string {
  const hash = target.indexOf('#');
  const base = hash < 0 ? target : target.slice(0, hash);
  const separator = base.includes('?') ? (base.endsWith('?') || base.endsWith('&') ? '' : '&') : '?';
  return `${base}${separator}${VISIT_PARAM}=${visitId}${hash < 0 ? '' : target.slice(hash)}`;
}

/** What a short-host request is decided on: the same facts whether it came raw or through Fastify. */
interface ShortHostRequest {
  id: string;
  /** When the request arrived (ms), and the UUIDv7 of that time its visit gets. */
  at: number;
  visitId: string;
  url: string;
  /** The client address (socket, or X-Forwarded-For from a TRUST_PROXY peer). */
  ip: string;
  /** The subdomain of the short host, or undefined when the host is not one. */
  subdomain: string | undefined;
  /** The host name, recorded on an attack visit when the host is not a short host. */
  hostname?: string;
  headers: IncomingHttpHeaders;
}

/** The answer decided for a short-host request: a redirect, or a refusal to render as an error page. */
type RedirectOutcome =
  | { kind: 'redirect'; status: number; location: string; rateLimit: RateDecision }
  | { kind: 'refusal'; error: AppError; rateLimit?: RateDecision }
  // A link with a password: its password page (protected.ts), no visit counted.
  | { kind: 'password'; rateLimit: RateDecision };

const ROUTE_LABEL = '/{slug}';
/** Route label of a short host's root: its public page. */
const PUBLIC_PAGE_ROUTE_LABEL = '/';

/** `/` or `/?…`: a short host's root (its public page), which Fastify answers, not the redirect listener. */
const isRoot = (url: string) => url.length === 1 || url.charCodeAt(1) === 63; /* ? */

/**
 * Decides short-host requests (`GET|HEAD /{slug}`). Nothing here waits for Postgres, ClickHouse
 * or the broker: the link comes from the in-memory cache (a miss loads once), the rate limit is
 * local or one Redis call, and the visit is handed to the buffered producer before the answer
 * leaves. Attack-looking requests are refused 404 and recorded as attack visits.
 */
function createRedirector(deps: ShortHostDeps) {
  const { context, links, visits, limiter } = deps;
  const { metrics, log } = context;
  const answered = counterChildren(metrics.redirects, 'status');
  const refusedByLimit = counterChildren(metrics.rateLimited, 'bucket')('redirect');
  const refusal = (error: AppError, rateLimit?: RateDecision): RedirectOutcome => {
    answered(String(error.status)).inc();
    return { kind: 'refusal', error, rateLimit };
  };

  const fallbackRedirect = (location: string, rateLimit: RateDecision): RedirectOutcome => {
    answered('302').inc();
    return { kind: 'redirect', status: 302, location, rateLimit };
  };

  /** A request being decided: its path and query, split once. */
  type Asked = { request: ShortHostRequest; path: string; query: string };

  const visitOf = (
    { request, query }: Asked,
    kind: RawVisit['kind'],
    ownerId: string,
    subdomain: string,
    linkId: string,
    slug: string,
    expectsBeacon: boolean,
  ): RawVisit => ({
    // One clock reading: the visit id's UUIDv7 time is the visit's time (the tracker relies on it).
    visit_id: request.visitId,
    ts: isoTimeAt(request.at),
    kind,
    owner_id: ownerId,
    subdomain,
    link_id: linkId,
    slug,
    expects_beacon: expectsBeacon,
    ip_public: request.ip,
    user_agent: visitText(request.headers['user-agent'], 'user_agent'),
    referrer: visitText(request.headers.referer, 'referrer'),
    accept_language: visitText(request.headers['accept-language'], 'accept_language'),
    query: visitText(query, 'query'),
  });

  const routeRequestOf = ({ request, query }: Asked): RouteRequest => ({
    at: request.at,
    ip: request.ip,
    userAgent: request.headers['user-agent'] ?? '',
    acceptLanguage: request.headers['accept-language'] ?? '',
    query,
  });
  /**
   * The geolocation database is opened (about 45 MB) only when a country rule is first evaluated
   * (routeOf asks for it then); until it is open, country rules match nothing (the next rule is tried).
   */
  let geo: GeoLookup | undefined;
  let opening = false;
  const geoOf = () => {
    if (!geo && !opening) {
      opening = true;
      openGeoLookup().then(
        (opened) => (geo = opened),
        (error: unknown) => {
          opening = false;
          log.error({ err: error }, 'geolocation database could not be opened for country rules');
        },
      );
    }
    return geo;
  };

  /** The visit counted and the redirect to the target: a link without password, or one whose password was given. */
  const admit = (asked: Asked, slug: string, link: RedirectLink, decision: RateDecision): RedirectOutcome & { kind: 'redirect' } => {
    const visit = visitOf(asked, 'visit', link.owner_id, asked.request.subdomain!, link.id, slug, link.append_visit_id);
    // Issue 40: rules, variants and query forwarding, from the cached link (a plain link skips it).
    const route = link.rules || link.variants || link.forward_query ? routeOf(link, routeRequestOf(asked), geoOf) : undefined;
    // Absent is -1 (as from an edge before issue 40): a visit no rule or variant chose keeps the plain visit's shape and text.
    if (route && route.rule >= 0) visit.matched_rule = route.rule;
    if (route && route.variant >= 0) visit.variant = route.variant;
    const target = route?.target ?? link.target_url;
    visits.enqueue(visit);
    answered(String(link.redirect_type)).inc();
    return {
      kind: 'redirect',
      status: link.redirect_type,
      location: link.append_visit_id ? withVisitId(target, visit.visit_id) : target,
      rateLimit: decision,
    };
  };

  const decide = (asked: Asked, slug: string, link: RedirectLink | null, decision: RateDecision): RedirectOutcome => {
    if (!decision.allowed) {
      refusedByLimit.inc();
      return refusal(retryLater('rate_limited', decision.resetSec, { bucket: 'redirect', limit: decision.limit }), decision);
    }
    // What the edge knows, said: expired, at its visit limit, or no live link (the cache does not
    // tell a deleted link from one that never existed, and an owner's deletions are not public).
    if (!link) return refusal(new AppError('not_found', { path: asked.path.slice(0, 200) }, { messageKey: 'error.not_found.link' }), decision);
    const expired = link.expires_at !== null && Date.parse(link.expires_at) <= asked.request.at;
    if (expired || link.limit_reached) {
      // Issue 40: a link that no longer redirects to its target may send visitors to its fallback (no visit counted).
      if (link.fallback_url) return fallbackRedirect(link.fallback_url, decision);
      if (expired) return refusal(new AppError('gone', { slug, reason: 'expired' }, { messageKey: 'error.gone.expired' }), decision);
      return refusal(new AppError('gone', { slug, reason: 'limit_reached' }, { messageKey: 'error.gone.limit_reached' }), decision);
    }
    if (link.password_hash !== null && link.password_hash !== undefined) {
      answered('200').inc();
      return { kind: 'password', rateLimit: decision };
    }
    return admit(asked, slug, link, decision);
  };

  const check = (asked: Asked, slug: string, link: RedirectLink | null) => {
    // Unknown slugs count in the bucket too (under no link), so guessing slugs is limited.
    const checked = limiter.check('redirect', `${asked.request.ip}|${link?.id ?? '-'}`);
    return checked instanceof Promise ? checked.then((decision) => decide(asked, slug, link, decision)) : decide(asked, slug, link, checked);
  };

  const askedOf = (request: ShortHostRequest): Asked => {
    const queryAt = request.url.indexOf('?');
    return { request, path: queryAt < 0 ? request.url : request.url.slice(0, queryAt), query: queryAt < 0 ? '' : request.url.slice(queryAt + 1) };
  };

  /** Issue 40: a password try whose password was right: the visit, counted now, and the redirect (302 after a POST). */
  const admitted = (request: ShortHostRequest, slug: string, link: RedirectLink, decision: RateDecision) => ({
    ...admit(askedOf(request), slug, link, decision),
    status: 302,
  });

  const decideRequest = (request: ShortHostRequest): RedirectOutcome | Promise<RedirectOutcome> => {
    const { url, subdomain } = request;
    const asked = askedOf(request);
    const attack = classifyAttack(url);
    if (attack || !subdomain) {
      if (attack) {
        visits.enqueue(visitOf(asked, 'attack', '', subdomain ?? (request.hostname ?? '').slice(0, 63), '', asked.path.slice(0, 200), false));
        log.info({ request_id: request.id, attack, ip: request.ip, url: redactUrl(url.slice(0, 500)) }, 'attack attempt');
      }
      return refusal(new AppError('not_found', { path: asked.path.slice(0, 200) }));
    }
    const slug = asked.path.slice(1).toLowerCase();
    const found = SLUG.test(slug) ? links.lookup(subdomain, slug) : null;
    // Awaited only when pending (a cache miss, the Redis store): a hit decides synchronously.
    return found instanceof Promise ? found.then((link) => check(asked, slug, link)) : check(asked, slug, found);
  };
  return { decideRequest, admitted };
}

/** Where the short-host listener leaves a request it decided but does not answer itself (a refusal, a failure). */
const DECIDED = Symbol('shortHostDecided');
type Decided = { outcome: RedirectOutcome } | { failure: unknown };
type DecidedRequest = IncomingMessage & { [DECIDED]?: Decided; [ASSIGNED_REQUEST_ID]?: string };

export interface ShortHosts {
  /**
   * Serves a request for a short host straight from Node's HTTP server: a redirect is decided and
   * written here, without building Fastify's request and reply (the redirect is the platform's
   * hottest path). Refusals (404, 410, 429 pages), failures, other methods and requests during
   * shutdown go on to the ingest Fastify app, with the decision already taken.
   */
  serve(request: IncomingMessage, response: ServerResponse, subdomain: string): void;
  /** The ingest Fastify app as a request listener (the tracker's paths, and what `serve` hands on). */
  fastify(request: IncomingMessage, response: ServerResponse): void;
}

/**
 * The short hosts `{subdomain}.{BASE_DOMAIN}`: `GET|HEAD /{slug}` redirects. Registers the Fastify
 * route (which renders refusals, and serves requests that reach the app directly, as `inject`
 * does) and returns the raw listener the server uses first.
 */
export function registerShortHosts(app: FastifyInstance, deps: ShortHostDeps): ShortHosts {
  const { context } = deps;
  const { config } = context;
  const errorOptions = errorOptionsOf(config);
  // On a short host the error page's "Home" is the subdomain's public page, on the same host.
  const shortHostErrorOptions = { ...errorOptions, homeUrl: '/' };
  const { decideRequest: redirector, admitted } = createRedirector(deps);
  const clientAddress = clientAddressOf(config.trustProxy);
  const record = requestRecorder(context);
  const baseSubdomainOf = subdomainMatcher(config.baseDomain);
  const { customHosts } = deps;
  const subdomainOf = (hostname: string) => baseSubdomainOf(hostname) ?? customHosts?.subdomainOf(hostname);

  /** A request that reached Fastify undecided (not through `serve`), as the redirector takes it. */
  const askedOf = (request: FastifyRequest): ShortHostRequest => {
    const at = Date.now();
    return {
      id: request.id,
      at,
      visitId: uuidv7At(at),
      url: request.url,
      ip: request.ip,
      subdomain: subdomainOf(request.hostname),
      hostname: request.hostname,
      headers: request.headers,
    };
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    const decided = (request.raw as DecidedRequest)[DECIDED];
    // The raw listener never decides a tracker path (the dispatcher sends those here undecided).
    const missed = decided ? undefined : deps.methodMiss?.(request.method, request.url.split('?', 1)[0]!);
    if (missed) throw missed;
    if (decided && 'failure' in decided) throw decided.failure;
    const outcome = decided?.outcome ?? (await redirector(askedOf(request)));
    if (outcome.rateLimit) setRateLimitHeaders(reply, outcome.rateLimit);
    if (outcome.kind === 'refusal')
      return sendError(localized(request), reply, outcome.error, subdomainOf(request.hostname) ? shortHostErrorOptions : errorOptions);
    if (outcome.kind === 'password') return sendPasswordPage(localized(request), reply, { wrong: false, referrer: request.headers.referer ?? '' });
    return reply.code(outcome.status).header('Location', outcome.location).header('Cache-Control', 'private, max-age=0').send();
  };
  /**
   * `GET /` of a short host: the subdomain's public page. An attack-looking query on it (and a
   * request for a host that is no short host) goes the redirect's way: recorded, refused.
   */
  const { publicPages } = deps;
  const rootHandler = async (request: FastifyRequest, reply: FastifyReply) => {
    const subdomain = subdomainOf(request.hostname);
    if (!publicPages || !subdomain || (request.raw as DecidedRequest)[DECIDED] || classifyAttack(request.url)) return handler(request, reply);
    return publicPages.answer(request, reply, subdomain);
  };
  /**
   * Issue 40: `POST /{slug}`, the password page's form. Any other POST is what it was before (404,
   * or 405 with Allow: GET, HEAD). An ended link answers as its GET does (its fallback, or 410).
   */
  const passwordChecks = createPasswordChecker();
  const passwordTry = async (request: FastifyRequest, reply: FastifyReply) => {
    const subdomain = subdomainOf(request.hostname);
    const miss = () => deps.routeMiss?.(request) ?? new AppError('not_found', {});
    if (!subdomain) throw miss();
    const asked = askedOf(request);
    const slug = asked.url.split('?', 1)[0]!.slice(1).toLowerCase();
    const link = SLUG.test(slug) ? await deps.links.lookup(subdomain, slug) : null;
    if (!link?.password_hash) throw miss();
    if ((link.expires_at !== null && Date.parse(link.expires_at) <= asked.at) || link.limit_reached) return handler(request, reply);
    assertSameOrigin(request);
    const decision = await countTry(deps.limiter, reply, request.ip, link);
    const form = passwordForm(request.body);
    if (!(await passwordChecks.accepted(link, form.password))) return sendPasswordPage(localized(request), reply, { wrong: true, referrer: form.referrer });
    // The visit's referrer is the one the page was reached from, not the page itself.
    const outcome = admitted({ ...asked, headers: { ...request.headers, referer: form.referrer || undefined } }, slug, link, decision);
    return reply.code(outcome.status).header('Location', outcome.location).header('Cache-Control', 'no-store').send();
  };
  void app.register(async (scope) => {
    // The form's body, parsed here only (the tracker's scope keeps its own parsers). Any other body
    // is read and left aside, so that a POST which is no password try still answers its 404 or 405.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4_096 }, (_request, body, done) =>
      done(null, new URLSearchParams(body as string)),
    );
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 4_096 }, (_request, _body, done) => done(null, undefined));
    scope.route({ method: 'POST', url: '/*', bodyLimit: 4_096, config: { routeLabel: ROUTE_LABEL }, handler: passwordTry });
  });
  // GET also answers HEAD (Fastify's exposeHeadRoutes): same status and headers, no body.
  app.route({ method: 'GET', url: '/*', config: { routeLabel: ROUTE_LABEL }, handler });
  app.route({ method: 'GET', url: '/', config: { routeLabel: PUBLIC_PAGE_ROUTE_LABEL }, handler: rootHandler });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  const fastify: (request: IncomingMessage, response: ServerResponse) => void = app.routing.bind(app);

  /** Hands a request the listener decided but does not answer on to Fastify, keeping its id. */
  const handOn = (request: DecidedRequest, response: ServerResponse, id: string, decided: Decided) => {
    request[DECIDED] = decided;
    request[ASSIGNED_REQUEST_ID] = id;
    fastify(request, response);
  };

  const answer = (request: DecidedRequest, response: ServerResponse, asked: ShortHostRequest, started: number, outcome: RedirectOutcome) => {
    if (outcome.kind !== 'redirect') return handOn(request, response, asked.id, { outcome });
    // Node's writeHead takes a flat [name, value, …] list fastest (no per-key walk of an object).
    const headers = rateLimitHeaderList(outcome.rateLimit, asked.at);
    headers.push('X-Request-Id', asked.id, 'Location', outcome.location, ...REDIRECT_HEADER_TAIL);
    response.writeHead(outcome.status, headers).end();
    record({
      id: asked.id,
      method: request.method!,
      url: asked.url,
      route: ROUTE_LABEL,
      status: outcome.status,
      tookMs: performance.now() - started,
      ip: asked.ip,
      userAgent: asked.headers['user-agent'],
    });
  };

  return {
    fastify,
    serve(request: DecidedRequest, response, subdomain) {
      if (closing || (request.method !== 'GET' && request.method !== 'HEAD') || isRoot(request.url!)) return fastify(request, response);
      const started = performance.now();
      const at = Date.now();
      // One UUIDv7 per request: the visit's id, and the request's id unless it brought its own.
      const visitId = uuidv7At(at);
      const { headers } = request;
      const asked = { id: incomingRequestId(headers) ?? visitId, at, visitId, url: request.url!, ip: clientAddress(request), subdomain, headers };
      let outcome: RedirectOutcome | Promise<RedirectOutcome>;
      try {
        outcome = redirector(asked);
      } catch (error) {
        return handOn(request, response, asked.id, { failure: error });
      }
      if (outcome instanceof Promise)
        outcome.then(
          (decided) => answer(request, response, asked, started, decided),
          (failure: unknown) => handOn(request, response, asked.id, { failure }),
        );
      else answer(request, response, asked, started, outcome);
    },
  };
}
