import { createHash } from 'node:crypto';
import { toClickHouseTime, type Analytics } from '../../shared/analytics/analytics.js';
import type { RawVisit } from '../../shared/visits/raw-visit.js';
import type { Enrichment } from './enrich.js';


/** Deduplication token of an insert: the hash of the keys that identify its rows. */
export function batchToken(keys: Iterable<string>): string {
  const hash = createHash('sha256');
  for (const key of keys) hash.update(key).update('\n');
  return hash.digest('hex');
}

/** UTM fields taken from the visit's query string. */
function utm(query: string): Record<string, string> {
  const params = new URLSearchParams(query);
  return Object.fromEntries(
    ['source', 'medium', 'campaign', 'term', 'content'].map((name) => [`utm_${name}`, (params.get(`utm_${name}`) ?? '').slice(0, 200)]),
  );
}

/**
 * The row of the `visits` table for one raw visit and what enrichment derived from it (without an
 * enrichment, derived columns keep their defaults and the kind decides is_bot/is_attack).
 */
export function toVisitRow(visit: RawVisit, enrichment?: Enrichment): Record<string, unknown> {
  let referrerHost = '';
  try {
    referrerHost = visit.referrer ? new URL(visit.referrer).hostname : '';
  } catch {
    referrerHost = '';
  }
  return {
    visit_id: visit.visit_id,
    ts: toClickHouseTime(visit.ts),
    kind: visit.kind,
    owner_id: visit.owner_id,
    subdomain: visit.subdomain,
    link_id: visit.link_id,
    slug: visit.slug,
    ip_public: visit.ip_public,
    user_agent: visit.user_agent,
    referrer: visit.referrer,
    referrer_host: referrerHost,
    accept_language: visit.accept_language,
    query: visit.query,
    is_bot: visit.kind === 'bot' ? 1 : 0,
    is_attack: visit.kind === 'attack' ? 1 : 0,
    ...utm(visit.query),
    ...enrichment,
  };
}

/**
 * Inserts one batch into `visits`, as JSONCompactEachRow (ClickHouse parses it about 40 % faster
 * than JSONEachRow: the column names are sent once). The deduplication token is the hash of the
 * batch's visit ids, so the same batch redelivered after a crash between insert and commit is not
 * inserted twice; rows that arrive again in other batches collapse by visit_id in the
 * ReplacingMergeTree, and beacon merges are newer versions inserted on their own.
 */
export async function insertVisits(analytics: Analytics, visits: RawVisit[], enrichOne?: (visit: RawVisit) => Enrichment): Promise<void> {
  if (visits.length === 0) return;
  const rows = visits.map((visit) => toVisitRow(visit, enrichOne?.(visit)));
  const columns = Object.keys(rows[0]!) as [string, ...string[]];
  await analytics.client.insert({
    table: 'visits',
    columns,
    values: rows.map((row) => columns.map((column) => row[column])),
    format: 'JSONCompactEachRow',
    clickhouse_settings: { insert_deduplication_token: batchToken(visits.map((visit) => visit.visit_id)) },
  });
}
