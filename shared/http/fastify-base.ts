import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Context } from '../context.js';
import { negotiateLocale, type Locale } from '../i18n/index.js';
import { sendError, toAppError } from './error-response.js';

/** A well-formed incoming X-Request-Id is kept; anything else is replaced by a fresh UUIDv7. */
const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$/;

/** How error answers are rendered: exception detail outside production (or with DEBUG), the home link. */
export function errorOptionsOf(config: Context['config']) {
  return { showDetail: !config.production || config.debug, homeUrl: config.publicUrl + '/api/v1/' };
}

/** The Fastify options every HTTP app of the platform shares (the API and the ingest edge). */
export function baseFastifyOptions(context: Context): FastifyServerOptions {
  const { config, log } = context;
  const errorOptions = errorOptionsOf(config);
  return {
    loggerInstance: log as FastifyBaseLogger,
    // One access-log line per request is written by the response observer below.
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
      request.locale = requestLocale(request, { query: false });
      void sendError(request, reply, toAppError(error).appError, errorOptions);
    },
  };
}

/** The locale of a request: `?lang=` (unless `query` is false), then Accept-Language, then English. */
export function requestLocale(request: FastifyRequest, { query = true } = {}): Locale {
  const lang = query ? (request.query as Record<string, unknown> | undefined)?.lang : undefined;
  return negotiateLocale(typeof lang === 'string' ? lang : undefined, request.headers['accept-language']);
}

/**
 * The onResponse hook of every app: the request duration histogram, the status-class counter and
 * the one access-log line per request (same id as X-Request-Id). Synchronous, with metric children
 * cached per label set so a request does not hash its labels again.
 */
export function responseObserver(context: Context) {
  const { metrics, log } = context;
  const durations = new Map<string, { observe(seconds: number): void }>();
  const statusClasses = new Map<number, { inc(): void }>();
  return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
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
    log.info(
      {
        request_id: request.id,
        method: request.method,
        url: request.url,
        route,
        status,
        took_ms: Math.round(reply.elapsedTime * 100) / 100,
        ip: request.ip,
        user_agent: request.headers['user-agent'],
      },
      'request',
    );
    done();
  };
}
