import { createServer, type RequestListener } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Context } from '../../shared/context.js';
import { type AppError } from '../../shared/errors.js';
import { toAppError, sendError } from '../../shared/http/error-response.js';
import { accountRefusal, createRateLimiter } from '../../shared/http/rate-limit.js';
import { apiSecurityHeadersHook } from '../../shared/http/security-headers.js';
import { createMethodIndex, routeMissError, registerRoutes } from '../../shared/http/register.js';
import type { RouteDef } from '../../shared/http/route.js';
import cookie from '@fastify/cookie';
import { authRoutes } from './auth/auth.routes.js';
import { authService } from './auth/auth.service.js';
import { createAuthenticator } from './auth/authenticator.js';
import { createCaptcha } from './auth/captcha.js';
import { createAbuseGuard } from './auth/abuse.js';
import { discoveryRoutes } from './discovery/discovery.routes.js';
import { tokensRoutes } from './tokens/tokens.routes.js';
import { tokensService } from './tokens/tokens.service.js';
import { usersRoutes } from './users/users.routes.js';
import { deadLettersRoutes } from './dead-letters/dead-letters.routes.js';
import { subdomainsRoutes } from './subdomains/subdomains.routes.js';
import { linksRoutes } from './links/links.routes.js';
import { statsRoutes } from './stats/stats.routes.js';
import { reportZonesOf } from './stats/stats.service.js';
import { visitsRoutes } from './visits/visits.routes.js';
import { legacyRoutes } from './legacy/legacy.routes.js';
import { exportsRoutes } from './exports/exports.routes.js';
import { swarmRoutes } from './swarm/swarm.routes.js';
import { webhooksRoutes } from './webhooks/webhooks.routes.js';
import { buildIngestApp, hostDispatcher } from '../ingest/app.js';
import { registerDashboard } from './dashboard/dashboard.js';
import { publicPages } from '../public-page/public-page.js';
import { shortHostMatcher } from '../../shared/links/hosts.js';
import { baseFastifyOptions, envelopeRequestHook, dependencyPortsOf, errorOptionsOf, responseObserver } from '../../shared/http/fastify-base.js';

export interface AppOptions {
  /** Extra route declarations (tests use this to reach failure paths no public route has). */
  extraRoutes?: RouteDef[];
  /** Folder of the built dashboard (default dist/web; tests point at a fixture). */
  dashboardDir?: string;
}

export interface App {
  app: FastifyInstance;
  /** Every route declaration this process serves: the API's and, with the ingest role, the beacon's. */
  routes: RouteDef[];
  /** The ingest edge (short hosts), when this process has the ingest role; `app`'s server routes to it by Host. */
  ingest?: FastifyInstance;
  /**
   * With the ingest role, the request listener of `app`'s server (Host routing, then the edge's
   * short-host listener or the API): what a request over a socket meets first.
   */
  listener?: RequestListener;
}

/**
 * The HTTP server of a process with the ingest role: one listener for the edge and the API. Fastify
 * leaves a server factory's server as Node makes it (idle keep-alive connections closed after 5 s,
 * shorter than the 60 s idle timeout of common load balancers, which then answer 502): its own
 * keepAliveTimeout, resolved in the options it hands the factory, is applied here.
 */
function hostServer(listener: RequestListener, options: FastifyServerOptions) {
  const server = createServer(listener);
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  return server;
}

/** Builds the Fastify app without listening: every HTTP role of this process, for tests and main. */
export async function buildApp(context: Context, options: AppOptions = {}): Promise<App> {
  const { config, log, metrics } = context;
  const errorOptions = errorOptionsOf(config);
  const dependencyPorts = dependencyPortsOf(config);
  const limiter = createRateLimiter({ cache: context.cache, rules: config.rateLimits, metrics, log });
  // Independent start-up reads: the abuse guard, and the time zones reports offer (ClickHouse).
  const [abuse, zones] = await Promise.all([createAbuseGuard(context), reportZonesOf(context)]);
  const authenticator = createAuthenticator(context, abuse);
  const registrar = { limiter, authenticator, abuse, publicUrl: config.publicUrl };
  // One renderer of the subdomains' public pages: the edge answers them, or (without it) the API.
  const pages = publicPages(context, limiter);
  const ingest = config.roles.includes('ingest') ? await buildIngestApp(context, registrar, pages) : undefined;
  let listener: RequestListener | undefined;
  const app = Fastify({
    ...baseFastifyOptions(context),
    // With the ingest role, one server answers both: requests for a short host go to the edge app.
    ...(ingest ? { serverFactory: (handler: RequestListener, options: FastifyServerOptions) => hostServer((listener = hostDispatcher(context, handler, ingest)), options) } : {}),
  });
  if (ingest) app.addHook('onClose', async () => ingest.app.close());
  await app.register(cookie);
  app.addHook('onClose', async () => abuse.close());
  const captcha = createCaptcha(context.cache, config.captcha.secret);
  app.addHook('onClose', async () => authenticator.close());

  const routes: RouteDef[] = [];
  /** What this process serves and documents: the API's routes and the beacon's (served by the ingest app). */
  let served: RouteDef[] = [];
  routes.push(
    ...discoveryRoutes({ context, limiter, routes: () => served }),
    ...authRoutes(context, authService(context, captcha, abuse), captcha),
    ...usersRoutes(context),
    ...deadLettersRoutes(context),
    ...tokensRoutes(tokensService(context)),
    ...subdomainsRoutes(context),
    ...linksRoutes(context),
    ...statsRoutes(context, zones),
    ...visitsRoutes(context),
    ...legacyRoutes(context),
    ...exportsRoutes(context),
    ...webhooksRoutes(context),
    ...swarmRoutes(),
    ...(options.extraRoutes ?? []),
  );
  served = [...routes, ...(ingest?.routes ?? [])];

  app.decorateRequest('locale', 'en');
  app.addHook('onRequest', envelopeRequestHook({ contentLanguage: true }));
  app.addHook('onResponse', responseObserver(context));
  app.addHook('onSend', apiSecurityHeadersHook);

  const allowedMethods = createMethodIndex(routes);
  /** 405 with Allow when the path exists under other methods, else 404. */
  const routeMiss = (request: FastifyRequest): AppError => routeMissError(allowedMethods, request.method, request.url.split('?')[0] ?? '/');

  app.setErrorHandler(async (error, request, reply) => {
    // A request that matched no route can fail in body parsing (QUERY without Content-Type) before
    // the not-found handler runs: the route does not exist, so that is the answer.
    if (!request.routeOptions.config.routeDef) return sendError(request, reply, routeMiss(request), errorOptions);
    const { appError, unexpected } = toAppError(error, dependencyPorts);
    if (unexpected) log.error({ err: error, request_id: request.id }, 'unexpected failure');
    else if (appError.status === 500) log.error({ err: appError.cause ?? appError, request_id: request.id, code: appError.code }, 'request failed');
    else if (appError.cause && appError.status === 503) log.warn({ err: appError.cause, request_id: request.id, down: appError.details.down }, 'dependency unavailable');
    else log.debug({ err: appError.cause ?? appError, request_id: request.id, code: appError.code }, 'request refused');
    if (appError.status === 429) accountRefusal(reply, appError, request.routeOptions.config.routeDef.bucket, { rules: config.rateLimits, metrics });
    return sendError(request, reply, appError, errorOptions);
  });

  app.setNotFoundHandler(async (request, reply) => sendError(request, reply, routeMiss(request), errorOptions));

  registerRoutes(app, routes, registrar);
  // The owner dashboard (its HTML on `/` and its pages, its hashed assets), served by the api role.
  // With the ingest role, short hosts never reach this app (the server routes them by Host).
  if (config.roles.includes('api')) {
    const shortHostOf = shortHostMatcher(config);
    const shortHostRoot = ingest
      ? undefined
      : (request: FastifyRequest, reply: FastifyReply) => {
          const subdomain = shortHostOf(request.hostname);
          return subdomain ? pages.answer(request, reply, subdomain) : undefined;
        };
    await registerDashboard(app, { dir: options.dashboardDir, log, shortHostRoot });
  }

  return { app, routes: served, ingest: ingest?.app, listener };
}
