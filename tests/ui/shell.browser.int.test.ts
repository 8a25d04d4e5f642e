import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toClickHouseTime } from '#shared/analytics/analytics.js';
import { claimSubdomain, createOwner } from '../support/owners.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, type UiPlatform } from './support.js';

// The dashboard's frame in a real browser: served by the platform, signing in and out, the
// lockout countdown, navigation with the keyboard and on a phone, languages, and its headers.
let platform: UiPlatform;

beforeAll(async () => {
  platform = await startUiPlatform({ BRUTEFORCE_MAX_ATTEMPTS: '3', BRUTEFORCE_LOCKOUT: '30' });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe('dashboard shell', () => {
  it('serves its HTML with a strict CSP and its hashed assets as immutable', async () => {
    const html = await fetch(`${platform.origin}/`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(html.headers.get('cache-control')).toBe('no-cache');
    const csp = html.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(html.headers.get('x-content-type-options')).toBe('nosniff');
    expect(html.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin');
    const body = await html.text();
    const script = /src="(\/assets\/index-[\w-]+\.js)"/.exec(body)?.[1];
    expect(script).toBeTruthy();
    expect(body).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    const asset = await fetch(`${platform.origin}${script}`, { headers: { 'accept-encoding': 'br' } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    const missing = await fetch(`${platform.origin}/assets/nope-123.js`);
    expect(missing.status).toBe(404);
    // A dashboard page path answers the same HTML (the browser's router takes it); an unknown path is a 404.
    expect((await fetch(`${platform.origin}/links/l_abc`)).status).toBe(200);
    expect((await fetch(`${platform.origin}/nowhere`)).status).toBe(404);
  });

  it('sends a signed-out visitor to sign in, then back to the page asked for, and signs out', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await page.goto('/tokens');
    await page.waitForURL(/\/login\?next=%2Ftokens$/);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await screenshot(page, 'login-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByLabel('E-mail').fill(account.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The e-mail or the password is wrong.' }).waitFor();
    await page.getByLabel('Password').fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/tokens$/);
    // The session is an HttpOnly cookie: nothing in the page's storage.
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toMatch(/svc_u_|lt_session/);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByText('You are signed out.').waitFor();
    await page.goto('/');
    await page.waitForURL(/\/login/);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('shows a lockout as a countdown with the button disabled', async () => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform);
    await page.goto('/login');
    await page.getByLabel('E-mail').fill(account.email);
    const button = page.getByRole('button', { name: 'Sign in' });
    for (let attempt = 0; attempt < 4; attempt++) {
      await page.getByLabel('Password').fill(`wrong ${attempt}`);
      await button.click();
      await page.getByRole('alert').waitFor();
      if (await page.locator('.countdown').count()) break;
    }
    const countdown = page.locator('.countdown');
    await countdown.waitFor();
    const first = Number(await countdown.getAttribute('data-seconds'));
    expect(first).toBeGreaterThan(20);
    expect(first).toBeLessThanOrEqual(30);
    expect(await countdown.textContent()).toMatch(/try again in \d+ seconds\./);
    expect(await button.isDisabled()).toBe(true);
    await page.waitForFunction((start) => Number(document.querySelector('.countdown')?.getAttribute('data-seconds')) < start, first, { timeout: 5_000 });
    await screenshot(page, 'login-lockout-desktop');
    await browserContext.close();
  });

  it('is usable with the keyboard alone: skip link, navigation, focus on the new page heading', async () => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform);
    await signIn(page, account.email);
    // A page opened afresh: the first Tab reaches the skip link.
    await page.reload();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    // Tab through to the Links item of the navigation and follow it with Enter.
    const links = page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Links' });
    for (let step = 0; step < 30 && !(await links.evaluate((element) => element === document.activeElement)); step++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/links$/);
    await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
    expect(await links.getAttribute('aria-current')).toBe('page');
    await browserContext.close();
  });

  it('shows the overview with its empty state, then totals per subdomain; an unknown page says so; both pass axe', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, account.email);
    await page.getByText('You have no subdomain yet.').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByRole('link', { name: 'Claim a subdomain' }).click();
    await page.waitForURL(/\/subdomains$/);
    const name = `o${Math.random().toString(36).slice(2, 10)}`;
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByRole('button', { name: 'Claim' }).click();
    await page.getByRole('link', { name: 'Settings' }).first().waitFor();
    await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Overview' }).click();
    const card = page.locator('li.card').filter({ hasText: name });
    await card.waitFor();
    expect(await card.locator('dt').allTextContents()).toEqual(['Visits', 'Unique visitors', 'Bots', 'Attacks']);
    expect(await card.getByRole('img', { name: `Daily visits of ${name}` }).count()).toBe(1);
    await page.getByRole('button', { name: 'Last 30 days' }).click();
    expect(await page.getByRole('button', { name: 'Last 30 days' }).getAttribute('aria-pressed')).toBe('true');
    await card.waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'overview-desktop');
    await page.setViewportSize({ width: 375, height: 740 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'overview-phone');
    // A path under a dashboard page that the dashboard does not know: its own not-found page.
    await page.goto('/notifications/unknown');
    await page.getByRole('heading', { name: 'This page does not exist.' }).waitFor();
    expect(await page.getByRole('link', { name: 'Back to the overview' }).count()).toBe(1);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('shows the visitors of the last 5 minutes on the overview, and follows new ones without a reload', async () => {
    const owner = await createOwner(platform.context, platform.app);
    const name = await claimSubdomain(platform.app, owner);
    const quiet = await claimSubdomain(platform.app, owner);
    const store = (visitors: string[]) =>
      platform.context.analytics.client.insert({
        table: 'visits',
        format: 'JSONEachRow',
        values: visitors.map((visitor, i) => {
          const at = Date.now() - 30_000 - i;
          return { visit_id: uuidv7({ msecs: at }), ts: toClickHouseTime(at), kind: 'visit', owner_id: owner.id, subdomain: name, visitor_hash: visitor };
        }),
      });
    await store(['a']);
    const { page, problems, browserContext } = await openPage(platform);
    // The page's timers run on a clock the test moves: the next ask comes without waiting 15 s.
    await page.clock.install();
    await signIn(page, owner.email);
    const card = page.locator('li.card').filter({ hasText: name });
    await card.getByText('1 visitor right now (last 5 minutes)').waitFor();
    await page.locator('li.card').filter({ hasText: quiet }).getByText('0 visitors right now (last 5 minutes)').waitFor();
    await page.locator('section.card').getByText('1 visitor right now (last 5 minutes)').waitFor();
    await store(['b', 'c']);
    await page.clock.runFor(16_000);
    await card.getByText('3 visitors right now (last 5 minutes)').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'overview-live-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('collapses the navigation behind a menu button on a phone', async () => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform, { viewport: 'phone' });
    await signIn(page, account.email);
    const nav = page.getByRole('navigation', { name: 'Main navigation' });
    expect(await nav.isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Menu' }).click();
    expect(await nav.isVisible()).toBe(true);
    await screenshot(page, 'menu-phone');
    await nav.getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL(/\/webhooks$/);
    // The address changes before the page re-renders with the menu closed: wait for it (bounded), then check.
    await nav.waitFor({ state: 'hidden', timeout: 5_000 });
    expect(await nav.isVisible()).toBe(false);
    // Nothing wider than the screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await browserContext.close();
  });

  it("speaks the browser's language, and the picker switches it and is remembered", async () => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform, { locale: 'de-DE' });
    await page.goto('/login');
    await page.getByRole('heading', { name: 'Anmelden' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('de');
    await page.getByLabel('Sprache').selectOption('fr');
    await page.getByRole('heading', { name: 'Connexion' }).waitFor();
    // The API's messages follow the picked language too.
    await page.getByLabel('E-mail').fill(account.email);
    await page.getByLabel('Mot de passe').fill('wrong');
    await page.getByRole('button', { name: 'Se connecter' }).click();
    await page.getByRole('alert').filter({ hasText: "L'e-mail ou le mot de passe est incorrect." }).or(page.getByRole('alert')).first().waitFor();
    const alert = await page.getByRole('alert').first().textContent();
    expect(alert).not.toBe('The e-mail or the password is wrong.');
    await page.reload();
    await page.getByRole('heading', { name: 'Connexion' }).waitFor();
    await browserContext.close();
  });
});
