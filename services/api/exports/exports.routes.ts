import { z } from 'zod';
import { successSchema } from '#shared/http/envelope.js';
import { IN_FLIGHT_LIMITS, type InFlightGuard } from '#shared/http/in-flight.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { VISIT_FILTER_QUERY } from '../visits/visits.routes.js';
import { EXPORT_FORMATS, type ExportsService, PDF_ROW_CAP, SLICE_ROWS, XLSX_SHEET_ROWS } from './exports.service.js';

/**
 * `Content-Disposition` of a download. The name is made of checked ids already; reducing it to
 * characters that are safe in a quoted header value and in any file system (no quote, slash, CR/LF
 * or non-ASCII, so no `filename*` either) keeps it so whatever a later change puts in it.
 */
const attachment = (filename: string) => `attachment; filename="${filename.replace(/[^A-Za-z0-9._-]/g, '_')}"`;

/** Exports of an owner's visits: CSV, JSON, XLSX, PDF, streamed. */
export function exportsRoutes(service: ExportsService, inFlight: InFlightGuard): RouteDef[] {
  return [
    defineRoute({
      operationId: 'exportVisits',
      method: 'GET',
      path: '/api/v1/export',
      summary: "Export the caller's visits as CSV, JSON, XLSX or a PDF report (stats:read), streamed",
      description:
        'The visit-list filters (`subdomain`, `link_id`, `since`, `until`, `country`, `is_bot`, `kind`, `referrer_host`, `browser`, `os`, `device`, `utm_source`, `utm_medium`, `utm_campaign`), oldest first, every column of the ' +
        "owner's visit (times ISO 8601 UTC, flags true/false), complete: the privacy policy filters public reads, not the owner's exports. " +
        `Streamed with \`Content-Disposition: attachment\` (the file name is \`visits-<subdomain|link|user>-<name, link id or all>-<yyyymmdd>.<format>\`, ASCII letters, digits, \`.\`, \`_\` and \`-\` only): rows are read in time slices of about ${SLICE_ROWS}, so memory stays flat whatever ` +
        'the size. `csv`: UTF-8 with a byte-order mark (so that Excel and LibreOffice read it as UTF-8; `bom=false` leaves it out), a header ' +
        'row, then one row per visit; every text cell double-quoted, and a text cell that starts like a formula (`=`, `+`, `-`, `@`, their ' +
        "full-width forms, NUL, tab or CR, after any whitespace or quotes) prefixed with a single quote, as OWASP's CSV-injection guidance says, " +
        'so that a spreadsheet shows it as text (the quote stays visible); numbers of our own (`latitude`, `longitude`, `asn`), times and flags ' +
        'as they are. `json`: the envelope, `data.visits` streamed and `meta` (with `count`) at the end, the values as stored. ' +
        `\`xlsx\`: a sheet of up to ${XLSX_SHEET_ROWS} rows, continued on the next; text is stored as string cells, never formulas, as stored. \`pdf\`: a report of the period (the filters' ` +
        "subdomain, link or all the caller's subdomains, narrowed by the other filters as the rows are): totals, a chart of visits over time, top breakdowns, then the first " +
        `${PDF_ROW_CAP} visits, in embedded Unicode fonts (Latin, Greek, Cyrillic, Hebrew, Arabic shaped right to left, Chinese, Japanese kana; a character no font draws, such as an emoji or Korean Hangul, ` +
        "shows as �). CSV, JSON and XLSX answers carry `X-Export-Rows`: the rows stored in the export's range when it started, counted before " +
        'the first byte, for a progress display (a streamed answer has no Content-Length). It bounds the rows sent: a visit whose versions are ' +
        'not merged yet counts once per version, and visits stored while the export streams, with later times, are not in it; the one ' +
        'exception is a visit stored out of order (older than the newest then stored), which comes on top. Every export is recorded in the audit log. ' +
        "Another owner's subdomain or link answers 403 `not_owner`. " +
        'A subdomain given to a team (or one of its links) is exported by its members from viewer up, with their current role; a removed member is refused from the next request. ' +
        `An account runs at most ${IN_FLIGHT_LIMITS.export.max} XLSX or PDF exports at once (per API process, until each answer ends): one more ` +
        'answers 429 `rate_limited` (`details.reason` `too_many_in_flight`) with `Retry-After`.',
      tags: ['stats'],
      auth: { kind: 'scope', scope: 'stats:read' },
      bucket: 'api',
      query: z.object({
        format: z.enum(EXPORT_FORMATS),
        ...VISIT_FILTER_QUERY,
        link_id: VISIT_FILTER_QUERY.link_id.meta({ example: 'l_3q2-Xb9PzR1c_aKm' }),
        bom: z
          .enum(['true', 'false'])
          .transform((value) => value === 'true')
          .optional()
          .meta({
            description:
              'CSV only: start with the UTF-8 byte-order mark (`true`, the default), which Excel and LibreOffice need to read the file as UTF-8 rather than their legacy code page; `false` for plain UTF-8.',
          }),
      }),
      response: z.string().meta({ description: 'The file.' }),
      raw: {
        contentType: ['text/csv', 'application/json', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'application/pdf'],
        description:
          'The export, as an attachment. `X-Export-Rows` (CSV, JSON, XLSX): the rows stored when it started, an upper bound, for progress. ' +
          "`X-Raw-Visits-Since` (every format; in the file too: the JSON export's `meta.raw_visits_since`, the XLSX export's last sheet `About`, a line under the PDF's period): from when raw visits exist, as the visit " +
          "list's `meta.raw_visits_since` says it; absent (null) when none has been deleted for age.",
        schemas: {
          'application/json': successSchema(z.object({ visits: z.array(z.record(z.string(), z.unknown())) })).meta({
            description:
              'The envelope, with the visits (the columns of GET /api/v1/visits) in data.visits, their number in meta.count and meta.raw_visits_since (see X-Raw-Visits-Since).',
          }),
        },
      },
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, query, request, reply }) => {
        const { format, bom, ...filters } = query;
        // XLSX and PDF are built on the event loop as they stream: an account holds a slot until its answer ends.
        const release = format === 'xlsx' || format === 'pdf' ? inFlight.acquire('export', principal!.userId) : undefined;
        if (release) reply.raw.once('close', release);
        let started;
        try {
          started = await service.start(principal!, format, filters, { id: request.id, ip: request.ip }, { bom });
        } catch (error) {
          release?.();
          throw error;
        }
        if (release) started.body.once('close', release);
        reply.header('Content-Disposition', attachment(started.filename));
        reply.header('Cache-Control', 'no-store');
        if (started.rows !== undefined) reply.header('X-Export-Rows', String(started.rows));
        if (started.rawVisitsSince) reply.header('X-Raw-Visits-Since', started.rawVisitsSince);
        return { contentType: started.contentType, body: started.body };
      },
    }),
  ];
}
