/** Times as the hot paths write them: an ISO text per visit at the edge, ClickHouse's form per row. */

/** The second (ms at its start) whose ISO prefix `YYYY-MM-DDTHH:MM:SS.` is kept below. */
let isoSecond = Number.NaN;
let isoPrefix = '';

/** Year 10000: from there ISO texts have a six-digit year (`+010000-…`). */
const YEAR_10000 = 253_402_300_800_000;

/**
 * `new Date(msecs).toISOString()` for a hot path (every redirect's visit time, every stored row):
 * the date and time down to the second are formatted once per second and the milliseconds
 * appended (formatting a Date cost about 0.5 µs a visit). Times before 1970, from year 10000 on,
 * or not whole milliseconds are formatted by Date (which throws a RangeError for NaN, as before).
 */
export function isoTimeAt(msecs: number): string {
  if (!(msecs >= 0 && msecs < YEAR_10000 && Number.isInteger(msecs))) return new Date(msecs).toISOString();
  const milli = msecs % 1000;
  const second = msecs - milli;
  if (second !== isoSecond) {
    isoPrefix = new Date(second).toISOString().slice(0, 20);
    isoSecond = second;
  }
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/**
 * True for an IANA time zone name this runtime knows (ClickHouse ships the same database). No
 * imports: the dashboard checks a time zone from its URL with the same code.
 */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Answers of isUtcZone by name (report zones are a closed list: the cache stays small). */
const utcZones = new Map<string, boolean>();
const UTC_ZONES_CACHED = 1_000;

/**
 * True for a time zone whose clock reads UTC in winter and in summer (UTC, Etc/UTC, GMT,
 * Africa/Abidjan), whose days are therefore UTC days; false for any other zone or an unknown name.
 * Compares the zone's wall clock with UTC's rather than the name of its offset: ICU spells a zero
 * offset `GMT` or `GMT+00:00` depending on its version (Node 20's says the latter).
 */
export function isUtcZone(name: string): boolean {
  let utc = utcZones.get(name);
  if (utc === undefined) {
    if (!isTimeZone(name)) return false;
    const clock = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    utc = [0, 6].every((month) => {
      const at = Date.UTC(2026, month, 1, 12);
      const part = Object.fromEntries(clock.formatToParts(at).map(({ type, value }) => [type, Number(value)]));
      return Date.UTC(part.year!, part.month! - 1, part.day, part.hour, part.minute) === at;
    });
    if (utcZones.size < UTC_ZONES_CACHED) utcZones.set(name, utc);
  }
  return utc;
}

/**
 * The time zones a report may be asked in: UTC, the runtime's canonical names (ICU's: Asia/Calcutta)
 * and every name of ClickHouse's time zone database this runtime knows too (Asia/Kolkata, the other
 * links of tzdata), sorted. `clickHouseZones` is `system.time_zones` (services/api/stats reads it
 * once when the app is built). Node alone would offer aliases ClickHouse cannot load (US/Pacific-New
 * was a 500); ClickHouse's list alone misses names it loads (America/Coyhaique).
 */
export function reportTimeZones(clickHouseZones: readonly string[]): [string, ...string[]] {
  const zones = new Set(['UTC', ...Intl.supportedValuesOf('timeZone'), ...clickHouseZones.filter(isTimeZone)]);
  return [...zones].sort() as [string, ...string[]];
}

/**
 * The name of each time zone as an identifier (`Etc/GMT+1` → ETC_GMT_PLUS_1, `America/Port-au-Prince`
 * → AMERICA_PORT_AU_PRINCE), the document's `x-enum-varnames` of its TimeZone enum: generated clients
 * (openapi-python-client) otherwise derive names that collide (`Etc/GMT+0`, `Etc/GMT-0` and `Etc/GMT0`
 * all became ETC_GMT0). Upper case, digits and single underscores only, unique: a name that would
 * repeat an earlier one gets a number.
 */
export function timeZoneVarNames(zones: readonly string[]): string[] {
  const taken = new Set<string>();
  return zones.map((zone) => {
    const base = zone
      .toUpperCase()
      .replace(/\+/g, '_PLUS_')
      .replace(/-(?=\d)/g, '_MINUS_')
      .replace(/[^A-Z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '');
    let name = /^[A-Z]/.test(base) ? base : `TZ_${base}`;
    for (let n = 2; taken.has(name); n += 1) name = `${base}_${n}`;
    taken.add(name);
    return name;
  });
}
