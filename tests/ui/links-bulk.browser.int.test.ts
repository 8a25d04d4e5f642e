import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, type UiPlatform } from './support.js';

// The bulk links page in a real browser (issue 40, item 5): a CSV with a refused row is refused whole
// in all-or-none (the rows' errors shown, nothing stored), then created but for that row in valid-only;
// a JSON upload; a row naming another owner's subdomain; a file that is not JSON, an empty one and no
// file at all; a hostile title; the export link; the keyboard alone; and a phone.
let platform: UiPlatform;
let owner: TestOwner;
let sub: string;
let theirs: string;
let dir: string;

beforeAll(async () => {
  platform = await startUiPlatform();
  owner = await createOwner(platform.context, platform.app);
  sub = await claimSubdomain(platform.app, owner);
  const other = await createOwner(platform.context, platform.app);
  theirs = await claimSubdomain(platform.app, other);
  dir = mkdtempSync(join(tmpdir(), 'linktrack-bulk-ui-'));
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

async function bulkPage(viewport: 'desktop' | 'phone' = 'desktop') {
  const opened = await openPage(platform, { viewport });
  await signIn(opened.page, owner.email);
  await opened.page.goto('/links');
  await opened.page.getByRole('link', { name: 'Bulk create' }).click();
  await opened.page.getByRole('heading', { name: 'Bulk links', level: 1 }).waitFor();
  return opened;
}

async function linkCount(): Promise<number> {
  const listed = await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${sub}&limit=1`, headers: owner.auth });
  expect(listed.statusCode).toBe(200);
  return listed.json().meta.total as number;
}

async function refusedRows(page: Page): Promise<string[][]> {
  const rows = page.getByRole('table').getByRole('row');
  const texts: string[][] = [];
  for (let index = 1; index < (await rows.count()); index++) texts.push(await rows.nth(index).locator('td').allTextContents());
  return texts;
}

const HOSTILE = '<img src=x onerror="window.__pwned=1">';

describe('bulk links page', () => {
  it('refuses a CSV with a bad row whole in all-or-none, then creates the valid rows in valid-only', async () => {
    const { page, problems, browserContext } = await bulkPage();
    const csv = file(
      'links.csv',
      [
        'subdomain,slug,target_url,title',
        `${sub},bulk-a,https://a.example/,"${HOSTILE.replaceAll('"', '""')}"`,
        `${sub},bulk-b,not a url,B`,
        `${sub},bulk-c,https://c.example/,C`,
      ].join('\r\n'),
    );
    await page.getByLabel('CSV or JSON file').setInputFiles(csv);
    expect(await page.getByLabel('Create nothing (all or none)').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Create links' }).click();
    await page.getByText('Nothing was created: 1 of 3 rows were refused.').waitFor();
    const [refused] = await refusedRows(page);
    expect(refused!.slice(0, 3)).toEqual(['2', 'target_url', 'validation_error']);
    expect(refused![3]).not.toBe('');
    expect(await linkCount()).toBe(0);
    await screenshot(page, 'links-bulk-all-or-none-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    await page.getByLabel('Create the valid rows (valid only)').check();
    await page.getByRole('button', { name: 'Create links' }).click();
    await page.getByText('2 created, 0 already there, 1 refused, of 3 rows.').waitFor();
    expect((await refusedRows(page)).map((row) => row.slice(0, 3))).toEqual([['2', 'target_url', 'validation_error']]);
    expect(await linkCount()).toBe(2);
    const stored = await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${sub}&q=bulk-a`, headers: owner.auth });
    expect(stored.json().data.links[0].title).toBe(HOSTILE);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await screenshot(page, 'links-bulk-valid-only-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // The export link: the caller's links as CSV, which the bulk import reads again.
    const exportLink = page.getByRole('link', { name: 'Export links (CSV)' });
    expect(await exportLink.getAttribute('href')).toBe('/api/v1/links/export.csv');
    const exported = await page.evaluate(async (href) => (await fetch(href!)).text(), await exportLink.getAttribute('href'));
    expect(exported).toContain('bulk-a');
    expect(exported).toContain('bulk-c');
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);

  it('creates from JSON, reports another owner’s subdomain per row, and checks the file first', async () => {
    const { page, problems, browserContext } = await bulkPage();
    await page.getByRole('button', { name: 'Create links' }).click();
    await page.locator('#bulk-file-error').filter({ hasText: 'Choose a file.' }).waitFor();

    await page.getByLabel('CSV or JSON file').setInputFiles(file('broken.json', '{"links": [1, 2'));
    await page.getByRole('button', { name: 'Create links' }).click();
    await page.locator('#bulk-file-error').filter({ hasText: 'The file is not a JSON array of links' }).waitFor();

    await page.getByLabel('CSV or JSON file').setInputFiles(file('empty.csv', 'subdomain,slug,target_url\r\n'));
    await page.getByRole('button', { name: 'Create links' }).click();
    await page.locator('#bulk-file-error').filter({ hasText: 'The file has no links.' }).waitFor();
    await screenshot(page, 'links-bulk-file-error-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    const before = await linkCount();
    const json = file(
      'links.json',
      JSON.stringify({
        links: [
          { subdomain: sub, slug: 'json-a', target_url: 'https://json.example/a' },
          { subdomain: theirs, slug: 'json-b', target_url: 'https://json.example/b' },
        ],
      }),
    );
    await page.getByLabel('CSV or JSON file').setInputFiles(json);
    await page.getByRole('button', { name: 'Create links' }).click();
    await page.getByText('Nothing was created: 1 of 2 rows were refused.').waitFor();
    expect((await refusedRows(page)).map((row) => [row[0], row[2]])).toEqual([['2', 'not_owner']]);
    expect(await linkCount()).toBe(before);
    const theirLinks = await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${sub}&q=json-b`, headers: owner.auth });
    expect(theirLinks.json().data.links).toEqual([]);

    // Keyboard alone: choose valid-only with the arrow key, tab to the button, press Enter.
    await page.getByLabel('Create nothing (all or none)').focus();
    await page.keyboard.press('ArrowDown');
    expect(await page.getByLabel('Create the valid rows (valid only)').isChecked()).toBe(true);
    await page.keyboard.press('Tab');
    expect(await page.getByRole('button', { name: 'Create links' }).evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByText('1 created, 0 already there, 1 refused, of 2 rows.').waitFor();
    await page.getByRole('link', { name: 'Show the links' }).waitFor();
    expect(await linkCount()).toBe(before + 1);
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);

  it('fits a phone', async () => {
    const { page, problems, browserContext } = await bulkPage('phone');
    await page.getByLabel('CSV or JSON file').setInputFiles(file('again.csv', `subdomain,slug,target_url\r\n${sub},bulk-a,https://a.example/\r\n`));
    await page.getByLabel('Create the valid rows (valid only)').check();
    await page.getByRole('button', { name: 'Create links' }).click();
    await page.getByText('0 created, 0 already there, 1 refused, of 1 rows.').waitFor();
    expect((await refusedRows(page)).map((row) => [row[0], row[1], row[2]])).toEqual([['1', 'slug', 'conflict']]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await screenshot(page, 'links-bulk-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);
});
