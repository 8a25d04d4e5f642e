import type { Principal } from '#shared/http/auth.js';
import { requireScope } from '#shared/http/auth.js';
import type { Repositories } from '#services/repositories.js';
import { IMPORT_LINKS_AT_ONCE, type ImportOutcome, type LinksService } from '#services/api/links/links.service.js';
import type { SubdomainsService } from '#services/api/subdomains/subdomains.service.js';
import { HISTORY_BATCH, visitHistory, type HistoryTarget, type SourceVisit, type VisitCounts } from './history.js';
import { kuttApi } from './kutt-api.js';
import { shlinkApi, type SourceLinkWithHistory } from './shlink-api.js';
import { yourlsApi, type YourlsApiOptions } from './yourls-api.js';
import { yourlsDump } from './yourls-dump.js';

/**
 * A source and where to read it: Shlink's REST API v3 or Kutt's API v2 (base URL and API key), a
 * YOURLS database export (the SQL text of its `yourls_url` and `yourls_log` tables; `prefix` is
 * YOURLS_DB_PREFIX), or YOURLS's API (links only: base URL, and signature or username and password).
 */
export type SourceOptions =
  | { source: 'shlink'; url: string; apiKey: string; pageSize?: number; fetch?: typeof fetch }
  | { source: 'yourls'; dump: string; prefix?: string }
  | { source: 'kutt'; url: string; apiKey: string; pageSize?: number; fetch?: typeof fetch }
  | ({ source: 'yourls-api' } & YourlsApiOptions);

export type { VisitCounts };

/** Links whose visits an importer reads ahead while it stores the ones before (the source's API answers one link at a time). */
const READ_AHEAD = 4;
/** At most this many links wait for their visits to be stored together (a job's checkpoint comes after they are). */
const GROUP_LINKS = 250;

/** What became of one link of the source, in the source's order (index from 0), and of its visits. */
export type SourceRowReport = { index: number } & ImportOutcome & { visits?: VisitCounts };

export interface SourceImportReport {
  source: SourceOptions['source'];
  subdomain: string;
  dry_run: boolean;
  /** Links per status. */
  counts: Record<ImportOutcome['status'], number>;
  /** Visits over every link. */
  visits: VisitCounts;
  rows: SourceRowReport[];
}

export type SourceImports = ReturnType<typeof sourceImports>;

/** The reader of a source's links (and their visits) for its options. */
function readerOf(from: SourceOptions): { links: () => Promise<SourceLinkWithHistory[]> } {
  switch (from.source) {
    case 'shlink':
      return shlinkApi(from);
    case 'yourls':
      return yourlsDump(from.dump, from.prefix);
    case 'kutt':
      return kuttApi(from);
    case 'yourls-api':
      return yourlsApi(from);
  }
}

/**
 * Imports from another shortener's API or database export into a subdomain the caller manages (links:write): every link
 * through LinksService.importLinks, IMPORT_LINKS_AT_ONCE at a time (the CSV importer's rules: per-link conflicts never overwrite,
 * idempotent by client_id), then, with `history`, the link's visits (visitHistory): read READ_AHEAD
 * links ahead, and stored for up to GROUP_LINKS links at once, about HISTORY_BATCH visits an insert.
 * `onProgress` and `onRow` (awaited: a job's checkpoint) hear of each link, in the source's order, once
 * its visits are stored; `after` skips the
 * first links (a job resuming from its checkpoint: they were imported before). A source failing part-way throws (503 `service_unavailable`; a refused key
 * 422 `validation_error`) with everything before it stored: running the import again resumes it,
 * creating no link and no visit twice.
 */
export function sourceImports(deps: { links: LinksService; subdomains: SubdomainsService; repositories: Pick<Repositories, 'visits'> }) {
  return {
    async importFromSource(
      principal: Principal,
      input: { from: SourceOptions; subdomain: string; dryRun: boolean; history?: boolean; after?: number },
      onProgress?: (done: number, total: number) => void,
      onRow?: (row: SourceRowReport, total: number) => Promise<void>,
    ): Promise<SourceImportReport> {
      requireScope(principal, 'links:write');
      const subdomain = await deps.subdomains.managed(principal, input.subdomain);
      const links = await readerOf(input.from).links();
      const history = visitHistory(deps.repositories);
      const counts: SourceImportReport['counts'] = { created: 0, would_create: 0, exists: 0, conflict: 0, refused: 0 };
      const visits: VisitCounts = { added: 0, existing: 0, skipped: 0 };
      const rows: SourceRowReport[] = [];
      const first = input.after ?? 0;
      const withHistory = input.history !== false;
      // The visits of the next links are read while this one's are stored. A read that fails before its
      // turn is caught here and thrown when its link comes (the links before it are stored first).
      const reads = new Map<number, Promise<SourceVisit[]>>();
      const readAhead = (from: number) => {
        for (let index = from; index < Math.min(links.length, from + READ_AHEAD); index++) {
          const read = links[index]!.visits;
          if (!withHistory || !read || reads.has(index)) continue;
          const promise = read();
          promise.catch(() => undefined);
          reads.set(index, promise);
        }
      };
      // Links waiting for their visits to be stored, with them; reported once they are (a checkpoint
      // never counts a link whose visits are not stored).
      let group: { row: SourceRowReport; target?: HistoryTarget; visits?: SourceVisit[] }[] = [];
      let grouped = 0;
      const flush = async () => {
        const pending = group.filter((entry) => entry.target);
        const stored = await history.importVisits(
          input.from.source,
          pending.map((entry) => ({ target: entry.target!, visits: entry.visits! })),
          input.dryRun,
        );
        for (const [i, entry] of pending.entries()) entry.row.visits = stored[i];
        for (const { row } of group) {
          if (row.visits) {
            visits.added += row.visits.added;
            visits.existing += row.visits.existing;
            visits.skipped += row.visits.skipped;
          }
          counts[row.status]++;
          rows.push(row);
          onProgress?.(row.index + 1, links.length);
          await onRow?.(row, links.length);
        }
        group = [];
        grouped = 0;
      };
      for (let from = first; from < links.length; from += IMPORT_LINKS_AT_ONCE) {
        const chunk = links.slice(from, from + IMPORT_LINKS_AT_ONCE);
        readAhead(from);
        const outcomes = await deps.links.importLinks(
          subdomain,
          input.from.source,
          chunk.map((source) => source.link),
          input.dryRun,
        );
        for (const [offset, outcome] of outcomes.entries()) {
          const index = from + offset;
          readAhead(index);
          const row: SourceRowReport = { index, ...outcome };
          const read = reads.get(index);
          reads.delete(index);
          if (read && (outcome.status === 'created' || outcome.status === 'exists' || outcome.status === 'would_create')) {
            const target = { owner_id: subdomain.owner_id, subdomain: subdomain.name, link_id: outcome.link_id ?? '', slug: outcome.slug };
            let linkVisits: SourceVisit[];
            try {
              linkVisits = await read;
            } catch (error) {
              // The source failed part-way: what came before is stored and reported before the error stops the import.
              await flush();
              throw error;
            }
            group.push({ row, target, visits: linkVisits });
            grouped += linkVisits.length;
          } else group.push({ row });
          if (grouped >= HISTORY_BATCH || group.length >= GROUP_LINKS) await flush();
        }
      }
      await flush();
      return { source: input.from.source, subdomain: subdomain.name, dry_run: input.dryRun, counts, visits, rows };
    },
  };
}
