import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownServerDatabase } from '../support/fresh-database.js';
import { waitFor } from '../support/wait.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, TEST_PASSWORD, type UiPlatform } from './support.js';

// Two-factor sign-in in a real browser: set up on the account page (the QR code and its key shown,
// a wrong code refused, the right one computed here with the same library as an app would), the
// recovery codes shown once; signing in with a code, and on a phone in German with a recovery code;
// staff requiring it, and a staff account without it held to setting it up. axe on each step.
let platform: UiPlatform;
let database: Awaited<ReturnType<typeof ownServerDatabase>> | undefined;

beforeAll(async () => {
  // require_totp_for_staff is platform-wide: on the services run's shared Postgres, other files' staff would be held by it.
  database = await ownServerDatabase('lt_ui_totp');
  platform = await startUiPlatform(database.overrides);
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await database?.drop();
});

const stepNow = () => Math.floor(Date.now() / 30_000);
const codeAt = (secret: string, step: number) => TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: step * 30_000 });

/**
 * Sets two-factor sign-in up from the section on the page (the account page, or the page a held
 * staff account sees): answers the key as shown and the recovery codes, and the step its code was of.
 */
async function enrolOnPage(page: Page, shot?: string): Promise<{ secret: string; codes: string[]; step: number }> {
  const section = page.getByRole('region', { name: 'Two-factor sign-in' });
  // Loaded: the status line shows. On the account page a button opens the form; on the page of a held staff account it is open.
  await section.getByText('Off. Your account is protected by your password alone.').waitFor();
  if (!(await section.getByLabel('Current password').isVisible())) await section.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
  await section.getByLabel('Current password').fill(TEST_PASSWORD);
  await section.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
  const qr = section.getByRole('img', { name: 'QR code to add this account to an authenticator app' });
  await qr.waitFor();
  const secret = (await section.locator('.totp-secret code').textContent())!.replace(/\s/g, '');
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  const step = stepNow();
  await section.getByLabel('Code', { exact: true }).fill(codeAt(secret, step + 5));
  await section.getByRole('button', { name: 'Turn on' }).click();
  await section.getByText(/The code is wrong, or was used already/).waitFor();
  expect(await seriousA11yViolations(page)).toEqual([]);
  if (shot) await screenshot(page, shot);
  await section.getByLabel('Code', { exact: true }).fill(codeAt(secret, step));
  await section.getByRole('button', { name: 'Turn on' }).click();
  const list = section.getByRole('group', { name: 'Your recovery codes' });
  await list.waitFor();
  const codes = (await list.locator('li code').allTextContents()).map((code) => code.trim());
  expect(codes).toHaveLength(10);
  return { secret, codes, step };
}

/** The password step of the sign-in form, for an account with two-factor sign-in: it asks for the code. */
async function passwordStep(page: Page, email: string, labels = { email: 'E-mail', password: 'Password', submit: 'Sign in', second: 'Two-factor sign-in' }) {
  await page.goto('/login');
  await page.getByLabel(labels.email).fill(email);
  await page.getByLabel(labels.password).fill(TEST_PASSWORD);
  await page.getByRole('button', { name: labels.submit }).click();
  await page.getByRole('heading', { name: labels.second, level: 1 }).waitFor();
}

describe('two-factor sign-in', () => {
  it('is set up on the account page (QR code, key, a first code), shows the recovery codes once, then asks for a code at sign-in', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, account.email);
    await page.goto('/account');
    const section = page.getByRole('region', { name: 'Two-factor sign-in' });
    await section.getByText('Off. Your account is protected by your password alone.').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    const { secret, codes, step } = await enrolOnPage(page, 'totp-enrol-desktop');
    await section.getByRole('button', { name: 'Download' }).waitFor();
    await screenshot(page, 'totp-recovery-codes-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    const download = page.waitForEvent('download');
    await section.getByRole('button', { name: 'Download' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('linktrack-recovery-codes.txt');
    await section.getByRole('button', { name: 'I have kept them' }).click();
    await section.getByText(/^On since .*\. Recovery codes left: 10\.$/).waitFor();
    // Shown once: nothing of them is on the page any more.
    expect(await page.getByText(codes[0]!).count()).toBe(0);

    // Another browser: the password, then the code of the next step (the first one was taken).
    const other = await openPage(platform);
    await passwordStep(other.page, account.email);
    // The step's field has the focus: the code can be typed at once.
    await waitFor(() => other.page.evaluate(() => document.activeElement?.id === 'login-code'), 5000, { message: 'the code field focused' });
    expect(await seriousA11yViolations(other.page)).toEqual([]);
    await screenshot(other.page, 'login-totp-desktop');
    await other.page.getByLabel('Code', { exact: true }).fill(codeAt(secret, step));
    await other.page.getByRole('button', { name: 'Verify' }).click();
    await other.page.getByText('The code is wrong, or was used already.').waitFor();
    await other.page.getByLabel('Code', { exact: true }).fill(codeAt(secret, step + 1));
    await other.page.getByRole('button', { name: 'Verify' }).click();
    await other.page.locator('#main-nav').waitFor({ state: 'attached' });

    // Turning it off asks for the password and a code.
    await section.getByRole('button', { name: 'Turn off' }).click();
    const form = page.getByRole('form', { name: 'Turn off' });
    await form.getByLabel('Current password').fill(TEST_PASSWORD);
    await form.getByRole('button', { name: 'Use a recovery code instead' }).click();
    await form.getByLabel('Recovery code').fill(codes[1]!);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await form.getByRole('button', { name: 'Turn off' }).click();
    await section.getByText('Two-factor sign-in is off.').waitFor();
    await section.getByText('Off. Your account is protected by your password alone.').waitFor();
    expect(problems).toEqual([]);
    expect(other.problems).toEqual([]);
    await Promise.all([browserContext.close(), other.browserContext.close()]);
  }, 90_000);

  it('signs in with a recovery code instead, on a phone in German', async () => {
    const account = await newAccount(platform);
    const setup = await openPage(platform);
    await signIn(setup.page, account.email);
    await setup.page.goto('/account');
    const { codes } = await enrolOnPage(setup.page);
    await setup.browserContext.close();

    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone', locale: 'de-DE' });
    await passwordStep(page, account.email, { email: 'E-Mail', password: 'Passwort', submit: 'Anmelden', second: 'Zwei-Faktor-Anmeldung' });
    await page.getByRole('button', { name: 'Stattdessen einen Wiederherstellungscode verwenden' }).click();
    await page.getByLabel('Wiederherstellungscode').fill(codes[0]!);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'login-totp-recovery-phone-de');
    await page.getByRole('button', { name: 'Bestätigen' }).click();
    await page.locator('#main-nav').waitFor({ state: 'attached' });
    await page.goto('/account');
    await page.getByText(/Verbleibende Wiederherstellungscodes: 9\./).waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'account-totp-phone-de');
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 90_000);

  it('lets staff require it: a staff account without it can only set it up, then reaches the dashboard', async () => {
    const admin = await newAccount(platform, 'staff');
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, admin.email);
    await page.goto('/staff');
    const setting = page.getByRole('checkbox', { name: 'Require two-factor sign-in for staff accounts' });
    expect(await setting.isChecked()).toBe(false);
    await setting.click();
    // The admin has no two-factor sign-in either: held to setting it up at once.
    await page.getByRole('heading', { name: 'Set up two-factor sign-in to continue', level: 1 }).waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'totp-required-desktop');
    expect((await page.request.get('/api/v1/links')).status()).toBe(403);
    await enrolOnPage(page);
    await page.getByRole('button', { name: 'I have kept them' }).click();
    await page.locator('#main-nav').waitFor({ state: 'attached' });
    await page.goto('/staff');
    await page.getByRole('heading', { name: 'Security' }).waitFor();
    expect(await setting.isChecked()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'staff-security-desktop');
    // Off again, so that the other staff accounts of this platform are free.
    await setting.uncheck();
    await page.getByText('Saved.').waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 90_000);
});
