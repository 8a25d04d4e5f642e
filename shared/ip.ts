import ipaddr from 'ipaddr.js';

/** Parses an IP or CIDR (a bare IP is a /32 or /128), or returns undefined when it is neither. */
export function parseRange(entry: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined {
  try {
    if (entry.includes('/')) return ipaddr.parseCIDR(entry);
    const address = ipaddr.parse(entry);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return undefined;
  }
}

/** The canonical form of a range, as stored: `10.0.0.0/8`, `2001:db8::/32`. */
export function normalizeRange(entry: string): string | undefined {
  const range = parseRange(entry.trim());
  if (!range) return undefined;
  const [address, bits] = range;
  const network =
    address.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${bits}`)
      : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${bits}`);
  return `${network.toString()}/${bits}`;
}

export type IpRange = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses ranges once for many matches (entries that are not ranges are left out). */
export function parseRanges(entries: readonly string[]): IpRange[] {
  return entries.map((entry) => parseRange(entry)).filter((range): range is IpRange => range !== undefined);
}

/** True when a parsed address is inside one of the parsed ranges (of its own family). */
export function inRanges(address: ipaddr.IPv4 | ipaddr.IPv6, ranges: readonly IpRange[]): boolean {
  return ranges.some(([network, bits]) => address.kind() === network.kind() && address.match([network, bits] as never));
}

/**
 * True when the range (an IP or CIDR) lies wholly inside one of the ranges of its own family: its
 * prefix is at least as long and starts inside the outer one. False when it is not a range.
 */
export function rangeWithin(entry: string, ranges: readonly string[]): boolean {
  const inner = parseRange(entry.trim());
  if (!inner) return false;
  const [address, bits] = inner;
  return parseRanges(ranges).some(([network, outer]) => address.kind() === network.kind() && bits >= outer && address.match([network, outer] as never));
}

/** True when the address (IPv4-mapped IPv6 counts as IPv4) is inside one of the ranges. */
export function ipInRanges(ip: string, ranges: readonly string[]): boolean {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.process(ip);
  } catch {
    return false;
  }
  return inRanges(address, parseRanges(ranges));
}

/** One decimal octet of a dotted IPv4 address (0–255, no leading zero), for the patterns built here and beside. */
export const V4_OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const V4 = `${V4_OCTET}(?:\\.${V4_OCTET}){3}`;
const G = '[0-9a-fA-F]{1,4}';
const V6 =
  '(?:' +
  [
    `(?:${G}:){7}${G}`,
    `(?:${G}:){1,7}:`,
    `(?:${G}:){1,6}:${G}`,
    `(?:${G}:){1,5}(?::${G}){1,2}`,
    `(?:${G}:){1,4}(?::${G}){1,3}`,
    `(?:${G}:){1,3}(?::${G}){1,4}`,
    `(?:${G}:){1,2}(?::${G}){1,5}`,
    `${G}:(?::${G}){1,6}`,
    `:(?:(?::${G}){1,7}|:)`,
    `(?:${G}:){6}${V4}`,
    `::(?:[fF]{4}(?::0{1,4})?:)?${V4}`,
    `(?:${G}:){1,5}:${V4}`,
  ].join('|') +
  ')';

/** An IPv4 address in dotted decimal or an IPv6 address (no zone), as one pattern the OpenAPI document states as is. */
export const IP_ADDRESS = new RegExp(`^(?:${V4}|${V6})$`);

/** An address or a CIDR range of one (prefix 0–32 for IPv4, 0–128 for IPv6). */
export const IP_RANGE = new RegExp(`^(?:${V4}(?:/(?:3[0-2]|[12]?[0-9]))?|${V6}(?:/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)$`);
