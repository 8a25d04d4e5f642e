import { once } from 'node:events';
import { PassThrough, Readable, type Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import ExcelJS from 'exceljs';
import PDFDocument from 'pdfkit';
import { OWNER_VISIT_COLUMNS, type VisitFilters } from '#shared/analytics/visits.repository.js';
import { requireScope, type Principal } from '#shared/http/auth.js';
import type { Repositories } from '#services/repositories.js';
import { reportFiltersOf, type Report, type StatsScope, type StatsService } from '../stats/stats.service.js';
import { unicodeText } from './pdf-fonts.js';

export const EXPORT_FORMATS = ['csv', 'json', 'xlsx', 'pdf'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * Rows per ClickHouse read. chDB answers a query whole, and handling a result takes several times
 * its size (about 6 MB of CSV here), so resident memory grows with the slice; each read also has a
 * fixed cost (every part of `visits` yields at least a granule). Measured on 10 million visits, a
 * 1 000 000-row CSV export: 10 000 rows 205 000 rows/s and 90–105 MB, 15 000 about 245 000 rows/s
 * and 110–140 MB, 20 000 about 270 000 rows/s and 145–200 MB, 50 000 about 360 000 rows/s and 290–355 MB.
 */
export const SLICE_ROWS = 15_000;
/** Rows of a worksheet: the format's 1 048 576 less the header row; beyond, the next sheet. */
export const XLSX_SHEET_ROWS = 1_048_575;
/** Visit rows a PDF report lists after its figures (a person reads the report, the CSV holds them all). */
export const PDF_ROW_CAP = 1_000;
/** Uncompressed XML an XLSX export lets the zip hold before it writes more rows. */
const XLSX_BACKLOG_BYTES = 4 * 1024 * 1024;
/** Rows an XLSX export writes between two looks at the zip's backlog. */
const XLSX_CHECK_ROWS = 1_000;
/** How often an XLSX export looks whether the zip has started on a new sheet. */
const XLSX_ATTACH_POLL_MS = 10;

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pdf: 'application/pdf',
};

/**
 * Where a sheet's rows wait for the zip. exceljs (4.4) writes a sheet's XML into archiver's input
 * for the entry (the sheet stream's `pipes`, a readable-stream PassThrough) without heeding
 * write()'s answer, so this buffer, not the response, is where a fast writer piles up rows (1
 * million rows raised resident memory by 1.5 GB with a quick reader). Undefined until archiver has
 * started on the sheet (sheets are zipped one after the other).
 */
function zipBacklog(sheet: ExcelJS.Worksheet): Writable | undefined {
  return (sheet as unknown as { stream: { pipes: Writable[] } }).stream.pipes[0];
}
const backlogBytes = (input: Writable) => (input as unknown as { _writableState: { length: number } })._writableState.length;

/**
 * Writes batches of rows into an XLSX workbook stream with exceljs's streaming writer, a new sheet
 * past `sheetRows`. Every XLSX_CHECK_ROWS rows the writer waits while the zip holds more than
 * XLSX_BACKLOG_BYTES of uncompressed XML (the zip waits on the response in turn), and the next
 * batch is pulled only then: memory stays flat however large the export and however slow the reader.
 * Exported for the tests.
 */
export function xlsxWorkbook(
  header: readonly string[],
  batches: AsyncIterable<unknown[][]>,
  sheetRows = XLSX_SHEET_ROWS,
  rawVisitsSince: string | null = null,
): Readable {
  const out = new PassThrough();
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: false, useSharedStrings: false });
  // A reader that goes away ends the writer's waits (and the batches) instead of leaving them pending.
  const gone = new AbortController();
  out.once('close', () => gone.abort());
  const caughtUp = async (sheet: ExcelJS.Worksheet) => {
    for (;;) {
      const input = zipBacklog(sheet);
      if (input === undefined) await sleep(XLSX_ATTACH_POLL_MS, undefined, { signal: gone.signal });
      else if (backlogBytes(input) > XLSX_BACKLOG_BYTES) await once(input, 'drain', { signal: gone.signal });
      else return;
    }
  };
  (async () => {
    let sheet: ExcelJS.Worksheet | undefined;
    let sheets = 0;
    let rowsInSheet = 0;
    let sinceCheck = 0;
    const newSheet = async () => {
      sheet?.commit();
      sheets += 1;
      sheet = workbook.addWorksheet(`Visits ${sheets}`);
      sheet.addRow([...header]).commit();
      rowsInSheet = 0;
      await caughtUp(sheet);
    };
    await newSheet();
    for await (const batch of batches) {
      for (const row of batch) {
        if (rowsInSheet === sheetRows) await newSheet();
        sheet!.addRow(row).commit();
        rowsInSheet += 1;
        if (++sinceCheck === XLSX_CHECK_ROWS) {
          sinceCheck = 0;
          await caughtUp(sheet!);
        }
      }
      await caughtUp(sheet!);
    }
    sheet!.commit();
    // A saved file keeps no header: a last sheet says from when raw visits exist (older ones were deleted for age).
    if (rawVisitsSince !== null) {
      const about = workbook.addWorksheet('About');
      about.addRow(['raw_visits_since', rawVisitsSince]).commit();
      about.addRow(['Raw visits before this time were deleted for age (visits_retention_days); the statistics still count them.']).commit();
      about.commit();
    }
    await workbook.commit();
  })().catch((error: unknown) => out.destroy(error as Error));
  return out;
}

/**
 * The UTF-8 byte-order mark a CSV export starts with unless asked not to: without it, Excel and
 * LibreOffice read a CSV in the system's legacy code page (Windows-1252 in the West), so every
 * non-ASCII character came out as mojibake.
 */
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

const NEWLINE = Buffer.from('\n');
const COMMA_NEWLINE = Buffer.from(',\n');

/**
 * Turns JSONEachRow bytes (one object a line) into the items of a JSON array, chunk by chunk as
 * they come (a chunk may end inside a row): every row but the first starts with a comma, and the
 * rows are counted. JSON escapes newlines inside strings, so a newline byte ends a row.
 */
export class JsonArrayItems {
  count = 0;
  private inRow = false;

  /** The array's bytes for this chunk. */
  of(chunk: Buffer): Buffer {
    const parts: Buffer[] = [];
    let from = 0;
    while (from < chunk.length) {
      if (!this.inRow) {
        parts.push(this.count === 0 ? NEWLINE : COMMA_NEWLINE);
        this.inRow = true;
      }
      const end = chunk.indexOf(0x0a, from);
      if (end < 0) {
        parts.push(chunk.subarray(from));
        break;
      }
      parts.push(chunk.subarray(from, end));
      this.count += 1;
      this.inRow = false;
      from = end + 1;
    }
    return Buffer.concat(parts);
  }
}

interface Scoped {
  ownerId: string;
  filters: VisitFilters;
  /** What the figures of a PDF report cover: the subdomain, the link, or all of the owner's visits. */
  scope: StatsScope;
  scopeId: string;
}

export type ExportsService = ReturnType<typeof exportsService>;

/**
 * Exports of an owner's visits (stats:read): complete (no policy filtering), audited, streamed.
 * Rows are read oldest first in time slices of about SLICE_ROWS (planned from a per-minute count),
 * so memory stays flat whatever the size in both storage modes; CSV and JSON slices are formatted
 * by ClickHouse and passed on as they come.
 */
export function exportsService({
  repositories,
  stats,
  rawVisitsSinceOf = async () => null,
}: {
  repositories: Pick<Repositories, 'exports' | 'audit'>;
  stats: StatsService;
  /** Since when the raw visits of an owner's subdomains (or of one) are all kept: SubdomainsService.rawVisitsSinceOf. */
  rawVisitsSinceOf?: (ownerId: string, subdomain?: string) => Promise<Date | null>;
}) {
  const { exports: visits, audit: audits } = repositories;

  /**
   * Time slices [from, to) (ms) of about SLICE_ROWS rows each, oldest first, and the rows stored in
   * them. A visit's versions share its time, so one slice holds them all; a visit with versions not
   * merged yet counts once per version (exact once merged). The last slice ends just after the
   * newest visit stored, not at the end of its minute: visits stored while the export streams
   * carry later times (the edge stamps them) and stay out, so `rows` bounds what is sent. Only a
   * visit stored out of order (older than the newest stored, written after the plan) can come on top.
   */
  const planOf = async (scoped: Scoped): Promise<{ slices: [number, number][]; rows: number }> => {
    const minutes = await visits.minuteCounts(scoped);
    const slices: [number, number][] = [];
    let start: number | undefined;
    let rows = 0;
    let total = 0;
    for (const { m, n } of minutes) {
      start ??= Number(m) * 1000;
      rows += Number(n);
      total += Number(n);
      if (rows >= SLICE_ROWS) {
        slices.push([start, Number(m) * 1000 + 60_000]);
        start = undefined;
        rows = 0;
      }
    }
    const newest = minutes.at(-1);
    if (newest !== undefined) {
      if (start !== undefined) slices.push([start, Number(newest.last) + 1]);
      else slices.at(-1)![1] = Number(newest.last) + 1;
    }
    return { slices, rows: total };
  };

  /** The CSV export: the byte-order mark unless left out, a header row, then every slice as ClickHouse formats it. */
  async function* csvRows(scoped: Scoped, slices: [number, number][], bom: boolean): AsyncGenerator<Buffer | string> {
    if (bom) yield UTF8_BOM;
    if (slices.length === 0) yield `${OWNER_VISIT_COLUMNS.join(',')}\n`;
    for (const [index, slice] of slices.entries()) yield* visits.sliceBytes(scoped, slice, index === 0 ? 'CSVWithNames' : 'CSV');
  }

  /** The JSON export is one envelope: `data.visits` streamed, `meta` (with the count) at the end. */
  async function* jsonRows(
    scoped: Scoped,
    slices: [number, number][],
    requestId: string,
    started: number,
    rawSince: string | null,
  ): AsyncGenerator<Buffer | string> {
    yield '{"ok":true,"data":{"visits":[';
    const items = new JsonArrayItems();
    for (const slice of slices) {
      for await (const chunk of visits.sliceBytes(scoped, slice, 'JSONEachRow')) yield items.of(chunk);
    }
    const meta = {
      request_id: requestId,
      server_time_utc: new Date().toISOString(),
      took_ms: Math.round(performance.now() - started),
      count: items.count,
      raw_visits_since: rawSince,
    };
    yield `\n]},"meta":${JSON.stringify(meta)}}\n`;
  }

  /** An XLSX export: the rows of every slice, parsed, pulled only as fast as the workbook takes them. */
  async function* xlsxBatches(scoped: Scoped, slices: [number, number][]): AsyncGenerator<unknown[][]> {
    for (const slice of slices) {
      const text = (await visits.sliceText(scoped, slice, OWNER_VISIT_COLUMNS)).trimEnd();
      if (text !== '') yield text.split('\n').map((line) => JSON.parse(line) as unknown[]);
    }
  }

  /** A PDF report: period, totals, a chart of visits over time, top breakdowns, then up to PDF_ROW_CAP rows. */
  const pdfStream = (scoped: Scoped, report: Report, label: string, rawSince: string | null): Readable => {
    const doc = new PDFDocument({ size: 'A4', margin: 48, info: { Title: `Visits report: ${label}` } });
    // Every string goes through the Unicode writer: pdfkit's standard Helvetica draws WinAnsi only.
    const write = unicodeText(doc);
    (async () => {
      doc.fontSize(18);
      write(`Visits report: ${label}`);
      doc.moveDown(0.3).fontSize(10).fillColor('#555');
      write(`Period: ${report.range.since} to ${report.range.until} (${report.range.granularity}s in ${report.range.tz})`);
      // The list below holds raw visits only; the figures count the ones deleted for age too.
      if (rawSince !== null) write(`Raw visits kept since ${rawSince}: older visits are counted in the figures, not listed.`);
      doc.moveDown().fillColor('#000').fontSize(12);
      const { totals } = report;
      write(`Visits: ${totals.visits}    Unique visitors: ${totals.unique_visitors}    Bots: ${totals.bots}    Attack attempts: ${totals.attacks}`);
      doc.moveDown();
      // Visits over time: one bar per period, scaled to the busiest.
      const chart = { x: doc.page.margins.left, y: doc.y + 10, width: doc.page.width - doc.page.margins.left - doc.page.margins.right, height: 140 };
      const peak = Math.max(1, ...report.series.map((point) => point.visits));
      const step = chart.width / Math.max(1, report.series.length);
      doc.fontSize(9);
      write(`Visits per ${report.range.granularity} (peak ${peak})`, {}, { x: chart.x, y: chart.y - 12 });
      doc.rect(chart.x, chart.y, chart.width, chart.height).lineWidth(0.5).stroke('#999');
      for (const [index, point] of report.series.entries()) {
        const height = (point.visits / peak) * (chart.height - 4);
        if (height > 0) doc.rect(chart.x + index * step + step * 0.1, chart.y + chart.height - height, Math.max(0.5, step * 0.8), height).fill('#3b6fd8');
      }
      doc.fillColor('#000');
      doc.y = chart.y + chart.height + 16;
      doc.x = chart.x;
      doc.fontSize(12);
      write('Top breakdowns');
      doc.fontSize(9);
      for (const [dimension, items] of Object.entries(report.top)) {
        if (!items || items.length === 0) continue;
        const shown = items.map(
          (item) => `${dimension === 'link' ? (item.slug ?? item.value) : item.value || '(none)'}${item.country ? ` (${item.country})` : ''}: ${item.visits}`,
        );
        doc.moveDown(0.3);
        write(`${dimension}: ${shown.join(', ')}`, { width: chart.width });
      }
      doc.addPage().fontSize(12);
      write(`Visits (oldest first, at most ${PDF_ROW_CAP}; the CSV, JSON and XLSX exports hold them all)`);
      doc.moveDown(0.5).fontSize(8);
      const columns = ['ts', 'kind', 'slug', 'ip_public', 'country', 'city', 'browser', 'os', 'referrer_host'] as const;
      write(columns.join(' | '));
      let listed = 0;
      for (const slice of (await planOf(scoped)).slices) {
        if (listed >= PDF_ROW_CAP) break;
        const text = (await visits.sliceText(scoped, slice, columns)).trimEnd();
        if (text === '') continue;
        for (const line of text.split('\n')) {
          if (listed >= PDF_ROW_CAP) break;
          // One line a visit: a control character (a tab or line break a visitor sent) is a space here.
          const values = (JSON.parse(line) as (string | number | null)[]).map((value) => String(value ?? '').replace(/\p{Cc}/gu, ' '));
          write(values.join(' | '), { width: chart.width, lineBreak: false });
          listed += 1;
        }
      }
      doc.end();
    })().catch((error: unknown) => doc.destroy(error as Error));
    return doc;
  };

  /** Whose rows an export reads, after the ownership checks (the statistics' own), and what its figures cover. */
  const scopedOf = async (principal: Principal, filters: VisitFilters): Promise<Scoped> => {
    if (filters.subdomain !== undefined) {
      const target = await stats.targetOf(principal, 'subdomain', filters.subdomain);
      const scoped: Scoped = { ownerId: target.ownerId, filters: { ...filters, subdomain: target.id }, scope: 'subdomain', scopeId: target.id };
      if (filters.link_id !== undefined) {
        // The link is checked too: another owner's link is 403 not_owner whatever subdomain is named.
        await stats.targetOf(principal, 'link', filters.link_id);
        Object.assign(scoped, { scope: 'link', scopeId: filters.link_id });
      }
      return scoped;
    }
    if (filters.link_id !== undefined) {
      const target = await stats.targetOf(principal, 'link', filters.link_id);
      // The link's subdomain leads the sort key of `visits`: with it, a slice reads its own time range only.
      return { ownerId: target.ownerId, filters: { ...filters, subdomain: target.subdomain }, scope: 'link', scopeId: target.id };
    }
    return { ownerId: principal.userId, filters, scope: 'user', scopeId: principal.userId };
  };

  return {
    /**
     * Starts an export: checks and audits it, and answers the body stream with its headers. CSV,
     * JSON and XLSX are planned before the answer starts, so `rows` (the plan's upper bound of the
     * rows it will hold) can go out as a header for progress; the PDF lists a capped sample, so none.
     */
    async start(principal: Principal, format: ExportFormat, filters: VisitFilters, request: { id: string; ip: string }, { bom = true } = {}) {
      requireScope(principal, 'stats:read');
      const scoped = await scopedOf(principal, filters);
      const started = performance.now();
      await audits.insert({
        action: 'export',
        actorId: principal.userId,
        target: `${scoped.scope}:${scoped.scopeId}`,
        ip: request.ip,
        details: { format, filters },
      });
      const stamp = new Date().toISOString().slice(0, 10).replaceAll('-', '');
      const filename = `visits-${scoped.scope}-${scoped.scope === 'user' ? 'all' : scoped.scopeId}-${stamp}.${format}`;
      const rawSince = (await rawVisitsSinceOf(scoped.ownerId, scoped.filters.subdomain))?.toISOString() ?? null;
      let body: Readable;
      let rows: number | undefined;
      if (format !== 'pdf') {
        const plan = await planOf(scoped);
        rows = plan.rows;
        // Byte streams, not object streams: an object stream reads up to 16 slices ahead of the socket.
        if (format === 'csv') body = Readable.from(csvRows(scoped, plan.slices, bom), { objectMode: false });
        else if (format === 'json') body = Readable.from(jsonRows(scoped, plan.slices, request.id, started, rawSince), { objectMode: false });
        else body = xlsxWorkbook(OWNER_VISIT_COLUMNS, xlsxBatches(scoped, plan.slices), XLSX_SHEET_ROWS, rawSince);
      } else {
        // The report's figures narrowed as the rows would be (its link is its scope already).
        const report = await stats.ownerReport(principal, scoped.scope, scoped.scope === 'user' ? 'me' : scoped.scopeId, {
          ...reportFiltersOf({ ...filters, link_id: undefined }),
          since: filters.since,
          until: filters.until,
          granularity: filters.since && filters.until && Date.parse(filters.until) - Date.parse(filters.since) <= 3 * 86_400_000 ? 'hour' : 'day',
        });
        body = pdfStream(scoped, report, scoped.scope === 'user' ? 'all subdomains' : `${scoped.scope} ${scoped.scopeId}`, rawSince);
      }
      return { body, contentType: CONTENT_TYPES[format], filename, rows, rawVisitsSince: rawSince };
    },
  };
}
