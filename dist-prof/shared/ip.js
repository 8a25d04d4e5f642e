import ipaddr from 'ipaddr.js';
/** Parses an IP or CIDR (a bare IP is a /32 or /128), or returns undefined when it is neither. */
export function parseRange(entry) {
    try {
        if (entry.includes('/'))
            return ipaddr.parseCIDR(entry);
        const address = ipaddr.parse(entry);
        return [address, address.kind() === 'ipv4' ? 32 : 128];
    }
    catch {
        return undefined;
    }
}
/** The canonical form of a range, as stored: `10.0.0.0/8`, `2001:db8::/32`. */
export function normalizeRange(entry) {
    const range = parseRange(entry.trim());
    if (!range)
        return undefined;
    const [address, bits] = range;
    const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${address}/${bits}`) : ipaddr.IPv6.networkAddressFromCIDR(`${address}/${bits}`);
    return `${network.toString()}/${bits}`;
}
/** True when the address (IPv4-mapped IPv6 counts as IPv4) is inside one of the ranges. */
export function ipInRanges(ip, ranges) {
    let address;
    try {
        address = ipaddr.process(ip);
    }
    catch {
        return false;
    }
    return ranges.some((entry) => {
        const range = parseRange(entry);
        if (!range)
            return false;
        const [network, bits] = range;
        return address.kind() === network.kind() && address.match([network, bits]);
    });
}
//# sourceMappingURL=ip.js.map