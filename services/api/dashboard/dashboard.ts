import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { htmlSecurityHeaders } from '#shared/http/security-headers.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import { DASHBOARD_PAGES } from '#shared/ui/dashboard-pages.js';

/** Where `make build` (scripts/build-web.sh) puts the dashboard. */
export const DASHBOARD_DIR = join(PROJECT_ROOT, 'dist', 'web');

/**
 * `GET /` of a short host reaching the API (a process without the ingest role behind a proxy that
 * sends it every host): the subdomain's public page, not the dashboard. Undefined when the host is
 * the platform's own.
 */
export type ShortHostRoot = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> | undefined;

/** Route label of the dashboard's HTML in metrics and logs (its paths are not API routes). */
export const DASHBOARD_ROUTE = '/{dashboard}';

const HTML_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  // The HTML names the hashed assets of this build: always revalidated, never kept stale.
  'Cache-Control': 'no-cache',
  ...htmlSecurityHeaders({ frameAncestors: "'none'" }),
};

/**
 * The owner dashboard at the platform's own origin: `GET /` and the dashboard's pages answer its
 * HTML (the browser-side router takes over), `/assets/*` its content-hashed files, cached for a
 * year as immutable. Without a build (no dist/web), the pages answer 503 saying how to build it.
 */
export async function registerDashboard(
  app: FastifyInstance,
  { dir = DASHBOARD_DIR, log, shortHostRoot }: { dir?: string | undefined; log: Logger; shortHostRoot?: ShortHostRoot },
): Promise<void> {
  const indexPath = join(dir, 'index.html');
  const html = existsSync(indexPath) ? readFileSync(indexPath) : undefined;
  if (!html) log.warn({ dir }, 'dashboard not built (run make build): its pages answer 503');

  const page = async (_request: unknown, reply: FastifyReply) => {
    if (!html) {
      return reply
        .code(503)
        .headers({ ...HTML_HEADERS, 'Cache-Control': 'no-store' })
        .send(
          '<!doctype html><meta charset="utf-8"><title>Dashboard not built</title><p>The dashboard is not built: run <code>make build</code> (or <code>make run</code>).</p>',
        );
    }
    return reply.headers(HTML_HEADERS).send(html);
  };
  const config = { routeLabel: DASHBOARD_ROUTE };
  app.get('/', { config }, async (request, reply) => (await shortHostRoot?.(request, reply)) ?? page(request, reply));
  for (const name of DASHBOARD_PAGES) {
    app.get(`/${name}`, { config }, page);
    app.get(`/${name}/*`, { config }, page);
  }

  if (html) {
    await app.register(fastifyStatic, {
      root: join(dir, 'assets'),
      prefix: '/assets/',
      index: false,
      wildcard: true,
      cacheControl: false,
      etag: true,
      lastModified: false,
      // scripts/build-web.sh writes each asset's .br and .gz beside it: sent by Accept-Encoding.
      preCompressed: true,
      setHeaders(reply) {
        reply.header('Cache-Control', 'public, max-age=31536000, immutable');
        reply.header('X-Content-Type-Options', 'nosniff');
      },
    });
  }
}
