import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Context } from '../../shared/context.js';
import { AppError } from '../../shared/errors.js';
import { toAppError, sendError } from '../../shared/http/error-response.js';
import { createRateLimiter } from '../../shared/http/rate-limit.js';
import { createMethodIndex, registerRoutes } from '../../shared/http/register.js';
import type { RouteDef } from '../../shared/http/route.js';
import { negotiateLocale } from '../../shared/i18n/index.js';
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
import { subdomainsRoutes } from './subdomains/subdomains.routes.js';
import { linksRoutes } from './links/links.routes.js';
import { swarmRoutes } from './swarm/swarm.routes.js';
import { createLinkCache } from '../ingest/link-cache.js';
import { registerShortHosts } from '../ingest/redirect.routes.js';
import { createVisitProducer } from '../ingest/visit-producer.js';

/** A well-formed incoming X-Request-Id is kept; anything else is replaced by a fresh UUIDv7. */
const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$/;

export interface AppOptions {
  /** Extra route declarations (tests use this to reach failure paths no public route has). */
  extraRoutes?: RouteDef[];
}

export interface App {
  app: FastifyInstance;
  routes: RouteDef[];
}

/** Builds the Fastify app without listening: every HTTP role of this process, for tests and main. */
export async function buildApp(context: Context, options: AppOptions = {}): Promise<App> {
  const { config, log, metrics } = context;
  const errorOptions = { showDetail: !config.production || config.debug, homeUrl: config.publicUrl + '/api/v1/' };
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // One access-log line per request is written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    // No per-request child logger (a pino child per request is measurable on the redirect path):
    // every line that concerns a request carries request_id itself.
    childLoggerFactory: (logger) => logger,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : uuidv7();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    return503OnClosing: true,
    // Errors Fastify raises before routing (a malformed URL) get the envelope like every other.
    frameworkErrors: (error, request, reply) => {
      request.locale = negotiateLocale(undefined, request.headers['accept-language']);
      void sendError(request, reply, toAppError(error).appError, errorOptions);
    },
  });
  const limiter = createRateLimiter({ cache: context.cache, rules: config.rateLimits, metrics, log });

  await app.register(cookie);
  const abuse = await createAbuseGuard(context);
  app.addHook('onClose', async () => abuse.close());
  const authenticator = createAuthenticator(context, abuse);
  const captcha = createCaptcha(context.cache, config.captcha.secret);
  app.addHook('onClose', async () => authenticator.close());

  const routes: RouteDef[] = [];
  routes.push(
    ...discoveryRoutes({ context, limiter, routes: () => routes }),
    ...authRoutes(context, authService(context, captcha, abuse), captcha),
    ...usersRoutes(context),
    ...tokensRoutes(tokensService(context)),
    ...subdomainsRoutes(context),
    ...linksRoutes(context),
    ...swarmRoutes(),
    ...(options.extraRoutes ?? []),
  );

  app.decorateRequest('locale', 'en');
  app.decorateRequest('principal', undefined);
  // Both hooks are synchronous (done-callback form): no promise per request for them.
  app.addHook('onRequest', (request, reply, done) => {
    const lang = (request.query as Record<string, unknown> | undefined)?.lang;
    request.locale = negotiateLocale(typeof lang === 'string' ? lang : undefined, request.headers['accept-language']);
    reply.header('X-Request-Id', request.id);
    reply.header('Content-Language', request.locale);
    done();
  });
  /** Histogram and counter children per label set, so a request does not hash its labels again. */
  const durations = new Map<string, { observe(seconds: number): void }>();
  const statusClasses = new Map<number, { inc(): void }>();
  app.addHook('onResponse', (request, reply, done) => {
    const { routeDef, routeLabel } = request.routeOptions.config;
    const route = routeDef?.path ?? routeLabel ?? (reply.statusCode === 405 ? 'method_not_allowed' : 'not_found');
    const status = reply.statusCode;
    const key = `${request.method} ${route} ${status}`;
    let duration = durations.get(key);
    if (!duration) durations.set(key, (duration = metrics.httpDuration.labels({ method: request.method, route, status_code: String(status) })));
    duration.observe(reply.elapsedTime / 1000);
    let statusClass = statusClasses.get(status);
    if (!statusClass) statusClasses.set(status, (statusClass = metrics.httpRequests.labels({ status_class: `${Math.floor(status / 100)}xx` })));
    statusClass.inc();
    // The one access log line per request, carrying the same id as X-Request-Id.
    log.info(
      {
        request_id: request.id,
        method: request.method,
        url: request.url,
        route,
        status: reply.statusCode,
        took_ms: Math.round(reply.elapsedTime * 100) / 100,
        ip: request.ip,
        user_agent: request.headers['user-agent'],
      },
      'request',
    );
    done();
  });

  const allowedMethods = createMethodIndex(routes);
  /** 405 with Allow when the path exists under other methods, else 404. */
  const routeMiss = (request: FastifyRequest): AppError => {
    const path = request.url.split('?')[0] ?? '/';
    const allow = allowedMethods(path);
    return allow.length > 0
      ? new AppError('method_not_allowed', { method: request.method, allow }, {
          headers: { Allow: allow.join(', ') },
          messageKey: 'error.method_not_allowed.allowed',
          params: { method: request.method, allow: allow.join(', ') },
        })
      : new AppError('not_found', { path });
  };

  app.setErrorHandler(async (error, request, reply) => {
    // A request that matched no route can fail in body parsing (QUERY without Content-Type) before
    // the not-found handler runs: the route does not exist, so that is the answer.
    const { routeDef, routeLabel } = request.routeOptions.config;
    if (!routeDef && !routeLabel) return sendError(request, reply, routeMiss(request), errorOptions);
    const { appError, unexpected } = toAppError(error);
    if (unexpected) log.error({ err: error, request_id: request.id }, 'unexpected failure');
    else if (appError.status === 500) log.error({ err: appError.cause ?? appError, request_id: request.id, code: appError.code }, 'request failed');
    else log.debug({ err: appError.cause ?? appError, request_id: request.id, code: appError.code }, 'request refused');
    if (appError.code === 'rate_limited') metrics.rateLimited.inc({ bucket: String(appError.details.bucket) });
    return sendError(request, reply, appError, errorOptions);
  });

  app.setNotFoundHandler(async (request, reply) => sendError(request, reply, routeMiss(request), errorOptions));

  registerRoutes(app, routes, { limiter, authenticator, abuse, publicUrl: config.publicUrl });

  if (config.roles.includes('ingest')) {
    const links = await createLinkCache(context);
    const visits = createVisitProducer(context);
    app.addHook('onClose', async () => {
      await visits.close(config.shutdownTimeoutMs / 2);
      await links.close();
    });
    registerShortHosts(app, { context, links, visits, limiter, errorOptions });
  }
  return { app, routes };
}
