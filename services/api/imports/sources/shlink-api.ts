import { AppError } from '#shared/errors.js';
import type { ImportedLink } from '#services/api/links/links.service.js';
import { getJson, type SourceApi } from './api-client.js';
import type { SourceVisit } from './history.js';

/** Where a Shlink server is and the API key it gave (Shlink's `X-Api-Key` header). */
export interface ShlinkApiOptions {
  /** The server's base URL, e.g. `https://s.example` (the API is under `/rest/v3`). */
  url: string;
  apiKey: string;
  /** Items asked per page (short URLs and visits). */
  pageSize?: number;
  /** The fetch to use (tests may pass one that fails on purpose); globalThis.fetch by default. */
  fetch?: typeof fetch;
}

/** A link of the source with a way to read its visits. */
export interface SourceLinkWithHistory {
  link: ImportedLink;
  visits?: () => Promise<SourceVisit[]>;
}

/** Shlink's Pagination (docs/swagger/definitions/Pagination.json). */
interface Pagination {
  currentPage: number;
  pagesCount: number;
}

/** Shlink's ShortUrl, the fields read (docs/swagger/definitions/ShortUrl.json). */
interface ShlinkShortUrl {
  shortCode: string;
  longUrl: string;
  dateCreated: string | null;
  tags: string[] | null;
  title: string | null;
  domain: string | null;
}

/** Shlink's Visit (docs/swagger/definitions/Visit.json); visitLocation and referer may be null. */
interface ShlinkVisit {
  referer: string | null;
  date: string;
  userAgent: string | null;
  visitLocation: {
    countryCode?: string;
    regionName?: string;
    cityName?: string;
    latitude?: number;
    longitude?: number;
    isEmpty?: boolean;
  } | null;
  potentialBot?: boolean;
}

/** Pages read at most per list: a guard against a server whose pagination never ends. */
const MAX_PAGES = 100_000;

/**
 * A client of Shlink's REST API v3 (shlinkio/shlink, docs/swagger): `GET /rest/v3/short-urls` and
 * `GET /rest/v3/short-urls/{shortCode}/visits`, page by page, with `X-Api-Key`. A 401 or 403 (Shlink's
 * "Invalid API key" problem) is 422 `validation_error` naming the key; any other failure, or an answer
 * that is not Shlink's, is 503 `service_unavailable` (the source is the dependency down), so the import stops there and resumes when run again.
 */
export function shlinkApi(options: ShlinkApiOptions) {
  const api: SourceApi = {
    name: 'Shlink',
    url: options.url,
    base: `${options.url.replace(/\/+$/, '')}/rest/v3`,
    headers: { 'X-Api-Key': options.apiKey },
    fetch: options.fetch,
  };
  const pageSize = options.pageSize ?? 500;

  async function pages<T>(path: string, key: 'shortUrls' | 'visits', params: Record<string, string> = {}): Promise<T[]> {
    const items: T[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const body = await getJson<Record<string, { data?: T[]; pagination?: Pagination }>>(api, path, { ...params, page, itemsPerPage: pageSize });
      const list = body[key];
      if (!list || !Array.isArray(list.data) || !list.pagination)
        throw new AppError('service_unavailable', { source: `Shlink's answer to ${path} has no ${key}` });
      items.push(...list.data);
      if (list.data.length === 0 || list.pagination.currentPage >= list.pagination.pagesCount) return items;
    }
    throw new AppError('service_unavailable', { source: `Shlink's ${key} at ${path} run past ${MAX_PAGES} pages` });
  }

  return {
    /** Every short URL of the server with its visits to read. */
    async links(): Promise<SourceLinkWithHistory[]> {
      const shortUrls = await pages<ShlinkShortUrl>('/short-urls', 'shortUrls');
      return shortUrls.map((url) => ({
        link: {
          slug: url.shortCode,
          target_url: url.longUrl,
          title: url.title || null,
          tags: url.tags ?? [],
          created_at: url.dateCreated ? new Date(url.dateCreated) : null,
        },
        visits: async () => {
          // A short code is unique per domain: Shlink asks for the domain of one not on the default domain.
          const visits = await pages<ShlinkVisit>(
            `/short-urls/${encodeURIComponent(url.shortCode)}/visits`,
            'visits',
            url.domain ? { domain: url.domain } : {},
          );
          return shlinkVisits(visits);
        },
      }));
    },
  };
}

/**
 * Shlink's visits as source visits. Shlink gives a visit no id (and never its address): a visit's key
 * is its fields and its occurrence among identical ones, which no order of the pages changes.
 */
export function shlinkVisits(visits: ShlinkVisit[]): SourceVisit[] {
  const seen = new Map<string, number>();
  return visits.map((visit) => {
    const location = visit.visitLocation && !visit.visitLocation.isEmpty ? visit.visitLocation : null;
    const fields = JSON.stringify([
      visit.date,
      visit.referer ?? '',
      visit.userAgent ?? '',
      location?.countryCode ?? '',
      location?.cityName ?? '',
      !!visit.potentialBot,
    ]);
    const occurrence = (seen.get(fields) ?? 0) + 1;
    seen.set(fields, occurrence);
    return {
      key: `${fields}#${occurrence}`,
      ts: new Date(visit.date),
      referrer: visit.referer ?? '',
      user_agent: visit.userAgent ?? '',
      ip: '',
      country: location?.countryCode ?? '',
      region: location?.regionName ?? '',
      city: location?.cityName ?? '',
      latitude: location?.latitude ?? null,
      longitude: location?.longitude ?? null,
      bot: visit.potentialBot === true,
    };
  });
}
