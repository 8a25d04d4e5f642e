import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { shlinkCsv, sourceLinks } from '../support/import-fixtures.js';
import { shlinkVisits, startShlinkStandIn, type ShlinkStandIn } from '../support/shlink-stand-in.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, type UiPlatform } from './support.js';

// The imports page in a real browser: a Shlink export picked from disk, a dry run and an import
// watched to completion (progress, counts, the rows not imported), the recent imports, a file the
// job cannot read, the keyboard alone, a phone, another owner's subdomain, and a newcomer with none;
// then an import over Shlink's API from a local stand-in (tests/support/shlink-stand-in.ts, not Shlink
// itself), with its visits, and the API's refusals shown on their fields. The stand-in listens on
// loopback: WEBHOOK_ALLOWLIST admits 127.0.0.1, as for the importer's API tests; other private
// addresses stay refused.
let platform: UiPlatform;
let shlink: ShlinkStandIn | undefined;
let owner: TestOwner;
let sub: string;
let dir: string;
let exportFile: string;

beforeAll(async () => {
  platform = await startUiPlatform({ WEBHOOK_ALLOWLIST: '127.0.0.1' });
  owner = await createOwner(platform.context, platform.app);
  sub = await claimSubdomain(platform.app, owner);
  const made = await platform.app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain: sub, slug: 'ui2', target_url: 'https://mine.example/' },
  });
  expect(made.statusCode).toBe(201);
  dir = mkdtempSync(join(tmpdir(), 'linktrack-imports-ui-'));
  exportFile = join(dir, 'short_urls.csv');
  writeFileSync(exportFile, shlinkCsv(sourceLinks(40, 'ui')));
}, 120_000);

afterAll(async () => {
  await shlink?.close();
  await platform?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function importsPage(viewport: 'desktop' | 'phone' = 'desktop') {
  const opened = await openPage(platform, { viewport });
  await signIn(opened.page, owner.email);
  await opened.page.goto('/imports');
  await opened.page
    .locator('#import-subdomain')
    .getByRole('option', { name: sub, exact: true })
    .waitFor({ state: 'attached', timeout: 15_000 })
    .catch(async (error: unknown) => {
      await screenshot(opened.page, 'imports-debug');
      throw new Error(`${String(error)}\n${(await opened.page.locator('main').textContent()) ?? ''}\n${opened.problems.join('\n')}`);
    });
  return opened;
}

/** Waits until the import watched on the page has finished, and answers its heading. */
async function finishedHeading(page: Page): Promise<string> {
  const heading = page.locator('#import-progress-title');
  await heading.filter({ hasText: /Completed|Failed/ }).waitFor({ timeout: 60_000 });
  return (await heading.textContent()) ?? '';
}

describe('imports page', () => {
  it('dry-runs then imports a Shlink export, showing progress, counts and the rows not imported', async () => {
    const { page, problems, browserContext } = await importsPage();
    await page.getByRole('heading', { name: 'Imports', level: 1 }).waitFor();
    await page.getByText('No imports yet.').waitFor();
    await screenshot(page, 'imports-empty-desktop');
    await page.getByLabel('Shlink (short_urls.csv)').check();
    await page.getByLabel('Into subdomain').selectOption(sub);
    await page.getByLabel('CSV file').setInputFiles(exportFile);
    await page.getByLabel('Dry run: report what would happen, create nothing').check();
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    expect(await finishedHeading(page)).toBe('Completed (dry run)');
    await page.getByText('40 of 40 rows · 39 would be created, 1 slug taken').waitFor();
    const conflict = page.getByRole('table', { name: 'Rows not imported' }).getByRole('row').nth(1);
    expect(await conflict.locator('td').allTextContents()).toEqual(['4', 'ui2', 'slug taken', 'slug_taken']);
    const links = await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${sub}&limit=1`, headers: owner.auth });
    expect(links.json().meta.total).toBe(1);

    await page.getByLabel('Dry run: report what would happen, create nothing').uncheck();
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page
      .locator('#import-progress-title')
      .filter({ hasText: /^Completed$/ })
      .waitFor({ timeout: 60_000 });
    await page.getByText('40 of 40 rows · 39 created, 1 slug taken').waitFor();
    // The recent imports: both, newest first.
    const recent = page.getByRole('region', { name: 'Recent imports' }).getByRole('row');
    await expect.poll(() => recent.count()).toBe(3);
    expect(await recent.nth(1).textContent()).toContain('Completed · 39 created, 1 slug taken');
    expect(await recent.nth(2).textContent()).toContain('shlink (dry run)');
    await screenshot(page, 'imports-done-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    const after = await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${sub}&limit=1`, headers: owner.auth });
    expect(after.json().meta.total).toBe(40);
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);

  it('says why an import failed, and that a file must be chosen; works from the keyboard alone', async () => {
    const { page, problems, browserContext } = await importsPage();
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.locator('#import-file-error').filter({ hasText: 'Choose a file to import.' }).waitFor();

    const wrong = join(dir, 'not-shlink.csv');
    writeFileSync(wrong, 'a,b,c\r\n1,2,3\r\n');
    await page.getByLabel('CSV file').setInputFiles(wrong);
    // Keyboard only: focus the Shlink choice, then tab to the submit button and press Enter.
    await page.getByLabel('Shlink (short_urls.csv)').focus();
    await page.keyboard.press('Space');
    for (let tab = 0; tab < 6 && !(await page.getByRole('button', { name: 'Import', exact: true }).evaluate((el) => el === document.activeElement)); tab++) {
      await page.keyboard.press('Tab');
    }
    expect(await page.getByRole('button', { name: 'Import', exact: true }).evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    expect(await finishedHeading(page)).toBe('Failed');
    await page.getByText('The import failed: validation_error: not a shlink export: no slug column').waitFor();
    await page.locator('#import-file-error').filter({ hasText: 'not a shlink export: no slug column' }).waitFor();
    await screenshot(page, 'imports-failed-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 90_000);

  it('shows another owner’s subdomain as forbidden, fits a phone, and tells a newcomer to claim a subdomain first', async () => {
    // Someone else's subdomain named in the address (a shared link): the API refuses, the page says so.
    const other = await createOwner(platform.context, platform.app);
    const theirs = await claimSubdomain(platform.app, other);
    const desktop = await importsPage();
    await desktop.page.goto(`/imports?subdomain=${theirs}`);
    await desktop.page.getByLabel('CSV file').setInputFiles(exportFile);
    await desktop.page.getByRole('button', { name: 'Import', exact: true }).click();
    await desktop.page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    await screenshot(desktop.page, 'imports-forbidden-desktop');
    expect(await seriousA11yViolations(desktop.page)).toEqual([]);
    expect((await platform.app.inject({ method: 'GET', url: '/api/v1/imports', headers: other.auth })).json().data.imports).toEqual([]);
    await desktop.browserContext.close();

    const { page, problems, browserContext } = await importsPage('phone');
    await page.getByRole('heading', { name: 'Imports', level: 1 }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'imports-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();

    const newcomer = await newAccount(platform);
    const fresh = await openPage(platform, { viewport: 'phone' });
    await signIn(fresh.page, newcomer.email);
    await fresh.page.goto('/imports');
    await fresh.page.getByText('You have no subdomain yet: claim one first, then import links into it.').waitFor();
    await screenshot(fresh.page, 'imports-no-subdomain-phone');
    expect(await seriousA11yViolations(fresh.page)).toEqual([]);
    await fresh.browserContext.close();
  }, 90_000);

  it('imports links and their visits over Shlink’s API (stand-in Shlink server), keeps no key, and shows refusals on their fields', async () => {
    const links = sourceLinks(12, 'sh');
    shlink = await startShlinkStandIn(links, new Map(links.slice(0, 3).map((link) => [link.slug, shlinkVisits(link.slug, 20, Date.UTC(2024, 5, 30, 12))])));
    const into = await claimSubdomain(platform.app, owner);
    const { page, problems, browserContext } = await importsPage();
    await page.getByLabel('Shlink (REST API, with visits)').check();
    await page.getByLabel('Into subdomain').selectOption(into);
    expect(await page.getByLabel('CSV file').count()).toBe(0);
    const key = page.getByLabel('API key');
    expect(await key.getAttribute('type')).toBe('password');
    expect(await key.getAttribute('autocomplete')).toBe('off');
    expect(await page.getByLabel('Import the visit history too').isChecked()).toBe(true);
    await page.getByLabel('Address of your installation').fill(shlink.url);
    await key.fill(shlink.apiKey);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    expect(await finishedHeading(page)).toBe('Completed');
    await page.getByText(/12 created · 60 visits imported, 0 already there/).waitFor();
    // The key is gone from the page once the import has started; the address stays for another try.
    expect(await key.inputValue()).toBe('');
    expect(await page.getByLabel('Address of your installation').inputValue()).toBe(shlink.url);
    expect(await page.content()).not.toContain(shlink.apiKey);
    const made = await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${into}&limit=1`, headers: owner.auth });
    expect(made.json().meta.total).toBe(12);
    const recent = page.getByRole('region', { name: 'Recent imports' }).getByRole('row');
    await expect.poll(async () => (await recent.nth(1).textContent()) ?? '').toContain('shlink-api');
    await screenshot(page, 'imports-shlink-api-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // A private address the allow-list does not admit: the import fails before any request, on the address's field.
    const asked = shlink.requests.length;
    await page.getByLabel('Address of your installation').fill('http://192.168.10.20:8080');
    await key.fill(shlink.apiKey);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page
      .locator('#import-progress-title')
      .filter({ hasText: /^Failed$/ })
      .waitFor({ timeout: 60_000 });
    await page.getByRole('alert').filter({ hasText: 'The import failed: validation_error' }).first().waitFor();
    await page.locator('#import-url-error').filter({ hasText: /\S/ }).waitFor();
    expect(await page.getByLabel('Address of your installation').getAttribute('aria-invalid')).toBe('true');
    expect(shlink.requests.length).toBe(asked);
    await screenshot(page, 'imports-shlink-api-refused-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // Kutt without its key: the API's refusal names the field.
    await page.getByLabel('Kutt (API v2)').check();
    await page.getByLabel('Address of your installation').fill(shlink.url);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.locator('#import-api-key-error').waitFor();
    expect(problems.filter((line) => !line.includes('400'))).toEqual([]);
    await browserContext.close();

    // YOURLS's API by user name and password, on a phone: every field fits.
    const phone = await importsPage('phone');
    await phone.page.getByLabel('YOURLS (API)').check();
    await phone.page.getByLabel('User name and password').check();
    expect(await phone.page.getByLabel('Password', { exact: true }).getAttribute('type')).toBe('password');
    expect(await phone.page.getByLabel('Signature token', { exact: true }).count()).toBe(0);
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(phone.page, 'imports-yourls-api-phone');
    expect(await seriousA11yViolations(phone.page)).toEqual([]);
    await phone.browserContext.close();
  }, 120_000);
});
