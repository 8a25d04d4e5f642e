import { z } from 'zod';
import { rule } from '../i18n/index.js';

/** Most site origins one subdomain lists for its tracker. */
export const MAX_TRACKER_ORIGINS = 50;

/**
 * A site origin as an owner writes it: http or https, a host (a name, Unicode or punycode, an IPv4
 * address or a bracketed IPv6 one), an optional port, an optional trailing slash; no path, query,
 * fragment or credentials. One pattern, so that the OpenAPI document states the whole rule.
 */
const ORIGIN_INPUT = /^[Hh][Tt][Tt][Pp][Ss]?:\/\/(?:[^\s/?#@:[\]]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?\/?$/;

/** A host as the URL parser leaves it: DNS labels (punycode for Unicode names), an IPv4 or a bracketed IPv6 address; no `*` or `%`. */
const SITE_HOST = /^(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*|\[[0-9a-f:.]+\])$/;

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

/** One listed origin: checked against the pattern and by the URL parser (a port above 65535, a malformed host). */
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
      'header: `https://example.org`, `http://localhost:8080`; stored canonical (lower case, punycode, no default port, no ' +
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
