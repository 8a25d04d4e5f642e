import { AppError } from '#shared/errors.js';
import { getJson, type SourceApi } from './api-client.js';
import type { SourceLinkWithHistory } from './shlink-api.js';

/** Where a Kutt server is and the API key of its account (Kutt's `X-API-KEY` header). */
export interface KuttApiOptions {
  /** The server's base URL, e.g. `https://kutt.example` (the API is under `/api/v2`). */
  url: string;
  apiKey: string;
  /** Links asked per page (Kutt answers at most 50). */
  pageSize?: number;
  fetch?: typeof fetch;
}

/** Kutt's Link, the fields read (thedevs-network/kutt, the OpenAPI document's `Link`). */
interface KuttLink {
  id: string;
  address: string;
  target: string;
  description?: string | null;
  created_at: string;
}

/** Kutt's list answer: `{ limit, skip, total, data }`. */
interface KuttList {
  limit: number;
  skip: number;
  total: number;
  data: KuttLink[];
}

/** Pages read at most: a guard against a server whose `total` never ends. */
const MAX_PAGES = 100_000;

/**
 * A client of Kutt's API v2: `GET /api/v2/links?limit=&skip=` with `X-API-KEY`, page by page until
 * `total`. Links only: Kutt keeps a link's visits aggregated (`GET /api/v2/links/{id}/stats`: counts
 * per browser, OS, country and referrer, and views per period), never one row per visit, so there is
 * no history to import with original times. The description is the title; Kutt has no tags.
 */
export function kuttApi(options: KuttApiOptions): { links: () => Promise<SourceLinkWithHistory[]> } {
  const api: SourceApi = {
    name: 'Kutt',
    url: options.url,
    base: `${options.url.replace(/\/+$/, '')}/api/v2`,
    headers: { 'X-API-KEY': options.apiKey },
    fetch: options.fetch,
  };
  const limit = Math.min(options.pageSize ?? 50, 50);
  return {
    async links() {
      const links: KuttLink[] = [];
      for (let page = 0; page < MAX_PAGES; page++) {
        const body = await getJson<Partial<KuttList>>(api, '/links', { limit, skip: links.length });
        if (!Array.isArray(body.data) || typeof body.total !== 'number')
          throw new AppError('service_unavailable', { source: "Kutt's answer to /links has no data" });
        links.push(...body.data);
        if (body.data.length === 0 || links.length >= body.total) {
          return links.map((link) => ({
            link: {
              slug: link.address,
              target_url: link.target,
              title: link.description || null,
              tags: [],
              created_at: link.created_at ? new Date(link.created_at) : null,
            },
          }));
        }
      }
      throw new AppError('service_unavailable', { source: `Kutt's links run past ${MAX_PAGES} pages` });
    },
  };
}
