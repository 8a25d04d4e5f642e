import { randomBytes } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { Principal } from '#shared/http/auth.js';
import { canManage, requireScope } from '#shared/http/auth.js';
import type { ImportReportRow, ImportRow } from '#shared/imports/imports.repository.js';
import { importJob, type ImportRunner } from '#shared/imports/import-job.js';
import { DeferJob } from '#shared/jobs/jobs.js';
import { createEventBus } from '#shared/events/events.js';
import type { Repositories } from '#services/repositories.js';
import { IMPORT_LINKS_AT_ONCE, linksService, type LinksService, type ImportOutcome } from '../links/links.service.js';
import { subdomainsService, type SubdomainsService } from '../subdomains/subdomains.service.js';
import { checkTarget, GuardRefusal } from '#shared/webhooks/guard.js';
import { sourceImports, type SourceOptions, type VisitCounts } from './sources/sources.service.js';
import { YOURLS_DUMP_MAX_BYTES } from './sources/yourls-dump.js';
import { IMPORT_MAX_BYTES, parseExport, parseExportInSlices, type CsvSource, type ParsedRow } from './imports.formats.js';

/** What became of one row of the file: its line and the outcome, or why the row could not be read. */
export type RowReport = { line: number } & (ImportOutcome | { status: 'unreadable'; reason: string });

export const ROW_STATUSES = ['created', 'would_create', 'exists', 'conflict', 'refused', 'unreadable'] as const;
export type RowStatus = (typeof ROW_STATUSES)[number];

export interface ImportReport {
  source: CsvSource;
  subdomain: string;
  dry_run: boolean;
  /** Rows per status. */
  counts: Record<RowStatus, number>;
  rows: RowReport[];
}

/** An import job as the API shows it. */
export interface ImportView {
  id: string;
  subdomain: string;
  source: string;
  dry_run: boolean;
  status: ImportRow['status'];
  error: { code: string; details: Record<string, unknown> } | null;
  file_bytes: number;
  rows_total: number | null;
  rows_read: number;
  counts: Record<RowStatus, number>;
  /** Visits of the source's history imported so far (null for a CSV export, which has none). */
  visits: VisitCounts | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** Rows an import job imports between two checkpoints (its report's rows, its counts and the rows read, stored at once). */
export const IMPORT_CHECKPOINT_ROWS = 100;
/** Longest an import job runs without a checkpoint, so that a slow import shows its progress. */
const IMPORT_CHECKPOINT_MS = 1_000;
/** How long an import job stopped by a shutdown waits before it runs again (from its checkpoint). */
const IMPORT_RESUME_DELAY_MS = 1_000;
/** Longest slug a report row keeps (a refused one may be anything the file holds). */
const REPORT_SLUG_CHARS = 200;

const zeroCounts = (): Record<RowStatus, number> => ({ created: 0, would_create: 0, exists: 0, conflict: 0, refused: 0, unreadable: 0 });

/** New import ids: `imp_` and 16 base64url characters (96 random bits). */
const newImportId = () => `imp_${randomBytes(12).toString('base64url')}`;

/** The sources read through their API (a URL and a credential) rather than from a file. */
export const API_SOURCES = ['shlink-api', 'kutt', 'yourls-api'] as const;
/** Every source an import job reads that is not a CSV export: the APIs and YOURLS's database export. */
export type HistorySource = (typeof API_SOURCES)[number] | 'yourls';

/** What a job starting an import of a source beyond the CSV files is given (secrets in clear: sealed before they are stored). */
export type SourceInput =
  | { source: 'shlink-api' | 'kutt'; url: string; apiKey: string }
  | { source: 'yourls-api'; url: string; signature: string }
  | { source: 'yourls-api'; url: string; username: string; password: string }
  | { source: 'yourls'; dump: string; prefix?: string };

/**
 * What the `file` column holds for a source beyond the CSV files (JSON): `history`, and the URL with
 * the secrets sealed with the platform's secrets key (`v1:<key id>:…`, purpose `import:<id>:<field>`),
 * or the dump. Removed with the file when the import ends.
 */
interface StoredSource {
  history: boolean;
  url?: string;
  api_key?: string;
  signature?: string;
  username?: string;
  password?: string;
  dump?: string;
  prefix?: string;
}

/** The fields of a stored source that hold a sealed secret. */
type SecretField = 'api_key' | 'signature' | 'password';
const VISIT_KEYS = { added: 'visits_added', existing: 'visits_existing', skipped: 'visits_skipped' } as const;
const isSourceImport = (source: string) => source === 'yourls' || (API_SOURCES as readonly string[]).includes(source);

const toView = (row: ImportRow): ImportView => ({
  id: row.id,
  subdomain: row.subdomain,
  source: row.source,
  dry_run: row.dry_run,
  status: row.status,
  error: row.error,
  file_bytes: row.file_bytes,
  rows_total: row.rows_total,
  rows_read: row.rows_read,
  counts: Object.fromEntries(Object.entries({ ...zeroCounts(), ...row.counts }).filter(([key]) => !key.startsWith('visits_'))) as Record<RowStatus, number>,
  visits: isSourceImport(row.source)
    ? { added: row.counts[VISIT_KEYS.added] ?? 0, existing: row.counts[VISIT_KEYS.existing] ?? 0, skipped: row.counts[VISIT_KEYS.skipped] ?? 0 }
    : null,
  created_at: row.created_at.toISOString(),
  started_at: row.started_at?.toISOString() ?? null,
  finished_at: row.finished_at?.toISOString() ?? null,
});

const toReportRow = (report: RowReport): ImportReportRow => ({
  line: report.line,
  status: report.status,
  slug: 'slug' in report ? report.slug.slice(0, REPORT_SLUG_CHARS) : null,
  reason: 'reason' in report ? report.reason : null,
  link_id: 'link_id' in report ? (report.link_id ?? null) : null,
});

export type ImportsService = ReturnType<typeof importsService>;

/** What the imports service uses: the links and subdomains services, the imports and audit repositories, the job runner. */
export interface ImportsDeps {
  links: LinksService;
  subdomains: SubdomainsService;
  /** `visits` is where a source's history goes: a worker without the analytics store (ANALYTICS_ROLES) fails such an import. */
  repositories?: Pick<Repositories, 'imports' | 'audit'> & Partial<Pick<Repositories, 'visits'>>;
  jobs?: Context['jobs'];
  /** Seals the credentials of an API source while its import waits and runs. */
  secrets?: Context['secrets'];
  /** Addresses an API source may have although internal (WEBHOOK_ALLOWLIST: the SSRF guard of webhooks). */
  allowlist?: readonly string[];
  /** How the API sources are reached (tests of the guard give their own). */
  fetch?: typeof fetch;
}

/**
 * Imports of other shorteners' CSV exports into a subdomain the caller manages (links:write): at
 * once (`importCsv`), or as a job (`start`, then the worker's `run`) whose progress and per-row
 * report are stored. Rows are imported one by one in file order. Every row is idempotent (see
 * LinksService.importLinks), so running the same file again after an interruption resumes it.
 */
export function importsService(deps: ImportsDeps) {
  const stored = () => {
    if (!deps.repositories || !deps.jobs) throw new Error('import jobs need the imports repository and the job runner');
    return { ...deps.repositories, jobs: deps.jobs };
  };

  /** The import of `id` as the caller may see it: someone else's is 404, as an unknown one. */
  const visible = async (principal: Principal, id: string): Promise<ImportRow> => {
    requireScope(principal, 'links:read');
    const row = await stored().imports.find(id);
    if (!row || !canManage(principal, row.owner_id)) throw new AppError('not_found', { import: id });
    return row;
  };

  /** The reports of some rows of a file, in its order (LinksService.importLinks imports the readable ones together). */
  const importRows = async (subdomain: { name: string; owner_id: string }, source: CsvSource, rows: ParsedRow[], dryRun: boolean): Promise<RowReport[]> => {
    const readable = rows.flatMap((row) => ('error' in row ? [] : [row.link]));
    const outcomes = (await deps.links.importLinks(subdomain, source, readable, dryRun)).values();
    return rows.map((row) => ('error' in row ? { line: row.line, status: 'unreadable', reason: row.error } : { line: row.line, ...outcomes.next().value! }));
  };

  /** Why an import job ended: the source, the file or the subdomain (final), else retried by the job runner. */
  const ended = async (id: string, error: unknown, final: boolean): Promise<void> => {
    const { imports } = stored();
    if (error instanceof AppError) {
      await imports.finish(id, 'failed', { code: error.code, details: error.details });
      return;
    }
    if (error instanceof DeferJob) throw error;
    if (!(await imports.find(id))) return;
    if (final) await imports.finish(id, 'failed', { code: 'internal_error', details: {} });
    throw error;
  };

  /** Every request to a source's API passes the webhooks' SSRF guard; redirects are not followed (a 3xx is the source failing). */
  const guardedFetch: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    try {
      await checkTarget(url, { allowlist: deps.allowlist ?? [] });
    } catch (error) {
      if (error instanceof GuardRefusal) throw new AppError('validation_error', { url: error.message });
      throw error;
    }
    return (deps.fetch ?? globalThis.fetch)(input, { ...init, redirect: 'manual' });
  };

  /** The options of the source reader from what was stored, the secrets opened. */
  const optionsOf = (job: ImportRow, spec: StoredSource): SourceOptions => {
    const open = (field: SecretField) => {
      if (!deps.secrets) throw new Error('imports from an API need the secrets box');
      return deps.secrets.open(spec[field] ?? '', `import:${job.id}:${field}`);
    };
    const url = spec.url ?? '';
    switch (job.source as HistorySource) {
      case 'yourls':
        return { source: 'yourls', dump: spec.dump ?? '', prefix: spec.prefix };
      case 'shlink-api':
        return { source: 'shlink', url, apiKey: open('api_key'), fetch: guardedFetch };
      case 'kutt':
        return { source: 'kutt', url, apiKey: open('api_key'), fetch: guardedFetch };
      case 'yourls-api':
        return spec.signature !== undefined
          ? { source: 'yourls-api', url, signature: open('signature'), fetch: guardedFetch }
          : { source: 'yourls-api', url, username: spec.username ?? '', password: open('password'), fetch: guardedFetch };
    }
  };

  /**
   * The job of a source beyond the CSV files: the URL is checked by the SSRF guard, then
   * importFromSource runs from the link after the last checkpoint (rows_read links were done: a link
   * or visit done after it is found again, never created twice). The report's `line` of a link is its
   * position in the source plus 1 (the first link is 2, as in a CSV export with its header).
   */
  const runSource = async (job: ImportRow, { final, stopping }: { final: boolean; stopping: () => boolean }): Promise<void> => {
    const { imports } = stored();
    try {
      const visits = deps.repositories?.visits;
      if (!visits)
        throw new AppError('service_unavailable', {
          analytics: 'this worker has no analytics store for the visits (ANALYTICS_ROLES must list the worker role)',
        });
      const spec = JSON.parse((await imports.fileOf(job.id)) ?? '{}') as StoredSource;
      if (spec.url !== undefined) {
        try {
          await checkTarget(spec.url, { allowlist: deps.allowlist ?? [] });
        } catch (error) {
          if (error instanceof GuardRefusal) throw new AppError('validation_error', { url: error.message });
          throw error;
        }
      }
      const principal: Principal = {
        userId: job.owner_id,
        email: '',
        role: 'user',
        via: 'token',
        scopes: new Set(['links:write']),
        identity: `user:${job.owner_id}`,
      };
      const counts: Record<string, number> = { ...zeroCounts(), ...job.counts };
      let read = job.rows_read;
      let pending: ImportReportRow[] = [];
      let since = Date.now();
      let marked = false;
      const checkpoint = async () => {
        await imports.checkpoint(job.id, pending, read, counts);
        pending = [];
        since = Date.now();
      };
      await sourceImports({ links: deps.links, subdomains: deps.subdomains, repositories: { visits } }).importFromSource(
        principal,
        { from: optionsOf(job, spec), subdomain: job.subdomain, dryRun: job.dry_run, history: spec.history, after: read },
        undefined,
        async (row, total) => {
          if (!marked) {
            await imports.markRunning(job.id, total);
            marked = true;
          }
          counts[row.status] = (counts[row.status] ?? 0) + 1;
          for (const [key, column] of Object.entries(VISIT_KEYS)) counts[column] = (counts[column] ?? 0) + (row.visits?.[key as keyof VisitCounts] ?? 0);
          pending.push(toReportRow({ ...row, line: row.index + 2 }));
          read = row.index + 1;
          if (pending.length >= IMPORT_CHECKPOINT_ROWS || Date.now() - since >= IMPORT_CHECKPOINT_MS) await checkpoint();
          if (stopping()) {
            await checkpoint();
            throw new DeferJob(IMPORT_RESUME_DELAY_MS);
          }
        },
      );
      if (!marked) await imports.markRunning(job.id, read);
      await checkpoint();
      await imports.finish(job.id, 'completed');
    } catch (error) {
      await ended(job.id, error, final);
    }
  };

  return {
    async importCsv(
      principal: Principal,
      input: { source: CsvSource; subdomain: string; csv: string; dryRun: boolean },
      onProgress?: (done: number, total: number) => void,
    ): Promise<ImportReport> {
      requireScope(principal, 'links:write');
      const subdomain = await deps.subdomains.managed(principal, input.subdomain);
      const parsed = parseExport(input.source, input.csv);
      const counts = zeroCounts();
      const rows: RowReport[] = [];
      for (let start = 0; start < parsed.length; start += IMPORT_LINKS_AT_ONCE) {
        for (const report of await importRows(subdomain, input.source, parsed.slice(start, start + IMPORT_LINKS_AT_ONCE), input.dryRun)) {
          counts[report.status]++;
          rows.push(report);
          onProgress?.(rows.length, parsed.length);
        }
      }
      return { source: input.source, subdomain: subdomain.name, dry_run: input.dryRun, counts, rows };
    },

    /**
     * Stores the file and queues its import as a job. The subdomain and the size are checked here
     * (403/404, 413: nothing is stored); the file is read by the job, which fails the import when it is
     * not the source's CSV export (a rule the schema cannot state is not a 422 of the request). Audited.
     */
    async start(
      principal: Principal,
      input: { source: CsvSource; subdomain: string; file: string; dryRun: boolean },
      request: { id: string; ip: string },
    ): Promise<ImportView> {
      requireScope(principal, 'links:write');
      const { imports, audit, jobs } = stored();
      const subdomain = await deps.subdomains.managed(principal, input.subdomain);
      if (Buffer.byteLength(input.file) > IMPORT_MAX_BYTES) throw new AppError('payload_too_large', { file: `at most ${IMPORT_MAX_BYTES} bytes` });
      const row = await imports.insert({
        id: newImportId(),
        ownerId: subdomain.owner_id,
        subdomain: subdomain.name,
        source: input.source,
        dryRun: input.dryRun,
        file: input.file,
        counts: zeroCounts(),
      });
      await audit.insert({
        action: 'import.start',
        actorId: principal.userId,
        target: `import:${row.id}`,
        ip: request.ip,
        details: { subdomain: subdomain.name, source: input.source, dry_run: input.dryRun, file_bytes: row.file_bytes, request_id: request.id },
      });
      await jobs.enqueue(importJob, { id: row.id }, { jobId: row.id });
      return toView(row);
    },

    /**
     * Stores an import of a source beyond the CSV files and queues it: an API (its URL and credential,
     * the secrets sealed with the platform's secrets key) or YOURLS's database export (at most
     * YOURLS_DUMP_MAX_BYTES, 413 above). The subdomain is checked here (403/404); the URL and the
     * credential by the job, which fails the import when the source refuses them. Audited, without secrets.
     */
    async startSource(
      principal: Principal,
      input: { from: SourceInput; subdomain: string; dryRun: boolean; history: boolean },
      request: { id: string; ip: string },
    ): Promise<ImportView> {
      requireScope(principal, 'links:write');
      const { imports, audit, jobs } = stored();
      const subdomain = await deps.subdomains.managed(principal, input.subdomain);
      const { from } = input;
      const id = newImportId();
      const seal = (field: SecretField, value: string) => {
        if (!deps.secrets) throw new Error('imports from an API need the secrets box');
        return deps.secrets.seal(value, `import:${id}:${field}`);
      };
      let spec: StoredSource;
      let fileBytes = 0;
      if (from.source === 'yourls') {
        fileBytes = Buffer.byteLength(from.dump);
        if (fileBytes > YOURLS_DUMP_MAX_BYTES) throw new AppError('payload_too_large', { file: `at most ${YOURLS_DUMP_MAX_BYTES} bytes` });
        spec = { history: input.history, dump: from.dump, prefix: from.prefix };
      } else if ('apiKey' in from) {
        spec = { history: input.history, url: from.url, api_key: seal('api_key', from.apiKey) };
      } else if ('signature' in from) {
        spec = { history: input.history, url: from.url, signature: seal('signature', from.signature) };
      } else {
        spec = { history: input.history, url: from.url, username: from.username, password: seal('password', from.password) };
      }
      const row = await imports.insert({
        id,
        ownerId: subdomain.owner_id,
        subdomain: subdomain.name,
        source: from.source,
        dryRun: input.dryRun,
        file: JSON.stringify(spec),
        fileBytes,
        counts: zeroCounts(),
      });
      await audit.insert({
        action: 'import.start',
        actorId: principal.userId,
        target: `import:${row.id}`,
        ip: request.ip,
        details: {
          subdomain: subdomain.name,
          source: from.source,
          dry_run: input.dryRun,
          ...('url' in from ? { url: from.url } : { file_bytes: fileBytes }),
          request_id: request.id,
        },
      });
      await jobs.enqueue(importJob, { id: row.id }, { jobId: row.id });
      return toView(row);
    },

    async get(principal: Principal, id: string): Promise<ImportView> {
      return toView(await visible(principal, id));
    },

    /** Rows of an import's report in file order, after line `after`, of one status or all. */
    async rows(
      principal: Principal,
      id: string,
      page: { after: number; limit: number; status?: RowStatus },
    ): Promise<(ImportReportRow & { status: RowStatus })[]> {
      await visible(principal, id);
      // Stored by `run` from RowReport statuses only.
      return (await stored().imports.rows(id, { afterLine: page.after, limit: page.limit, status: page.status })) as (ImportReportRow & {
        status: RowStatus;
      })[];
    },

    async list(principal: Principal, limit: number): Promise<ImportView[]> {
      requireScope(principal, 'links:read');
      return (await stored().imports.listByOwner(principal.userId, limit)).map(toView);
    },

    /**
     * The job: imports the rows after the last checkpoint, storing a checkpoint every
     * IMPORT_CHECKPOINT_ROWS rows or IMPORT_CHECKPOINT_MS. A row imported after the last checkpoint of
     * an interrupted run is imported again: it then reports `exists` (its link is there). When
     * `stopping` says so (a shutdown), it checkpoints and is deferred: the next run goes on from there.
     * A file that cannot be read, or a subdomain that is no longer the owner's, fails the import; an
     * import deleted meanwhile (with its account) ends the job quietly.
     */
    async run(id: string, { final, stopping }: { final: boolean; stopping: () => boolean }): Promise<void> {
      const { imports } = stored();
      const job = await imports.find(id);
      if (!job || job.status === 'completed' || job.status === 'failed') return;
      if (isSourceImport(job.source)) return runSource(job, { final, stopping });
      const source = job.source as CsvSource;
      try {
        const file = await imports.fileOf(id);
        const subdomain = await deps.subdomains.managed(
          { userId: job.owner_id, email: '', role: 'user', via: 'token', scopes: new Set(['links:write']), identity: `user:${job.owner_id}` },
          job.subdomain,
        );
        const parsed = await parseExportInSlices(source, file ?? '');
        await imports.markRunning(id, parsed.length);
        const counts = { ...zeroCounts(), ...job.counts };
        let read = job.rows_read;
        let pending: ImportReportRow[] = [];
        let since = Date.now();
        const checkpoint = async () => {
          await imports.checkpoint(id, pending, read, counts);
          pending = [];
          since = Date.now();
        };
        while (read < parsed.length) {
          if (stopping()) {
            await checkpoint();
            throw new DeferJob(IMPORT_RESUME_DELAY_MS);
          }
          const chunk = parsed.slice(read, read + IMPORT_LINKS_AT_ONCE);
          for (const report of await importRows(subdomain, source, chunk, job.dry_run)) {
            counts[report.status]++;
            pending.push(toReportRow(report));
          }
          read += chunk.length;
          if (pending.length >= IMPORT_CHECKPOINT_ROWS || Date.now() - since >= IMPORT_CHECKPOINT_MS) await checkpoint();
        }
        await checkpoint();
        await imports.finish(id, 'completed');
      } catch (error) {
        if (error instanceof AppError) {
          // The file or the subdomain: running it again changes nothing.
          await imports.finish(id, 'failed', { code: error.code, details: error.details });
          return;
        }
        if (error instanceof DeferJob) throw error;
        // Its account was deleted meanwhile (the import, its file and its links went with it): nothing is left to do.
        if (!(await imports.find(id))) return;
        if (final) await imports.finish(id, 'failed', { code: 'internal_error', details: {} });
        throw error;
      }
    },
  };
}

/**
 * The import engine for a worker: the import service over the process's clients and repositories,
 * its `run` as the worker's ImportRunner (services/platform.ts hands it to the worker role).
 */
export function importRunner(
  context: Pick<Context, 'config' | 'cache' | 'log' | 'metrics' | 'messageLog' | 'jobs' | 'secrets'> & {
    repositories: Pick<Repositories, 'imports' | 'audit' | 'links' | 'subdomains' | 'teams'> & Partial<Pick<Repositories, 'visits'>>;
  },
): ImportRunner {
  const subdomains = subdomainsService(context);
  const links = linksService({ ...context, subdomains, events: createEventBus(context) });
  const imports = importsService({
    links,
    subdomains,
    repositories: context.repositories,
    jobs: context.jobs,
    secrets: context.secrets,
    allowlist: context.config.webhooks.allowlist,
  });
  return (id, options) => imports.run(id, options);
}
