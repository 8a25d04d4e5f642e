// Exports as third-party readers read them: LibreOffice (headless) opening the CSV and the XLSX,
// exceljs reading the XLSX back, poppler's pdftotext reading the PDF. `make test` installs the two
// tools when missing (scripts/ensure-office-tools.sh).
import { parse } from 'csv-parse/sync';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ExcelJS from 'exceljs';
import type { FastifyInstance } from 'fastify';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import { OWNER_VISIT_COLUMNS } from '#shared/analytics/visits.repository.js';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { buildApp } from '#services/app.js';

const run = promisify(execFile);
const SOFFICE = process.env.SOFFICE_PATH ?? '/usr/bin/soffice';

type Json = Record<string, any>;

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let sub: string;
let link: Json;
let work: string;

/** What visitors (User-Agent, Referer, query and utm_* values) and owners can put into an export's text cells. */
const HOSTILE = {
  user_agent: '=HYPERLINK("http://evil.example/","click")',
  referrer: '+SUM(1,2)',
  utm_source: '@SUM(1,2)',
  utm_medium: '-2+3',
  utm_campaign: '\t=1+1',
  utm_term: '\r=1+1',
  utm_content: ' =1+1',
  query: '"=1+1',
  timezone: "'=1+1",
  screen: '\uFF1D1+1',
} as const;
/** Text that holds no formula, as it is, in several scripts (and an emoji no embedded font draws). */
const PLAIN = {
  city: 'Zürich Москва',
  browser: '中文 日本語',
  os: 'عربي نص',
  referrer_host: '🚀 rocket',
  user_agent: 'Mozilla/5.0 中文 عربي Кириллица',
  referrer: 'https://a.example/?q=-1',
} as const;
const base = Date.now() - 3_600_000;

const exported = (query: string) => app.inject({ method: 'GET', url: `/api/v1/export?${query}`, headers: alice.auth });

/**
 * Opens `files` with LibreOffice as a person would and saves them as XLSX, the formulas it saw kept
 * as formulas: `csvOptions` are its CSV import settings (separator, quote, charset, first line).
 */
async function throughLibreOffice(files: Record<string, Buffer>, csvOptions?: string): Promise<Record<string, ExcelJS.Workbook>> {
  if (!existsSync(SOFFICE)) throw new Error(`LibreOffice not found at ${SOFFICE}: run scripts/ensure-office-tools.sh (or set SOFFICE_PATH)`);
  const dir = mkdtempSync(join(work, 'lo-'));
  const paths = Object.entries(files).map(([name, bytes]) => {
    writeFileSync(join(dir, name), bytes);
    return join(dir, name);
  });
  await run(
    SOFFICE,
    [
      `-env:UserInstallation=file://${join(dir, 'profile')}`,
      '--headless',
      ...(csvOptions ? [`--infilter=${csvOptions}`] : []),
      '--convert-to',
      'xlsx',
      '--outdir',
      join(dir, 'out'),
      ...paths,
    ],
    { timeout: 180_000 },
  );
  const books: Record<string, ExcelJS.Workbook> = {};
  for (const name of Object.keys(files)) {
    const book = new ExcelJS.Workbook();
    await book.xlsx.readFile(join(dir, 'out', name.replace(/\.\w+$/, '.xlsx')));
    books[name] = book;
  }
  return books;
}

/** Every cell of a sheet that holds a formula, as `A1: formula` (but TRUE() and FALSE(): LibreOffice writes a boolean cell so). */
const formulasOf = (sheet: ExcelJS.Worksheet) => {
  const found: string[] = [];
  sheet.eachRow((row) =>
    row.eachCell((cell) => {
      if (cell.type === ExcelJS.ValueType.Formula && !/^(TRUE|FALSE)\(\)$/.test(cell.formula)) found.push(`${cell.address}: ${cell.formula}`);
    }),
  );
  return found;
};

/** A sheet's rows by the header's column names. */
const recordsOf = (sheet: ExcelJS.Worksheet) => {
  const header = (sheet.getRow(1).values as unknown[]).slice(1) as string[];
  const records: Record<string, ExcelJS.Cell>[] = [];
  for (let at = 2; at <= sheet.rowCount; at++) {
    const row = sheet.getRow(at);
    records.push(Object.fromEntries(header.map((name, column) => [name, row.getCell(column + 1)])));
  }
  return records;
};

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'linktrack-export-readers-'));
  context = await createTestContext();
  ({ app } = await buildApp(context));
  alice = await createOwner(context, app);
  sub = await claimSubdomain(app, alice);
  link = (
    await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: { subdomain: sub, slug: 'promo', target_url: 'https://example.com/' },
    })
  ).json().data;
  const visit = (i: number, fields: Record<string, unknown>) => ({
    visit_id: v7({ msecs: base + i * 1_000 }),
    ts: toClickHouseTime(base + i * 1_000),
    kind: 'visit',
    owner_id: alice.id,
    subdomain: sub,
    link_id: link.id,
    slug: 'promo',
    ip_public: '203.0.113.9',
    country: 'CL',
    latitude: -33.5,
    longitude: -70.25,
    asn: 64_500,
    ...fields,
  });
  await context.analytics.client.insert({
    table: 'visits',
    values: [visit(0, HOSTILE), visit(1, PLAIN)],
    format: 'JSONEachRow',
    clickhouse_settings: deduplicatedBy(`export-readers-${sub}`),
  });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await closeContext(context);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('CSV export as spreadsheets read it', () => {
  it('neutralises text cells a spreadsheet would run as formulas: LibreOffice finds no formula, numbers stay numbers', async () => {
    const response = await exported(`format=csv&subdomain=${sub}`);
    expect(response.statusCode).toBe(200);
    // Opened as a person opens it (UTF-8 chosen): before the fix, LibreOffice made the first cell a live HYPERLINK.
    const books = await throughLibreOffice({ 'visits.csv': response.rawPayload }, 'CSV:44,34,76,1');
    const sheet = books['visits.csv']!.worksheets[0]!;
    expect(formulasOf(sheet)).toEqual([]);
    const [hostile, plain] = recordsOf(sheet);
    expect(hostile!.user_agent!.value).toBe(`'${HOSTILE.user_agent}`);
    expect(hostile!.utm_source!.value).toBe(`'${HOSTILE.utm_source}`);
    expect(plain!.city!.value).toBe(PLAIN.city);
    expect(hostile!.latitude!.value).toBe(-33.5);
    expect(hostile!.asn!.value).toBe(64_500);

    const records = parse<Record<string, string>>(response.rawPayload, { columns: true, bom: true });
    expect(records).toHaveLength(2);
    // OWASP: a single quote before the cell, the cell double-quoted, inner quotes doubled.
    for (const [column, value] of Object.entries(HOSTILE)) expect(records[0]![column], column).toBe(`'${value}`);
    expect(response.body).toContain(`"'=HYPERLINK(""http://evil.example/"",""click"")"`);
    for (const [column, value] of Object.entries(PLAIN)) expect(records[1]![column], column).toBe(value);
    // Our own numbers: a negative coordinate is no formula and is left as it is.
    expect(records[0]).toMatchObject({ latitude: '-33.5', longitude: '-70.25', asn: '64500' });
  }, 240_000);

  it('starts with a UTF-8 byte-order mark by default, which LibreOffice reads as UTF-8 and not as a header character', async () => {
    const response = await exported(`format=csv&subdomain=${sub}`);
    expect([...response.rawPayload.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(response.rawPayload.subarray(3, 3 + '"visit_id",'.length).toString()).toBe('"visit_id",');
    // Charset left to LibreOffice (the locale's, UTF-8 here): the mark is read as such, not kept in the first header.
    const books = await throughLibreOffice({ 'visits.csv': response.rawPayload }, 'CSV:44,34,,1');
    const sheet = books['visits.csv']!.worksheets[0]!;
    expect(sheet.getRow(1).getCell(1).value).toBe('visit_id');
    expect(recordsOf(sheet)[1]!.city!.value).toBe(PLAIN.city);
    expect(recordsOf(sheet)[1]!.user_agent!.value).toBe(PLAIN.user_agent);
  }, 240_000);

  it('leaves the mark out with bom=false, and refuses another value', async () => {
    const plain = await exported(`format=csv&subdomain=${sub}&bom=false`);
    expect(plain.statusCode).toBe(200);
    expect(plain.rawPayload.subarray(0, '"visit_id",'.length).toString()).toBe('"visit_id",');
    expect(parse(plain.rawPayload, { columns: true })).toHaveLength(2);
    const empty = await exported(`format=csv&subdomain=${sub}&kind=attack&bom=false`);
    expect(empty.body).toBe(`${OWNER_VISIT_COLUMNS.join(',')}\n`);
    const emptyWithMark = await exported(`format=csv&subdomain=${sub}&kind=attack`);
    expect(emptyWithMark.body).toBe(`\uFEFF${OWNER_VISIT_COLUMNS.join(',')}\n`);
    const bad = await exported(`format=csv&subdomain=${sub}&bom=no`);
    expect(bad.statusCode).toBe(422);
    expect(Object.keys(bad.json().error.details)).toEqual(['bom']);
    const document = (await app.inject({ url: '/api/v1/openapi.json' })).json();
    const parameters = document.paths['/api/v1/export'].get.parameters as Json[];
    expect(parameters.find((parameter) => parameter.name === 'bom')).toMatchObject({ in: 'query', schema: { enum: ['true', 'false'] } });
  });
});

describe('XLSX export as spreadsheets read it', () => {
  it('stores hostile text as string cells, never formulas: exceljs and LibreOffice read them back as the same text', async () => {
    const response = await exported(`format=xlsx&subdomain=${sub}`);
    expect(response.statusCode).toBe(200);
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(response.rawPayload as unknown as ExcelJS.Buffer);
    const [hostile] = recordsOf(book.worksheets[0]!);
    for (const [column, value] of Object.entries(HOSTILE)) {
      expect(hostile![column]!.type, column).toBe(ExcelJS.ValueType.String);
      // XML reads a bare CR as a line feed.
      expect(hostile![column]!.value, column).toBe(value.replace('\r', '\n'));
    }
    expect(hostile!.latitude!.type).toBe(ExcelJS.ValueType.Number);
    expect(formulasOf(book.worksheets[0]!)).toEqual([]);

    const opened = (await throughLibreOffice({ 'visits.xlsx': response.rawPayload }))['visits.xlsx']!;
    expect(formulasOf(opened.worksheets[0]!)).toEqual([]);
    const [reopened] = recordsOf(opened.worksheets[0]!);
    expect(reopened!.user_agent!.value).toBe(HOSTILE.user_agent);
    expect(reopened!.utm_source!.value).toBe(HOSTILE.utm_source);
    expect(reopened!.latitude!.value).toBe(-33.5);
  }, 240_000);
});

describe('PDF export as pdftotext reads it', () => {
  it('draws Latin, Cyrillic, Chinese, Japanese and Arabic in embedded fonts, and an emoji as a placeholder, never mojibake', async () => {
    const since = encodeURIComponent(new Date(base - 60_000).toISOString());
    const response = await exported(`format=pdf&subdomain=${sub}&since=${since}`);
    expect(response.statusCode).toBe(200);
    const file = join(work, 'report.pdf');
    writeFileSync(file, response.rawPayload);
    // Poppler marks right-to-left text with embedding controls (U+202B … U+202C): not characters of ours.
    const text = (await run('pdftotext', ['-enc', 'UTF-8', file, '-'])).stdout.replace(/[\u202A-\u202E]/g, '');
    expect(text).toContain(`Visits report: subdomain ${sub}`);
    for (const written of ['Zürich Москва', '中文 日本語', 'عربي نص', '\uFFFD rocket']) expect(text).toContain(written);
    expect(text).not.toContain('🚀');
    expect(text).not.toMatch(/Ø=Þ|ä¸|Ã/);
    // Every font the file uses is embedded (a subset), none is a standard one the reader substitutes.
    const fonts = (await run('pdffonts', [file])).stdout.trim().split('\n').slice(2);
    expect(fonts.length).toBeGreaterThan(0);
    for (const font of fonts) expect(font, font).toMatch(/^[A-Z]{6}\+\S+\s+CID TrueType\s+Identity-H\s+yes yes yes/);
  }, 120_000);
});
