import { z } from 'zod';
import { integerParam } from '#shared/http/fields.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { CSV_SOURCES, IMPORT_MAX_BYTES } from './imports.formats.js';
import { YOURLS_DUMP_MAX_BYTES } from './sources/yourls-dump.js';
import { IMPORT_CHECKPOINT_ROWS, ROW_STATUSES, type ImportsService, type SourceInput } from './imports.service.js';

const tags = ['imports'];

/** Rows of an import's report one poll shows at most (`rows_limit`). */
export const REPORT_PAGE_MAX = 1_000;
/** Imports a list shows at most (`limit`). */
const LIST_MAX = 100;
/**
 * The largest request body of a new import: the largest file (a YOURLS database export,
 * YOURLS_DUMP_MAX_BYTES) as a JSON string may take up to twice its bytes (a quote or a line break is
 * escaped as two characters), and the other fields. Over it, 413 before the body is read; a file over
 * its source's limit in a smaller body (a CSV export over IMPORT_MAX_BYTES) is 413 as well.
 */
export const IMPORT_BODY_LIMIT = 2 * YOURLS_DUMP_MAX_BYTES + 64 * 1024;

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
    source: z.string().meta({
      description:
        "What is imported: a CSV export (`bitly`, `dub`, `shlink`), an API (`shlink-api`, `kutt`, `yourls-api`) or YOURLS's database export (`yourls`).",
    }),
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
    file_bytes: z.number().int().min(0).meta({ description: 'Bytes of the uploaded file; 0 for an import from an API.' }),
    rows_total: z.number().int().min(0).nullable().meta({ description: "Data rows of the file, or the source's links; null until the worker has read them." }),
    rows_read: z
      .number()
      .int()
      .min(0)
      .meta({ description: `Rows done so far (stored every ${IMPORT_CHECKPOINT_ROWS} rows or each second): progress is rows_read / rows_total.` }),
    counts: countsSchema,
    visits: z
      .object({ added: z.number().int().min(0), existing: z.number().int().min(0), skipped: z.number().int().min(0) })
      .nullable()
      .meta({
        description:
          "Visits of the source's history so far: `added` (in a dry run, that would be), `existing` (imported before: not again) and `skipped` " +
          "(unreadable, e.g. a time out of range). Null for a CSV export, which has no history; zeros for a source without one (Kutt, YOURLS's API).",
      }),
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

const common = {
  subdomain: z.string().max(63).meta({ description: 'One of your subdomains: the links are created there.' }),
  dry_run: z.boolean().default(false).meta({ description: 'Report what would happen and write no link or visit (default false).' }),
};
const sourceUrl = z
  .string()
  .max(2048)
  .meta({
    description:
      'The base URL of your installation (`https://s.example`). Refused, failing the import (`validation_error` naming `url`), when it is not ' +
      'http(s) or reaches a loopback, private or link-local address, unless the operator lists it in WEBHOOK_ALLOWLIST (the SSRF guard of webhooks).',
  });
const history = z
  .boolean()
  .default(true)
  .meta({ description: "Import the source's visits too, with their original times, referrers, agents and countries (default true)." });
const secret = (what: string) =>
  z
    .string()
    .min(1)
    .max(1024)
    .meta({ description: `${what}: sealed with the platform's secrets key while the import waits and runs, deleted when it ends; never shown or logged.` });

/**
 * The body of POST /api/v1/imports: one object per source, told apart by `source` (YOURLS's API by its credential too).
 * CSV exports and YOURLS's database export travel as `file`; the APIs as `url` and their credential.
 */
const StartImportBody = z
  .union([
    z.strictObject({
      source: z.enum(CSV_SOURCES).meta({ description: 'Whose CSV export the file is (docs/importers.md describes each format).' }),
      ...common,
      file: z.string().meta({ description: `The CSV export's text, at most ${IMPORT_MAX_BYTES} bytes of UTF-8.` }),
    }),
    z.strictObject({
      source: z.enum(['shlink-api', 'kutt']).meta({ description: "Shlink's REST API v3 (`shlink-api`, with visits) or Kutt's API v2 (`kutt`, links only)." }),
      ...common,
      url: sourceUrl,
      api_key: secret('The API key (Shlink: `X-Api-Key`; Kutt: `X-API-KEY`)'),
      history,
    }),
    z.strictObject({
      source: z.literal('yourls-api').meta({ description: "YOURLS's API (`yourls-api.php`, links only) with the signature token." }),
      ...common,
      url: sourceUrl,
      signature: secret("The installation's signature token"),
    }),
    z.strictObject({
      source: z.literal('yourls-api').meta({ description: "YOURLS's API (`yourls-api.php`, links only) with a user name and password." }),
      ...common,
      url: sourceUrl,
      username: z.string().min(1).max(255),
      password: secret('The password'),
    }),
    z.strictObject({
      source: z.literal('yourls').meta({ description: 'A YOURLS database export: the SQL of `yourls_url` and `yourls_log` (mysqldump or phpMyAdmin).' }),
      ...common,
      file: z.string().meta({
        description: `The SQL text, at most ${YOURLS_DUMP_MAX_BYTES} bytes of UTF-8 (a larger installation imports yourls_log in ranges: docs/importers.md).`,
      }),
      prefix: z
        .string()
        .regex(/^[A-Za-z0-9_]{0,64}$/)
        .default('yourls_')
        .meta({ description: "The installation's YOURLS_DB_PREFIX (default `yourls_`)." }),
      history,
    }),
  ])
  .meta({ id: 'StartImport' });

/** Import of other shorteners' CSV exports as jobs (issue 39): start one, watch it, list them. */
export function importsRoutes(service: ImportsService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'startImport',
      method: 'POST',
      path: '/api/v1/imports',
      summary: "Import another shortener's links (and visits) into one of the caller's subdomains, as a job (links:write)",
      description:
        'The file travels as a JSON string (`file`, UTF-8, its text as exported) beside `source`, `subdomain` and `dry_run`. The answer is 202 ' +
        'with the import (`status` `queued`): the worker role imports it in the background; poll GET /api/v1/imports/{id} for its progress ' +
        `and report. Checked before anything is stored: the subdomain (another owner's is 403 \`not_owner\`, an unknown one 404) and the file's size (a CSV export over ${IMPORT_MAX_BYTES} bytes, a database export over ${YOURLS_DUMP_MAX_BYTES}: 413 ` +
        "`payload_too_large`). The job reads the file first: one that is not CSV, or lacks the source's slug or target column, fails the import " +
        '(`status` `failed`, `error.code` `validation_error`) before any row is imported. Rows are ' +
        'imported in file order; each gets one status: `created`, `would_create` (dry run), `exists` (an earlier import of the source into ' +
        'the subdomain made it: nothing is written), `conflict` (`slug_taken`: another link has the slug; it is never overwritten), ' +
        '`refused` (`slug_invalid`, `slug_reserved`, `target_invalid`, `target_is_platform`) or `unreadable` (`slug_missing`, ' +
        '`target_missing`, `created_at_invalid`). Importing the same file again creates nothing; an import interrupted by a restart ' +
        'goes on from its last checkpoint (a row imported after it reports `exists`). Recorded in the audit log (`import.start`). ' +
        'The other sources (docs/importers.md): `shlink-api` (Shlink REST v3: `url`, `api_key`, with visits), `kutt` (API v2: `url`, `api_key`), ' +
        "`yourls-api` (`url` and `signature`, or `username` and `password`) and `yourls` (the database export's SQL as `file`, with its clicks); " +
        "`history: false` leaves the visits out. Their rows are the links in the source's order (the first is line 2); `visits` counts the " +
        'visits. The job fails the import when the source refuses the credential (`validation_error` naming it), does not answer ' +
        "(`service_unavailable`) or when `url` reaches an internal address the operator's WEBHOOK_ALLOWLIST does not admit (`validation_error`, " +
        '`details.url`). Credentials are stored sealed with the secrets key until the import ends, then deleted; no answer shows them.',
      tags,
      auth: { kind: 'scope', scope: 'links:write' },
      bucket: 'api',
      bodyLimit: IMPORT_BODY_LIMIT,
      body: StartImportBody,
      status: 202,
      response: ImportSchema,
      links: {
        getImport: { operationId: 'getImport', parameters: { id: '$response.body#/data/id' }, description: 'Poll the import.' },
      },
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, body, request }) => {
        const at = { id: request.id, ip: request.ip };
        let from: SourceInput;
        if ('api_key' in body) from = { source: body.source, url: body.url, apiKey: body.api_key };
        else if ('signature' in body) from = { source: 'yourls-api', url: body.url, signature: body.signature };
        else if ('password' in body) from = { source: 'yourls-api', url: body.url, username: body.username, password: body.password };
        else if (body.source === 'yourls') from = { source: 'yourls', dump: body.file, prefix: body.prefix };
        else return service.start(principal!, { source: body.source, subdomain: body.subdomain, file: body.file, dryRun: body.dry_run }, at);
        const history = 'history' in body ? body.history : false;
        return service.startSource(principal!, { from, subdomain: body.subdomain, dryRun: body.dry_run, history }, at);
      },
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
