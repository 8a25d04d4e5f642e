import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Context } from '../../shared/context.js';
import { counterChildren } from '../../shared/metrics.js';
import { AppError, retryLater } from '../../shared/errors.js';
import { sendError } from '../../shared/http/error-response.js';
import { ASSIGNED_REQUEST_ID, clientAddressOf, incomingRequestId, requestRecorder } from '../../shared/http/fastify-base.js';
import { rateLimitHeaderList, rateLimitHeaders, type RateDecision, type RateLimiter } from '../../shared/http/rate-limit.js';
import { VISIT_PARAM } from '../../shared/tracker/beacon.js';
import { classifyAttack } from '../../shared/visits/attack.js';
import type { RawVisit } from '../../shared/visits/raw-visit.js';
import { SLUG } from '../api/links/links.service.js';
import type { LinkCache } from './link-cache.js';
import type { VisitProducer } from './visit-producer.js';

export interface ShortHostDeps {
  context: Context;
  links: LinkCache;
  visits: VisitProducer;
  limiter: RateLimiter;
  errorOptions: { showDetail: boolean; homeUrl: string };
  /** Sets the request's locale (from Accept-Language) before an error page is rendered. */
  localized: (request: FastifyRequest) => FastifyRequest;
}

/** What a subdomain label of a short host looks like (3–63 characters of a-z, 0-9 and inner hyphens). */
export const SUBDOMAIN_LABEL = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** The subdomain of a short host name (`alice` of `alice.links.example.com`), or undefined. */
export function subdomainOf(hostname: string, baseDomain: string): string | undefined {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  const suffix = `.${baseDomain}`;
  if (!host.endsWith(suffix)) return undefined;
  const label = host.slice(0, -suffix.length);
  return SUBDOMAIN_LABEL.test(label) ? label : undefined;
}

/** The target with `lt_visit=<visit id>` appended to its query, before any fragment. */
export function withVisitId(target: string, visitId: string): string {
  const hash = target.indexOf('#');
  const base = hash < 0 ? target : target.slice(0, hash);
  const separator = base.includes('?') ? (base.endsWith('?') || base.endsWith('&') ? '' : '&') : '?';
  return `${base}${separator}${VISIT_PARAM}=${visitId}${hash < 0 ? '' : target.slice(hash)}`;
}

/** A request header as visit text, cut to the column's length. */
export const headerText = (value: string | undefined, max: number) => (value ?? '').slice(0, max);

/** What a short-host request is decided on: the same facts whether it came raw or through Fastify. */
export interface ShortHostRequest {
  id: string;
  /** When the request arrived (ms), and the UUIDv7 of that time its visit gets. */
  at: number;
  visitId: string;
  url: string;
  /** The client address (socket, or X-Forwarded-For from a TRUST_PROXY peer). */
  ip: string;
  /** The subdomain of the short host, or undefined when the host is not one. */
  subdomain: string | undefined;
  hostname: string;
  headers: IncomingHttpHeaders;
}

/** The answer decided for a short-host request: a redirect, or a refusal to render as an error page. */
export type RedirectOutcome =
  | { kind: 'redirect'; status: number; location: string; rateLimit: RateDecision }
  | { kind: 'refusal'; error: AppError; rateLimit?: RateDecision };

const ROUTE_LABEL = '/{slug}';

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
  const refusal = (error: AppError, rateLimit?: RateDecision): RedirectOutcome => {
    answered(String(error.status)).inc();
    return { kind: 'refusal', error, rateLimit };
  };

  const visitOf = (request: ShortHostRequest, fields: Pick<RawVisit, 'kind' | 'owner_id' | 'subdomain' | 'link_id' | 'slug' | 'expects_beacon'>): RawVisit => {
    const { url, headers } = request;
    const queryAt = url.indexOf('?');
    return {
      // One clock reading: the visit id's UUIDv7 time is the visit's time (the beacon relies on it).
      visit_id: request.visitId,
      ts: new Date(request.at).toISOString(),
      ...fields,
      ip_public: request.ip,
      user_agent: headerText(headers['user-agent'], 2000),
      referrer: headerText(headers.referer, 2000),
      accept_language: headerText(headers['accept-language'], 200),
      query: queryAt < 0 ? '' : url.slice(queryAt + 1, queryAt + 1 + 4000),
    };
  };

  const decide = (request: ShortHostRequest, slug: string, link: Awaited<ReturnType<LinkCache['lookup']>>, decision: RateDecision): RedirectOutcome => {
    if (!decision.allowed) {
      metrics.rateLimited.inc({ bucket: 'redirect' });
      return refusal(retryLater('rate_limited', decision.resetSec, { bucket: 'redirect', limit: decision.limit }), decision);
    }
    if (!link) return refusal(new AppError('not_found', { path: `/${slug}`.slice(0, 200) }), decision);
    if (link.expires_at !== null && Date.parse(link.expires_at) <= Date.now()) return refusal(new AppError('gone', { slug, reason: 'expired' }), decision);
    if (link.limit_reached) return refusal(new AppError('gone', { slug, reason: 'limit_reached' }), decision);
    const visit = visitOf(request, { kind: 'visit', owner_id: link.owner_id, subdomain: request.subdomain!, link_id: link.id, slug, expects_beacon: link.append_visit_id });
    visits.enqueue(visit);
    answered(String(link.redirect_type)).inc();
    return { kind: 'redirect', status: link.redirect_type, location: link.append_visit_id ? withVisitId(link.target_url, visit.visit_id) : link.target_url, rateLimit: decision };
  };

  const check = (request: ShortHostRequest, slug: string, link: Awaited<ReturnType<LinkCache['lookup']>>) => {
    // Unknown slugs count in the bucket too (under no link), so guessing slugs is limited.
    const checked = limiter.check('redirect', `${request.ip}|${link?.id ?? '-'}`);
    return checked instanceof Promise ? checked.then((decision) => decide(request, slug, link, decision)) : decide(request, slug, link, checked);
  };

  return (request: ShortHostRequest): RedirectOutcome | Promise<RedirectOutcome> => {
    const { url, subdomain } = request;
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const attack = classifyAttack(url);
    if (attack || !subdomain) {
      if (attack) {
        visits.enqueue(
          visitOf(request, { kind: 'attack', owner_id: '', subdomain: subdomain ?? request.hostname.slice(0, 63), link_id: '', slug: path.slice(0, 200), expects_beacon: false }),
        );
        log.info({ request_id: request.id, attack, ip: request.ip, url: url.slice(0, 500) }, 'attack attempt');
      }
      return refusal(new AppError('not_found', { path: path.slice(0, 200) }));
    }
    const slug = path.slice(1).toLowerCase();
    const found = SLUG.test(slug) ? links.lookup(subdomain, slug) : null;
    // Awaited only when pending (a cache miss, the Redis store): a hit decides synchronously.
    return found instanceof Promise ? found.then((link) => check(request, slug, link)) : check(request, slug, found);
  };
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
}

/**
 * The short hosts `{subdomain}.{BASE_DOMAIN}`: `GET|HEAD /{slug}` redirects. Registers the Fastify
 * route (which renders refusals, and serves requests that reach the app directly, as `inject`
 * does) and returns the raw listener the server uses first.
 */
export function registerShortHosts(app: FastifyInstance, deps: ShortHostDeps): ShortHosts {
  const { context, errorOptions, localized } = deps;
  const { config } = context;
  const redirector = createRedirector(deps);
  const clientAddress = clientAddressOf(config.trustProxy);
  const record = requestRecorder(context);

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    const decided = (request.raw as DecidedRequest)[DECIDED];
    if (decided && 'failure' in decided) throw decided.failure;
    const at = Date.now();
    const outcome =
      decided?.outcome ??
      (await redirector({
        id: request.id,
        at,
        visitId: uuidv7({ msecs: at }),
        url: request.url,
        ip: request.ip,
        subdomain: subdomainOf(request.hostname, config.baseDomain),
        hostname: request.hostname,
        headers: request.headers,
      }));
    if (outcome.rateLimit) reply.headers(rateLimitHeaders(outcome.rateLimit));
    if (outcome.kind === 'refusal') return sendError(localized(request), reply, outcome.error, errorOptions);
    return reply.code(outcome.status).header('Location', outcome.location).header('Cache-Control', 'private, max-age=0').send();
  };
  // GET also answers HEAD (Fastify's exposeHeadRoutes): same status and headers, no body.
  const routeConfig = { routeLabel: ROUTE_LABEL };
  app.route({ method: 'GET', url: '/*', config: routeConfig, handler });
  app.route({ method: 'GET', url: '/', config: routeConfig, handler });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  const fastify = app.routing.bind(app) as (request: IncomingMessage, response: ServerResponse) => void;

  const answer = (request: DecidedRequest, response: ServerResponse, id: string, ip: string, started: number, outcome: RedirectOutcome) => {
    if (outcome.kind === 'refusal') {
      request[DECIDED] = { outcome };
      return fastify(request, response);
    }
    // Node's writeHead takes a flat [name, value, …] list fastest (no per-key walk of an object).
    const headers = rateLimitHeaderList(outcome.rateLimit);
    headers.push('X-Request-Id', id, 'Location', outcome.location, 'Cache-Control', 'private, max-age=0', 'Content-Length', '0');
    response.writeHead(outcome.status, headers).end();
    record({
      id,
      method: request.method!,
      url: request.url!,
      route: ROUTE_LABEL,
      status: outcome.status,
      tookMs: performance.now() - started,
      ip,
      userAgent: request.headers['user-agent'],
    });
  };

  const fail = (request: DecidedRequest, response: ServerResponse, failure: unknown) => {
    request[DECIDED] = { failure };
    fastify(request, response);
  };

  return {
    serve(request: DecidedRequest, response, subdomain) {
      if (closing || (request.method !== 'GET' && request.method !== 'HEAD')) return fastify(request, response);
      const started = performance.now();
      const at = Date.now();
      // One UUIDv7 per request: the visit's id, and the request's id unless it brought its own.
      const visitId = uuidv7({ msecs: at });
      const id = incomingRequestId(request.headers) ?? visitId;
      request[ASSIGNED_REQUEST_ID] = id;
      const ip = clientAddress(request);
      let outcome: RedirectOutcome | Promise<RedirectOutcome>;
      try {
        outcome = redirector({ id, at, visitId, url: request.url!, ip, subdomain, hostname: request.headers.host ?? '', headers: request.headers });
      } catch (error) {
        return fail(request, response, error);
      }
      if (outcome instanceof Promise) outcome.then((decided) => answer(request, response, id, ip, started, decided), (error: unknown) => fail(request, response, error));
      else answer(request, response, id, ip, started, outcome);
    },
  };
}
