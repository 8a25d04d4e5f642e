/**
 * A local stand-in of Shlink's REST API v3 for the importer's tests: it answers as shlinkio/shlink's
 * docs/swagger describes (paths/v1_short-urls.json, paths/v1_short-urls_{shortCode}_visits.json,
 * definitions/ShortUrl.json, Visit.json, VisitLocation.json, Pagination.json; errors as
 * application/problem+json, Error.json), from links and visits the test gives it. Not Shlink itself:
 * a PHP application with its own database cannot run here.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SourceLink } from './import-fixtures.js';

/** A visit as Shlink returns it. */
export interface ShlinkVisitFixture {
  referer: string | null;
  date: string;
  userAgent: string;
  visitLocation: {
    cityName: string;
    countryCode: string;
    countryName: string;
    latitude: number;
    longitude: number;
    regionName: string;
    timezone: string;
    isEmpty: boolean;
  } | null;
  potentialBot: boolean;
  visitedUrl: string | null;
  redirectUrl: string | null;
}

const PLACES = [
  { countryCode: 'DE', countryName: 'Germany', regionName: 'Berlin', cityName: 'Berlin', latitude: 52.52, longitude: 13.405, timezone: 'Europe/Berlin' },
  { countryCode: 'FR', countryName: 'France', regionName: 'Île-de-France', cityName: 'Paris', latitude: 48.8566, longitude: 2.3522, timezone: 'Europe/Paris' },
  {
    countryCode: 'US',
    countryName: 'United States',
    regionName: 'California',
    cityName: 'Cupertino',
    latitude: 37.3042,
    longitude: -122.0946,
    timezone: 'America/Los_Angeles',
  },
];
const AGENTS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1',
];

/**
 * `count` visits of a short URL, newest first (Shlink's order): a place from PLACES by index (every
 * seventh without a location: `visitLocation` null), referrers (some null), user agents, every tenth a
 * potential bot; ISO 8601 dates with a +02:00 offset, one visit every 17 minutes before `newest`.
 */
export function shlinkVisits(slug: string, count: number, newest: number): ShlinkVisitFixture[] {
  return Array.from({ length: count }, (_, i) => {
    const place = PLACES[i % PLACES.length]!;
    const at = new Date(newest - i * 17 * 60_000 + 2 * 3_600_000).toISOString().replace('.000Z', '+02:00');
    return {
      referer: i % 4 === 0 ? null : `https://ref${i % 3}.example/page`,
      date: at,
      userAgent: AGENTS[i % AGENTS.length]!,
      visitLocation: i % 7 === 6 ? null : { ...place, isEmpty: false },
      potentialBot: i % 10 === 9,
      visitedUrl: `https://s.test/${slug}`,
      redirectUrl: null,
    };
  });
}

/** Shlink's time format (ATOM, with the server's offset): what `dateCreated` and visit dates look like. */
const atom = (date: Date) => date.toISOString().replace('.000Z', '+00:00');

export interface ShlinkStandIn {
  url: string;
  apiKey: string;
  /** Requests answered so far, by path (query included). */
  requests: string[];
  /** From now on, answer the next request whose path (query included) `matches` with a 500 problem, once. */
  failOnce(matches: (path: string) => boolean): void;
  close(): Promise<void>;
}

/** Starts the stand-in on a free loopback port, serving `links` and, by slug, their `visits`. */
export async function startShlinkStandIn(links: SourceLink[], visits: Map<string, ShlinkVisitFixture[]>): Promise<ShlinkStandIn> {
  const apiKey = 'a3b4c5d6-0000-4000-8000-standinkey01';
  const requests: string[] = [];
  let failing: ((path: string) => boolean) | undefined;
  const problem = (response: ServerResponse, status: number, type: string, title: string, detail: string) => {
    response.writeHead(status, { 'content-type': 'application/problem+json' });
    response.end(JSON.stringify({ type: `https://shlink.io/api/error/${type}`, title, detail, status }));
  };
  const page = <T>(items: T[], query: URLSearchParams) => {
    const perPage = Number(query.get('itemsPerPage') ?? -1);
    const current = Math.max(1, Number(query.get('page') ?? 1));
    const all = perPage <= 0;
    const data = all ? items : items.slice((current - 1) * perPage, current * perPage);
    return {
      data,
      pagination: {
        currentPage: current,
        pagesCount: all ? 1 : Math.ceil(items.length / perPage),
        itemsPerPage: all ? items.length : perPage,
        itemsInCurrentPage: data.length,
        totalItems: items.length,
      },
    };
  };
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const path = `${url.pathname}${url.search}`;
    requests.push(path);
    if (failing?.(path)) {
      failing = undefined;
      return problem(response, 500, 'internal-server-error', 'Internal server error', 'Unexpected error occurred');
    }
    if (request.headers['x-api-key'] !== apiKey)
      return problem(response, 401, 'invalid-api-key', 'Invalid API key', 'Provided API key does not exist or is invalid.');
    const json = (body: unknown) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (url.pathname === '/rest/v3/short-urls') {
      const shortUrls = links.map((link) => ({
        shortCode: link.slug,
        shortUrl: `https://s.test/${link.slug}`,
        longUrl: link.target,
        deviceLongUrls: { android: null, ios: null, desktop: null },
        dateCreated: atom(link.created),
        tags: link.tags,
        meta: { validSince: null, validUntil: null, maxVisits: null },
        domain: null,
        title: link.title,
        crawlable: false,
        forwardQuery: true,
        visitsSummary: { total: visits.get(link.slug)?.length ?? 0, nonBots: 0, bots: 0 },
        hasRedirectRules: false,
      }));
      return json({ shortUrls: page(shortUrls, url.searchParams) });
    }
    const match = /^\/rest\/v3\/short-urls\/([^/]+)\/visits$/.exec(url.pathname);
    if (match) {
      const slug = decodeURIComponent(match[1]!);
      if (!links.some((link) => link.slug === slug)) {
        return problem(response, 404, 'short-url-not-found', 'Short URL not found', `No URL found with short code "${slug}"`);
      }
      return json({ visits: page(visits.get(slug) ?? [], url.searchParams) });
    }
    return problem(response, 404, 'not-found', 'Not found', 'Requested route does not exist.');
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    failOnce: (matches) => {
      failing = matches;
    },
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}
