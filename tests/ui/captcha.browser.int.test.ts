import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAccount, openPage, screenshot, seriousA11yViolations, startUiPlatform, TEST_PASSWORD, type UiPlatform } from './support.js';

// Signing in when the platform asks for a proof-of-work CAPTCHA (ENABLE_CAPTCHA): the browser
// solves the ALTCHA challenge itself (Web Crypto, nothing from a third party) and signs in.
let platform: UiPlatform;

beforeAll(async () => {
  platform = await startUiPlatform({ ENABLE_CAPTCHA: '1', CAPTCHA_AFTER: '2', BRUTEFORCE_MAX_ATTEMPTS: '10' });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe('sign-in with a CAPTCHA required', () => {
  it('solves the challenge in the browser and signs in, with no third party asked', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    const foreign: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).origin !== platform.origin) foreign.push(request.url());
    });
    const logins: { status: number; captcha: boolean }[] = [];
    page.on('response', async (response) => {
      if (new URL(response.url()).pathname !== '/auth/login') return;
      logins.push({ status: response.status(), captcha: Boolean(JSON.parse(response.request().postData() ?? '{}').captcha) });
    });
    await page.goto('/login');
    await page.getByLabel('E-mail').fill(account.email);
    for (const wrong of ['wrong one', 'wrong two']) {
      await page.getByLabel('Password').fill(wrong);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'The e-mail or the password is wrong.' }).waitFor();
    }
    // The third attempt needs the CAPTCHA: the page solves it and signs in with it.
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 20_000 });
    expect(logins.map((login) => login.status)).toEqual([401, 401, 403, 200]);
    expect(logins.at(-1)!.captcha).toBe(true);
    expect(foreign).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('a wrong password with a solved CAPTCHA is still refused, with the reason shown', async () => {
    const account = await newAccount(platform);
    const { page, browserContext } = await openPage(platform);
    await page.goto('/login');
    await page.getByLabel('E-mail').fill(account.email);
    for (let attempt = 0; attempt < 3; attempt++) {
      await page.getByLabel('Password').fill(`wrong ${attempt}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').waitFor();
      await page.getByRole('button', { name: 'Sign in' }).and(page.locator(':enabled')).waitFor();
    }
    expect(await page.getByRole('alert').textContent()).toContain('The e-mail or the password is wrong.');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'login-captcha-refused-desktop');
    await browserContext.close();
  });
});
