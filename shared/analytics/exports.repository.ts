import { selectRows, type Analytics } from './analytics.js';
import { FLAG_COLUMNS, OWNER_VISIT_COLUMNS, visitConditions, type VisitFilters } from './visits.repository.js';

/** Whose visits an export reads, and which of them. */
export interface ExportedVisits {
  ownerId: string;
  filters: VisitFilters;
}

/**
 * The start of a text cell that a spreadsheet would read as a formula (re2, for ClickHouse's
 * `match`): after any whitespace or quote characters (OWASP's CSV-injection guidance), `=`, `+`,
 * `-`, `@`, their full-width forms (a precaution: input methods and some spreadsheets fold them
 * to ASCII), NUL, or a leading tab or CR. Whitespace: re2's `\s` (tab, LF, FF, CR, space), the
 * no-break and the ideographic space. The check costs the CSV slices about 40 % more time (chDB,
 * 150 000 visits read in ten slices: 263 ms unchecked, 357 ms checked, best of five).
 */
export const FORMULA_LEAD = String.raw`^[\s"'\x{00A0}\x{3000}]*[=+\-@\x00\t\r\x{FF1D}\x{FF0B}\x{FF0D}\x{FF20}]`;

/**
 * Columns a CSV export writes as they are: what the platform itself writes, which never starts
 * like a formula (ids, the time, the kind, the subdomain's DNS label, the geolocation database's
 * country, region and city), and its numbers (a negative coordinate is a number, not a formula:
 * spreadsheets keep it numeric) and flags. Every other column is text that visitors choose
 * (User-Agent and what is parsed from it, Referer, query, utm_*, Accept-Language, the beacon's
 * signals and LAN address; the public address too, as forwarding headers carry it) or owners
 * choose (slugs).
 */
const CSV_AS_IS: ReadonlySet<string> = new Set([
  'visit_id',
  'ts',
  'kind',
  'subdomain',
  'link_id',
  'country',
  'region',
  'city',
  'latitude',
  'longitude',
  'asn',
  'beacon_at',
  'imported_from',
  ...FLAG_COLUMNS,
]);

const iso = (value: string) => `concat(replaceOne(toString(${value}), ' ', 'T'), 'Z')`;

/**
 * A column as an export shows it, from the inner query's `_<column>`: times in ISO 8601, flags as
 * booleans, nulls empty in CSV, and in CSV a text cell that starts like a formula (FORMULA_LEAD)
 * behind a single quote, which spreadsheets show as text (ClickHouse double-quotes every text cell
 * and doubles inner quotes). (An alias named like its column would shadow it in WHERE and ORDER BY,
 * hence the renamed inner columns.)
 */
function selectExpression(column: string, format: 'CSV' | 'JSON'): string {
  const inner = `_${column}`;
  if (column === 'ts') return `${iso(inner)} AS ts`;
  if (column === 'beacon_at') return `if(isNull(${inner}), ${format === 'CSV' ? "''" : 'NULL'}, ${iso(`assumeNotNull(${inner})`)}) AS beacon_at`;
  if (FLAG_COLUMNS.has(column)) return `toBool(${inner}) AS ${column}`;
  if ((column === 'latitude' || column === 'longitude') && format === 'CSV') return `ifNull(toString(${inner}), '') AS ${column}`;
  if (format === 'CSV' && !CSV_AS_IS.has(column)) return `if(match(${inner}, {formula_lead:String}), concat('''', ${inner}), ${inner}) AS ${column}`;
  return `${inner} AS ${column}`;
}

const whereOf = (scoped: ExportedVisits) => {
  const { where, params } = visitConditions(scoped.ownerId, scoped.filters);
  return { where: where.join(' AND '), params };
};

/** The query of one slice of rows (one row per visit: its newest version), columns as `kind` shows them. */
const sliceQuery = (scoped: ExportedVisits, [from, to]: [number, number], kind: 'CSV' | 'JSON', columns: readonly string[]) => {
  const { where, params } = whereOf(scoped);
  const inner = [...new Set(['ts', 'visit_id', ...columns])].map((column) => `${column} AS _${column}`).join(', ');
  return {
    query:
      `SELECT ${columns.map((column) => selectExpression(column, kind)).join(', ')} FROM (` +
      `SELECT ${inner} FROM visits ` +
      `WHERE ${where} AND ts >= fromUnixTimestamp64Milli({from:Int64}) AND ts < fromUnixTimestamp64Milli({to:Int64}) ` +
      `ORDER BY ts, visit_id, version DESC LIMIT 1 BY visit_id) ORDER BY _ts, _visit_id`,
    query_params: { ...params, from, to, ...(kind === 'CSV' ? { formula_lead: FORMULA_LEAD } : {}) },
  };
};

/**
 * The queries of exports: a per-minute count to plan time slices, and the slices themselves, one
 * row per visit (its newest version), oldest first, formatted by ClickHouse.
 */
export function exportsRepository(analytics: Analytics) {
  const { client } = analytics;
  return {
    /**
     * Visits stored per minute (`m`, epoch seconds; `n` rows, each version counted; `last`, the
     * newest visit's time in it, epoch ms), oldest first.
     */
    async minuteCounts(scoped: ExportedVisits) {
      const { where, params } = whereOf(scoped);
      return selectRows<{ m: number; n: number; last: number }>(
        client,
        `SELECT toUnixTimestamp(toStartOfMinute(ts)) AS m, count() AS n, max(toUnixTimestamp64Milli(ts)) AS last ` +
          `FROM visits WHERE ${where} GROUP BY m ORDER BY m`,
        params,
      );
    },

    /** One slice [from, to) (ms) of rows as JSONCompactEachRow text (one JSON array of the columns per line). */
    async sliceText(scoped: ExportedVisits, slice: [number, number], columns: readonly string[]): Promise<string> {
      return (await client.query({ ...sliceQuery(scoped, slice, 'JSON', columns), format: 'JSONCompactEachRow' })).text();
    },

    /**
     * One slice [from, to) (ms) of rows as the bytes ClickHouse wrote in `format`, passed on as they come:
     * decoding them into a string only to encode it again for the socket added almost half the query's time.
     */
    async *sliceBytes(scoped: ExportedVisits, slice: [number, number], format: 'CSV' | 'CSVWithNames' | 'JSONEachRow'): AsyncGenerator<Buffer> {
      const { query, query_params } = sliceQuery(scoped, slice, format === 'JSONEachRow' ? 'JSON' : 'CSV', OWNER_VISIT_COLUMNS);
      const { stream } = await client.exec({ query: `${query} FORMAT ${format}`, query_params });
      for await (const chunk of stream) yield chunk as Buffer;
    },
  };
}
