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
  const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${address}/${bits}`) : ipaddr.IPv6.networkAddressFromCIDR(`${address}/${bits}`);
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
