import { createServer, type RequestListener } from 'node:http';
import cors from '@fastify/cors';
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Context } from '#shared/context.js';
import { sendError, toAppError } from '#shared/http/error-response.js';
import {
  baseFastifyOptions,
  envelopeRequestHook,
  dependencyPortsOf,
  errorOptionsOf,
  localized,
  requestHostProblem,
  responseObserver,
} from '#shared/http/fastify-base.js';
import type { AbuseHooks } from '#shared/http/auth.js';
import { accountRefusal, type RateLimiter } from '#shared/http/rate-limit.js';
import { createMethodIndex, registerRoutes, routeMissError } from '#shared/http/register.js';
import type { RouteDef } from '#shared/http/route.js';
import { apiSecurityHeadersHook } from '#shared/http/security-headers.js';
import { strictJsonParser, useStrictJson } from '#shared/http/json-body.js';
import { consentKey, consentTokens } from '#shared/tracker/consent-token.js';
import { createLinkCache } from './link-cache.js';
import { createTrackerOrigins } from './tracker-origins.js';
import { shortHostMatcher } from '#shared/links/hosts.js';
import { createCustomHosts } from '#shared/domains/custom-hosts.js';
import { registerShortHosts, type ShortHosts } from './redirect.routes.js';
import { trackerRoutes } from './tracker.routes.js';
import type { PublicPages } from '../public-page/public-page.js';
import type { Repositories } from '../repositories.js';
import { createBeaconProducer, createVisitProducer } from './visit-producer.js';
import { forwardedPublicPages } from './public-page-forward.js';

export interface IngestApp {
  app: FastifyInstance;
  /** The short hosts' listener (redirects answered before Fastify; see ShortHosts). */
  shortHosts: ShortHosts;
  /** The tracker's route declarations (for the OpenAPI document). */
  routes: RouteDef[];
  /** True once every visit and beacon taken before the call is in the message log (or counted as dropped); false at `deadlineMs`. */
  settled: (deadlineMs: number) => Promise<boolean>;
  /** The subdomain a request's host name is a short host of: `{name}.{BASE_DOMAIN}` (not the API's own host), or a served custom domain. */
  subdomainOfHost: (hostname: string) => string | undefined;
}

/** Paths the ingest edge answers on every host (the tracker), not only on short hosts. */
const TRACKER_PATH = /^\/tracker(?:\.js|\/|\?|$)/;

/** A short host answers every path to these (a redirect, a refusal, its public page on `/`). */
const SHORT_HOST_METHODS = ['GET', 'HEAD'];

/**
 * What the edge counts requests with: the process's rate limiter and anti-spam guard, shared with
 * the API when the process has both roles (an address counts once per bucket).
 */
export interface EdgeGuards {
  limiter: RateLimiter;
  abuse: AbuseHooks;
}

/**
 * The ingest edge as its own Fastify app: the short hosts' routes and nothing else — no cookie
 * parsing, no locale negotiation (done only for the error pages), no API hooks — because every
 * microsecond here is paid by every visitor. Closing it drains the visit producer.
 */
export async function buildIngestApp(
  context: Pick<Context, 'config' | 'cache' | 'messageLog' | 'spool' | 'metrics' | 'log'>,
  { limiter, abuse }: EdgeGuards,
  /**
   * The renderer of the subdomains' public pages, in a process with the api role; without it (no
   * analytics store here) the edge forwards them to PUBLIC_PAGES_UPSTREAM (public-page-forward.ts).
   */
  rendered: PublicPages | undefined,
  /**
   * The links (for the link cache), the subdomains (for the tracker origins) and the platform secrets
   * (for the consent key): handed apart from the context's clients.
   */
  repositories: Pick<Repositories, 'links' | 'subdomains' | 'platformSecrets' | 'domains'>,
): Promise<IngestApp> {
  const { config, log } = context;
  // No route of the edge takes credentials: its registrar has no authenticator.
  const registrar = { limiter, abuse, publicUrl: config.publicUrl };
  const errorOptions = errorOptionsOf(config);
  const dependencyPorts = dependencyPortsOf(config);
  const app = Fastify(baseFastifyOptions(context));
  useStrictJson(app);
  const publicPages = rendered ?? (await forwardedPublicPages(app, context));
  // Independent start-up reads: the link cache's warm-up, the tracker origins' and the tracker's consent key.
  const [links, origins, key, customHosts] = await Promise.all([
    createLinkCache({ ...context, repositories }),
    createTrackerOrigins({ ...context, repositories }),
    consentKey(repositories, config.tracker.secret),
    createCustomHosts({ ...context, repositories }),
  ]);
  const visits = createVisitProducer(context);
  const beacons = createBeaconProducer(context);
  app.addHook('onClose', async () => {
    await Promise.all([visits.close(config.shutdownTimeoutMs / 2), beacons.close(config.shutdownTimeoutMs / 2)]);
    await Promise.all([links.close(), origins.close(), customHosts.close()]);
  });

  app.decorateRequest('locale', 'en');
  app.addHook('onResponse', responseObserver(context));
  // The short hosts' listener writes the same precomputed headers on the redirects it answers itself.
  app.addHook('onSend', apiSecurityHeadersHook);
  app.setErrorHandler(async (error, request, reply) => {
    // A request that matched no route can fail in body parsing (QUERY without Content-Type) before
    // the not-found handler runs: the route does not exist, so that is the answer.
    const { routeDef, routeLabel } = request.routeOptions.config;
    if (!routeDef && !routeLabel) return sendError(localized(request), reply, routeMiss(request), errorOptions);
    const { appError, unexpected } = toAppError(error, dependencyPorts);
    if (unexpected || appError.status === 500) log.error({ err: error, request_id: request.id }, 'ingest request failed');
    else if (appError.cause && appError.status === 503)
      log.warn({ err: appError.cause, request_id: request.id, down: appError.details.down }, 'dependency unavailable');
    if (appError.status === 429)
      accountRefusal(reply, appError, request.routeOptions.config.routeDef?.bucket, { rules: config.rateLimits, metrics: context.metrics });
    return sendError(localized(request), reply, appError, errorOptions);
  });
  const tokens = consentTokens(key, config.tracker.consentTtlSec);
  const routes = trackerRoutes({ beacons, tokens, origins });
  const trackerMethods = createMethodIndex(routes);
  const shortHostOf = shortHostMatcher(config);
  const subdomainOfHost = (hostname: string) => shortHostOf(hostname) ?? customHosts.subdomainOf(hostname);
  /** The methods a path is served under: the tracker's declared ones on its paths, GET and HEAD on any path of a short host. */
  const methodsOn = (hostname: string) => (path: string) => {
    const beacon = trackerMethods(path);
    return beacon.length > 0 || !subdomainOfHost(hostname) ? beacon : SHORT_HOST_METHODS;
  };
  // What no route answers: 405 with Allow when the path is served under other methods, else 404.
  const routeMiss = (request: FastifyRequest) => routeMissError(methodsOn(request.hostname), request.method, request.url.split('?', 1)[0]!);
  app.setNotFoundHandler(async (request, reply) => sendError(localized(request), reply, routeMiss(request), errorOptions));
  const methodMiss = (method: string, path: string) => {
    const allow = trackerMethods(path);
    return allow.length > 0 ? routeMissError(() => allow, method, path) : undefined;
  };
  const shortHosts = registerShortHosts(app, { context, links, visits, limiter, publicPages, methodMiss, routeMiss, customHosts });

  // The tracker: open CORS (no credentials) and JSON in text/plain bodies (no preflight), in its own scope. A
  // subdomain that lists tracker origins narrows the answer to the listed origin in the handler (tracker.routes.ts).
  await app.register(async (scope) => {
    // Before CORS's hook, which answers preflights (OPTIONS 204) itself: they carry X-Request-Id too.
    scope.addHook('onRequest', envelopeRequestHook({ contentLanguage: false }));
    await scope.register(cors, { origin: '*', methods: ['GET', 'POST'], allowedHeaders: ['Content-Type'], maxAge: 86_400, strictPreflight: false });
    const json = strictJsonParser(scope, 'ignore', 'ignore');
    scope.addContentTypeParser('text/plain', { parseAs: 'string' }, (request, body, done) =>
      body === '' ? done(null, undefined) : json(request, body as string, done),
    );
    registerRoutes(scope, routes, registrar);
  });
  await app.ready();
  const settled = async (deadlineMs: number) => (await Promise.all([visits.settled(deadlineMs), beacons.settled(deadlineMs)])).every(Boolean);
  return { app, shortHosts, routes, settled, subdomainOfHost };
}

/**
 * One server for both apps: a request whose Host is a short host (`{label}.{BASE_DOMAIN}`, and
 * not the API's own host) goes to the ingest edge (its short-host listener first), and so do the
 * tracker's paths (`/tracker.js`, `/tracker/…`) on any host; everything else goes to `other`, the
 * process's app of health, metrics and (with the api role) the API. A request that cannot be routed
 * by Host (requestHostProblem: none, two, or one that is no host) goes to `other` too, which refuses
 * it with the envelope (strictHostHook).
 */
export function hostDispatcher(other: RequestListener, ingest: IngestApp): RequestListener {
  const { shortHosts, subdomainOfHost } = ingest;
  return (request, response) => {
    if (requestHostProblem(request)) return other(request, response);
    if (request.url && TRACKER_PATH.test(request.url)) return shortHosts.fastify(request, response);
    const host = request.headers.host;
    if (host) {
      const colon = host.lastIndexOf(':');
      const subdomain = subdomainOfHost(colon > 0 && !host.endsWith(']') ? host.slice(0, colon) : host);
      if (subdomain) return shortHosts.serve(request, response, subdomain);
    }
    other(request, response);
  };
}

/**
 * The HTTP server of a process with the ingest role: one listener for the edge and the process's
 * other app (health, metrics, the API). Fastify leaves a server factory's server as Node makes it
 * (idle keep-alive connections closed after 5 s, shorter than the 60 s idle timeout of common load
 * balancers, which then answer 502): its own keepAliveTimeout, resolved in the options it hands the
 * factory, is applied here.
 */
export function hostServer(listener: RequestListener, options: FastifyServerOptions) {
  // As Fastify's own server is made (baseFastifyOptions' `http`): a missing Host is refused by strictHostHook, with the envelope.
  const server = createServer({ requireHostHeader: false }, listener);
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  return server;
}
