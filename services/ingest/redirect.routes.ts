import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Context } from '../../shared/context.js';
import { counterChildren } from '../../shared/metrics.js';
import { AppError, retryLater } from '../../shared/errors.js';
import { sendError } from '../../shared/http/error-response.js';
import { rateLimitHeaders, type RateLimiter } from '../../shared/http/rate-limit.js';
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

/** Where the host dispatcher leaves the subdomain it matched on the raw request, so it is parsed once. */
export const SHORT_HOST = Symbol('shortHostSubdomain');

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

/**
 * The short hosts `{subdomain}.{BASE_DOMAIN}`: `GET|HEAD /{slug}` redirects. Nothing on this path
 * waits for Postgres, ClickHouse or the broker: the link comes from the in-memory cache (a miss
 * loads once), the rate limit is local or one Redis call, and the visit is handed to the buffered
 * producer before the answer leaves. Attack-looking requests answer 404 and are recorded as
 * attack visits.
 */
export function registerShortHosts(app: FastifyInstance, deps: ShortHostDeps): void {
  const { context, links, visits, limiter, errorOptions, localized } = deps;
  const { config, metrics, log } = context;
  const answered = counterChildren(metrics.redirects, 'status');
  const refuse = (request: FastifyRequest, reply: FastifyReply, error: AppError) => {
    answered(String(error.status)).inc();
    return sendError(localized(request), reply, error, errorOptions);
  };

  const visitOf = (request: FastifyRequest, fields: Pick<RawVisit, 'kind' | 'owner_id' | 'subdomain' | 'link_id' | 'slug' | 'expects_beacon'>): RawVisit => {
    const queryAt = request.url.indexOf('?');
    // One clock reading: the visit id's UUIDv7 time is the visit's time (the beacon relies on it).
    const now = Date.now();
    return {
      visit_id: uuidv7({ msecs: now }),
      ts: new Date(now).toISOString(),
      ...fields,
      // The socket's address, or X-Forwarded-For only from a TRUST_PROXY peer (Fastify's trustProxy).
      ip_public: request.ip,
      user_agent: headerText(request.headers['user-agent'], 2000),
      referrer: headerText(request.headers.referer, 2000),
      accept_language: headerText(request.headers['accept-language'], 200),
      query: queryAt < 0 ? '' : request.url.slice(queryAt + 1, queryAt + 1 + 4000),
    };
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    const subdomain = (request.raw as { [SHORT_HOST]?: string })[SHORT_HOST] ?? subdomainOf(request.hostname, config.baseDomain);
    const path = request.url.split('?', 1)[0]!;
    const attack = classifyAttack(request.url);
    if (attack || !subdomain) {
      if (attack) {
        visits.enqueue(visitOf(request, { kind: 'attack', owner_id: '', subdomain: subdomain ?? request.hostname.slice(0, 63), link_id: '', slug: path.slice(0, 200), expects_beacon: false }));
        log.info({ request_id: request.id, attack, ip: request.ip, url: request.url.slice(0, 500) }, 'attack attempt');
      }
      return refuse(request, reply, new AppError('not_found', { path: path.slice(0, 200) }));
    }
    const slug = path.slice(1).toLowerCase();
    const found = SLUG.test(slug) ? links.lookup(subdomain, slug) : null;
    const link = found instanceof Promise ? await found : found;

    // Unknown slugs count in the bucket too (under no link), so guessing slugs is limited.
    const checked = limiter.check('redirect', `${request.ip}|${link?.id ?? '-'}`);
    const decision = checked instanceof Promise ? await checked : checked;
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) {
      metrics.rateLimited.inc({ bucket: 'redirect' });
      return refuse(request, reply, retryLater('rate_limited', decision.resetSec, { bucket: 'redirect', limit: decision.limit }));
    }
    if (!link) return refuse(request, reply, new AppError('not_found', { path: path.slice(0, 200) }));
    if (link.expires_at !== null && Date.parse(link.expires_at) <= Date.now()) {
      return refuse(request, reply, new AppError('gone', { slug, reason: 'expired' }));
    }
    if (link.limit_reached) return refuse(request, reply, new AppError('gone', { slug, reason: 'limit_reached' }));
    const visit = visitOf(request, { kind: 'visit', owner_id: link.owner_id, subdomain, link_id: link.id, slug, expects_beacon: link.append_visit_id });
    visits.enqueue(visit);
    answered(String(link.redirect_type)).inc();
    const location = link.append_visit_id ? withVisitId(link.target_url, visit.visit_id) : link.target_url;
    return reply.code(link.redirect_type).header('Location', location).header('Cache-Control', 'private, max-age=0').send();
  };

  // GET also answers HEAD (Fastify's exposeHeadRoutes): same status and headers, no body.
  const routeConfig = { routeLabel: '/{slug}' };
  app.route({ method: 'GET', url: '/*', config: routeConfig, handler });
  app.route({ method: 'GET', url: '/', config: routeConfig, handler });
}
