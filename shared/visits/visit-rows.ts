// The rows of `visits` as the enricher writes them, and which of a batch's visits are stored already:
// shared by the enricher and the import engine (imported visit history is written as the enricher
// writes visits, so the rollups and the exactly-once rules treat both alike).
import { createHash } from 'node:crypto';
import { deduplicatedBy, toClickHouseTime, type EncodedInsert } from '#shared/analytics/analytics.js';
import type { StoredVisit } from '#shared/analytics/visits.repository.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { nextTurn, SLICE } from '#shared/turns.js';
import type { Enrichment } from './enrichment.js';
import type { visitsRepository } from '#shared/analytics/visits.repository.js';

/** Deduplication token of an insert: the hash of the keys that identify its rows. */
export function batchToken(keys: Iterable<string>): string {
  const hash = createHash('sha256');
  for (const key of keys) hash.update(key).update('\n');
  return hash.digest('hex');
}

/** The UTM fields of a query string (decoded, the first of repeated ones, at most 200 characters). */
interface Utm {
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  utm_term: string;
  utm_content: string;
}
const NO_UTM: Readonly<Utm> = Object.freeze({ utm_source: '', utm_medium: '', utm_campaign: '', utm_term: '', utm_content: '' });

/** UTM fields taken from the visit's query string (a query without any is not parsed). */
function utm(query: string): Readonly<Utm> {
  if (!query.includes('utm_')) return NO_UTM;
  const params = new URLSearchParams(query);
  const field = (name: keyof Utm) => (params.get(name) ?? '').slice(0, 200);
  return {
    utm_source: field('utm_source'),
    utm_medium: field('utm_medium'),
    utm_campaign: field('utm_campaign'),
    utm_term: field('utm_term'),
    utm_content: field('utm_content'),
  };
}

/** The host of a referrer URL, '' when there is none or it is not a URL. */
function hostOf(referrer: string): string {
  if (!referrer) return '';
  try {
    return new URL(referrer).hostname;
  } catch {
    return '';
  }
}

/**
 * The columns of a row of visitRowValues, in its order: what an insert into `visits` names. A block
 * inserted again (reinsertStoredBlocks) names the same, and every other column takes its default,
 * `version` 0 among them (the rollups count version-0 rows). visit-consumer.test.ts holds the two equal.
 */
export const VISIT_ROW_COLUMNS = [
  'visit_id',
  'ts',
  'kind',
  'owner_id',
  'subdomain',
  'link_id',
  'slug',
  'ip_public',
  'user_agent',
  'referrer',
  'referrer_host',
  'accept_language',
  'query',
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_term',
  'utm_content',
  'country',
  'region',
  'city',
  'latitude',
  'longitude',
  'browser',
  'browser_version',
  'os',
  'os_version',
  'device_type',
  'is_bot',
  'bot_name',
  'is_attack',
  'attack_type',
  'visitor_hash',
  'is_unique',
  'matched_rule',
  'variant',
] as const;

/** A value of a row of `visits`: text, a number, or null (no coordinates). */
export type VisitRowValue = string | number | null;

/**
 * The values of the `visits` row for one raw visit and what enrichment derived from it, in the
 * order of VISIT_ROW_COLUMNS: what one line of JSONCompactEachRow holds. An array made at once
 * rather than an object whose values are then listed: one allocation per visit instead of two, and
 * about 1 µs less per visit to encode.
 */
export function visitRowValues(visit: RawVisit, enrichment: Enrichment): VisitRowValue[] {
  const utms = utm(visit.query);
  return [
    visit.visit_id,
    toClickHouseTime(visit.ts),
    enrichment.kind,
    visit.owner_id,
    visit.subdomain,
    visit.link_id,
    visit.slug,
    visit.ip_public,
    visit.user_agent,
    visit.referrer,
    hostOf(visit.referrer),
    visit.accept_language,
    visit.query,
    utms.utm_source,
    utms.utm_medium,
    utms.utm_campaign,
    utms.utm_term,
    utms.utm_content,
    enrichment.country,
    enrichment.region,
    enrichment.city,
    enrichment.latitude,
    enrichment.longitude,
    enrichment.browser,
    enrichment.browser_version,
    enrichment.os,
    enrichment.os_version,
    enrichment.device_type,
    enrichment.is_bot,
    enrichment.bot_name,
    enrichment.is_attack,
    enrichment.attack_type,
    enrichment.visitor_hash ?? '',
    enrichment.is_unique ?? 0,
    visit.matched_rule ?? -1,
    visit.variant ?? -1,
  ];
}

/** The row of the `visits` table for one raw visit, by column name (visitRowValues named by VISIT_ROW_COLUMNS). */
export function toVisitRow(visit: RawVisit, enrichment: Enrichment): Record<(typeof VISIT_ROW_COLUMNS)[number], VisitRowValue> {
  const values = visitRowValues(visit, enrichment);
  return Object.fromEntries(VISIT_ROW_COLUMNS.map((column, index) => [column, values[index]!])) as Record<(typeof VISIT_ROW_COLUMNS)[number], VisitRowValue>;
}

/**
 * One batch for `visits`, encoded as JSONCompactEachRow (ClickHouse parses it about 40 % faster
 * than JSONEachRow: the column names are sent once). The deduplication token is the hash of the
 * batch's visit ids, so the same batch inserted twice is stored once, in `visits` and in the
 * rollups its views feed. A redelivered batch composed differently has another token: the
 * enricher leaves out its visits already stored before it encodes it (storedVisits). Beacon merges
 * are newer versions inserted on their own.
 */
export async function encodeVisits(visits: RawVisit[], enrichmentOf: (visit: RawVisit, index: number) => Enrichment): Promise<EncodedInsert> {
  // Each row is written into the body as soon as it is made, so neither the row nor its text
  // outlives its turn: a batch's rows no longer survive garbage collections as a whole (a third
  // fewer bytes copied by the young-generation collector in bench/pipeline.ts). A UTF-16 unit
  // takes at most 3 bytes of UTF-8, which bounds what a line needs.
  if (visits.length === 0) throw new RangeError('a batch for visits holds at least one visit');
  let body = Buffer.allocUnsafe(visits.length * 1024);
  let length = 0;
  for (let index = 0; index < visits.length; index++) {
    // A batch of 10 000 encoded in one go held the event loop for 25 ms: redirects waited behind it.
    if (index % SLICE === SLICE - 1) await nextTurn();
    const visit = visits[index]!;
    const line = JSON.stringify(visitRowValues(visit, enrichmentOf(visit, index)));
    const needed = length + 1 + line.length * 3;
    if (needed > body.length) {
      const grown = Buffer.allocUnsafe(Math.max(body.length * 2, needed));
      body.copy(grown, 0, 0, length);
      body = grown;
    }
    if (index > 0) body[length++] = 0x0a;
    length += body.write(line, length);
  }
  return {
    table: 'visits',
    columns: [...VISIT_ROW_COLUMNS],
    body: body.subarray(0, length),
    settings: deduplicatedBy(batchToken(visits.map((visit) => visit.visit_id))),
  };
}

/**
 * The visits of a batch that `visits` already holds, by id, with how they were judged. A redelivered
 * batch asks this before its insert (the rollup views count every version-0 row they are given, so
 * a visit inserted again would count twice there). Any version answers: a beacon merge (a newer
 * version) only follows a stored visit, and replaces its version 0 once their parts merge.
 *
 * One query, bounded by the batch's exact time range (the monthly partitions and each part's
 * min-max of `ts` skip everything older, and parts are written in about time order) and the bloom
 * filter index on visit_id. Bounding it by the sort key's prefix too (the batch's subdomains and
 * links) made it slower, not faster: 6.6 against 4.8 µs a row for a batch of the newest 10 000
 * visits, of 7 850 links (bench/dedup-check.ts). Throws when ClickHouse does not answer: the batch then
 * fails and is redelivered, never inserted blindly.
 */
export async function storedVisits(
  repositories: { visits: Pick<ReturnType<typeof visitsRepository>, 'storedVisits'> },
  visits: RawVisit[],
): Promise<Map<string, StoredVisit>> {
  if (visits.length === 0) return new Map();
  const { from, to } = timeRange(visits);
  const rows = await repositories.visits.storedVisits(
    visits.map((visit) => visit.visit_id),
    from,
    to,
  );
  return new Map(rows.map((row) => [row.visit_id, row]));
}

/** The earliest and latest time (ms) of the visits. */
export function timeRange(visits: RawVisit[]): { from: number; to: number } {
  let from = Infinity;
  let to = -Infinity;
  for (const visit of visits) {
    const time = Date.parse(visit.ts);
    if (time < from) from = time;
    if (time > to) to = time;
  }
  return { from, to };
}
