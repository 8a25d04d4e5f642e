import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { PublicPages } from '../public-page/public-page.js';

/** What the edge's 503 names when the API nodes do not answer (`error.details.down`). */
const UPSTREAM = 'public_pages_upstream';

/** Headers a public page never needs, not sent on: the page is public and shared caches keep it, so no credential of the visitor travels with it. */
const PRIVATE_HEADERS = ['cookie', 'authorization'] as const;

/** The socket-level failures of a kept-alive connection the API closed meanwhile: tried once more on a fresh one. */
const STALE_CONNECTION = new Set(['UND_ERR_SOCKET', 'ECONNRESET']);

/**
 * The public pages of an ingest node without the api role, which has no analytics store to read
 * them from: each `GET|HEAD /` of a short host goes on to the API nodes at PUBLIC_PAGES_UPSTREAM
 * (@fastify/reply-from over undici, its answer streamed back as it comes), with the original Host
 * (the API renders the subdomain it names), the visitor's address as the edge decided it in
 * `X-Forwarded-For` (the API, trusting the edge through its TRUST_PROXY, counts the page in the
 * visitor's rate bucket) and the request's id. Connecting, the first byte and each later part of
 * the answer are bounded by PUBLIC_PAGES_UPSTREAM_TIMEOUT_MS; an API that cannot be reached or is
 * too slow answers 503 `service_unavailable` in the envelope, naming `public_pages_upstream`.
 * Without PUBLIC_PAGES_UPSTREAM, the start-up log warns and every such page answers 503 saying so.
 * The redirects never pass here.
 */
export async function forwardedPublicPages(app: FastifyInstance, { config, log }: Pick<Context, 'config' | 'log'>): Promise<PublicPages> {
  const { upstream, timeoutMs } = config.publicPages;
  if (!upstream) {
    log.warn(
      { setting: 'PUBLIC_PAGES_UPSTREAM' },
      'PUBLIC_PAGES_UPSTREAM is not set: this ingest node has no analytics store to render public pages from, so `GET /` of a short host answers 503 service_unavailable (redirects and the tracker are not affected)',
    );
    return {
      async answer() {
        throw new AppError('service_unavailable', { setting: 'PUBLIC_PAGES_UPSTREAM' }, { messageKey: 'error.service_unavailable.public_pages_not_served' });
      },
    };
  }
  // Loaded only by an edge that forwards: a process that renders its pages never needs it.
  const { default: replyFrom } = await import('@fastify/reply-from');
  await app.register(replyFrom, {
    base: upstream,
    disableRequestLogging: true,
    undici: { connections: 64, pipelining: 1, keepAliveTimeout: 30_000, connect: { timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs },
    destroyAgent: true,
  });
  return {
    async answer(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
      return reply.from('/', {
        timeout: timeoutMs,
        rewriteRequestHeaders: (original, headers) => forwardedHeaders(original, headers),
        // The API's own 503 (its analytics store down) is its answer: passed on, not retried; a stale
        // kept-alive connection is retried once.
        retryDelay: ({ err, attempt }) => (err && attempt === 0 && STALE_CONNECTION.has((err as { code?: string }).code ?? '') ? 0 : null),
        onError: (failed, { error }) => {
          failed.send(
            new AppError(
              'service_unavailable',
              { down: [UPSTREAM] },
              { messageKey: 'error.service_unavailable.dependency', params: { names: UPSTREAM }, cause: error },
            ),
          );
        },
      });
    },
  };
}

/** The headers sent on: the visitor's, less credentials, with the original Host, the decided client address and the request's id. */
function forwardedHeaders(request: Pick<FastifyRequest, 'headers' | 'ip' | 'id'>, headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const sent: IncomingHttpHeaders = { ...headers, host: request.headers.host, 'x-forwarded-for': request.ip, 'x-request-id': request.id };
  for (const name of PRIVATE_HEADERS) delete sent[name];
  return sent;
}
