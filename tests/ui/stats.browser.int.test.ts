import type { Page } from 'playwright-core';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toClickHouseTime } from '#shared/analytics/analytics.js';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import {
  BROWSER_AGENTS,
  openPage as openBrowserPage,
  screenshot,
  SCREENSHOTS_DIR,
  seriousA11yViolations,
  shortHostVisit,
  signIn,
  startUiPlatform,
  type UiPlatform,
} from './support.js';

// The statistics page in a real browser, over visits made through the platform's own edge and
// enricher: totals of humans beside bots, breakdowns, the chart following the granularity and
// time zone pickers (kept in the URL), the link report, the API's refusals, and the states.
let platform: UiPlatform;
let alice: TestOwner;
let bob: TestOwner;
let sub: string;
const links: Record<'alpha' | 'beta', string> = { alpha: '', beta: '' };

const { chrome: CHROME, firefox: FIREFOX } = BROWSER_AGENTS;
const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1';
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

/** A request to the short host of `sub` as a visitor's browser sends it. */
const visit = (path: string, headers: Record<string, string>) => shortHostVisit(platform, sub, path, headers);

async function statsOf(owner: TestOwner, url: string): Promise<{ totals: Record<string, number>; top: Record<string, { value: string; visits: number }[]> }> {
  const response = await platform.app.inject({ method: 'GET', url, headers: owner.auth });
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  return response.json().data;
}

beforeAll(async () => {
  // The edge trusts the loopback proxy, so each visitor's X-Forwarded-For address is theirs (and geolocated).
  platform = await startUiPlatform({ TRUST_PROXY: '127.0.0.1' });
  [alice, bob] = await Promise.all([createOwner(platform.context, platform.app), createOwner(platform.context, platform.app)]);
  sub = await claimSubdomain(platform.app, alice);
  for (const slug of ['alpha', 'beta'] as const) {
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: { subdomain: sub, slug, target_url: 'https://example.com/' },
    });
    if (created.statusCode !== 201) throw new Error(created.body);
    links[slug] = created.json().data.id;
  }
  // Four people (three on alpha), two crawler visits and one scanner, each from its own address.
  const statuses = await Promise.all([
    visit('/alpha?utm_source=newsletter', { 'user-agent': CHROME, 'x-forwarded-for': '81.2.69.142', referer: 'https://news.example.org/post' }),
    visit('/alpha', { 'user-agent': CHROME, 'x-forwarded-for': '203.0.113.21' }),
    visit('/alpha', { 'user-agent': IPHONE, 'x-forwarded-for': '203.0.113.22' }),
    visit('/beta', { 'user-agent': FIREFOX, 'x-forwarded-for': '203.0.113.23' }),
    visit('/alpha', { 'user-agent': GOOGLEBOT, 'x-forwarded-for': '203.0.113.31' }),
    visit('/beta', { 'user-agent': GOOGLEBOT, 'x-forwarded-for': '203.0.113.32' }),
    visit('/.env', { 'user-agent': 'curl/8.4.0', 'x-forwarded-for': '203.0.113.41' }),
  ]);
  expect(statuses.slice(0, 6).every((status) => status >= 300 && status < 400)).toBe(true);
  expect(statuses[6]).toBe(404);
  // The enricher writes them a moment later: wait until the owner's report counts them all.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { totals } = await statsOf(alice, `/api/v1/stats/subdomain/${sub}`);
    if (totals.visits === 4 && totals.bots === 2) break;
    if (Date.now() > deadline) throw new Error(`visits not counted: ${JSON.stringify(totals)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

/** A page whose waits give up well before the test does, so a failure names the step. */
async function openPage(...args: Parameters<typeof openBrowserPage>) {
  const opened = await openBrowserPage(...args);
  opened.page.setDefaultTimeout(10_000);
  return opened;
}

const total = (page: Page, label: string) =>
  page
    .locator('dl.totals > div', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) })
    .locator('dd')
    .first();
/** A total's change against the previous period (compare=previous), under it. */
const change = (page: Page, label: string) =>
  page.locator('dl.totals > div', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) }).locator('dd.change');
const breakdown = (page: Page, caption: string) => page.locator('table.bars', { has: page.locator('caption', { hasText: new RegExp(`^${caption}$`) }) });
const chart = (page: Page) => page.locator('figure.chart');

describe('statistics page', () => {
  it('picks a subdomain from the account report and shows its humans beside its bots, chart and breakdowns', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto('/stats');
    await page.getByRole('heading', { name: 'Statistics of the whole account' }).waitFor();
    // The address is completed with the settings in force, so it can be shared as it is.
    await page.waitForURL(/\/stats\?range=7d&granularity=day&tz=UTC$/);
    expect(await total(page, 'Humans').textContent()).toBe('4');
    await page.getByLabel('Report of').selectOption(`/stats/subdomain/${sub}`);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.waitForURL(new RegExp(`/stats/subdomain/${sub}\\?range=7d&granularity=day&tz=UTC$`));
    await page.getByRole('heading', { name: `Statistics of ${sub}` }).waitFor();
    expect(await total(page, 'Humans').textContent()).toBe('4');
    expect(await total(page, 'Bots').textContent()).toBe('2');
    expect(await total(page, 'Unique visitors').textContent()).toBe('4');
    // Breakdowns of human visits only: Googlebot is not among the browsers.
    const browsers = breakdown(page, 'Browsers');
    expect(await browsers.locator('tbody tr', { hasText: 'Chrome' }).locator('td.num').textContent()).toBe('2');
    expect(await browsers.textContent()).not.toContain('Googlebot');
    expect(await breakdown(page, 'Referrers').locator('tbody tr', { hasText: 'news.example.org' }).locator('td.num').textContent()).toBe('1');
    expect(await breakdown(page, 'Referrers').locator('tbody tr', { hasText: '(direct)' }).locator('td.num').textContent()).toBe('3');
    expect(await breakdown(page, 'UTM sources').locator('tbody tr', { hasText: 'newsletter' }).count()).toBe(1);
    expect(await breakdown(page, 'Countries').locator('tbody tr', { hasText: 'United Kingdom' }).locator('td.num').textContent()).toBe('1');
    expect(await breakdown(page, 'Device types').locator('tbody tr', { hasText: 'Mobile' }).locator('td.num').textContent()).toBe('1');
    expect(await breakdown(page, 'Links').locator('tbody tr', { hasText: 'alpha' }).locator('td.num').textContent()).toBe('3');
    // The chart: a canvas with an accessible name, and its figures as a table.
    const figure = chart(page);
    expect(await figure.getAttribute('data-granularity')).toBe('day');
    expect(await figure.locator('canvas').count()).toBeGreaterThan(0);
    expect(await figure.getByRole('img').getAttribute('aria-label')).toMatch(/^Chart of visits per day from .+ \(UTC\)/);
    await figure.getByText('Show the figures as a table').click();
    const rows = figure.locator('.chart-table tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(Number(await figure.getAttribute('data-points')));
    expect(await rows.last().locator('td').first().textContent()).toBe('4');
    // Series are toggled from the keyboard.
    const bots = figure.getByRole('button', { name: 'Bots' });
    await bots.focus();
    await page.keyboard.press('Space');
    expect(await bots.getAttribute('aria-pressed')).toBe('false');
    await page.keyboard.press('Enter');
    expect(await bots.getAttribute('aria-pressed')).toBe('true');
    // The figures' table scrolls inside its frame, and only downwards.
    expect(await figure.locator('.table-wrap').evaluate((element) => element.scrollWidth - element.clientWidth)).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-subdomain-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('switches to hourly figures in another time zone: the URL and the chart follow, and a reload keeps them', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=7d&granularity=day&tz=UTC`);
    const figure = chart(page);
    await figure.waitFor();
    const dailyPoints = Number(await figure.getAttribute('data-points'));
    await page.getByRole('button', { name: 'Hourly' }).click();
    await page.waitForURL(/granularity=hour/);
    await page.locator('figure.chart[data-granularity="hour"]').waitFor();
    expect(Number(await figure.getAttribute('data-points'))).toBeGreaterThan(dailyPoints * 20);
    await page.getByLabel('Time zone', { exact: true }).selectOption('America/St_Johns');
    await page.waitForURL(/tz=America%2FSt_Johns/);
    await page.locator('figure.chart[data-tz="America/St_Johns"]').waitFor();
    expect(await figure.getByRole('img').getAttribute('aria-label')).toMatch(/^Chart of visits per hour .+ \(America\/St_Johns\)/);
    // Hourly periods in Newfoundland start at half past the UTC hour: the table's times are St. John's whole hours.
    await figure.getByText('Show the figures as a table').click();
    await figure.locator('.chart-table tbody th').first().waitFor();
    expect(await figure.locator('.chart-table tbody th').first().textContent()).toMatch(/:00 (AM|PM)$/);
    await page.reload();
    await page.locator('figure.chart[data-tz="America/St_Johns"][data-granularity="hour"]').waitFor();
    expect(await page.getByRole('button', { name: 'Hourly' }).getAttribute('aria-pressed')).toBe('true');
    expect(await page.getByLabel('Time zone', { exact: true }).inputValue()).toBe('America/St_Johns');
    // 90 days is too long for hourly figures: the UI moves to daily ones and says why hourly is off.
    await page.getByRole('button', { name: '90 days' }).click();
    await page.waitForURL(/range=90d&granularity=day/);
    expect(await page.getByRole('button', { name: 'Hourly' }).isDisabled()).toBe(true);
    await page.getByText('Hourly figures need a period of at most 83 days.').waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  // Guards issue 34: the browser lists Asia/Calcutta and Europe/Kiev, so Kolkata and Kyiv could not be found.
  it('offers zones by their current names and finds them by the old ones too', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=7d&granularity=day&tz=Asia%2FCalcutta`);
    const picker = page.getByLabel('Time zone', { exact: true });
    // A saved address with the old name opens the zone by its current one.
    await page.waitForURL(/tz=Asia%2FKolkata/);
    expect(await picker.inputValue()).toBe('Asia/Kolkata');
    const values = () => picker.locator('option').evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value));
    expect(await values()).not.toContain('Asia/Calcutta');
    expect(await values()).not.toContain('Europe/Kiev');
    const search = page.getByLabel('Find a time zone');
    await search.fill('kyiv');
    expect(await values()).toEqual(['Asia/Kolkata', 'Europe/Kyiv']);
    await search.fill('Kiev');
    expect(await values()).toEqual(['Asia/Kolkata', 'Europe/Kyiv']);
    expect(await picker.locator('option[value="Europe/Kyiv"]').textContent()).toBe('Europe/Kyiv (Europe/Kiev)');
    await picker.selectOption('Europe/Kyiv');
    await page.waitForURL(/tz=Europe%2FKyiv/);
    await page.locator('figure.chart[data-tz="Europe/Kyiv"]').waitFor();
    await search.fill('calcutta');
    expect(await values()).toEqual(['Asia/Kolkata', 'Europe/Kyiv']);
    await search.fill('new york');
    expect(await values()).toEqual(['America/New_York', 'Europe/Kyiv']);
    await screenshot(page, 'stats-zone-search-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  // Guards issue 34: the axis was drawn with uPlot's US dates ("11/21") in German too.
  it("labels the chart's time axis in the viewer's language", async () => {
    const { page, problems, browserContext } = await openPage(platform, { locale: 'de-DE' });
    // The axis is drawn on a canvas: the texts drawn are recorded as they are drawn.
    await page.addInitScript(() => {
      const drawn: string[] = [];
      (window as unknown as { drawn: string[] }).drawn = drawn;
      const { prototype } = CanvasRenderingContext2D;
      const draw = Object.getOwnPropertyDescriptor(prototype, 'fillText')!.value as (this: CanvasRenderingContext2D, ...args: unknown[]) => void;
      prototype.fillText = function (this: CanvasRenderingContext2D, text: string, x: number, y: number, maxWidth?: number) {
        drawn.push(text);
        draw.call(this, text, x, y, ...(maxWidth === undefined ? [] : [maxWidth]));
      };
    });
    const [cookie, value] = alice.cookie.split('=') as [string, string];
    await browserContext.addCookies([{ name: cookie, value, url: platform.origin, httpOnly: true, sameSite: 'Lax' }]);
    await page.goto(`/stats/subdomain/${sub}?range=30d&granularity=day&tz=Europe%2FBerlin`);
    await page.locator('figure.chart[data-granularity="day"]').waitFor();
    await page.waitForFunction(() => (window as unknown as { drawn: string[] }).drawn.length > 0);
    const daily = await page.evaluate(() => (window as unknown as { drawn: string[] }).drawn);
    expect(
      daily.some((text) => /^\d{1,2}\. (Jan|Feb|März|Apr|Mai|Juni|Juli|Aug|Sept|Okt|Nov|Dez)\.?$/.test(text)),
      daily.join(' | '),
    ).toBe(true);
    expect(daily.filter((text) => /^\d{1,2}\/\d{1,2}/.test(text))).toEqual([]);
    await page.evaluate(() => ((window as unknown as { drawn: string[] }).drawn.length = 0));
    await page.goto(`/stats/subdomain/${sub}?range=24h&granularity=hour&tz=Europe%2FBerlin`);
    await page.locator('figure.chart[data-granularity="hour"]').waitFor();
    await page.waitForFunction(() => (window as unknown as { drawn: string[] }).drawn.length > 0);
    const hourly = await page.evaluate(() => (window as unknown as { drawn: string[] }).drawn);
    // 24-hour times, as Germans read them; no AM/PM.
    expect(
      hourly.some((text) => /^\d{2}:00$/.test(text)),
      hourly.join(' | '),
    ).toBe(true);
    expect(hourly.filter((text) => /AM|PM|am|pm/.test(text))).toEqual([]);
    await screenshot(page, 'stats-hourly-de-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it("opens a link's report from the links breakdown, without a links breakdown of its own", async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=24h&granularity=hour&tz=UTC`);
    await breakdown(page, 'Links').getByRole('link', { name: 'alpha' }).click();
    await page.waitForURL(new RegExp(`/stats/link/${links.alpha}\\?range=24h&granularity=hour&tz=UTC$`));
    await page.getByRole('heading', { name: 'Statistics of the link alpha' }).waitFor();
    await page.locator('figure.chart').waitFor();
    expect(await total(page, 'Humans').textContent()).toBe('3');
    expect(await total(page, 'Bots').textContent()).toBe('1');
    expect(await breakdown(page, 'Links').count()).toBe(0);
    expect(await breakdown(page, 'Browsers').locator('tbody tr', { hasText: 'Mobile Safari' }).locator('td.num').textContent()).toBe('1');
    // The picker now offers the subdomain's links, the current one selected.
    expect(await page.getByLabel('Report of').inputValue()).toBe(`/stats/link/${links.alpha}`);
    await page.getByLabel('Report of').selectOption(`/stats/link/${links.beta}`);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.getByRole('heading', { name: 'Statistics of the link beta' }).waitFor();
    await page.locator('figure.chart').waitFor();
    expect(await total(page, 'Humans').textContent()).toBe('1');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-link-desktop');
    await page.getByRole('link', { name: `A link of ${sub}` }).click();
    await page.getByRole('heading', { name: `Statistics of ${sub}` }).waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it("shows a link's visits by redirect rule and by A/B variant, visited through the edge, each named by what it is", async () => {
    // A link of its own subdomain (the other tests count the shared one's visits): phones go to the app, the rest split three ways.
    const own = await claimSubdomain(platform.app, alice);
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: {
        subdomain: own,
        slug: 'split',
        target_url: 'https://example.com/',
        rules: [{ condition: { type: 'device', values: ['mobile'] }, target_url: 'https://example.com/app' }],
        variants: [
          { target_url: 'https://example.com/a', weight: 1 },
          { target_url: 'https://example.com/b', weight: 1 },
          { target_url: 'https://example.com/c', weight: 1 },
        ],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().data.id as string;
    const hit = (agent: string, address: string) => shortHostVisit(platform, own, '/split', { 'user-agent': agent, 'x-forwarded-for': address });
    const statuses = await Promise.all([
      hit(IPHONE, '203.0.113.51'),
      hit(IPHONE, '203.0.113.52'),
      ...Array.from({ length: 12 }, (_, i) => hit(i % 2 ? CHROME : FIREFOX, `198.51.100.${i + 10}`)),
    ]);
    expect(statuses.every((status) => status === 302)).toBe(true);
    const deadline = Date.now() + 30_000;
    while ((await statsOf(alice, `/api/v1/stats/link/${id}`)).totals.visits! < 14) {
      if (Date.now() > deadline) throw new Error('the visits of the split link were not counted');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto(`/stats/link/${id}?range=24h&granularity=hour&tz=UTC`);
    await page.getByRole('heading', { name: 'Redirect rules and A/B split' }).waitFor();
    const rules = page.getByRole('table', { name: 'Visits by redirect rule' });
    const ruleRow = rules.locator('tbody tr', { hasText: 'Rule 1' });
    expect(await ruleRow.textContent()).toContain('device: mobile → https://example.com/app');
    expect(await ruleRow.locator('td.num').first().textContent()).toBe('2');
    expect(await rules.locator('tbody tr', { hasText: 'No rule matched' }).locator('td.num').first().textContent()).toBe('12');
    const variants = page.getByRole('table', { name: 'Visits by A/B variant' });
    // The twelve desktop visitors are split among the three variants (sticky by address and agent), the phones had no split.
    const counts = await variants
      .locator('tbody tr')
      .evaluateAll((rows) => rows.map((row) => [row.querySelector('td')!.textContent.slice(0, 9), Number(row.querySelectorAll('td.num')[0]!.textContent)]));
    expect(counts.find(([label]) => String(label).startsWith('No split'))?.[1]).toBe(2);
    expect(counts.filter(([label]) => String(label).startsWith('Variant')).reduce((sum, [, n]) => sum + Number(n), 0)).toBe(12);
    expect(await variants.textContent()).toContain('weight 1 → https://example.com/a');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-link-routes-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('shows the validation errors of a custom period on its fields, then reports whole days', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=7d&granularity=day&tz=UTC`);
    await page.locator('figure.chart').waitFor();
    await page.getByRole('button', { name: 'Custom' }).click();
    const since = page.getByLabel('From', { exact: true });
    const until = page.getByLabel('To (inclusive)');
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    await since.fill(day(0));
    await until.fill(day(-3));
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('The start must be on or before the end.').waitFor();
    expect(await since.getAttribute('aria-invalid')).toBe('true');
    expect(page.url()).toContain('range=7d');
    await until.fill('');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('Pick a date.').waitFor();
    await since.fill(day(-2));
    await until.fill(day(0));
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(new RegExp(`since=${day(-2)}&until=${day(0)}&granularity=day&tz=UTC$`));
    await page.locator('figure.chart[data-points="3"]').waitFor();
    expect(await total(page, 'Humans').textContent()).toBe('4');
    expect(await page.getByRole('button', { name: 'Custom' }).getAttribute('aria-pressed')).toBe('true');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it("shows the API's refusal of hourly figures over 90 days, with a way to daily ones", async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=90d&granularity=hour&tz=UTC`);
    const alert = page.getByRole('alert').filter({ hasText: 'These figures cannot be shown' });
    await alert.waitFor();
    expect(await alert.textContent()).toContain('at most 2000 points');
    await alert.getByRole('button', { name: 'Show daily figures' }).click();
    await page.waitForURL(/range=90d&granularity=day/);
    expect(await total(page, 'Humans').textContent()).toBe('4');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('shows each total against the previous period, and overlays that period on the chart and in its table', async () => {
    const carol = await createOwner(platform.context, platform.app);
    const own = await claimSubdomain(platform.app, carol);
    const day = 86_400_000;
    const now = Date.now();
    // This week 3 people; the week before, 2 visits of one person and a bot; no attack in either.
    const stored = (at: number, kind: string, visitor: string) => ({
      visit_id: uuidv7({ msecs: at }),
      ts: toClickHouseTime(at),
      kind,
      owner_id: carol.id,
      subdomain: own,
      visitor_hash: visitor,
      is_bot: kind === 'bot' ? 1 : 0,
    });
    await platform.context.analytics.client.insert({
      table: 'visits',
      format: 'JSONEachRow',
      values: [
        stored(now - 3_600_000, 'visit', 'a'),
        stored(now - 2 * day, 'visit', 'b'),
        stored(now - 3 * day, 'visit', 'c'),
        stored(now - 10 * day, 'visit', 'd'),
        stored(now - 10 * day + 60_000, 'visit', 'd'),
        stored(now - 11 * day, 'bot', 'e'),
      ],
    });
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, carol.email);
    await page.goto(`/stats/subdomain/${own}?range=7d&granularity=day&tz=UTC`);
    await page.getByRole('heading', { name: `Statistics of ${own}` }).waitFor();
    expect(await total(page, 'Humans').textContent()).toBe('3');
    expect(await change(page, 'Humans').textContent()).toBe('▲ +50% against 2 in the previous period of the same length');
    expect(await change(page, 'Unique visitors').textContent()).toContain('+200%');
    expect(await change(page, 'Bots').textContent()).toBe('▼ -100% against 1 in the previous period of the same length');
    expect(await change(page, 'Attacks').textContent()).toBe('none in the previous period');
    const figure = chart(page);
    const overlay = figure.getByRole('button', { name: 'Previous period' });
    expect(await overlay.getAttribute('aria-pressed')).toBe('false');
    await overlay.focus();
    await page.keyboard.press('Enter');
    expect(await overlay.getAttribute('aria-pressed')).toBe('true');
    await figure.getByText('Show the figures as a table').click();
    const table = figure.locator('.chart-table table');
    await table.waitFor();
    expect(await table.locator('thead th').last().textContent()).toBe('Humans, previous period');
    const previousColumn = await table.locator('tbody tr td:last-child').allTextContents();
    expect(previousColumn.map(Number).reduce((a, b) => a + b, 0)).toBe(2);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-compare-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('draws the countries with visits on an offline SVG world map, titled with their counts; a click filters by the country', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    // Nothing but the dashboard's own origin: the map's shapes come with its own chunk.
    const foreign: string[] = [];
    page.on('request', (sent) => {
      if (!sent.url().startsWith(platform.origin)) foreign.push(sent.url());
    });
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=7d&granularity=day&tz=UTC`);
    const map = page.getByTestId('world-map');
    // Below the chart: its shapes load once it is scrolled near.
    await map.scrollIntoViewIfNeeded();
    const visited = map.locator('path.country-visited');
    await visited.first().waitFor();
    // 81.2.69.142 is in the United Kingdom (GeoLite2); the other visitors' addresses are in no country.
    expect(await visited.count()).toBe(1);
    expect(await visited.getAttribute('data-country')).toBe('GB');
    expect(await visited.locator('title').textContent()).toBe('United Kingdom: 1 visit');
    expect(await map.locator('path.country').count()).toBeGreaterThan(150);
    // For screen readers, the coloured countries are a labelled group, each named with its visits; the rest is scenery.
    const group = map.getByRole('group', { name: /^Countries with visits/ });
    expect(await group.getByRole('img').evaluateAll((images) => images.map((image) => image.getAttribute('aria-label')))).toEqual(['United Kingdom: 1 visit']);
    // Kosovo, Somaliland and Northern Cyprus have no ISO numeric code in the atlas: they are mapped all the same.
    expect(await map.locator('path[data-country="XK"]').count()).toBe(1);
    expect(await map.locator('path[data-country="SO"]').count()).toBe(2);
    expect(await map.locator('path[data-country="CY"]').count()).toBe(2);
    expect(await map.locator('path:not([data-country])').count()).toBe(0);
    // One country: the caption is singular, and the legend has the one step a maximum of 1 reaches.
    expect(await map.locator('figcaption .map-caption').textContent()).toBe(
      '1 country with visits; darker is more. The countries table below has the same figures.',
    );
    expect(await map.getByRole('list', { name: 'Colour scale' }).getByRole('listitem').allTextContents()).toEqual(['from 1']);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-map-desktop');
    await visited.click();
    await page.waitForURL(/[?&]country=GB(&|$)/);
    await expect.poll(() => total(page, 'Humans').textContent()).toBe('1');
    const chips = page.getByRole('group', { name: 'Filters of the report' });
    expect(await chips.locator('li').allTextContents()).toEqual(['Country: United Kingdom×']);
    expect(foreign).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('keeps the map, uncoloured and hidden from screen readers, when no visit is in a country or the report is empty', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    // Firefox's one visitor came from an address in no country: a report with visits, none of them on the map.
    await page.goto(`/stats/subdomain/${sub}?range=7d&granularity=day&tz=UTC&browser=Firefox`);
    await expect.poll(() => total(page, 'Humans').textContent()).toBe('1');
    const map = page.getByTestId('world-map');
    await map.scrollIntoViewIfNeeded();
    await map.locator('path.country').first().waitFor();
    expect(await map.locator('path.country-visited').count()).toBe(0);
    expect(await map.locator('svg').getAttribute('aria-hidden')).toBe('true');
    expect(await map.getByRole('group').count()).toBe(0);
    expect(await map.locator('figcaption').textContent()).toBe('No visit of this report could be placed in a country.');
    expect(await seriousA11yViolations(page)).toEqual([]);
    // A report without any visit: the empty state, and below it the same uncoloured map.
    await page.goto(`/stats/subdomain/${sub}?range=7d&granularity=day&tz=UTC&country=FR`);
    await page.getByText('No visits in this period').first().waitFor();
    await map.scrollIntoViewIfNeeded();
    await map.locator('path.country').first().waitFor();
    expect(await map.locator('path.country').count()).toBeGreaterThan(150);
    expect(await map.locator('path.country-visited').count()).toBe(0);
    expect(await map.locator('figcaption').textContent()).toBe('No visit of this report could be placed in a country.');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-map-empty-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await map.scrollIntoViewIfNeeded();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await screenshot(page, 'stats-map-empty-phone');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('filters by clicking breakdown rows: the filters stack as chips, live in the URL, survive a reload and come off one by one', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=7d&granularity=day&tz=UTC`);
    await page.getByRole('heading', { name: `Statistics of ${sub}` }).waitFor();
    expect(await total(page, 'Humans').textContent()).toBe('4');
    await breakdown(page, 'Browsers')
      .getByRole('link', { name: /^Chrome/ })
      .click();
    await page.waitForURL(/[?&]browser=Chrome(&|$)/);
    await expect.poll(() => total(page, 'Humans').textContent()).toBe('2');
    const chips = page.getByRole('group', { name: 'Filters of the report' });
    expect(await chips.locator('li').allTextContents()).toEqual(['Browser: Chrome×']);
    // The filtered breakdown is its one row, and no longer a filter link.
    expect(await breakdown(page, 'Browsers').getByRole('link').count()).toBe(0);
    // A second filter from the keyboard: it narrows what the first left.
    const uk = breakdown(page, 'Countries').getByRole('link', { name: /^United Kingdom/ });
    await uk.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/[?&]country=GB(&|$)/);
    await expect.poll(() => total(page, 'Humans').textContent()).toBe('1');
    expect(await chips.locator('li').count()).toBe(2);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-filters-desktop');
    // The address is the report: a reload shows the same.
    await page.reload();
    await page.getByRole('heading', { name: `Statistics of ${sub}` }).waitFor();
    await expect.poll(() => total(page, 'Humans').textContent()).toBe('1');
    await page.getByRole('link', { name: 'Remove the filter Country: United Kingdom' }).click();
    await page.waitForURL((url) => !url.search.includes('country='));
    await expect.poll(() => total(page, 'Humans').textContent()).toBe('2');
    await page.getByRole('link', { name: 'Remove the filter Browser: Chrome' }).click();
    await page.waitForURL((url) => !url.search.includes('browser='));
    await expect.poll(() => total(page, 'Humans').textContent()).toBe('4');
    expect(await page.getByRole('group', { name: 'Filters of the report' }).count()).toBe(0);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it("shows the empty state to an owner without visits, forbidden for another owner's subdomain, not found for an unknown one", async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, bob.email);
    await page.goto('/stats');
    await page.getByText('No visits in this period.').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-empty-desktop');
    await page.goto(`/stats/subdomain/${sub}`);
    const forbidden = page.getByRole('alert').filter({ hasText: 'You are not allowed to see this.' });
    await forbidden.waitFor();
    expect(await page.locator('dl.totals').count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-forbidden-desktop');
    await page.goto(`/stats/link/${links.alpha}`);
    await page.getByRole('alert').filter({ hasText: 'You are not allowed to see this.' }).waitFor();
    await page.goto('/stats/subdomain/nosuchsubdomain42');
    await page.getByRole('alert').filter({ hasText: 'There is no such report' }).waitFor();
    await page.goto('/stats/planet/mars');
    await page.getByRole('alert').filter({ hasText: 'There is no such report' }).waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('fits a phone: the chart and the breakdowns are no wider than the screen', async () => {
    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone' });
    await signIn(page, alice.email);
    await page.goto(`/stats/subdomain/${sub}?range=24h&granularity=hour&tz=UTC`);
    await page.locator('figure.chart canvas').first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    const box = await page.locator('figure.chart .uplot').boundingBox();
    expect(box!.width).toBeGreaterThan(250);
    expect(box!.x + box!.width).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-subdomain-phone');
    await page.locator('figure.chart').screenshot({ path: `${SCREENSHOTS_DIR}/stats-chart-phone.png` });
    await page.goto('/stats/subdomain/nosuchsubdomain42');
    await page.getByRole('alert').filter({ hasText: 'There is no such report' }).waitFor();
    await screenshot(page, 'stats-not-found-phone');
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
