import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createLink, createOwner } from '../support/owners.js';
import { waitFor } from '../support/wait.js';
import {
  BROWSER_AGENTS,
  newAccount,
  openPage,
  TEST_PASSWORD,
  screenshot,
  seriousA11yViolations,
  shortHostVisit,
  signIn,
  startUiPlatform,
  type UiPlatform,
} from './support.js';

// The dashboard as a LAN install serves it: plain HTTP on a name that is not localhost
// (http://links.lan:PORT, mapped to loopback by Chromium's resolver), so not a secure context and
// without the APIs only secure contexts have. Also where a sign-in may send the browser on, and the
// lockout's wait in words, and the statistics page's filters.
let platform: UiPlatform;

beforeAll(async () => {
  platform = await startUiPlatform({ BRUTEFORCE_MAX_ATTEMPTS: '2', BRUTEFORCE_LOCKOUT: '900' }, { host: 'links.lan' });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe('the dashboard on a plain-HTTP LAN origin', () => {
  it('creates a link from "New link" although crypto.randomUUID does not exist there', async () => {
    const owner = await createOwner(platform.context, platform.app);
    await claimSubdomain(platform.app, owner);
    const { page, problems, browserContext } = await openPage(platform);
    page.setDefaultTimeout(8_000);
    await signIn(page, owner.email);
    expect(new URL(page.url()).origin).toBe(platform.origin);
    expect(await page.evaluate(() => ({ secure: window.isSecureContext, randomUUID: typeof crypto.randomUUID }))).toEqual({
      secure: false,
      randomUUID: 'undefined',
    });
    await page.goto('/links');
    await page.getByRole('button', { name: 'New link' }).click();
    await page.getByLabel('Target URL').fill('https://example.com/lan');
    await page.getByRole('button', { name: 'Create link' }).click();
    await page.getByRole('status').filter({ hasText: 'Link created:' }).waitFor();
    await screenshot(page, 'links-lan-origin-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('shows an action that fails in the browser as an error, instead of doing nothing', async () => {
    const owner = await createOwner(platform.context, platform.app);
    await claimSubdomain(platform.app, owner);
    const { page, browserContext } = await openPage(platform);
    page.setDefaultTimeout(8_000);
    await signIn(page, owner.email);
    await page.goto('/links');
    await page.getByRole('button', { name: 'New link' }).waitFor();
    // A browser without usable randomness at all: opening the form cannot make its client_id.
    await page.evaluate(() => {
      Object.defineProperty(Crypto.prototype, 'getRandomValues', {
        value: () => {
          throw new Error('no randomness in this browser');
        },
      });
    });
    await page.getByRole('button', { name: 'New link' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'no randomness in this browser' });
    await alert.waitFor();
    expect(await alert.textContent()).toContain('Something went wrong');
    await screenshot(page, 'links-action-error-desktop');
    // Another page starts afresh.
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.getByText('no randomness in this browser').count()).toBe(0);
    await browserContext.close();
  });

  it('changes the password on the Account page and lists the session, over plain HTTP', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    page.setDefaultTimeout(8_000);
    await signIn(page, account.email);
    await page.goto('/account');
    await page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
    await page.getByLabel('Current password').fill(TEST_PASSWORD);
    await page.getByLabel('New password').fill('lan origin quiet harbour 2026');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Password changed. Other sessions signed out: 0.').waitFor();
    await page.getByText('No other session is signed in.').waitFor();
    await screenshot(page, 'account-lan-origin-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});

describe('an action failing outside the page', () => {
  it('says so when a sign-out request is lost (the network cut by the test)', async () => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform);
    page.setDefaultTimeout(8_000);
    await signIn(page, account.email);
    await page.route('**/auth/logout', (route) => route.abort('internetdisconnected'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    const alert = page.locator('.unexpected-error');
    await alert.waitFor();
    expect(await alert.getAttribute('role')).toBe('alert');
    expect(await alert.textContent()).toMatch(/^Something went wrong: .+/);
    // Still signed in, and the message can be dismissed.
    await page.locator('#main-nav').waitFor();
    await alert.getByRole('button', { name: 'Close' }).click();
    expect(await page.locator('.unexpected-error').count()).toBe(0);
    await browserContext.close();
  });
});

describe('signing in with a next page', () => {
  it.each([['/\\evil.example/'], ['//evil.example/'], ['/\\/evil.example'], ['https://evil.example/'], ['javascript:alert(1)'], ['/\t/evil.example']])(
    'next=%s leads to the overview after a correct sign-in, never away and never stuck',
    async (next) => {
      const account = await newAccount(platform);
      const { page, problems, browserContext } = await openPage(platform);
      page.setDefaultTimeout(8_000);
      await page.goto(`/login?next=${encodeURIComponent(next)}`);
      await page.getByLabel('E-mail').fill(account.email);
      await page.getByLabel('Password').fill(TEST_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${platform.origin}/`).catch((error: unknown) => {
        throw new Error(`at ${page.url()}: ${String(error)}`);
      });
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      expect(problems).toEqual([]);
      await browserContext.close();
    },
  );

  it('a next page of this origin is kept, with its query', async () => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform);
    page.setDefaultTimeout(8_000);
    await page.goto(`/login?next=${encodeURIComponent('/links?q=spring')}`);
    await page.getByLabel('E-mail').fill(account.email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${platform.origin}/links?q=spring`);
    await browserContext.close();
  });
});

describe("issue 40's pages on a plain-HTTP LAN origin", () => {
  it('attaches a custom domain and copies its record, uploads a QR logo, and previews a rule in the link form', { timeout: 60_000 }, async () => {
    const owner = await createOwner(platform.context, platform.app);
    const subdomain = await claimSubdomain(platform.app, owner);
    const { page, problems, browserContext } = await openPage(platform);
    page.setDefaultTimeout(8_000);
    await signIn(page, owner.email);
    expect(await page.evaluate(() => window.isSecureContext)).toBe(false);

    // Custom domains: the record to create is shown, and its copy button works without the Clipboard API of secure contexts.
    await page.goto(`/subdomains/${subdomain}`);
    const domains = page.getByRole('region', { name: 'Custom domains' });
    await domains.getByText('No custom domain yet.').waitFor();
    const domain = `go-${subdomain}.example.org`;
    await domains.getByLabel('Domain', { exact: true }).fill(domain);
    await domains.getByRole('button', { name: 'Add domain' }).click();
    const item = domains.getByRole('listitem').filter({ hasText: domain });
    await item.getByText('Not verified').waitFor();
    await item.getByRole('button', { name: /Copy/ }).first().click();
    await item.getByText('Copied').first().waitFor();

    // The QR logo: read from the file by the browser and sent as a data URL.
    const png = new PNG({ width: 64, height: 64 });
    for (let i = 0; i < 64 * 64; i++) png.data.set([30, 90, 200, 255], i * 4);
    const logo = page.getByRole('region', { name: 'QR code logo' });
    await logo.getByLabel('Image file').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: PNG.sync.write(png) });
    await logo.getByRole('button', { name: 'Upload' }).click();
    await logo.getByText('The logo was saved (64 × 64 px).').waitFor();

    // The link form's routing: a rule and the preview, worked out in the browser by the edge's own matching code.
    await page.goto('/links');
    await page.getByRole('button', { name: 'New link' }).click();
    const form = page.locator('#link-create');
    await form.getByLabel('Target URL').fill('https://example.com/lan-routing');
    await form.getByRole('button', { name: 'Add a rule' }).click();
    const rule = form.getByRole('group', { name: 'Rule 1' });
    await rule.getByLabel('When').selectOption('country');
    await rule.getByLabel('Is one of').fill('fr');
    await rule.getByLabel('Then go to').fill('https://example.fr/');
    await form.getByText('Preview: where does a visitor go?').click();
    await form.locator('[id$="-preview-country"]').fill('FR');
    await form.getByText('https://example.fr/', { exact: false }).last().waitFor();
    await form.getByRole('button', { name: 'Create link' }).click();
    await page.getByRole('status').filter({ hasText: 'Link created:' }).waitFor();
    const listed = (await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${subdomain}`, headers: owner.auth })).json().data.links;
    expect(listed.map((link: { rules: unknown }) => link.rules)).toEqual([
      [{ condition: { type: 'country', values: ['FR'] }, target_url: 'https://example.fr/' }],
    ]);
    await screenshot(page, 'issue40-lan-origin-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});

describe("issue 41's statistics on a plain-HTTP LAN origin", () => {
  const { chrome: CHROME, firefox: FIREFOX } = BROWSER_AGENTS;

  it('filters the report by clicking a breakdown row: the chip, the address and the note under the filters', { timeout: 60_000 }, async () => {
    const owner = await createOwner(platform.context, platform.app);
    const subdomain = await claimSubdomain(platform.app, owner);
    await createLink(platform.app, owner, { subdomain, slug: 'lan', target_url: 'https://example.com/' });
    const statuses = await Promise.all([CHROME, CHROME, FIREFOX].map((agent) => shortHostVisit(platform, subdomain, '/lan', { 'user-agent': agent })));
    expect(statuses).toEqual([302, 302, 302]);
    await waitFor(
      async () =>
        (await platform.app.inject({ method: 'GET', url: `/api/v1/stats/subdomain/${subdomain}`, headers: owner.auth })).json().data.totals.visits === 3,
      30_000,
      { intervalMs: 250, message: 'the 3 visits counted' },
    );

    const { page, problems, browserContext } = await openPage(platform);
    page.setDefaultTimeout(10_000);
    await signIn(page, owner.email);
    expect(await page.evaluate(() => window.isSecureContext)).toBe(false);
    await page.goto(`/stats/subdomain/${subdomain}?range=7d&granularity=day&tz=UTC`);
    await page.getByRole('heading', { name: `Statistics of ${subdomain}` }).waitFor();
    const humans = page
      .locator('dl.totals > div', { has: page.locator('dt', { hasText: /^Humans$/ }) })
      .locator('dd')
      .first();
    await expect.poll(() => humans.textContent()).toBe('3');
    const browsers = page.locator('table.bars', { has: page.locator('caption', { hasText: /^Browsers$/ }) });
    await browsers.getByRole('link', { name: /^Firefox/ }).click();
    await page.waitForURL(/[?&]browser=Firefox(&|$)/);
    await expect.poll(() => humans.textContent()).toBe('1');
    const chips = page.getByRole('group', { name: 'Filters of the report' });
    expect(await chips.locator('li').allTextContents()).toEqual(['Browser: Firefox×']);
    await page.getByText('Filters count from daily and quarter-hour summaries').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'stats-filters-lan-origin-desktop');
    await page.getByRole('link', { name: 'Remove the filter Browser: Firefox' }).click();
    await page.waitForURL((url) => !url.search.includes('browser='));
    await expect.poll(() => humans.textContent()).toBe('3');
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});

describe('the lockout', () => {
  it.each([
    ['en-US', 'Too many attempts. You can try again in 15 minutes.'],
    ['de-DE', 'Zu viele Versuche. Sie können es in 15 Minuten erneut versuchen.'],
  ])('says how long in minutes, in the viewer’s language (%s)', async (locale, message) => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform, { locale });
    page.setDefaultTimeout(8_000);
    await page.goto('/login');
    await page.locator('#login-email').fill(account.email);
    for (let attempt = 0; attempt < 4 && (await page.locator('.countdown').count()) === 0; attempt++) {
      await page.locator('#login-password').fill(`wrong ${attempt}`);
      await page.locator('button[type="submit"]').click();
      await page.getByRole('alert').waitFor();
    }
    const countdown = page.locator('.countdown');
    await countdown.waitFor();
    expect(Number(await countdown.getAttribute('data-seconds'))).toBeGreaterThan(840);
    expect(await countdown.textContent()).toBe(message);
    await screenshot(page, `login-lockout-${locale}`);
    await browserContext.close();
  });
});
