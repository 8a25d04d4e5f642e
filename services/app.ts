import type { RequestListener } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Role } from '#shared/config.js';
import type { ProcessContext } from '#shared/context.js';
import { type AppError } from '#shared/errors.js';
import { toAppError, sendError } from '#shared/http/error-response.js';
import { baseFastifyOptions, envelopeRequestHook, dependencyPortsOf, errorOptionsOf, responseObserver, strictHostHook } from '#shared/http/fastify-base.js';
import { createInFlightGuard, type InFlightGuard } from '#shared/http/in-flight.js';
import { accountRefusal, createRateLimiter } from '#shared/http/rate-limit.js';
import { createMethodIndex, routeMissError, registerRoutes } from '#shared/http/register.js';
import type { RouteDef } from '#shared/http/route.js';
import { apiSecurityHeadersHook, privateAnswersHook } from '#shared/http/security-headers.js';
import { useStrictJson } from '#shared/http/json-body.js';
import { shortHostMatcher } from '#shared/links/hosts.js';
import { createCustomHosts, type CustomHosts } from '#shared/domains/custom-hosts.js';
import type { Api } from './api/app.js';
import type { ShortHostRoot } from './api/dashboard/dashboard.js';
import { createAbuseGuard, type AbuseGuard } from './api/auth/abuse.js';
import { probeRoutes } from './api/discovery/discovery.routes.js';
import { buildIngestApp, hostDispatcher, hostServer, type IngestApp } from './ingest/app.js';
import { composition, type Composition, type PostgresRepositories, type Repositories } from './repositories.js';

export interface AppOptions {
  /** Extra route declarations (tests use this to reach failure paths no public route has). */
  extraRoutes?: RouteDef[];
  /** Folder of the built dashboard (default dist/web; tests point at a fixture). */
  dashboardDir?: string;
  /**
   * The process's repositories (services/platform.ts hands its one set: every one with the analytics
   * store, the Postgres ones without); built from the context's clients when not given.
   */
  repositories?: Repositories | PostgresRepositories;
  /** The bound on each account's expensive work in flight (tests hold its slots); a new one when not given. */
  inFlight?: InFlightGuard;
}

export interface App {
  app: FastifyInstance;
  /** Every route declaration this process serves: health and metrics, the API's with the api role, the tracker's with the ingest role. */
  routes: RouteDef[];
  /** The ingest edge (short hosts), when this process has the ingest role; `app`'s server routes to it by Host. */
  ingest?: FastifyInstance;
  /**
   * With the ingest role, the request listener of `app`'s server (Host routing, then the edge's
   * short-host listener or `app`): what a request over a socket meets first.
   */
  listener?: RequestListener;
  /** With the ingest role: true once every visit and beacon the edge took before the call is in the message log (IngestApp.settled). */
  settled?: (deadlineMs: number) => Promise<boolean>;
}

/**
 * Builds the HTTP app of a process without listening, from its roles: every process answers
 * `/api/v1/health` and `/metrics`; the api role adds the API and the dashboard; the ingest role the
 * edge (short hosts and the tracker), in front of the rest by Host. Roles without HTTP routes
 * (enricher, worker) get nothing else: any other request is a 404 in the error envelope. The API's
 * modules (and the public pages' renderer) are loaded only by a process with the api role.
 */
export async function buildApp(context: ProcessContext, options: AppOptions = {}): Promise<App> {
  const { config, log, metrics } = context;
  const errorOptions = errorOptionsOf(config);
  const dependencyPorts = dependencyPortsOf(config);

  /** What this process serves and documents, complete once the app is built (the API's index reads it at request time). */
  let served: RouteDef[] = [];
  const composed = composition(context, options.repositories);
  const inFlight = options.inFlight ?? createInFlightGuard();
  const { api, ingest, abuse } = await composeRoles(composed, { served: () => served, dashboardDir: options.dashboardDir, inFlight });
  let listener: RequestListener | undefined;
  const app = Fastify({
    ...baseFastifyOptions(context),
    // With the ingest role, one server answers both: requests for a short host go to the edge app.
    ...(ingest
      ? {
          serverFactory: (handler: RequestListener, serverOptions: FastifyServerOptions) =>
            hostServer((listener = hostDispatcher(handler, ingest)), serverOptions),
        }
      : {}),
  });
  useStrictJson(app);
  if (ingest) app.addHook('onClose', async () => ingest.app.close());
  if (abuse) app.addHook('onClose', async () => abuse.close());

  // Health and metrics in every process: the API lists them among its discovery routes; without it
  // they are all this app serves.
  const own = api ? api.routes : probeRoutes(context, composed.kind === 'full' ? composed.repositories.visits : undefined);
  const extra = options.extraRoutes ?? [];
  const routes = [...own, ...extra];
  served = [...routes, ...(ingest?.routes ?? [])];

  app.decorateRequest('locale', 'en');
  app.addHook('onRequest', envelopeRequestHook({ contentLanguage: true }));
  app.addHook('onRequest', strictHostHook(config));
  app.addHook('onResponse', responseObserver(context));
  app.addHook('onSend', apiSecurityHeadersHook);
  app.addHook('onSend', privateAnswersHook);

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
    else if (appError.cause && appError.status === 503)
      log.warn({ err: appError.cause, request_id: request.id, down: appError.details.down }, 'dependency unavailable');
    else log.debug({ err: appError.cause ?? appError, request_id: request.id, code: appError.code }, 'request refused');
    if (appError.status === 429) accountRefusal(reply, appError, request.routeOptions.config.routeDef.bucket, { rules: config.rateLimits, metrics });
    return sendError(request, reply, appError, errorOptions);
  });

  app.setNotFoundHandler(async (request, reply) => sendError(request, reply, routeMiss(request), errorOptions));

  if (api) await api.register(app);
  else registerRoutes(app, own, { publicUrl: config.publicUrl });
  // Tests' extra routes are checked as the API's are, when the process has it.
  registerRoutes(app, extra, api?.registrar ?? { publicUrl: config.publicUrl });

  return { app, routes: served, ingest: ingest?.app, listener, ...(ingest ? { settled: ingest.settled } : {}) };
}

/**
 * The edge and the API of a process, for the roles it has: they share one rate limiter and one
 * anti-spam guard, so that an address counts once per bucket (the public pages and the API's
 * discovery routes share the default one). Neither, and no limiter, for a process without them.
 * An edge without the api role has no analytics store: it renders no public page itself but
 * forwards them to PUBLIC_PAGES_UPSTREAM (services/ingest/public-page-forward.ts).
 */
async function composeRoles(
  composed: Composition,
  { served, dashboardDir, inFlight }: { served: () => RouteDef[]; dashboardDir: string | undefined; inFlight: InFlightGuard },
): Promise<{ api?: Api; ingest?: IngestApp; abuse?: AbuseGuard }> {
  const { config, log, metrics } = composed.context;
  const has = (role: Role) => config.roles.includes(role);
  if (!has('api') && !has('ingest')) return {};
  const limiter = createRateLimiter({ cache: composed.context.cache, rules: config.rateLimits, metrics, log });
  if (composed.kind === 'thin') {
    if (has('api')) throw new Error('the api role runs without the analytics store (ANALYTICS_ROLES must list it)');
    const { context, repositories } = composed;
    const abuse = await createAbuseGuard({ ...context, repositories });
    return { ingest: await buildIngestApp(context, { limiter, abuse }, undefined, repositories), abuse };
  }
  const { context: full, repositories } = composed;
  const [{ createApi, readServices }, { publicPages }, { reportZonesOf }] = await Promise.all([
    import('./api/app.js'),
    import('./public-page/public-page.js'),
    import('./api/stats/stats.service.js'),
  ]);
  // Independent start-up reads at once: the anti-spam guard's (Redis) and, for the API, the time zones reports offer (ClickHouse).
  const [abuse, zones] = await Promise.all([createAbuseGuard({ ...full, repositories }), has('api') ? reportZonesOf(repositories) : undefined]);
  // One renderer of the subdomains' public pages: the edge answers them, or (without it) the API.
  // The read services once: the public pages and the API's endpoints share them.
  const services = readServices({ ...full, repositories });
  const pages = publicPages({ config, ...services }, limiter);
  if (config.publicPages.upstream) log.warn('PUBLIC_PAGES_UPSTREAM is ignored: this process has the api role and renders public pages itself');
  const ingest = has('ingest') ? await buildIngestApp(full, { limiter, abuse }, pages, repositories) : undefined;
  if (!has('api') || !zones) return { ingest, abuse };
  // With the ingest role, short hosts never reach the API (the server routes them by Host).
  let shortHostRoot: ShortHostRoot | undefined;
  let customHosts: CustomHosts | undefined;
  if (!ingest) {
    // An ingest node forwards a custom domain's `GET /` with its Host: the API maps it as the edge does.
    customHosts = await createCustomHosts({ ...full, repositories });
    const shortHostOf = shortHostMatcher(config);
    const hosts = customHosts;
    shortHostRoot = (request: FastifyRequest, reply: FastifyReply) => {
      const subdomain = shortHostOf(request.hostname) ?? hosts.subdomainOf(request.hostname);
      return subdomain ? pages.answer(request, reply, subdomain) : undefined;
    };
  }
  const api = await createApi(full, {
    repositories,
    services,
    limiter,
    abuse,
    zones,
    served,
    dashboardDir,
    shortHostRoot,
    inFlight,
    onClose: customHosts ? () => customHosts.close() : undefined,
  });
  return { api, ingest, abuse };
}
