import type { Principal } from '#shared/http/auth.js';
import { requireScope } from '#shared/http/auth.js';
import type { Repositories } from '#services/repositories.js';
import type { ImportOutcome, LinksService } from '#services/api/links/links.service.js';
import type { SubdomainsService } from '#services/api/subdomains/subdomains.service.js';
import { visitHistory } from './history.js';
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

/** What became of the visits of one link: added (or, in a dry run, would be), already there, or unreadable (a time out of range). */
export interface VisitCounts {
  added: number;
  existing: number;
  skipped: number;
}

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
 * through LinksService.importLink (the CSV importer's rules: per-link conflicts never overwrite,
 * idempotent by client_id), then, with `history`, the link's visits (visitHistory). `onProgress`
 * hears after each link, `onRow` (awaited: a job's checkpoint) with its report; `after` skips the
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
      for (const [index, source] of links.entries()) {
        if (index < (input.after ?? 0)) continue;
        const outcome = await deps.links.importLink(subdomain, input.from.source, source.link, input.dryRun);
        const row: SourceRowReport = { index, ...outcome };
        if (input.history !== false && source.visits && (outcome.status === 'created' || outcome.status === 'exists' || outcome.status === 'would_create')) {
          const target = { owner_id: subdomain.owner_id, subdomain: subdomain.name, link_id: outcome.link_id ?? '', slug: outcome.slug };
          row.visits = await history.importVisits(input.from.source, target, await source.visits(), input.dryRun);
          visits.added += row.visits.added;
          visits.existing += row.visits.existing;
          visits.skipped += row.visits.skipped;
        }
        counts[outcome.status]++;
        rows.push(row);
        onProgress?.(index + 1, links.length);
        await onRow?.(row, links.length);
      }
      return { source: input.from.source, subdomain: subdomain.name, dry_run: input.dryRun, counts, visits, rows };
    },
  };
}
