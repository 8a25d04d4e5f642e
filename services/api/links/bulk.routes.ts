import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { AppError } from '#shared/errors.js';
import { dateTimeField, textField } from '#shared/http/fields.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { BULK_BODY_LIMIT, BULK_MAX_ROWS, BULK_MODES, type BulkLinksService } from './bulk.js';

const tags = ['links'];

/** The CSV media type a bulk upload is sent as: its body reaches the route as text. */
export function acceptCsvBodies(app: FastifyInstance): void {
  app.addContentTypeParser('text/csv', { parseAs: 'string' }, (_request, body, done) => done(null, body));
}

const BULK_DOC =
  `Creates up to ${BULK_MAX_ROWS} links at once, each row exactly as the body of POST /api/v1/links (same fields, rules, ` +
  "scopes and team roles: a row naming a subdomain the caller may not edit is that row's 403 `not_owner`). Every row is " +
  'checked first. `mode` `all_or_none` (default) creates nothing when any row is refused, in one transaction, and answers 422 ' +
  '`validation_error` with the refused rows in `details.errors`; `valid_only` creates the valid rows and answers the refused ones ' +
  "beside them. A row's error names its `row` (1 is the first link; in a CSV, the first line after the header), the first `field` " +
  'named, and `code`, `message` and `details` as the error envelope writes them. A slug used twice in the upload, or taken by a ' +
  "live link, is the later row's 409 `conflict`. `client_id` keeps it idempotent: a row whose client_id an earlier create used " +
  'answers that link in `existing` and creates nothing (a different row under the same client_id is its 409 `conflict`). ' +
  `More than ${BULK_MAX_ROWS} rows answer 413 \`payload_too_large\` before any is checked. ` +
  'As JSON: `{"links": [...], "mode": "valid_only"}`. As CSV (`Content-Type: text/csv`, UTF-8, a byte-order mark allowed): a ' +
  'header row naming the fields (`subdomain,target_url,slug,title,tags,expires_at,max_visits,redirect_type,append_visit_id,client_id`, ' +
  'any order, any subset, and any other field of the create body), one link a line; the mode as `?mode=`. An empty cell leaves its ' +
  'field out; tags are separated by `|`, `,` or spaces; `true`/`false` and numbers are read as such; a structured field (rules, ' +
  "variants) is JSON in its cell. The export's own columns (id, short_url, state, created_at, has_password) are ignored; a password never travels in a file, and a cell the export " +
  "quoted against formulas (a leading `'`) is read without that quote, so GET /api/v1/links/export.csv imports again as is.";

const BulkRowErrorSchema = z
  .object({
    row: z.number().int().min(1),
    field: z.string().nullable(),
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'BulkRowError' });

/**
 * POST /api/v1/links/bulk and GET /api/v1/links/export.csv. `create` is the createLink route:
 * its body schema checks each row and its response schema is each created link's, so a field the
 * single create learns is bulk's too.
 */
export function bulkLinksRoutes(service: BulkLinksService, create: RouteDef): RouteDef[] {
  const LinkSchema = create.response!;
  return [
    defineRoute({
      operationId: 'createLinksBulk',
      method: 'POST',
      path: '/api/v1/links/bulk',
      summary: `Create up to ${BULK_MAX_ROWS} links from JSON or CSV; per-row errors; all_or_none or valid_only`,
      description: BULK_DOC,
      tags,
      auth: { kind: 'scope', scope: 'links:write' },
      bucket: 'api',
      bodyLimit: BULK_BODY_LIMIT,
      query: z.object({ mode: z.enum(BULK_MODES).optional().meta({ description: 'For a CSV upload (a JSON body says `mode` itself). Default all_or_none.' }) }),
      body: z.union([
        z.strictObject({
          links: z.array(z.record(z.string(), z.unknown())).meta({ description: 'Each a body of POST /api/v1/links.' }),
          mode: z.enum(BULK_MODES).optional().meta({ description: 'Default all_or_none.' }),
        }),
        z.string().meta({ description: 'A CSV file (Content-Type text/csv).' }),
      ]),
      response: z.object({
        mode: z.enum(BULK_MODES),
        rows: z.number().int(),
        created: z.array(LinkSchema),
        existing: z.array(LinkSchema).meta({ description: "Links earlier creates made with the rows' client_id: answered, not created again." }),
        errors: z.array(BulkRowErrorSchema),
      }),
      status: 201,
      alsoStatus: 200,
      errors: ['not_found', 'not_owner', 'conflict', 'payload_too_large'],
      handler: async ({ principal, body, query, locale, respond }) => {
        const rows = typeof body === 'string' ? service.parseCsv(body) : body.links;
        const mode = (typeof body === 'string' ? undefined : body.mode) ?? query.mode ?? 'all_or_none';
        const result = await service.create(principal!, rows, mode, locale);
        if (mode === 'all_or_none' && result.errors.length > 0) {
          throw new AppError('validation_error', { rows: result.rows, errors: result.errors });
        }
        if (result.created.length === 0) respond.status(200);
        return result;
      },
    }),
    defineRoute({
      operationId: 'exportLinksCsv',
      method: 'GET',
      path: '/api/v1/links/export.csv',
      summary: "The caller's links as CSV, with the list's filters; imports again through POST /api/v1/links/bulk",
      description:
        "The caller's live links (or one subdomain's the caller belongs to: another's answers 403 `not_owner`), filtered as GET " +
        '/api/v1/links, newest first, all of them (no paging). UTF-8 with a byte-order mark, CRLF lines, a header row: ' +
        'subdomain, slug, target_url, title, tags (`|`-separated), expires_at, max_visits, redirect_type, append_visit_id, client_id, ' +
        'id, short_url, state, created_at, then any other field of a link (structured ones as JSON). A text cell that a spreadsheet ' +
        'would read as a formula (a leading `=`, `+`, `-`, `@`, tab, CR, after any spaces or quotes, as the visit exports test it) is ' +
        'written behind a single quote, which the bulk import removes again.',
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      query: z.object({
        subdomain: z.string().max(63).optional(),
        q: textField(200).optional(),
        tag: textField(32).optional(),
        since: dateTimeField().optional(),
      }),
      response: z.string().meta({ description: 'The CSV file.' }),
      raw: { contentType: 'text/csv', description: 'The links as CSV.' },
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, query, reply }) => {
        const csv = await service.exportCsv(principal!, query);
        reply.header('Content-Disposition', 'attachment; filename="links.csv"');
        return { contentType: 'text/csv; charset=utf-8', body: csv };
      },
    }),
  ];
}
