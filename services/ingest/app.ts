import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Context } from '../../shared/context.js';
import { AppError } from '../../shared/errors.js';
import { sendError, toAppError } from '../../shared/http/error-response.js';
import { baseFastifyOptions, errorOptionsOf, responseObserver } from '../../shared/http/fastify-base.js';
import type { RateLimiter } from '../../shared/http/rate-limit.js';
import { negotiateLocale } from '../../shared/i18n/index.js';
import { createLinkCache } from './link-cache.js';
import { registerShortHosts, SHORT_HOST, subdomainOf } from './redirect.routes.js';
import { createVisitProducer } from './visit-producer.js';

export interface IngestApp {
  app: FastifyInstance;
}

/**
 * The ingest edge as its own Fastify app: the short hosts' routes and nothing else — no cookie
 * parsing, no locale negotiation (done only for the error pages), no API hooks — because every
 * microsecond here is paid by every visitor. Closing it drains the visit producer.
 */
export async function buildIngestApp(context: Context, limiter: RateLimiter): Promise<IngestApp> {
  const { config, log } = context;
  const errorOptions = errorOptionsOf(config);
  const app = Fastify(baseFastifyOptions(context));
  const links = await createLinkCache(context);
  const visits = createVisitProducer(context);
  app.addHook('onClose', async () => {
    await visits.close(config.shutdownTimeoutMs / 2);
    await links.close();
  });

  app.decorateRequest('locale', 'en');
  app.addHook('onResponse', responseObserver(context));
  const localized = (request: Parameters<typeof sendError>[0]) => {
    request.locale = negotiateLocale(undefined, request.headers['accept-language']);
    return request;
  };
  app.setErrorHandler(async (error, request, reply) => {
    const { appError, unexpected } = toAppError(error);
    if (unexpected || appError.status === 500) log.error({ err: error, request_id: request.id }, 'redirect failed');
    return sendError(localized(request), reply, appError, errorOptions);
  });
  app.setNotFoundHandler(async (request, reply) =>
    sendError(localized(request), reply, new AppError('not_found', { path: request.url.split('?', 1)[0]!.slice(0, 200) }), errorOptions),
  );
  registerShortHosts(app, { context, links, visits, limiter, errorOptions, localized });
  await app.ready();
  return { app };
}

/**
 * One server for both apps: a request whose Host is a short host (`{label}.{BASE_DOMAIN}`, and
 * not the API's own host) goes to the ingest app, everything else to the API.
 */
export function hostDispatcher(context: Context, api: RequestListener, ingest: FastifyInstance): RequestListener {
  const apiHost = new URL(context.config.publicUrl).hostname.toLowerCase();
  const edge = ingest.routing.bind(ingest) as (request: IncomingMessage, response: ServerResponse) => void;
  return (request, response) => {
    const host = request.headers.host;
    if (host) {
      const colon = host.lastIndexOf(':');
      const hostname = colon > 0 && !host.endsWith(']') ? host.slice(0, colon) : host;
      const subdomain = hostname.toLowerCase() !== apiHost ? subdomainOf(hostname, context.config.baseDomain) : undefined;
      if (subdomain) {
        (request as IncomingMessage & { [SHORT_HOST]?: string })[SHORT_HOST] = subdomain;
        return edge(request, response);
      }
    }
    api(request, response);
  };
}
