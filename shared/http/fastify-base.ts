import { METHODS, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';
import { LogController, type FastifyHttpOptions, type FastifyReply, type FastifyRequest } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Context } from '../context.js';
import { redactUrl } from '../logger.js';
import { AppError } from '../errors.js';
import { negotiateLocale, t, type Locale } from '../i18n/index.js';
import { counterChildren, histogramChildren } from '../metrics.js';
import { buildMeta, failure } from './envelope.js';
import { sendError, toAppError, type ErrorOptions } from './error-response.js';
import { API_SECURITY_HEADER_LIST } from './security-headers.js';
import { dependencyPorts } from '../unavailable.js';

/** A well-formed incoming X-Request-Id is kept; anything else is replaced by a fresh UUIDv7. */
const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$/;

/** The request's own X-Request-Id when it is well-formed. */
export function incomingRequestId(headers: IncomingHttpHeaders): string | undefined {
  const incoming = headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : undefined;
}

/**
 * Where a listener that answered part of a request before handing it to Fastify leaves the id it
 * gave it, so that Fastify's request (its X-Request-Id, its access-log line) keeps the same one.
 */
export const ASSIGNED_REQUEST_ID = Symbol('assignedRequestId');

/**
 * The client address of a raw request, as Fastify's `request.ip` decides it with `trustProxy`:
 * the socket's peer, or the X-Forwarded-For hop before the trusted ones when the peer is in
 * TRUST_PROXY (the same @fastify/proxy-addr walk).
 */
export function clientAddressOf(trustProxy: string[]): (request: IncomingMessage) => string {
  if (trustProxy.length === 0) return (request) => request.socket.remoteAddress ?? '';
  const trusted = proxyAddr.compile(trustProxy);
  return (request) => proxyAddr(request, trusted);
}

/**
 * How error answers are rendered: exception detail only when asked for (DEBUG=1, NODE_ENV=development);
 * the error page's home (the dashboard) and its documentation links, absolute on the platform's own
 * origin so that they work on a short host too.
 */
export function errorOptionsOf(config: Context['config']): ErrorOptions {
  return { showDetail: config.errorDetail, homeUrl: `${config.publicUrl}/`, platformUrl: config.publicUrl };
}

/** The configured servers' ports, to name the dependency of a connection error (a 503 says which is down). */
export function dependencyPortsOf(config: Context['config']) {
  return dependencyPorts({
    database: config.database.kind === 'postgres' ? config.database.url : undefined,
    analytics: config.analytics.kind === 'clickhouse' ? config.analytics.url : undefined,
    cache: config.redisUrl,
    visit_log: config.messageLog.kind === 'kafka' ? config.messageLog.brokers : undefined,
  });
}

/** The Fastify options every HTTP app of the platform shares (the API and the ingest edge). */
export function baseFastifyOptions(context: Pick<Context, 'config' | 'log' | 'metrics'>): FastifyHttpOptions<Server> {
  const { config, log } = context;
  const errorOptions = errorOptionsOf(config);
  return {
    loggerInstance: log,
    // One access-log line per request is written by the response observer below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    // No per-request child logger (a pino child per request is measurable on the redirect path):
    // every line that concerns a request carries request_id itself.
    childLoggerFactory: (logger) => logger,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    // The id a listener already gave the request, its own well-formed X-Request-Id, or a fresh UUIDv7.
    genReqId: (request) => (request as { [ASSIGNED_REQUEST_ID]?: string })[ASSIGNED_REQUEST_ID] ?? incomingRequestId(request.headers) ?? uuidv7(),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // Node would answer an HTTP/1.1 request without Host itself (a bare 400): strictHostHook does, with the envelope.
    http: { requireHostHeader: false },
    return503OnClosing: true,
    // Errors Fastify raises before routing (a malformed URL) get the envelope like every other.
    frameworkErrors: (error, request, reply) => void sendError(localizedByHeaders(request), reply, toAppError(error).appError, errorOptions),
    // And so do the answers Node gives before Fastify sees a request (it could not parse it).
    clientErrorHandler: clientErrorHandler(context),
  };
}

/** Node's parse error of a request it cannot hand on, with what it read of it. */
type ClientError = Error & { code?: string; rawPacket?: unknown };

/** The status and error of Node's answer to a request it could not parse. */
function clientFailure(error: ClientError): { status: number; error: AppError } {
  switch (error.code) {
    // Node's own status for headers over --max-http-header-size: 431 says which part was too
    // large; the catalogue's code for "body or field over the limit" says it to clients.
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, error: new AppError('payload_too_large', { headers: 'too large' }, { messageKey: 'error.payload_too_large.headers' }) };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, error: new AppError('bad_request', { request: 'timeout' }, { messageKey: 'error.bad_request.timeout' }) };
    default:
      return {
        status: 400,
        error: new AppError('bad_request', { request: 'malformed', ...(error.code?.startsWith('HPE_') ? { parse_error: error.code } : {}) }),
      };
  }
}

/**
 * Answers a request Node could not parse (malformed, headers over the limit, too slow) in
 * Fastify's place: the failure envelope with a fresh X-Request-Id, in English (nothing of the
 * request, its Accept-Language included, was read), and the connection closes. Like every answer
 * it is counted and has its access-log line.
 */
export function clientErrorHandler(context: RecorderDeps) {
  const record = requestRecorder(context);
  return (error: ClientError, socket: Socket): void => {
    // A reset connection has no one to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, error: appError } = clientFailure(error);
    const id = uuidv7();
    const message = t('en', appError.messageKey ?? `error.${appError.code}`);
    const body = JSON.stringify(failure(appError.code, message, appError.details, buildMeta(id, 0)));
    // As Node does: never write into the middle of an answer already under way on this socket.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const head = [
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(body)}`,
        `X-Request-Id: ${id}`,
        'Content-Language: en',
        'Connection: close',
      ];
      for (let i = 0; i < API_SECURITY_HEADER_LIST.length; i += 2) head.push(`${API_SECURITY_HEADER_LIST[i]}: ${API_SECURITY_HEADER_LIST[i + 1]}`);
      socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
    }
    socket.destroySoon();
    const method = Buffer.isBuffer(error.rawPacket) ? (error.rawPacket.toString('latin1', 0, 16).split(' ', 1)[0] ?? '') : '';
    record({
      id,
      method: METHODS.includes(method) ? method : 'UNKNOWN',
      url: '',
      route: 'client_error',
      status,
      tookMs: 0,
      ip: socket.remoteAddress,
      userAgent: undefined,
    });
  };
}

/**
 * A Host header's value (RFC 9110, 7.2, as this platform is addressed): a DNS name or IPv4 address,
 * or a bracketed IPv6 address, then an optional port. No userinfo (`name@host`), path, space or
 * second port: what routes a request by Host reads exactly the host the client named.
 */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9.])?|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

const invalidHost = (host: string) => new AppError('bad_request', { host }, { messageKey: 'error.bad_request.invalid_host' });

/**
 * Why a request cannot be routed as HTTP/1 says (RFC 9112, 3.2), or undefined when it can: a
 * request line without a version (HTTP/0.9's `GET /`) or of a version other than 1.x, more than one
 * Host header, no Host on HTTP/1.1, or a Host that is not a host and port. HTTP/1.0 without Host is
 * admitted, as that version allows: it is served as the platform's own host, never a short host.
 */
export function requestHostProblem(request: IncomingMessage): AppError | undefined {
  const checked = request as IncomingMessage & { [HOST_PROBLEM]?: AppError | null };
  // The host dispatcher checks every request before it routes; the API's hook then reuses its answer.
  const known = checked[HOST_PROBLEM];
  if (known !== undefined) return known ?? undefined;
  const problem = hostProblemOf(request);
  checked[HOST_PROBLEM] = problem ?? null;
  return problem;
}

/** The answer of requestHostProblem, kept on the request once found (null: none). */
const HOST_PROBLEM = Symbol('hostProblem');

function hostProblemOf(request: IncomingMessage): AppError | undefined {
  if (request.httpVersionMajor !== 1) {
    return new AppError('bad_request', { request: 'http_version', version: request.httpVersion }, { messageKey: 'error.bad_request.http_version' });
  }
  const raw = request.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') hosts++;
  if (hosts > 1) return invalidHost('repeated');
  const host = request.headers.host;
  if (host === undefined) return request.httpVersionMinor === 0 ? undefined : invalidHost('missing');
  if (!HOST.test(host)) return invalidHost('malformed');
  const port = host.lastIndexOf(':');
  if (port > 0 && !host.endsWith(']') && Number(host.slice(port + 1)) > 65_535) return invalidHost('malformed');
  return undefined;
}

/**
 * The onRequest hook that refuses what requestHostProblem finds, with the envelope (400
 * `bad_request`), before routing: registered after envelopeRequestHook, whose locale and
 * X-Request-Id the answer carries.
 */
export function strictHostHook(config: Context['config']) {
  const errorOptions = errorOptionsOf(config);
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const problem = requestHostProblem(request.raw);
    if (problem) return sendError(request, reply, problem, errorOptions);
  };
}

/** The locale of a request: `?lang=` (unless `query` is false), then Accept-Language, then English. */
function requestLocale(request: FastifyRequest, { query = true } = {}): Locale {
  const lang = query ? (request.query as Record<string, unknown> | undefined)?.lang : undefined;
  return negotiateLocale(typeof lang === 'string' ? lang : undefined, request.headers['accept-language']);
}

/**
 * The onRequest hook of routes answered with the envelope: the request's locale, and the
 * X-Request-Id header (with Content-Language too, where the answers are localised).
 */
export function envelopeRequestHook({ contentLanguage }: { contentLanguage: boolean }) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    request.locale = requestLocale(request);
    reply.header('X-Request-Id', request.id);
    if (contentLanguage) reply.header('Content-Language', request.locale);
    done();
  };
}

/**
 * Sets a request's locale as the API does (`?lang=`, then Accept-Language) and returns it, for
 * answers of the ingest edge (short hosts, the tracker), which negotiates only when it must answer
 * an error.
 */
export function localized<R extends FastifyRequest>(request: R): R {
  request.locale = requestLocale(request);
  return request;
}

/**
 * Sets a request's locale from Accept-Language alone (not `?lang=`: the query may not be parsed
 * yet) and returns it, for errors Fastify raises before routing (a malformed URL).
 */
export function localizedByHeaders<R extends FastifyRequest>(request: R): R {
  request.locale = requestLocale(request, { query: false });
  return request;
}

/** One answered request, as the access log and the HTTP metrics see it. */
export interface AnsweredRequest {
  id: string;
  method: string;
  url: string;
  /** The route's label (`/api/v1/links/{id}`, `/{slug}`), never the raw path: metrics stay bounded. */
  route: string;
  status: number;
  tookMs: number;
  ip: string | undefined;
  userAgent: string | undefined;
}

type Recorder = (answered: AnsweredRequest) => void;
/** What a recorder writes to. */
export type RecorderDeps = Pick<Context, 'metrics' | 'log'>;
/** The recorder of each process's metrics: one per process, whatever slice of its context an app is handed. */
const recorders = new WeakMap<Context['metrics'], Recorder>();

/**
 * Records an answered request: the request duration histogram, the status-class counter and the
 * one access-log line per request (same id as X-Request-Id). Metric children are cached per label
 * set so a request does not hash its labels again; every app of a process shares its context's
 * one recorder (and so those caches).
 */
export function requestRecorder(context: RecorderDeps): Recorder {
  let recorder = recorders.get(context.metrics);
  if (!recorder) recorders.set(context.metrics, (recorder = createRecorder(context)));
  return recorder;
}

function createRecorder(context: RecorderDeps): Recorder {
  const { metrics, log } = context;
  /** Per method, route and status: its duration histogram and its status-class counter (found once). */
  const series = new Map<string, { duration: { observe(seconds: number): void }; answered: { inc(): void } }>();
  const statusClass = counterChildren(metrics.httpRequests, 'status_class');
  const duration = histogramChildren(metrics.httpDuration);
  return ({ id, method, url, route, status, tookMs, ip, userAgent }) => {
    const key = `${method} ${route} ${status}`;
    let found = series.get(key);
    if (!found) {
      found = { duration: duration({ method, route, status_code: String(status) }), answered: statusClass(`${Math.floor(status / 100)}xx`) };
      series.set(key, found);
    }
    found.duration.observe(tookMs / 1000);
    found.answered.inc();
    // The line is not even built when the level is off (every redirect passes here).
    if (log.isLevelEnabled('info'))
      log.info({ request_id: id, method, url: redactUrl(url), route, status, took_ms: Math.round(tookMs * 100) / 100, ip, user_agent: userAgent }, 'request');
  };
}

/** The onResponse hook of every Fastify app: records the request (requestRecorder). */
export function responseObserver(context: RecorderDeps) {
  const record = requestRecorder(context);
  return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const { routeDef, routeLabel } = request.routeOptions.config;
    record({
      id: request.id,
      method: request.method,
      url: request.url,
      route: routeDef?.path ?? routeLabel ?? (reply.statusCode === 405 ? 'method_not_allowed' : 'not_found'),
      status: reply.statusCode,
      tookMs: reply.elapsedTime,
      ip: request.ip,
      userAgent: request.headers['user-agent'],
    });
    done();
  };
}
