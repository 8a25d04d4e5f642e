// Redirects on short hosts: each connection asks the links in turn, with the link's short host as
// the Host header and a browser's user agent (people's visits, as the edge and the enricher see them).
import { BROWSER_UA } from '#tests/support/platform-process.js';
import { Checks, runLoad, type LoadRequest } from '../load.js';
import type { Link } from '../seed.js';
import type { Settings } from '../settings.js';
import { fromLoad, headerOf, redirectsAnswered, type ScenarioResult, type StoredWhere } from './result.js';

/** The requests of a redirect load, each checked: the link's status, its target as Location, not cached by shared caches. */
export function redirectRequests(links: Link[], checks: Checks): LoadRequest[] {
  return links.map((link) => ({
    method: 'GET',
    path: `/${link.slug}?utm_source=loadtest`,
    headers: { host: link.host, 'user-agent': BROWSER_UA },
    onResponse: (status, _body, _context, headers) => {
      checks.expect(`redirect answers ${link.status}`, status === link.status);
      checks.expect('Location is the target', headerOf(headers, 'location') === link.target);
      checks.expect('Cache-Control private', headerOf(headers, 'cache-control') === 'private, max-age=0');
    },
  }));
}

/** Where the visits of links are stored: their subdomains, with the tokens of their owners. */
export function storedWhere(links: Link[]): StoredWhere[] {
  return [...new Map(links.map((link) => [link.subdomain, { subdomain: link.subdomain, token: link.token }])).values()];
}

export async function redirects(base: string, settings: Settings, links: Link[]): Promise<ScenarioResult> {
  const checks = new Checks();
  const load = await runLoad(base, {
    connections: settings.connections,
    seconds: settings.seconds,
    rate: settings.rate,
    requests: redirectRequests(links, checks),
  });
  return fromLoad('redirects', load, checks, 50, { visits: { answered: redirectsAnswered(load), where: storedWhere(links) } });
}
