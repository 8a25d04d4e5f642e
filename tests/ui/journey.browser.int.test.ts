import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'csv-parse/sync';
import { chromium, type Browser, type Request, type Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait.js';
import { CHROMIUM, newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, type UiPlatform } from './support.js';

// The end-to-end flow, as one person does it in one browser: sign in, claim a subdomain,
// create a link, follow it, see the visit in the dashboard, open the statistics to the public with
// geolocation hidden and check that no country reaches the public page in any form, create a token,
// create a webhook and send a test to a local receiver, export CSV and compare it with the API.
// The link's target is another site, `landing.test`: a local server, which the visitor's browser
// reaches through its host resolver rules (the platform rightly refuses loopback targets by address).
let platform: UiPlatform;
let receiver: Server;
let receiverOrigin: string;
let landing: Server;
let target: string;
let visitorBrowser: Browser;
const hooks: { path: string; body: string }[] = [];

/** A desktop browser's user agent: headless Chromium's own says "HeadlessChrome" and counts as a bot. */
const DESKTOP_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36';
/** An address the bundled GeoLite2 database places in Bracknell, United Kingdom (sent through the trusted proxy header). */
const UK_ADDRESS = '81.2.69.142';
const COUNTRY_TRACES = ['United Kingdom', 'Bracknell', '>GB<', '"GB"', 'Countries', 'Cities'];

beforeAll(async () => {
  // The webhook's receiver.
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      hooks.push({ path: request.url ?? '', body: Buffer.concat(chunks).toString() });
      response.writeHead(200, { 'content-type': 'text/plain' }).end('received');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  receiverOrigin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  landing = createServer((_request, response) => {
    response
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><html lang="en"><title>Landing</title><h1>Welcome to the landing page</h1></html>');
  });
  landing.listen(0, '127.0.0.1');
  await once(landing, 'listening');
  target = `http://landing.test:${(landing.address() as AddressInfo).port}/welcome`;
  platform = await startUiPlatform({ WEBHOOK_ALLOWLIST: '127.0.0.1', TRUST_PROXY: '127.0.0.1/32' });
  visitorBrowser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--host-resolver-rules=MAP *.localhost 127.0.0.1, MAP landing.test 127.0.0.1'],
  });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await visitorBrowser?.close();
  receiver?.close();
  landing?.close();
});

describe('a new owner, end to end in the browser', () => {
  it('claims, shortens, follows, watches, publishes without geolocation, and integrates', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform, { userAgent: DESKTOP_UA });
    const subdomain = `j${Math.random().toString(36).slice(2, 10)}`;

    // Sign in, claim a subdomain.
    await signIn(page, account.email);
    await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Subdomains' }).click();
    await page.getByLabel('Name', { exact: true }).fill(subdomain);
    await page.getByRole('button', { name: 'Claim' }).click();
    await page.getByRole('link', { name: 'Settings' }).first().waitFor();

    // Create a link to the landing page.
    await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Links' }).click();
    await page.getByRole('button', { name: 'New link' }).click();
    await page.getByLabel('Target URL').fill(target);
    await page.getByLabel('Title', { exact: true }).fill('Journey link');
    await page.getByRole('button', { name: 'Create link' }).click();
    const row = page.getByRole('row').filter({ hasText: 'Journey link' });
    await row.waitFor({ timeout: 5000 }).catch(async (error) => {
      await screenshot(page, 'journey-failure');
      throw error;
    });
    const shortUrl = (await row.getByRole('link').first().getAttribute('href'))!;
    expect(shortUrl).toMatch(new RegExp(`^http://${subdomain}\\.localhost:${platform.port}/[a-z0-9]{7}$`));
    const slug = shortUrl.split('/').pop()!;

    // Follow the short URL in the browser, as a visitor from the United Kingdom behind the trusted proxy.
    const visitor = await visitorBrowser.newContext({ userAgent: DESKTOP_UA, extraHTTPHeaders: { 'X-Forwarded-For': UK_ADDRESS } });
    const visitorPage = await visitor.newPage();
    await visitorPage.goto(shortUrl);
    expect(visitorPage.url()).toBe(target);
    await visitorPage.getByRole('heading', { name: 'Welcome to the landing page' }).waitFor();
    await visitor.close();

    // The visit appears in the dashboard's visit list and in the totals.
    await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Visits' }).click();
    await page
      .getByRole('row')
      .filter({ hasText: `/${slug}` })
      .first()
      .waitFor({ timeout: 15_000 });
    await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Overview' }).click();
    const card = page.locator('li.card').filter({ hasText: subdomain });
    await waitFor(
      async () => {
        await page.reload();
        await card.waitFor();
        return (await card.locator('dd').first().textContent())?.trim() === '1';
      },
      15_000,
      { message: 'the overview counts the visit', intervalMs: 500 },
    );
    // The owner sees where it came from.
    await page.goto(`/stats/subdomain/${subdomain}`);
    await page.getByText('United Kingdom').first().waitFor();

    // Make the statistics and the visit list public, geolocation hidden (the default).
    await page.goto(`/subdomains/${subdomain}`);
    await page.getByLabel('Public statistics', { exact: true }).check();
    await page.getByLabel('Public visit list', { exact: true }).check();
    await page.getByLabel('Links', { exact: true }).check();
    expect(await page.getByLabel('Location', { exact: true }).isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.', { exact: false }).first().waitFor();

    // The public page shows them, and no country anywhere: not in the DOM, not in any request or answer.
    const publicPage = await (await platform.browser.newContext({ userAgent: DESKTOP_UA })).newPage();
    const requests: Request[] = [];
    const answers: Response[] = [];
    publicPage.on('request', (request) => requests.push(request));
    publicPage.on('response', (response) => answers.push(response));
    await publicPage.goto(`${platform.shortOrigin(subdomain)}/`);
    await publicPage.getByRole('heading', { name: 'Statistics of the last 30 days' }).waitFor();
    await publicPage.getByRole('heading', { name: 'Recent visits' }).waitFor();
    expect(await publicPage.getByRole('cell', { name: `/${slug}` }).count()).toBeGreaterThan(0);
    const dom = await publicPage.content();
    for (const trace of COUNTRY_TRACES) expect(dom, trace).not.toContain(trace);
    expect(requests.map((request) => request.url())).toEqual([`${platform.shortOrigin(subdomain)}/`]);
    for (const answer of answers) {
      const body = await answer.text();
      for (const trace of COUNTRY_TRACES) expect(body, trace).not.toContain(trace);
    }
    expect(await seriousA11yViolations(publicPage)).toEqual([]);
    await screenshot(publicPage, 'public-page-desktop');
    // The period picker: links, from the keyboard; the report follows, and still no request of its own.
    const periods = publicPage.getByRole('navigation', { name: 'Period' });
    expect(await periods.getByRole('link', { name: '30 days' }).getAttribute('aria-current')).toBe('page');
    await periods.getByRole('link', { name: '24 hours' }).focus();
    await publicPage.keyboard.press('Enter');
    await publicPage.waitForURL(/\?period=24h$/);
    await publicPage.getByRole('heading', { name: 'Statistics of the last 24 hours' }).waitFor();
    expect(await periods.getByRole('link', { name: '24 hours' }).getAttribute('aria-current')).toBe('page');
    // Counted to the last whole quarter hour: the chart, labelled by hour, or the sentence saying nothing is counted yet.
    const chart = publicPage.getByRole('img', { name: /^Visits per hour \(UTC\), from .+ to .+; the highest hour had \d+\.$/ });
    expect((await chart.count()) + (await publicPage.getByText('No visits counted in this period yet.').count())).toBe(1);
    expect(await seriousA11yViolations(publicPage)).toEqual([]);
    await screenshot(publicPage, 'public-page-24h-desktop');
    expect(requests.map((request) => request.url())).toEqual([`${platform.shortOrigin(subdomain)}/`, `${platform.shortOrigin(subdomain)}/?period=24h`]);
    await publicPage.context().close();
    // Readable with JavaScript off, on a phone: it has none, and fits the screen.
    const phone = await openPage(platform, { viewport: 'phone', javaScriptEnabled: false });
    await phone.page.goto(`${platform.shortOrigin(subdomain)}/`);
    await phone.page.getByRole('heading', { name: 'Recent visits' }).waitFor();
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(phone.page, 'public-page-phone');
    await phone.browserContext.close();

    // A token: shown once, gone after a reload.
    await page.goto('/tokens');
    await page.getByLabel('Name').fill('journey');
    await page.getByRole('checkbox', { name: /^stats:read/ }).check();
    await page.getByRole('button', { name: 'Create token' }).click();
    const secret = (await page.locator('.secret code').first().textContent())!.trim();
    expect(secret).toMatch(/^svc_u_[0-9a-f]{12}_/);
    const me = await fetch(`${platform.origin}/api/v1/me`, { headers: { authorization: `Bearer ${secret}` } });
    expect(me.status).toBe(200);
    await page.reload();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    await page.getByRole('row').filter({ hasText: 'journey' }).waitFor();
    expect(await page.content()).not.toContain(secret);

    // A webhook to the local receiver: test it, and the delivery is in the log.
    await page.goto('/webhooks');
    await page.getByLabel('Receiver URL').fill(`${receiverOrigin}/hook`);
    await page.getByRole('checkbox', { name: /^visit\.new / }).check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.locator('.secret').waitFor();
    await page
      .getByRole('link', { name: `${receiverOrigin}/hook` })
      .first()
      .click();
    await page.getByRole('button', { name: 'Send test' }).click();
    await waitFor(() => hooks.find((hook) => hook.path === '/hook' && hook.body.includes('"webhook.test"')), 10_000, { message: 'the receiver gets the test' });
    await waitFor(
      async () => {
        await page.reload();
        await page.getByRole('button', { name: 'Send test' }).waitFor();
        return (await page.getByRole('row').filter({ hasText: 'webhook.test' }).filter({ hasText: '200' }).count()) > 0;
      },
      15_000,
      { message: 'the delivery log shows the test', intervalMs: 500 },
    );

    // Export CSV, and compare its rows with the API's visit list.
    await page.goto('/exports');
    await page.getByLabel('Subdomain').getByRole('option', { name: subdomain, exact: true }).waitFor({ state: 'attached' });
    await page.getByLabel('Subdomain').selectOption(subdomain);
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    const saved = await download;
    const rows = parse<Record<string, string>>(await readFile(await saved.path(), 'utf8'), { columns: true, bom: true });
    const listed = await fetch(`${platform.origin}/api/v1/visits?subdomain=${subdomain}&limit=100`, { headers: { authorization: `Bearer ${secret}` } });
    const visits = ((await listed.json()) as { data: { visits: { visit_id: string; country: string }[] } }).data.visits;
    expect(rows.map((entry) => entry.visit_id).sort()).toEqual(visits.map((visit) => visit.visit_id).sort());
    expect(rows).toHaveLength(1);
    expect(rows[0]!.country).toBe('GB');

    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);
});
