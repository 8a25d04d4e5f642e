import { z } from 'zod';
import { integerParam } from '#shared/http/fields.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { CSV_SOURCES, IMPORT_MAX_BYTES } from './imports.formats.js';
import { IMPORT_CHECKPOINT_ROWS, ROW_STATUSES, type ImportsService } from './imports.service.js';

const tags = ['imports'];

/** Rows of an import's report one poll shows at most (`rows_limit`). */
export const REPORT_PAGE_MAX = 1_000;
/** Imports a list shows at most (`limit`). */
const LIST_MAX = 100;
/**
 * The largest request body of a new import: the file as a JSON string may take up to twice its bytes
 * (a quote or a line break is escaped as two characters), and the other fields. Over it, 413 before
 * the body is read; a file over IMPORT_MAX_BYTES in a smaller body is 413 as well.
 */
export const IMPORT_BODY_LIMIT = 2 * IMPORT_MAX_BYTES + 64 * 1024;

const ImportIdParam = z.object({
  id: z
    .string()
    .regex(/^imp_[A-Za-z0-9_-]{16}$/, 'is not an import id')
    .meta({ description: 'The import id (`imp_` and 16 characters).', example: 'imp_3q2-Xb9PzR1c_aKm' }),
});

const countsSchema = z
  .object(Object.fromEntries(ROW_STATUSES.map((status) => [status, z.number().int().min(0)])) as Record<(typeof ROW_STATUSES)[number], z.ZodNumber>)
  .meta({ description: 'Rows of the report per status so far (see the row statuses in the description of POST /api/v1/imports).' });

const ImportSchema = z
  .object({
    id: z.string(),
    subdomain: z.string(),
    source: z.string().meta({ description: 'Whose export the file is (`bitly`, `dub`, `shlink`).' }),
    dry_run: z.boolean(),
    status: z.enum(['queued', 'running', 'completed', 'failed']).meta({
      description:
        '`queued` until the worker takes it, `running`, then `completed` (every row has its report) or `failed` (`error` says why: ' +
        "a file that is not CSV or not the source's export is `validation_error`; a subdomain no longer yours `not_owner` or `not_found`).",
    }),
    error: z
      .object({ code: z.string(), details: z.record(z.string(), z.unknown()) })
      .nullable()
      .meta({ description: 'Why a failed import failed: an error code of the catalogue and its details; null otherwise.' }),
    file_bytes: z.number().int().min(0),
    rows_total: z.number().int().min(0).nullable().meta({ description: 'Data rows of the file; null until the worker has read it.' }),
    rows_read: z
      .number()
      .int()
      .min(0)
      .meta({ description: `Rows done so far (stored every ${IMPORT_CHECKPOINT_ROWS} rows or each second): progress is rows_read / rows_total.` }),
    counts: countsSchema,
    created_at: z.iso.datetime(),
    started_at: z.iso.datetime().nullable(),
    finished_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Import' });

const ReportRowSchema = z
  .object({
    line: z.number().int().min(2).meta({ description: 'The row in the file (the header is 1).' }),
    status: z.enum(ROW_STATUSES),
    slug: z.string().nullable(),
    reason: z.string().nullable().meta({ description: 'Why a row is `conflict`, `refused` or `unreadable` (docs/importers.md lists them).' }),
    link_id: z.string().nullable().meta({ description: 'The link a `created` or `exists` row stands for.' }),
  })
  .meta({ id: 'ImportReportRow' });

/** Import of other shorteners' CSV exports as jobs (issue 39): start one, watch it, list them. */
export function importsRoutes(service: ImportsService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'startImport',
      method: 'POST',
      path: '/api/v1/imports',
      summary: "Import a Bitly, Dub or Shlink CSV export into one of the caller's subdomains, as a job (links:write)",
      description:
        'The file travels as a JSON string (`file`, UTF-8, its text as exported) beside `source`, `subdomain` and `dry_run`. The answer is 202 ' +
        'with the import (`status` `queued`): the worker role imports it in the background; poll GET /api/v1/imports/{id} for its progress ' +
        `and report. Checked before anything is stored: the subdomain (another owner's is 403 \`not_owner\`, an unknown one 404) and the file's size (over ${IMPORT_MAX_BYTES} bytes: 413 ` +
        "`payload_too_large`). The job reads the file first: one that is not CSV, or lacks the source's slug or target column, fails the import " +
        '(`status` `failed`, `error.code` `validation_error`) before any row is imported. Rows are ' +
        'imported in file order; each gets one status: `created`, `would_create` (dry run), `exists` (an earlier import of the source into ' +
        'the subdomain made it: nothing is written), `conflict` (`slug_taken`: another link has the slug; it is never overwritten), ' +
        '`refused` (`slug_invalid`, `slug_reserved`, `target_invalid`, `target_is_platform`) or `unreadable` (`slug_missing`, ' +
        '`target_missing`, `created_at_invalid`). Importing the same file again creates nothing; an import interrupted by a restart ' +
        'goes on from its last checkpoint (a row imported after it reports `exists`). Recorded in the audit log (`import.start`).',
      tags,
      auth: { kind: 'scope', scope: 'links:write' },
      bucket: 'api',
      bodyLimit: IMPORT_BODY_LIMIT,
      body: z.strictObject({
        source: z.enum(CSV_SOURCES).meta({ description: 'Whose export the file is (docs/importers.md describes each format).' }),
        subdomain: z.string().max(63).meta({ description: 'One of your subdomains: the links are created there.' }),
        dry_run: z.boolean().default(false).meta({ description: 'Report what would happen and write no link (default false).' }),
        file: z.string().meta({ description: `The CSV export's text, at most ${IMPORT_MAX_BYTES} bytes of UTF-8.` }),
      }),
      status: 202,
      response: ImportSchema,
      links: {
        getImport: { operationId: 'getImport', parameters: { id: '$response.body#/data/id' }, description: 'Poll the import.' },
      },
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, body, request }) =>
        service.start(
          principal!,
          { source: body.source, subdomain: body.subdomain, file: body.file, dryRun: body.dry_run },
          { id: request.id, ip: request.ip },
        ),
    }),
    defineRoute({
      operationId: 'getImport',
      method: 'GET',
      path: '/api/v1/imports/{id}',
      summary: 'An import: its status, progress and a page of its per-row report (links:read)',
      description:
        'The import and `rows`: its report in file order, up to `rows_limit` rows after line `rows_after` (of one `rows_status`, or all); ' +
        '`next_rows_after` is the `rows_after` of the next page, null when no stored row follows (a running import stores more). ' +
        "Another owner's import is 404, as an unknown one.",
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      params: ImportIdParam,
      query: z.object({
        rows_after: integerParam(0, 100_000_000).default(0).meta({ description: 'Rows after this line of the file (default 0: from the first).' }),
        rows_limit: integerParam(0, REPORT_PAGE_MAX)
          .default(100)
          .meta({ description: `Rows of the report in this answer, 0 to ${REPORT_PAGE_MAX}; default 100.` }),
        rows_status: z.enum(ROW_STATUSES).optional().meta({ description: 'Only the rows of this status.' }),
      }),
      response: ImportSchema.extend({
        rows: z.array(ReportRowSchema),
        next_rows_after: z.number().int().nullable(),
      }),
      errors: ['not_found'],
      handler: async ({ principal, params, query }) => {
        const view = await service.get(principal!, params.id);
        const rows =
          query.rows_limit === 0
            ? []
            : await service.rows(principal!, params.id, { after: query.rows_after, limit: query.rows_limit, status: query.rows_status });
        const full = rows.length === query.rows_limit && rows.length > 0;
        return { ...view, rows, next_rows_after: full ? rows[rows.length - 1]!.line : null };
      },
    }),
    defineRoute({
      operationId: 'listImports',
      method: 'GET',
      path: '/api/v1/imports',
      summary: "The caller's imports, newest first (links:read)",
      description: `Without their reports (GET /api/v1/imports/{id} has them). At most \`limit\` (1 to ${LIST_MAX}, default 20).`,
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      query: z.object({
        limit: integerParam(1, LIST_MAX)
          .default(20)
          .meta({ description: `Imports in the answer, 1 to ${LIST_MAX}; default 20.` }),
      }),
      response: z.object({ imports: z.array(ImportSchema) }),
      handler: async ({ principal, query }) => ({ imports: await service.list(principal!, query.limit) }),
    }),
  ];
}
