import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '#shared/context.js';
import { AppError, retryLater } from '#shared/errors.js';
import { negotiateLocale } from '#shared/i18n/index.js';
import { setRateLimitHeaders, type RateLimiter } from '#shared/http/rate-limit.js';
import { htmlSecurityHeaders } from '#shared/http/security-headers.js';
import {
  PUBLIC_PAGE_STYLE_HASH,
  PUBLIC_PERIODS,
  publicPeriodOf,
  type PublicPeriod,
  renderPublicPage,
  renderUnknownSubdomain,
  type PublicPageData,
  type PublicPagePayload,
  type PublicReport,
} from './render.js';

/** Most visits the page lists (fewer when the policy's stats_max_items says so). */
const PAGE_VISITS = 50;

const HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  // Public data only, the same for every reader of a language: shared caches may keep it briefly.
  'Cache-Control': 'public, max-age=30',
  Vary: 'Accept-Language',
  // A read-only page with no action to trick anyone into: owners may embed it in their own sites.
  ...htmlSecurityHeaders({ frameAncestors: '*', styleHashes: [PUBLIC_PAGE_STYLE_HASH], scripts: false }),
};

/**
 * What the page reads, in the page's own terms: the payload of a subdomain's public page, its public
 * report and its public visit list. The API's read services answer it (services/app.ts hands them
 * over); the page, served by the ingest edge, knows nothing else of the API.
 */
export interface PublicReads {
  subdomains: { publicPage(name: string): Promise<PublicPagePayload> };
  stats: { publicReport(name: string, query: { since: string; granularity: 'hour' | 'day'; link?: string }): Promise<PublicReport> };
  visits: { list(principal: undefined, filters: { subdomain: string }, paging: { limit: number }): Promise<{ items: Record<string, unknown>[] }> };
}

/**
 * The public page of each subdomain at `{name}.{BASE_DOMAIN}/`: the payload of
 * GET /api/v1/subdomains/{name}, the report of GET /api/v1/stats?subdomain= and the list of
 * GET /api/v1/visits?subdomain=, through the very services those endpoints use (so through the one
 * policy module, with its publish delay and item cap), rendered as HTML. Counted in the default
 * (web) rate bucket per IP, since it reads ClickHouse.
 */
export function publicPages({ config, subdomains, stats, visits }: Pick<Context, 'config'> & PublicReads, limiter: RateLimiter) {
  const product = { name: 'linktrack', url: new URL(config.publicUrl).origin };

  const gather = async (name: string, period: PublicPeriod, lang: string | undefined, link: string | undefined): Promise<PublicPageData> => {
    const page = await subdomains.publicPage(name);
    const { ms, granularity } = PUBLIC_PERIODS[period];
    const since = new Date(Date.now() - ms).toISOString();
    const [report, list] = await Promise.all([
      page.public.stats ? stats.publicReport(name, { since, granularity, link }) : undefined,
      page.public.visits_list ? visits.list(undefined, { subdomain: name }, { limit: Math.min(PAGE_VISITS, page.public.max_items) }) : undefined,
    ]);
    return { page, report, visits: list?.items, period, lang };
  };

  return {
    /** Answers `GET /` of a short host with the subdomain's public page, or a helpful 404. */
    async answer(request: FastifyRequest, reply: FastifyReply, subdomain: string): Promise<FastifyReply> {
      const checked = await limiter.check('default', request.ip);
      setRateLimitHeaders(reply, checked);
      if (!checked.allowed) throw retryLater('rate_limited', checked.resetSec, { bucket: 'default', limit: checked.limit });
      const query = request.query as Record<string, unknown> | undefined;
      const lang = typeof query?.lang === 'string' ? query.lang : undefined;
      const locale = negotiateLocale(lang, request.headers['accept-language']);
      // An unknown period shows the default one, and the page says which (a bad link still reads).
      const period = publicPeriodOf(query?.period);
      // A link filter the policy does not allow is ignored by the report service (the one policy module decides).
      const link = typeof query?.link === 'string' && query.link.length > 0 && query.link.length <= 200 ? query.link : undefined;
      reply.headers(HEADERS).header('Content-Language', locale).header('X-Request-Id', request.id);
      let page: string;
      try {
        page = renderPublicPage(await gather(subdomain, period, lang === locale ? lang : undefined, link), locale, product);
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'not_found') throw error;
        return reply
          .code(404)
          .header('Cache-Control', 'no-store')
          .send(renderUnknownSubdomain(subdomain, request.hostname, locale, product));
      }
      return reply.send(page);
    },
  };
}

export type PublicPages = ReturnType<typeof publicPages>;
