import { z } from 'zod';
import { rule } from '../i18n/index.js';
import { URL_HOST, URL_PORT } from '../links/urls.js';

/** Most site origins one subdomain lists for its tracker. */
export const MAX_TRACKER_ORIGINS = 50;

/**
 * A site origin as an owner writes it: http or https, a host as link targets take it (an ASCII host
 * name, no `xn--` label, or a dotted IPv4 address), an optional port, an optional trailing slash; no
 * path, query, fragment or credentials. One pattern, and exactly the rule (the OpenAPI document states
 * it, and `make contract` holds the server to it): Unicode or punycode host names and IPv6 literals,
 * whose validity no pattern can state, are not taken.
 */
const ORIGIN_INPUT = new RegExp(`^[Hh][Tt][Tt][Pp][Ss]?://${URL_HOST}(?::${URL_PORT})?/?$`);

/** A host as the URL parser leaves it: DNS labels (punycode for Unicode names), an IPv4 or a bracketed IPv6 address; no `*` or `%`. */
const SITE_HOST = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*|\[[0-9a-f:.]+\])$/;

/** The origin as browsers send it in `Origin` (lower-case scheme and host, punycode, no default port), or undefined. */
export function canonicalOrigin(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !SITE_HOST.test(url.hostname)) return undefined;
  return url.origin;
}

/** One listed origin: the pattern is the whole rule (every text it admits, the URL parser takes; the refine only guards that). */
const originField = z
  .string()
  .max(300)
  .regex(ORIGIN_INPUT, rule('site_origin'))
  .refine((text) => canonicalOrigin(text) !== undefined, rule('site_origin'))
  .meta({ example: 'https://example.org' });

/**
 * The `tracker_origins` of a subdomain as create and update take it: stored as canonical origins,
 * without duplicates, in the order given.
 */
export const TrackerOriginsInput = z
  .array(originField)
  .max(MAX_TRACKER_ORIGINS, rule('max_tracker_origins', { max: MAX_TRACKER_ORIGINS }))
  .transform((origins) => [...new Set(origins.map((origin) => canonicalOrigin(origin)!))])
  .meta({
    description:
      `The site origins the tracker may run on for this subdomain (at most ${MAX_TRACKER_ORIGINS}), as in a browser's Origin ` +
      'header: `https://example.org`, `http://localhost:8080`; stored canonical (lower case, no default port, no ' +
      'trailing slash). When the list has entries, POST /tracker/consent with this `subdomain` (and /tracker/collect under its ' +
      'token) answers 403 `forbidden` (reason `origin_not_allowed`) and stores nothing unless the Origin header — or, without ' +
      "one, the Referer's origin — is listed; a request with neither is refused too. Empty (the default): any site. A non-browser " +
      "client can send any Origin: the list keeps other sites' pages from feeding the statistics, it authenticates nobody.",
  });

/**
 * The site a tracker request comes from: its Origin header, or the origin of its Referer when it
 * sends no Origin; undefined when it names neither (or `Origin: null`, an opaque origin).
 */
export function requestSiteOrigin(headers: { origin?: string | string[]; referer?: string | string[] }): string | undefined {
  const origin = headers.origin;
  if (typeof origin === 'string') return origin === 'null' ? undefined : canonicalOrigin(origin);
  return typeof headers.referer === 'string' ? canonicalOrigin(headers.referer) : undefined;
}
