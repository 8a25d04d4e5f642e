import { request } from 'node:http';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { waitFor } from '../support/wait.js';
import { openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, VIEWPORTS, type UiPlatform } from './support.js';

// The visits and attacks pages in a real browser against the whole platform: visits made over
// HTTP on the short host (redirect → message log → enricher → ClickHouse) are listed, filtered and
// paged; a new visit appears without a reload within 3 s; attack probes are listed for the owner;
// whatever visitors sent is shown as text.
let platform: UiPlatform;
let owner: TestOwner;
let subdomain: string;
let slug: string;
let probed: string;

const XSS_REFERRER = 'https://x.example/<img src=x onerror=alert(1)>';
const SCRIPT_UA = 'Mozilla/5.0 <script>alert("ua")</script> Firefox/120.0';
const XSS_PATH = '/<script>alert(1)</script>';
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0';

/** A request to a short host over a socket (Node's fetch cannot resolve `*.localhost`); its status. */
function hit(path: string, headers: Record<string, string> = {}, name = subdomain): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: '127.0.0.1', port: platform.port, path, method: 'GET', headers: { host: `${name}.localhost:${platform.port}`, ...headers } },
      (response) => {
        response.resume();
        resolve(response.statusCode!);
      },
    );
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** The owner's visits as the API lists them (what the page should show). */
async function apiVisits(query: string): Promise<Record<string, any>[]> {
  const response = await platform.app.inject({ method: 'GET', url: `/api/v1/visits?${query}`, headers: owner.auth });
  expect(response.statusCode).toBe(200);
  return response.json().data.visits;
}

/** Waits until the API lists `count` visits for the query. */
const stored = (query: string, count: number) =>
  waitFor(async () => (await apiVisits(query)).length >= count, 20_000, { message: `${count} visits for ${query}`, intervalMs: 100 });

async function signedIn() {
  const opened = await openPage(platform);
  const dialogs: string[] = [];
  opened.page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await signIn(opened.page, owner.email);
  return { ...opened, dialogs };
}

const rows = (page: Page) => page.locator('table.visits-table tbody tr');

beforeAll(async () => {
  // The edge trusts the loopback proxy: a visit that says where it comes from (X-Forwarded-For) is geolocated.
  platform = await startUiPlatform({ TRUST_PROXY: '127.0.0.1' });
  owner = await createOwner(platform.context, platform.app);
  subdomain = await claimSubdomain(platform.app, owner);
  probed = await claimSubdomain(platform.app, owner);
  const created = await platform.app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, slug: 'promo', target_url: 'https://example.com/' },
  });
  expect(created.statusCode).toBe(201);
  slug = created.json().data.slug;
  expect(await hit(`/${slug}`, { 'user-agent': SCRIPT_UA, referer: XSS_REFERRER })).toBe(302);
  expect(await hit(`/${slug}`, { 'user-agent': GOOGLEBOT })).toBe(302);
  expect(await hit(`/${slug}`, { 'user-agent': FIREFOX, referer: 'https://news.example/item' })).toBe(302);
  expect(await hit('/.env', { 'user-agent': FIREFOX })).toBe(404);
  // On another subdomain of the owner: the attacks page lists every one; the visits tests stay on the first.
  expect(await hit(XSS_PATH, { 'user-agent': FIREFOX }, probed)).toBe(404);
  await stored(`subdomain=${probed}&kind=attack`, 1);
  await stored(`subdomain=${subdomain}&kind=attack`, 1);
  await stored(`subdomain=${subdomain}`, 4);
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe('visits page', () => {
  it('lists the visits made on the short host with their columns, visitor-sent text as text, accessible on desktop and phone', async () => {
    const { page, problems, dialogs, browserContext } = await signedIn();
    await page.goto(`/visits?subdomain=${subdomain}`);
    await rows(page).first().waitFor();
    expect(await rows(page).count()).toBe(4);
    // The referrer is shown literally: no image element made of it, no script run.
    const referrer = page.locator('td.referrer').filter({ hasText: XSS_REFERRER });
    expect(await referrer.count()).toBe(1);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    const row = rows(page).filter({ has: referrer });
    await row.getByText('Show').click();
    expect(await row.locator('.user-agent code').textContent()).toBe(SCRIPT_UA);
    expect(await page.locator('table script').count()).toBe(0);
    expect(await rows(page).filter({ hasText: 'Yes: ' }).count()).toBe(1);
    expect(await rows(page).filter({ hasText: '/.env' }).first().textContent()).toContain('Attack');
    expect(await page.getByText('4 in all').count()).toBe(1);
    expect(await seriousA11yViolations(page)).toEqual([]);
    // Opening the user agent scrolled the table sideways: back to its start for the picture.
    await page.locator('.table-wrap').evaluate((element) => element.scrollTo(0, 0));
    await screenshot(page, 'visits-list-desktop');

    // The same page at a phone's width: nothing wider than the screen (the table scrolls inside its frame).
    await page.setViewportSize(VIEWPORTS.phone);
    await page.reload();
    await rows(page).first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'visits-list-phone');
    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  // Guards issue 34: at 1280 px the user-agent column was cut off at the table's right edge.
  it('shows an opened user agent whole at 1280 px, wrapped inside the table, nothing cut off', async () => {
    // Long but ordinary values: a 60-character slug, a desktop Chrome's user agent, a long referrer.
    const wide = await claimSubdomain(platform.app, owner);
    const longSlug = 'spring-sale-2026-newsletter-campaign-landing-page-variant-b';
    const made = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain: wide, slug: longSlug, target_url: 'https://example.com/' },
    });
    expect(made.statusCode).toBe(201);
    const chrome = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86';
    const referer = 'https://www.example-newsletter-platform.com/campaigns/2026/spring/issue-14/read-online?utm_medium=email';
    expect(await hit(`/${longSlug}`, { 'user-agent': chrome, referer, 'x-forwarded-for': '81.2.69.142' }, wide)).toBe(302);
    await stored(`subdomain=${wide}`, 1);
    const { page, problems, browserContext } = await signedIn();
    await page.goto(`/visits?subdomain=${wide}`);
    await rows(page).first().waitFor();
    const row = rows(page).first();
    await row.getByText('Show').click();
    const agent = row.locator('.user-agent code');
    await agent.waitFor();
    await screenshot(page, 'visits-user-agent-desktop');
    const frame = page.locator('.table-wrap');
    const fits = await frame.evaluate((element) => ({ scroll: element.scrollWidth, client: element.clientWidth }));
    expect(fits.scroll, 'the table needs no sideways scrolling').toBeLessThanOrEqual(fits.client);
    const [box, visible] = [(await agent.boundingBox())!, (await frame.boundingBox())!];
    expect(box.x + box.width).toBeLessThanOrEqual(visible.x + visible.width);
    // Readable: lines of some 25 characters at least, not a sliver of a column.
    expect(box.width).toBeGreaterThanOrEqual(180);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('narrows the list with the filters, keeps them in the URL across reload, and back restores the unfiltered list', async () => {
    const { page, problems, browserContext } = await signedIn();
    await page.goto(`/visits?subdomain=${subdomain}`);
    await rows(page).first().waitFor();
    await page.getByLabel('Bots').selectOption('true');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/is_bot=true/);
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 1);
    expect(await rows(page).first().textContent()).toContain('Googlebot');
    await page.reload();
    await rows(page).first().waitFor();
    expect(await rows(page).count()).toBe(1);
    expect(await page.getByLabel('Bots').inputValue()).toBe('true');
    // Kind and link together: the link's people visits, the attack left out.
    await page.getByLabel('Bots').selectOption('false');
    await page.getByLabel('Link', { exact: true }).selectOption({ label: slug });
    await page.getByLabel('Kind').selectOption('visit');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/kind=visit/);
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 2);
    expect(await page.locator('table.visits-table').textContent()).not.toContain('/.env');
    // A country no visit has (loopback has none): the filtered empty state.
    await page.getByLabel('Country').fill('de');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No visit matches these filters.').waitFor();
    await page.goBack();
    await page.goBack();
    await page.goBack();
    await page.waitForURL((url) => url.search === `?subdomain=${subdomain}`);
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 4);
    expect(await page.getByLabel('Bots').inputValue()).toBe('');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it("filters by a cell's value: browser, OS and referrer host become chips that stack, stay in the URL and come off", async () => {
    const { page, problems, browserContext } = await signedIn();
    await page.goto(`/visits?subdomain=${subdomain}`);
    await rows(page).first().waitFor();
    expect(await rows(page).count()).toBe(4);
    await page
      .locator('table.visits-table')
      .getByRole('link', { name: /^Linux/ })
      .first()
      .click();
    await page.waitForURL(/[?&]os=Linux(&|$)/);
    // The Firefox visit from news.example and the probe: Googlebot and the script-laden agent name no OS.
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 2);
    const chips = page.getByRole('group', { name: 'Filters of the list' });
    expect(await chips.locator('li').allTextContents()).toEqual(['Operating system: Linux×']);
    const host = page.locator('table.visits-table').getByRole('link', { name: /^news\.example/ });
    await host.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/[?&]referrer_host=news\.example(&|$)/);
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 1);
    expect(await chips.locator('li').count()).toBe(2);
    // The form applies on top of the cells' filters: they stay.
    await page.getByLabel('Kind').selectOption('visit');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/kind=visit/);
    expect(new URL(page.url()).searchParams.get('os')).toBe('Linux');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'visits-filters-desktop');
    await page.reload();
    await rows(page).first().waitFor();
    expect(await rows(page).count()).toBe(1);
    await page.getByRole('link', { name: 'Remove the filter Operating system: Linux' }).click();
    await page.waitForURL((url) => !url.search.includes('os='));
    await page.getByRole('link', { name: 'Remove the filter Referrer host: news.example' }).click();
    await page.waitForURL((url) => !url.search.includes('referrer_host='));
    expect(await page.getByRole('group', { name: 'Filters of the list' }).count()).toBe(0);
    // Kind=visit left: the two people's visits.
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 2);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('shows the API refusing filters on their fields, and the forbidden state for a subdomain whose list is not public', async () => {
    const { page, problems, browserContext } = await signedIn();
    await page.goto(`/visits?subdomain=${subdomain}`);
    await rows(page).first().waitFor();
    await page.getByLabel('Country').fill('1x');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.locator('#visits-country-error').filter({ hasText: 'two-letter country code' }).waitFor();
    expect(await page.getByLabel('Country').getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('alert').first().waitFor();
    await page.getByLabel('Country').fill('');
    await page.getByLabel('From').fill('2026-01-02T10:00');
    await page.getByLabel('Before').fill('2026-01-01T10:00');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.locator('#visits-since-error').filter({ hasText: 'must be earlier than “Before”' }).waitFor();
    await screenshot(page, 'visits-invalid-desktop');

    const other = await createOwner(platform.context, platform.app);
    const hidden = await claimSubdomain(platform.app, other);
    await page.goto(`/visits?subdomain=${hidden}`);
    await page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('pages with Next and Previous through cursors', async () => {
    const { page, browserContext } = await signedIn();
    await page.goto(`/visits?subdomain=${subdomain}&limit=3`);
    await rows(page).first().waitFor();
    expect(await rows(page).count()).toBe(3);
    const firstPage = await rows(page).allTextContents();
    const previous = page.getByRole('button', { name: 'Previous page' });
    const next = page.getByRole('button', { name: 'Next page' });
    expect(await previous.isDisabled()).toBe(true);
    await next.click();
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 1);
    const secondPage = await rows(page).allTextContents();
    expect(secondPage.some((text) => firstPage.includes(text))).toBe(false);
    expect(await next.isDisabled()).toBe(true);
    await previous.click();
    await page.waitForFunction(() => document.querySelectorAll('table.visits-table tbody tr').length === 3);
    expect(await rows(page).allTextContents()).toEqual(firstPage);
    expect(await previous.isDisabled()).toBe(true);
    await browserContext.close();
  });

  it('shows a visit made meanwhile without a reload within 3 s, once, announced; paused updates wait for resume', async () => {
    const { page, problems, browserContext } = await signedIn();
    await page.goto(`/visits?subdomain=${subdomain}`);
    await rows(page).first().waitFor();
    const before = await rows(page).count();
    const marker = `https://live.example/${Date.now()}`;
    const started = Date.now();
    expect(await hit(`/${slug}`, { 'user-agent': FIREFOX, referer: marker })).toBe(302);
    await page.locator('td.referrer').filter({ hasText: marker }).waitFor({ timeout: 5_000 });
    const took = Date.now() - started;
    expect(took).toBeLessThan(3_000);
    // eslint-disable-next-line no-console -- how long the live view took, for the run's log
    console.info(`live visit shown after ${took} ms`);
    await page.getByRole('status').filter({ hasText: '1 new visit' }).waitFor();
    expect(await rows(page).first().textContent()).toContain(marker);
    expect(await rows(page).first().getAttribute('class')).toContain('visit-fresh');
    // Later rounds see it again (they look back a little): still one row.
    await page.waitForTimeout(3_100);
    expect(await page.locator('td.referrer').filter({ hasText: marker }).count()).toBe(1);
    expect(await rows(page).count()).toBe(before + 1);

    await page.getByRole('button', { name: 'Pause live updates' }).click();
    await page.getByText('Live updates paused.').waitFor();
    const paused = `https://paused.example/${Date.now()}`;
    expect(await hit(`/${slug}`, { 'user-agent': FIREFOX, referer: paused })).toBe(302);
    await stored(`subdomain=${subdomain}`, before + 2);
    await page.waitForTimeout(1_700);
    expect(await page.locator('td.referrer').filter({ hasText: paused }).count()).toBe(0);
    await page.getByRole('button', { name: 'Resume live updates' }).click();
    await page.locator('td.referrer').filter({ hasText: paused }).waitFor({ timeout: 6_000 });
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});

describe('attacks page', () => {
  it("lists the probes on the owner's subdomains with kind, path and address, accessible on desktop and phone; another owner sees none", async () => {
    const { page, problems, browserContext } = await signedIn();
    await page.goto('/attacks');
    const row = page.locator('table.attacks-table tbody tr').filter({ hasText: '/.env' });
    await row.waitFor();
    const text = await row.textContent();
    expect(text).toContain(subdomain);
    expect(text).toContain('Scanner');
    expect(text).toContain('127.0.0.1');
    // The probe's path is shown as the text it was, on its own subdomain's row.
    const xss = page.locator('table.attacks-table tbody tr').filter({ hasText: XSS_PATH });
    expect(await xss.textContent()).toContain(probed);
    expect(await xss.textContent()).toContain('Cross-site scripting');
    expect(await page.locator('table script').count()).toBe(0);
    // The subdomain filter narrows to one subdomain's probes.
    await page.getByLabel('Subdomain').selectOption(probed);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(new RegExp(`subdomain=${probed}`));
    await page.waitForFunction(() => !document.querySelector('table.attacks-table')?.textContent?.includes('/.env'));
    expect(await page.locator('table.attacks-table tbody tr').count()).toBe(1);
    await page.goBack();
    await row.waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'attacks-desktop');
    await page.setViewportSize(VIEWPORTS.phone);
    await page.reload();
    await row.waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'attacks-phone');
    expect(problems).toEqual([]);
    await browserContext.close();

    // An owner without probes: the empty state, not someone else's attacks.
    const stranger = await createOwner(platform.context, platform.app);
    const fresh = await openPage(platform);
    await signIn(fresh.page, stranger.email);
    await fresh.page.goto('/attacks');
    await fresh.page.getByText('No attack attempts on your subdomains.').waitFor();
    expect(await fresh.page.getByRole('button', { name: 'Next page' }).count()).toBe(0);
    await screenshot(fresh.page, 'attacks-empty-desktop');
    // Asking for the first owner's subdomain: refused, shown as forbidden.
    await fresh.page.goto(`/attacks?subdomain=${subdomain}`);
    await fresh.page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    expect(fresh.problems).toEqual([]);
    await fresh.browserContext.close();
  });
});
