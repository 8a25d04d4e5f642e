import { AppError } from '#shared/errors.js';
import { getJson, type SourceApi } from './api-client.js';
import type { SourceLinkWithHistory } from './shlink-api.js';

/** Where a YOURLS installation is and how its API lets the importer in: the signature token, or a username and password. */
export type YourlsApiOptions = {
  /** The installation's base URL, e.g. `https://sho.rt` (the API is `/yourls-api.php`). */
  url: string;
  /** Links asked per page. */
  pageSize?: number;
  fetch?: typeof fetch;
} & ({ signature: string } | { username: string; password: string });

/** One link of YOURLS's `stats` answer (includes/functions.php, yourls_get_stats). */
interface YourlsLink {
  shorturl: string;
  url: string;
  title: string | null;
  timestamp: string;
  clicks: string | number;
}

/** YOURLS's `stats` answer: `links` keyed `link_1`, `link_2`, … (absent when the page is empty), and the totals. */
interface YourlsStats {
  links?: Record<string, YourlsLink>;
  stats?: { total_links?: string | number };
  statusCode?: number | string;
}

const MAX_PAGES = 100_000;

/**
 * A client of YOURLS's API (`yourls-api.php`), links only. Core YOURLS has no "list all" action, but
 * `action=stats&filter=last&limit=&start=` (yourls_api_stats, with `start` since YOURLS 1.6) pages
 * through `yourls_url` newest first, and `stats.total_links` says when it is done. No action returns
 * clicks one by one (`stats` and `url-stats` give counts): the visit history comes only from the
 * database export (yourlsDump). Signed in with `signature` or `username` and `password`, sent as a
 * POST form (YOURLS reads either), so no secret is in a URL; a refusal (403 "Please log in") is 422 `validation_error` naming the signature.
 */
export function yourlsApi(options: YourlsApiOptions): { links: () => Promise<SourceLinkWithHistory[]> } {
  const api: SourceApi = {
    name: 'YOURLS',
    url: options.url,
    base: options.url.replace(/\/+$/, ''),
    headers: {},
    form: true,
    credential: 'signature' in options ? { field: 'signature', label: 'signature' } : { field: 'password', label: 'username or password' },
    fetch: options.fetch,
  };
  const auth: Record<string, string> = 'signature' in options ? { signature: options.signature } : { username: options.username, password: options.password };
  const limit = options.pageSize ?? 500;
  return {
    async links() {
      const byKeyword = new Map<string, YourlsLink>();
      for (let page = 0, start = 0; page < MAX_PAGES; page++, start += limit) {
        const body = await getJson<YourlsStats>(api, '/yourls-api.php', { action: 'stats', filter: 'last', limit, start, format: 'json', ...auth });
        if (Number(body.statusCode) !== 200) throw new AppError('service_unavailable', { source: "YOURLS's answer to action=stats is not a list of links" });
        const links = Object.values(body.links ?? {});
        for (const link of links) byKeyword.set(keywordOf(link.shorturl), link);
        if (links.length < limit || start + limit >= Number(body.stats?.total_links ?? 0)) break;
      }
      return [...byKeyword].map(([keyword, link]) => ({
        link: {
          slug: keyword,
          target_url: link.url,
          title: link.title || null,
          tags: [],
          created_at: /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(link.timestamp) ? new Date(`${link.timestamp.replace(' ', 'T')}Z`) : null,
        },
      }));
    },
  };
}

/** The keyword of a YOURLS short URL (`https://sho.rt/abc` → `abc`). */
const keywordOf = (shorturl: string): string => decodeURIComponent(shorturl.replace(/\/+$/, '').split('/').pop() ?? '');
