import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { inRanges, parseRange, parseRanges, type IpRange } from '../ip.js';
import { rule } from '../i18n/index.js';

/**
 * The SSRF guard every outbound webhook request passes, at creation and at each attempt: the URL
 * is checked, its host resolved once (every A and AAAA record), every address checked, and the
 * request then connects to the checked address (see deliver.ts), so a name that resolves
 * differently a moment later (DNS rebinding) changes nothing.
 */

/** Ports a receiver may listen on: 80, 443 and the unprivileged range, minus the Fetch standard's bad ports. */
export const ALLOWED_PORTS_NOTE = "80, 443 and 1024–65535 except the Fetch standard's bad ports";

/** The Fetch standard's bad ports (https://fetch.spec.whatwg.org/#port-blocking), as of 2026. */
export const BAD_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137,
  139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Cloud metadata endpoints: refused even when the allow-list would admit them. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal']);
const METADATA_ADDRESSES = ['169.254.169.254/32', 'fd00:ec2::254/128', '100.100.100.200/32', '169.254.170.2/32'];

/** Why a URL is refused: `details.url` of the 422 at creation, the error of an attempt at delivery. */
export class GuardRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GuardRefusal';
  }
}

/** The host name did not resolve: a refusal for a delivery, not for a subscription (DNS may come later). */
export class UnresolvedHost extends GuardRefusal {}

/** Resolves a host name to all its addresses (the system resolver by default; tests give their own). */
export type Resolver = (host: string) => Promise<{ address: string; family: 4 | 6 }[]>;

export const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/** A URL that passed the guard, with the one address the request must connect to. */
export interface CheckedTarget {
  url: URL;
  /** Host name as in the URL (brackets removed): the Host header and TLS server name. */
  host: string;
  port: number;
  address: string;
  family: 4 | 6;
  /**
   * True when the host or one of its addresses is internal, admitted only because WEBHOOK_ALLOWLIST
   * lists it: what such a receiver answers is the operator's internal service speaking, so a
   * tenant is told its status and timing but never its body (see send.ts).
   */
  allowlisted: boolean;
}

export interface GuardOptions {
  /** WEBHOOK_ALLOWLIST: host names (exact, lower case) and CIDR ranges admitted although internal. */
  allowlist: readonly string[];
  resolver?: Resolver;
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

const METADATA_RANGES = parseRanges(METADATA_ADDRESSES);

/** The IPv4 address carried in an IPv6 one (mapped, translated, NAT64 well-known prefix), if any. */
function embeddedV4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = address.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || (range === 'rfc6052' && address.parts[2] === 0)) return new ipaddr.IPv4(address.toByteArray().slice(12));
  return undefined;
}

/** Why an address is not public, or undefined when it is a public unicast address. */
export function internalRange(text: string | Address): string | undefined {
  let address: Address;
  try {
    address = typeof text === 'string' ? ipaddr.parse(text) : text;
  } catch {
    return 'not an IP address';
  }
  if (address.kind() === 'ipv4') {
    const range = address.range();
    return range === 'unicast' ? undefined : range;
  }
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  // IPv4 carried in IPv6 (mapped, translated, NAT64 well-known prefix): the IPv4 address decides.
  const v4 = embeddedV4(v6);
  if (v4) {
    const inner = internalRange(v4);
    return inner === undefined ? undefined : `${range} ${inner}`;
  }
  // IPv4-compatible addresses (::a.b.c.d, deprecated) are not routed publicly: ipaddr.js calls them unicast.
  if (range === 'unicast' && v6.match(ipaddr.IPv6.parse('::'), 96)) return 'ipv4Compatible';
  return range === 'unicast' ? undefined : range;
}

const isMetadataAddress = (address: Address) => {
  if (inRanges(address, METADATA_RANGES)) return true;
  const v4 = address.kind() === 'ipv6' ? embeddedV4(address as ipaddr.IPv6) : undefined;
  return v4 !== undefined && inRanges(v4, METADATA_RANGES);
};

/** The allow-list split into host names and parsed ranges, once per list. */
const parsedAllowlists = new WeakMap<readonly string[], { hosts: Set<string>; ranges: IpRange[] }>();
function allowlistOf(entries: readonly string[]) {
  let parsed = parsedAllowlists.get(entries);
  if (!parsed) {
    parsed = { hosts: new Set(entries.filter((entry) => !parseRange(entry)).map((entry) => entry.toLowerCase())), ranges: parseRanges(entries) };
    parsedAllowlists.set(entries, parsed);
  }
  return parsed;
}

/** The syntactic checks (scheme, credentials, port, metadata names); returns the parsed URL. */
function checkUrlSyntax(text: string): { url: URL; host: string; port: number } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new GuardRefusal(rule('url_absolute'));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new GuardRefusal(rule('url_scheme'));
  if (url.username || url.password) throw new GuardRefusal(rule('url_credentials'));
  // The WHATWG parser already turned decimal, octal, hex and shortened IPv4 forms into dotted quads.
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  if (host === '') throw new GuardRefusal(rule('url_host'));
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  if (BAD_PORTS.has(port) || (port !== 80 && port !== 443 && port < 1024)) throw new GuardRefusal(rule('url_port', { port, allowed: ALLOWED_PORTS_NOTE }));
  if (METADATA_HOSTS.has(host)) throw new GuardRefusal(rule('url_metadata_host'));
  return { url, host, port };
}

/**
 * Checks a URL and resolves its host; throws GuardRefusal with the reason, or returns the address
 * to connect to. Every address the name resolves to must pass (one internal record refuses the
 * name: a resolver could hand out either).
 */
export async function checkTarget(text: string, options: GuardOptions): Promise<CheckedTarget> {
  const { url, host, port } = checkUrlSyntax(text);
  let addresses: { address: string; family: 4 | 6 }[];
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    try {
      addresses = await (options.resolver ?? systemResolver)(host);
    } catch (error) {
      throw new UnresolvedHost(rule('url_unresolved_because', { host, reason: (error as NodeJS.ErrnoException).code ?? 'lookup failed' }));
    }
    if (addresses.length === 0) throw new UnresolvedHost(rule('url_unresolved', { host }));
  }
  const allowlist = allowlistOf(options.allowlist);
  const trustedHost = allowlist.hosts.has(host);
  let allowlisted = false;
  for (const { address: text } of addresses) {
    const address = ipaddr.parse(text);
    if (isMetadataAddress(address)) throw new GuardRefusal(rule('url_metadata_address', { address: text }));
    const range = internalRange(address);
    if (range === undefined) continue;
    if (!trustedHost && !inRanges(address, allowlist.ranges)) {
      throw new GuardRefusal(rule('url_internal', { address: text, range }));
    }
    allowlisted = true;
  }
  const { address, family } = addresses[0]!;
  return { url, host, port, address, family, allowlisted };
}

/**
 * The check when a webhook is created or changed: as checkTarget, but a host name that does not
 * resolve (yet) passes, since every delivery resolves and checks again (and logs the failure).
 */
export async function checkSubscription(text: string, options: GuardOptions): Promise<URL> {
  try {
    return (await checkTarget(text, options)).url;
  } catch (error) {
    if (error instanceof UnresolvedHost) return checkUrlSyntax(text).url;
    throw error;
  }
}
