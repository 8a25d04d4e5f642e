import { parse } from 'csv-parse/sync';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Download, Page } from 'playwright-core';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, type UiPlatform } from './support.js';

// The exports page in a real browser: visits made by real redirects, exported as a stream in the
// page and saved, compared with the API's own visit list; XLSX and PDF; a large export's progress
// against the rows the server announces, and cancelling one; refused ranges and subdomains.
let platform: UiPlatform;
let owner: TestOwner;
let sub: string;
let promoId: string;
/** A subdomain holding many visits (written straight into the analytics store): an export that takes a while. */
let bulk: string;
const BULK_ROWS = 40_000;

type Json = Record<string, any>;

const api = async (path: string, who: TestOwner = owner) => {
  const response = await platform.app.inject({ method: 'GET', url: path, headers: who.auth });
  return response.json<Json>();
};

/** A redirect as a browser would ask for it: Node's fetch cannot resolve `{sub}.localhost`, so the Host header names it. */
const visit = (path: string, userAgent: string) =>
  new Promise<number>((resolve, reject) => {
    const call = request(
      { host: '127.0.0.1', port: platform.port, path, headers: { host: `${sub}.localhost:${platform.port}`, 'user-agent': userAgent } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    call.on('error', reject);
    call.end();
  });

beforeAll(async () => {
  platform = await startUiPlatform();
  owner = await createOwner(platform.context, platform.app);
  sub = await claimSubdomain(platform.app, owner);
  const makeLink = async (slug: string) =>
    (
      await platform.app.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: owner.auth,
        payload: { subdomain: sub, slug, target_url: `https://example.com/${slug}` },
      })
    ).json().data.id as string;
  promoId = await makeLink('promo');
  await makeLink('other');
  const agents = [
    'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  ];
  const statuses = await Promise.all([
    ...Array.from({ length: 5 }, (_, i) => visit('/promo', agents[i % 2]!)),
    visit('/other', agents[0]!),
    visit('/other', agents[1]!),
  ]);
  expect(statuses.every((status) => status >= 300 && status < 400)).toBe(true);
  // The enricher writes them behind: wait until the API lists all seven.
  for (let attempt = 0; attempt < 100; attempt++) {
    if ((await api(`/api/v1/visits?subdomain=${sub}&limit=100`)).data.visits.length >= 7) break;
    await sleep(100);
  }
  bulk = await claimSubdomain(platform.app, owner);
  const start = Date.now() - 2 * 86_400_000;
  const rows = Array.from({ length: BULK_ROWS }, (_, i) => ({
    visit_id: v7({ msecs: start + i * 1000 }),
    ts: toClickHouseTime(start + i * 1000),
    kind: 'visit',
    owner_id: owner.id,
    subdomain: bulk,
    link_id: 'l_bulk',
    slug: 'bulk',
    ip_public: `203.0.113.${i % 250}`,
    country: 'FR',
    city: 'Paris',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    browser: 'Firefox',
    referrer_host: 'news.example',
    visitor_hash: `v${i % 5000}`,
  }));
  for (let from = 0; from < rows.length; from += 10_000) {
    await platform.context.analytics.client.insert({
      table: 'visits',
      values: rows.slice(from, from + 10_000),
      format: 'JSONEachRow',
      clickhouse_settings: deduplicatedBy(`ui-export-${bulk}-${from}`),
    });
  }
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

/** Opens the exports page signed in as the owner. */
async function exportsPage(viewport: 'desktop' | 'phone' = 'desktop') {
  const opened = await openPage(platform, { viewport });
  await signIn(opened.page, owner.email);
  await opened.page.goto('/exports');
  await opened.page.getByRole('heading', { name: 'Exports', level: 1 }).waitFor();
  await opened.page.getByLabel('Subdomain').getByRole('option', { name: sub, exact: true }).waitFor({ state: 'attached' });
  return opened;
}

/** Starts the export and returns the saved file, its name and the answer's content type. */
async function exported(page: Page): Promise<{ download: Download; body: Buffer; contentType: string }> {
  const answer = page.waitForResponse((response) => response.url().includes('/api/v1/export?'));
  const saved = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export', exact: true }).click();
  const [response, download] = await Promise.all([answer, saved]);
  return { download, body: await readFile(await download.path()), contentType: response.headers()['content-type'] ?? '' };
}

describe('exports page', () => {
  it('saves a CSV of a subdomain holding the same visits as the API lists', async () => {
    const { page, problems, browserContext } = await exportsPage();
    await page.getByLabel('Subdomain').selectOption(sub);
    const { download, body, contentType } = await exported(page);
    expect(contentType).toMatch(/^text\/csv/);
    expect(download.suggestedFilename()).toMatch(new RegExp(`^visits-subdomain-${sub}-\\d{8}\\.csv$`));
    const records = parse<Record<string, string>>(body, { columns: true, bom: true });
    const listed = (await api(`/api/v1/visits?subdomain=${sub}&limit=100`)).data.visits as Json[];
    expect(records.length).toBe(7);
    expect(records.map((record) => record.visit_id).sort()).toEqual(listed.map((visit) => visit.visit_id).sort());
    for (const visit of listed) {
      const record = records.find((row) => row.visit_id === visit.visit_id)!;
      expect({ ts: record.ts, kind: record.kind, slug: record.slug, link_id: record.link_id, is_bot: record.is_bot, ip_public: record.ip_public }).toEqual({
        ts: visit.ts,
        kind: visit.kind,
        slug: visit.slug,
        link_id: visit.link_id,
        is_bot: String(visit.is_bot),
        ip_public: visit.ip_public,
      });
    }
    await page.getByText(`Saved ${download.suggestedFilename()}`).waitFor();
    await screenshot(page, 'exports-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('saves JSON of one link and a range of days, XLSX and a PDF report', async () => {
    const { page, problems, browserContext } = await exportsPage();
    await page.getByLabel('Subdomain').selectOption(sub);
    await page.getByLabel('Link').getByRole('option', { name: '/promo', exact: true }).waitFor({ state: 'attached' });
    await page.getByLabel('Link').selectOption(promoId);
    await page.getByLabel(/^JSON/).check();
    const today = new Date().toISOString().slice(0, 10);
    await page.getByLabel('From (first day)').fill(today);
    await page.getByLabel('To (last day)').fill(today);
    const json = await exported(page);
    expect(json.contentType).toMatch(/^application\/json/);
    expect(json.download.suggestedFilename()).toMatch(new RegExp(`^visits-link-${promoId}-\\d{8}\\.json$`));
    const document = JSON.parse(json.body.toString('utf8')) as Json;
    const listed = (await api(`/api/v1/visits?link_id=${promoId}&limit=100`)).data.visits as Json[];
    expect(listed.length).toBe(5);
    expect(document.meta.count).toBe(5);
    expect((document.data.visits as Json[]).map((row) => row.visit_id).sort()).toEqual(listed.map((row) => row.visit_id).sort());

    // A range that ended before the visits holds none.
    await page.getByLabel('From (first day)').fill('2020-01-01');
    await page.getByLabel('To (last day)').fill('2020-01-31');
    const empty = JSON.parse((await exported(page)).body.toString('utf8')) as Json;
    expect(empty.data.visits).toEqual([]);
    await page.getByLabel('From (first day)').fill('');
    await page.getByLabel('To (last day)').fill('');

    await page.getByLabel(/^XLSX/).check();
    const xlsx = await exported(page);
    expect(xlsx.contentType).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    expect(xlsx.download.suggestedFilename()).toMatch(/\.xlsx$/);
    expect(xlsx.body.subarray(0, 2).toString('latin1')).toBe('PK');

    await page.getByLabel(/^PDF/).check();
    const pdf = await exported(page);
    expect(pdf.contentType).toBe('application/pdf');
    expect(pdf.download.suggestedFilename()).toMatch(/\.pdf$/);
    expect(pdf.body.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('shows a large export’s rows against the announced total, and cancels one without saving anything', async () => {
    const { page, problems, browserContext } = await exportsPage();
    await page.getByLabel('Subdomain').selectOption(bulk);
    // Records every progress line the page shows while the CSV streams.
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { progressSeen: string[] }).progressSeen = seen;
      new MutationObserver(() => {
        const text = document.querySelector('.export-progress')?.textContent;
        if (text && seen.at(-1) !== text) seen.push(text);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const { body } = await exported(page);
    expect(body.toString('utf8').trimEnd().split('\n').length).toBe(BULK_ROWS + 1);
    const seen = await page.evaluate(() => (window as unknown as { progressSeen: string[] }).progressSeen);
    expect(seen.some((text) => /received · [\d,]+ of about 40,000 rows/.test(text))).toBe(true);

    // XLSX of the same rows takes a while to write: cancel it once its first bytes arrived.
    await page.getByLabel(/^XLSX/).check();
    let downloads = 0;
    page.on('download', () => (downloads += 1));
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    const cancel = page.getByRole('button', { name: 'Cancel export' });
    await cancel.waitFor();
    // In flight: the file's first bytes have arrived, the rest has not.
    await page
      .locator('.export-progress')
      .filter({ hasText: /[1-9][\d.,]* (bytes|kB|MB) received/ })
      .waitFor();
    await screenshot(page, 'exports-progress-desktop');
    await cancel.click();
    await page.getByText('Export cancelled. Nothing was saved.').waitFor();
    expect(await cancel.count()).toBe(0);
    await sleep(500);
    expect(downloads).toBe(0);
    expect(await page.getByRole('button', { name: 'Export', exact: true }).isEnabled()).toBe(true);
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 60_000);

  it('shows a backwards range on its field and another owner’s subdomain as forbidden', async () => {
    const { page, problems, browserContext } = await exportsPage();
    await page.getByLabel('From (first day)').fill('2026-03-20');
    await page.getByLabel('To (last day)').fill('2026-03-10');
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    await page.locator('#export-since-error').filter({ hasText: 'must be before until' }).waitFor();
    await page.locator('.export-form .notice-error').waitFor();
    await screenshot(page, 'exports-error-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // Someone else's subdomain named in the address (a shared link): the API refuses, the page says so.
    const other = await createOwner(platform.context, platform.app);
    const theirs = await claimSubdomain(platform.app, other);
    await page.goto(`/exports?subdomain=${theirs}`);
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    await page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('fits a phone, and says when there is nothing to export', async () => {
    const { page, problems, browserContext } = await exportsPage('phone');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'exports-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();

    const newcomer = await newAccount(platform);
    const fresh = await openPage(platform, { viewport: 'phone' });
    await signIn(fresh.page, newcomer.email);
    await fresh.page.goto('/exports');
    await fresh.page.getByText('You have no subdomain yet, so there are no visits to export.').waitFor();
    await screenshot(fresh.page, 'exports-empty-phone');
    await fresh.browserContext.close();
  });
});
