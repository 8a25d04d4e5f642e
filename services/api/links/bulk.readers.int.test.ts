// The links CSV export as LibreOffice (headless) opens it, read back with exceljs, and imported
// again through the bulk route: what a person who edits the file in a spreadsheet sends back.
// `make test` installs LibreOffice when missing (scripts/ensure-office-tools.sh).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ExcelJS from 'exceljs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { buildApp } from '#services/app.js';

const run = promisify(execFile);
const SOFFICE = process.env.SOFFICE_PATH ?? '/usr/bin/soffice';

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let sub: string;
let work: string;

/** Titles an owner (or whoever fills their upload) can choose, each a formula to a spreadsheet. */
const HOSTILE = ['=HYPERLINK("http://evil.example/","click")', '+SUM(1,2)', '@SUM(1,2)', '-2+3', '"=1+1', '\uFF1D1+1'];

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  alice = await createOwner(context, app);
  sub = await claimSubdomain(app, alice);
  work = mkdtempSync(join(tmpdir(), 'bulk-readers-'));
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Opens `csv` in LibreOffice as a person would (UTF-8, comma, double quote) and saves it as `format`. */
async function throughLibreOffice(csv: Buffer, format: 'xlsx' | 'csv'): Promise<string> {
  if (!existsSync(SOFFICE)) throw new Error(`LibreOffice not found at ${SOFFICE}: run scripts/ensure-office-tools.sh (or set SOFFICE_PATH)`);
  const dir = mkdtempSync(join(work, 'lo-'));
  writeFileSync(join(dir, 'links.csv'), csv);
  const target = format === 'csv' ? 'csv:Text - txt - csv (StarCalc):44,34,76,1' : 'xlsx';
  await run(
    SOFFICE,
    [
      `-env:UserInstallation=file://${join(dir, 'profile')}`,
      '--headless',
      '--infilter=CSV:44,34,76,1',
      '--convert-to',
      target,
      '--outdir',
      join(dir, 'out'),
      join(dir, 'links.csv'),
    ],
    { timeout: 180_000 },
  );
  return join(dir, 'out', `links.${format}`);
}

describe('links CSV export as spreadsheets read it', () => {
  it('LibreOffice finds no formula in hostile titles, and its own CSV of the file imports again as the same links', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/links/bulk',
      headers: alice.auth,
      payload: { links: HOSTILE.map((title, n) => ({ subdomain: sub, target_url: `https://example.com/h${n}?a=1&b=2`, title, tags: ['x', 'y'] })) },
    });
    expect(created.statusCode).toBe(201);
    const exported = await app.inject({ method: 'GET', url: `/api/v1/links/export.csv?subdomain=${sub}`, headers: alice.auth });
    expect(exported.statusCode).toBe(200);

    const book = new ExcelJS.Workbook();
    await book.xlsx.readFile(await throughLibreOffice(exported.rawPayload, 'xlsx'));
    const sheet = book.worksheets[0]!;
    const formulas: string[] = [];
    sheet.eachRow((row) => row.eachCell((cell) => void (cell.type === ExcelJS.ValueType.Formula && formulas.push(`${cell.address}: ${cell.formula}`))));
    expect(formulas).toEqual([]);
    const titles: string[] = [];
    for (let at = 2; at <= sheet.rowCount; at++) titles.push(sheet.getRow(at).getCell(4).text);
    expect(titles.sort()).toEqual(HOSTILE.map((title) => `'${title}`).sort());

    // The file as LibreOffice saves it again, into another owner's subdomain: the same titles, targets and tags.
    const resaved = readFileSync(await throughLibreOffice(exported.rawPayload, 'csv'), 'utf8');
    const bob = await createOwner(context, app);
    const bobSub = await claimSubdomain(app, bob);
    const imported = await app.inject({
      method: 'POST',
      url: '/api/v1/links/bulk',
      headers: { ...bob.auth, 'content-type': 'text/csv' },
      payload: resaved.replaceAll(sub, bobSub),
    });
    expect(imported.statusCode, imported.body).toBe(201);
    const summary = (links: Record<string, any>[]) => links.map((link) => [link.title, link.target_url, link.tags.join(' ')]).sort();
    expect(summary(imported.json().data.created)).toEqual(summary(created.json().data.created));
  }, 400_000);
});
