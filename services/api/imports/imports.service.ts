import type { Principal } from '#shared/http/auth.js';
import { requireScope } from '#shared/http/auth.js';
import type { LinksService, ImportOutcome } from '../links/links.service.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';
import { parseExport, type CsvSource } from './imports.formats.js';

/** What became of one row of the file: its line and the outcome, or why the row could not be read. */
export type RowReport = { line: number } & (ImportOutcome | { status: 'unreadable'; reason: string });

export interface ImportReport {
  source: CsvSource;
  subdomain: string;
  dry_run: boolean;
  /** Rows per status. */
  counts: Record<RowReport['status'], number>;
  rows: RowReport[];
}

export type ImportsService = ReturnType<typeof importsService>;

/**
 * Imports of other shorteners' CSV exports into a subdomain the caller manages (links:write). Rows are
 * imported one by one in file order; `onProgress` hears after each. Every row is idempotent (see
 * LinksService.importLink), so running the same file again after an interruption resumes it.
 */
export function importsService(deps: { links: LinksService; subdomains: SubdomainsService }) {
  return {
    async importCsv(
      principal: Principal,
      input: { source: CsvSource; subdomain: string; csv: string; dryRun: boolean },
      onProgress?: (done: number, total: number) => void,
    ): Promise<ImportReport> {
      requireScope(principal, 'links:write');
      const subdomain = await deps.subdomains.managed(principal, input.subdomain);
      const parsed = parseExport(input.source, input.csv);
      const counts: ImportReport['counts'] = { created: 0, would_create: 0, exists: 0, conflict: 0, refused: 0, unreadable: 0 };
      const rows: RowReport[] = [];
      for (const row of parsed) {
        const report: RowReport =
          'error' in row
            ? { line: row.line, status: 'unreadable', reason: row.error }
            : { line: row.line, ...(await deps.links.importLink(subdomain, input.source, row.link, input.dryRun)) };
        counts[report.status]++;
        rows.push(report);
        onProgress?.(rows.length, parsed.length);
      }
      return { source: input.source, subdomain: subdomain.name, dry_run: input.dryRun, counts, rows };
    },
  };
}
