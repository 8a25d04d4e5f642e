import ipaddr from 'ipaddr.js';
import { V4_OCTET } from '../ip.js';
import { rule } from '../i18n/index.js';

/**
 * Short URLs and target URLs. A short URL is `{scheme}://{subdomain}.{BASE_DOMAIN}{:port}/{slug}`,
 * scheme and port taken from PUBLIC_URL (the same listener serves both in one process).
 */

/** Longest target URL accepted, after normalisation. */
export const MAX_TARGET_URL_LENGTH = 2048;

/** PUBLIC_URL parsed once per value (short URLs are built for every row of a list). */
const parsedPublicUrls = new Map<string, URL>();
function publicUrlOf(publicUrl: string): URL {
  let parsed = parsedPublicUrls.get(publicUrl);
  if (!parsed) parsedPublicUrls.set(publicUrl, (parsed = new URL(publicUrl)));
  return parsed;
}

/** The short URL of a link. */
export function shortUrl(config: { publicUrl: string; baseDomain: string }, subdomain: string, slug: string): string {
  const base = publicUrlOf(config.publicUrl);
  return `${base.protocol}//${subdomain}.${config.baseDomain}${base.port ? `:${base.port}` : ''}/${slug}`;
}

/**
 * Hosts that are the platform's own: the base domain and every subdomain of it, the API host, and
 * this machine (`localhost`, loopback and unspecified addresses, whatever the port).
 */
export function isPlatformHost(host: string, config: { publicUrl: string; baseDomain: string }): boolean {
  const name = host
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1');
  if (name === config.baseDomain || name.endsWith(`.${config.baseDomain}`) || name === publicUrlOf(config.publicUrl).hostname.replace(/^\[(.*)\]$/, '$1'))
    return true;
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(name)) return false;
  const range = ipaddr.process(name).range();
  return range === 'loopback' || range === 'unspecified';
}

/** A port, 0 to 65535, without leading zeros. */
export const URL_PORT = '(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0)';
/** A host label that does not start with `xn--` (punycode), in any case, without lookarounds. */
const LABEL =
  '(?:[A-WYZa-wyz0-9-][A-Za-z0-9-]*|[xX](?:[A-MO-Za-mo-z0-9-][A-Za-z0-9-]*)?|[xX][nN](?:[A-Za-z0-9][A-Za-z0-9-]*)?|[xX][nN]-(?:[A-Za-z0-9][A-Za-z0-9-]*)?)';
/** The same, starting with a letter (the last label: one of digits would be read as an IPv4 number). */
const LAST_LABEL =
  '(?:[A-WYZa-wyz][A-Za-z0-9-]*|[xX](?:[A-MO-Za-mo-z0-9-][A-Za-z0-9-]*)?|[xX][nN](?:[A-Za-z0-9][A-Za-z0-9-]*)?|[xX][nN]-(?:[A-Za-z0-9][A-Za-z0-9-]*)?)';

/**
 * A host as the API takes it in URLs and origins, as a pattern without lookarounds: an ASCII host name
 * whose last label starts with a letter (no `xn--` label), or a dotted IPv4 address.
 */
export const URL_HOST = `(?:(?:${LABEL}\\.)*${LAST_LABEL}|${V4_OCTET}(?:\\.${V4_OCTET}){3})`;

/**
 * An http(s) URL as the API takes it, as one pattern without lookarounds (stated as is in the OpenAPI
 * document, so that it is the whole syntax rule): an ASCII host name whose last label starts with a
 * letter, or a dotted IPv4 address; an optional port; then path, query and fragment in characters
 * URL parsing keeps as they are (so the stored URL is at most one character longer than the one
 * sent). Refused by it: credentials (no `@` before the path), and internationalised host names in
 * either form (Unicode, or `xn--` punycode: lookalike hosts, and punycode that does not decode).
 */
export const HTTP_URL = new RegExp(
  `^[hH][tT][tT][pP][sS]?://${URL_HOST}(?::${URL_PORT})?` +
    "(?:/[A-Za-z0-9\\-._~:/\\[\\]@!$&'()*+,;=%|^]*)?(?:\\?[A-Za-z0-9\\-._~:/?\\[\\]@!$&()*+,;=%|^{}`]*)?(?:#[A-Za-z0-9\\-._~:/?#\\[\\]@!$&'()*+,;=%|^{}]*)?$",
);

export type TargetCheck = { ok: true; url: string } | { ok: false; rule: string; platform?: true };

/**
 * Normalises a target URL (WHATWG parsing: lower-case scheme and host, IDN to punycode, default
 * port dropped, path percent-encoded) and checks it: http or https only, no credentials, no
 * control characters or spaces, at most MAX_TARGET_URL_LENGTH characters, and never a host of the
 * platform itself (a short link to a short link loops or launders a target).
 */
export function checkTargetUrl(input: string, config: { publicUrl: string; baseDomain: string }): TargetCheck {
  if (!HTTP_URL.test(input)) return { ok: false, rule: rule('http_url') };
  const url = new URL(input);
  if (isPlatformHost(url.hostname, config)) return { ok: false, rule: rule('url_own_host'), platform: true };
  const normalized = url.href;
  if (normalized.length > MAX_TARGET_URL_LENGTH) return { ok: false, rule: rule('url_too_long', { max: MAX_TARGET_URL_LENGTH }) };
  return { ok: true, url: normalized };
}
