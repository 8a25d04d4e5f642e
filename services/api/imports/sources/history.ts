import { createHash, randomBytes } from 'node:crypto';
import { deduplicatedBy } from '#shared/analytics/analytics.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { botOf, parseUserAgent, type Enrichment } from '#shared/visits/enrichment.js';
import { visitorHash } from '#shared/visits/visitor-hash.js';
import { batchToken, storedVisits, visitRowValues, VISIT_ROW_COLUMNS } from '#shared/visits/visit-rows.js';
import type { Repositories } from '#services/repositories.js';

/** What became of a link's source visits: added (or, in a dry run, would be), already there, or unreadable (a time out of range). */
export interface VisitCounts {
  added: number;
  existing: number;
  skipped: number;
}

/** A visit as another shortener recorded it: what its API or its database export gives. */
export interface SourceVisit {
  /**
   * What identifies the visit in its source, stable from one read to the next: YOURLS's `click_id`;
   * Shlink gives visits no id, so its fields and their occurrence among identical ones (shlinkVisitKeys).
   */
  key: string;
  ts: Date;
  referrer: string;
  user_agent: string;
  /** The address as the source kept it ('' when it keeps none: Shlink anonymises and never returns it). */
  ip: string;
  /** ISO 3166-1 alpha-2, in any case ('' when unknown). */
  country: string;
  region?: string;
  city?: string;
  latitude?: number | null;
  longitude?: number | null;
  /** The source judged it a bot (Shlink's `potentialBot`); the user agent is judged here as well. */
  bot?: boolean;
}

/** The imported link the visits are of, as stored here. */
export interface HistoryTarget {
  owner_id: string;
  subdomain: string;
  link_id: string;
  slug: string;
}

/** Visits inserted per ClickHouse insert (one deduplication token each). */
export const HISTORY_BATCH = 5000;

/**
 * A visit's id here: a UUID (version 8, RFC 9562) from the SHA-256 of the source, the subdomain, the
 * slug and the visit's key in its source, so the same source visit always gets the same id.
 */
export function importedVisitId(source: string, subdomain: string, slug: string, key: string): string {
  const hex = createHash('sha256').update(`import\n${source}\n${subdomain}\n${slug}\n${key}`).digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** A source's place name as stored: a cell that starts like a spreadsheet formula loses its lead (exports write these columns as they are). */
const place = (value: string | undefined): string => (value ?? '').replace(/^[=+\-@\t\r\s]+/, '').slice(0, 200);

/** Text of a source visit cut to the lengths a live visit keeps. */
const cut = (value: string, max: number) => value.slice(0, max);

/**
 * Imports other shorteners' visit history into `visits`, through the visit writer's row shape and
 * the visits repository, as the enricher stores live visits. What differs, and why:
 * - `imported_from` names the source (migration 0008): the list and exports show it, the rollups
 *   count the row like any visit of its kind.
 * - Country, region and city are the source's (it located the visit when it happened; a geo lookup
 *   now would place an address by today's data, and Shlink keeps no address).
 * - The visitor hash uses a salt made for this run and never stored, as a live visit's uses its
 *   day's salt that is deleted after two days: visits of one address and agent count as one visitor
 *   within a run, and nothing links the hash to the address afterwards. No visit is marked unique.
 * - The address is stored as the source kept it in `ip_public`, where the subdomain's privacy
 *   policy governs it as it governs a live visit's (shared/policy: public rows carry it only with
 *   stats_show_ip).
 * Idempotent: each visit's id is importedVisitId; before each insert, the ids `visits` already holds
 * are left out (the rollup views count every row they are given, so a row inserted again would count
 * twice there), and an insert repeated whole is dropped by its deduplication token.
 */
export function visitHistory(repositories: Pick<Repositories, 'visits'>) {
  const salt = randomBytes(32).toString('hex');
  return {
    /**
     * Stores the source visits of several links that are not stored yet (an importer groups links until
     * they hold about HISTORY_BATCH visits): one check of the stored ids and one insert per HISTORY_BATCH
     * visits, however few each link has; a dry run only counts them. Answers each link's counts, in the
     * order given: added (or would be), already there, unreadable.
     */
    async importVisits(source: string, groups: { target: HistoryTarget; visits: SourceVisit[] }[], dryRun: boolean): Promise<VisitCounts[]> {
      const counts: VisitCounts[] = groups.map(() => ({ added: 0, existing: 0, skipped: 0 }));
      const rows: { group: number; raw: RawVisit; enrichment: Enrichment }[] = [];
      for (const [group, { target, visits }] of groups.entries()) {
        const ids = new Set<string>();
        for (const visit of visits) {
          const time = visit.ts.getTime();
          // DateTime64's range (RawVisit's VisitTimeSchema holds live visits to the same).
          if (Number.isNaN(time) || time < Date.UTC(1900, 0, 1) || time >= Date.UTC(2300, 0, 1)) {
            counts[group]!.skipped++;
            continue;
          }
          const id = importedVisitId(source, target.subdomain, target.slug, visit.key);
          if (ids.has(id)) continue;
          ids.add(id);
          rows.push({ group, ...toRow(source, target, visit, id, salt) });
        }
      }
      for (let start = 0; start < rows.length; start += HISTORY_BATCH) {
        const batch = rows.slice(start, start + HISTORY_BATCH);
        const stored = await storedVisits(
          repositories,
          batch.map((row) => row.raw),
        );
        const fresh = batch.filter((row) => !stored.has(row.raw.visit_id));
        for (const row of batch) counts[row.group]![stored.has(row.raw.visit_id) ? 'existing' : 'added']++;
        if (dryRun || fresh.length === 0) continue;
        const lines = fresh.map((row) => JSON.stringify([...visitRowValues(row.raw, row.enrichment), source]));
        await repositories.visits.insertBatch({
          table: 'visits',
          columns: [...VISIT_ROW_COLUMNS, 'imported_from'],
          body: Buffer.from(lines.join('\n')),
          settings: deduplicatedBy(batchToken(fresh.map((row) => `import:${row.raw.visit_id}`))),
        });
      }
      return counts;
    },
  };
}

function toRow(source: string, target: HistoryTarget, visit: SourceVisit, id: string, salt: string): { raw: RawVisit; enrichment: Enrichment } {
  const userAgent = cut(visit.user_agent, 2000);
  const ip = cut(visit.ip, 45);
  const bot = botOf(userAgent) ?? (visit.bot ? 'marked by the source' : undefined);
  const country = /^[a-z]{2}$/i.test(visit.country) ? visit.country.toUpperCase() : '';
  const raw: RawVisit = {
    visit_id: id,
    ts: visit.ts.toISOString(),
    kind: bot ? 'bot' : 'visit',
    owner_id: target.owner_id,
    subdomain: target.subdomain,
    link_id: target.link_id,
    slug: target.slug,
    ip_public: ip,
    user_agent: userAgent,
    referrer: cut(visit.referrer, 2000),
    accept_language: '',
    query: '',
    expects_beacon: false,
  };
  const enrichment: Enrichment = {
    kind: raw.kind,
    country,
    region: country ? place(visit.region) : '',
    city: country ? place(visit.city) : '',
    latitude: visit.latitude ?? null,
    longitude: visit.longitude ?? null,
    ...parseUserAgent(userAgent),
    is_bot: bot ? 1 : 0,
    bot_name: bot ?? '',
    is_attack: 0,
    attack_type: '',
    visitor_hash: visitorHash(salt, `${source}:${ip}`, userAgent),
    is_unique: 0,
  };
  return { raw, enrichment };
}
