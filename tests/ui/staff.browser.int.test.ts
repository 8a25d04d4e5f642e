import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginCookie } from '#tests/support/accounts.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, TEST_PASSWORD, type UiPlatform } from './support.js';

// The staff page in a real browser: staff create accounts that can then sign in, disable and
// re-enable them after a confirmation, delete them after one that offers exporting first, and read
// each account's history (its audit trail); everyone else gets the forbidden state (the API refuses them
// with 403) and no Staff item in the navigation.
let platform: UiPlatform;

beforeAll(async () => {
  platform = await startUiPlatform();
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe('staff page', () => {
  it(
    'lets staff create an account, refusing a short password and a taken e-mail on their fields, and the new account signs in',
    { timeout: 60_000 },
    async () => {
      const staff = await newAccount(platform, 'staff');
      const { page, problems, browserContext } = await openPage(platform);
      await signIn(page, staff.email);
      await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Staff' }).click();
      await page.waitForURL(/\/staff$/);
      await page.getByRole('heading', { name: 'Staff', level: 1 }).waitFor();
      const accounts = page.getByRole('table', { name: 'Accounts' });
      await accounts.getByRole('row').filter({ hasText: staff.email }).waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);

      const email = `new-owner-${Date.now()}@example.test`;
      const form = page.getByRole('region', { name: 'New account' });
      await form.getByLabel('E-mail').fill(email);
      await form.getByLabel('Password').fill('too short');
      await form.getByLabel(/^Display name/).fill('New <i>Owner</i>');
      await page.getByRole('button', { name: 'Create account' }).click();
      const passwordError = page.locator('#staff-password-error');
      await passwordError.waitFor();
      expect(await passwordError.textContent()).toMatch(/12/);
      expect(await form.getByLabel('Password').getAttribute('aria-invalid')).toBe('true');

      // Long enough but common (issue 34): the server's reason is said on the password field.
      await form.getByLabel('Password').fill('password1234');
      await page.getByRole('button', { name: 'Create account' }).click();
      await passwordError.filter({ hasText: 'too common or too easy to guess' }).waitFor();
      expect(await form.getByLabel('Password').getAttribute('aria-invalid')).toBe('true');

      await form.getByLabel('Password').fill('a long enough password');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByText(`Account ${email} created. It can sign in now.`).waitFor();
      const row = accounts.getByRole('row').filter({ hasText: email });
      await row.waitFor();
      // What staff typed is text, never markup.
      expect(await row.getByRole('cell').allTextContents()).toEqual([
        email,
        'New <i>Owner</i>',
        'Owner',
        'Active',
        expect.any(String),
        'HistoryReset linkDisableDelete',
      ]);
      await screenshot(page, 'staff-created-desktop');

      // The same e-mail again (in capitals): the conflict is shown on the e-mail field.
      await form.getByLabel('E-mail').fill(email.toUpperCase());
      await form.getByLabel('Password').fill('another long password');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.locator('#staff-email-error').filter({ hasText: 'already registered' }).waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);
      expect(problems).toEqual([]);
      await browserContext.close();

      // The account created in the page signs in, as an owner: no Staff item, and /staff is forbidden.
      const other = await openPage(platform, { viewport: 'phone' });
      await signIn(other.page, email, 'a long enough password');
      await other.page.getByRole('heading', { name: 'Overview' }).waitFor();
      await other.page.getByRole('button', { name: 'Menu' }).click();
      const nav = other.page.getByRole('navigation', { name: 'Main navigation' });
      await nav.getByRole('link', { name: 'Webhooks' }).waitFor();
      expect(await nav.getByRole('link', { name: 'Staff' }).count()).toBe(0);
      await other.page.goto('/staff');
      await other.page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
      expect(await other.page.getByLabel('Password').count()).toBe(0);
      expect(await seriousA11yViolations(other.page)).toEqual([]);
      await screenshot(other.page, 'staff-forbidden-phone');
      expect(other.problems).toEqual([]);
      await other.browserContext.close();
    },
  );

  it('fits a phone for staff, and shows the forbidden state to an owner on a desktop', async () => {
    const staff = await newAccount(platform, 'staff');
    const phone = await openPage(platform, { viewport: 'phone' });
    await signIn(phone.page, staff.email);
    await phone.page.goto('/staff');
    await phone.page.getByRole('table', { name: 'Accounts' }).getByRole('row').filter({ hasText: staff.email }).waitFor();
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(phone.page)).toEqual([]);
    await screenshot(phone.page, 'staff-phone');
    expect(phone.problems).toEqual([]);
    await phone.browserContext.close();

    const owner = await newAccount(platform);
    const desktop = await openPage(platform);
    await signIn(desktop.page, owner.email);
    await desktop.page.goto('/staff');
    await desktop.page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    expect(await seriousA11yViolations(desktop.page)).toEqual([]);
    await screenshot(desktop.page, 'staff-forbidden-desktop');
    expect(desktop.problems).toEqual([]);
    await desktop.browserContext.close();
  });

  it(
    'lets staff disable an account after a confirmation (it can no longer sign in) and re-enable it, with the keyboard, on a desktop and a phone',
    { timeout: 90_000 },
    async () => {
      const staff = await newAccount(platform, 'staff');
      const target = await newAccount(platform);
      const { page, problems, browserContext } = await openPage(platform);
      await signIn(page, staff.email);
      await page.goto('/staff');
      const accounts = page.getByRole('table', { name: 'Accounts' });
      const row = accounts.getByRole('row').filter({ hasText: target.email });
      await row.waitFor();
      expect(await row.getByRole('cell').nth(3).textContent()).toBe('Active');
      // Staff's own row offers neither Disable nor Delete (the API refuses both).
      const own = accounts.getByRole('row').filter({ hasText: staff.email });
      expect(await own.getByRole('button', { name: /Disable|Delete/ }).count()).toBe(0);
      expect(await own.textContent()).toContain('You');

      // The confirmation says what disabling does; Escape leaves everything as it was.
      await row.getByRole('button', { name: `Disable ${target.email}` }).click();
      const dialog = page.getByRole('dialog', { name: `Disable ${target.email}?` });
      await dialog.waitFor();
      expect(await dialog.textContent()).toContain('Its links keep redirecting');
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'staff-disable-confirm-desktop');
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      expect(await row.getByRole('cell').nth(3).textContent()).toBe('Active');

      // Keyboard only: focus the row's Disable, Enter opens the dialog, Tab reaches its confirm button.
      await row.getByRole('button', { name: `Disable ${target.email}` }).focus();
      await page.keyboard.press('Enter');
      await dialog.waitFor();
      // Escape and at once Enter (the focus is back on Disable) open it again. The browser's close
      // event comes with a later frame, after the Enter: it neither swallows the Enter nor shuts the
      // dialog the Enter opened (two frames later it is still open).
      await page.keyboard.press('Escape');
      await page.keyboard.press('Enter');
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      expect(await dialog.isVisible()).toBe(true);
      // Whether that close event came before or after the Enter depends on the frame: a close event
      // arriving while the dialog is open again (as a late one does) must not shut it.
      await dialog.evaluate((element) => element.dispatchEvent(new Event('close')));
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      expect(await dialog.isVisible()).toBe(true);
      const confirm = dialog.getByRole('button', { name: 'Disable', exact: true });
      for (let tabs = 0; tabs < 5 && !(await confirm.evaluate((element) => element === document.activeElement)); tabs++) await page.keyboard.press('Tab');
      expect(await confirm.evaluate((element) => element === document.activeElement)).toBe(true);
      await page.keyboard.press('Enter');
      await page.getByText(`Account ${target.email} disabled.`).waitFor();
      await row.getByRole('cell').nth(3).filter({ hasText: 'Disabled' }).waitFor();
      expect(await row.getByRole('button', { name: `Reset link` }).count()).toBe(0);
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'staff-disabled-desktop');

      // The disabled account is told why it cannot sign in.
      const refused = await openPage(platform, { viewport: 'phone' });
      await refused.page.goto('/login');
      await refused.page.getByLabel('E-mail').fill(target.email);
      await refused.page.getByLabel('Password').fill(TEST_PASSWORD);
      await refused.page.getByRole('button', { name: 'Sign in' }).click();
      await refused.page.getByText('This account is disabled').waitFor();
      expect(await seriousA11yViolations(refused.page)).toEqual([]);
      await screenshot(refused.page, 'staff-disabled-sign-in-phone');
      await refused.browserContext.close();

      // Re-enabled on a phone-sized screen: the account signs in again.
      const phone = await openPage(platform, { viewport: 'phone' });
      await signIn(phone.page, staff.email);
      await phone.page.goto('/staff');
      const phoneRow = phone.page.getByRole('table', { name: 'Accounts' }).getByRole('row').filter({ hasText: target.email });
      await phoneRow.getByRole('cell').nth(3).filter({ hasText: 'Disabled' }).waitFor();
      expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      await phoneRow.getByRole('button', { name: `Re-enable ${target.email}` }).press('Enter');
      const enable = phone.page.getByRole('dialog', { name: `Re-enable ${target.email}?` });
      await enable.waitFor();
      expect(await enable.textContent()).toContain('stay signed out');
      expect(await seriousA11yViolations(phone.page)).toEqual([]);
      await screenshot(phone.page, 'staff-enable-confirm-phone');
      await enable.getByRole('button', { name: 'Re-enable', exact: true }).press('Enter');
      await phone.page.getByText(`Account ${target.email} re-enabled. It can sign in again.`).waitFor();
      await phoneRow.getByRole('cell').nth(3).filter({ hasText: 'Active' }).waitFor();
      await screenshot(phone.page, 'staff-enabled-phone');
      expect(phone.problems).toEqual([]);
      await phone.browserContext.close();

      const back = await openPage(platform);
      await signIn(back.page, target.email);
      await back.page.getByRole('heading', { name: 'Overview' }).waitFor();
      await back.browserContext.close();
      expect(problems).toEqual([]);
      await browserContext.close();
    },
  );

  it(
    'lets staff delete an account after a confirmation that says it cannot be undone and offers exporting first, with the keyboard; shows a refusal in the dialog',
    { timeout: 90_000 },
    async () => {
      const staff = await newAccount(platform, 'staff');
      const target = await newAccount(platform);
      const gone = await newAccount(platform);
      const { page, problems, browserContext } = await openPage(platform);
      await signIn(page, staff.email);
      await page.goto('/staff');
      const accounts = page.getByRole('table', { name: 'Accounts' });
      const row = accounts.getByRole('row').filter({ hasText: target.email });
      await row.waitFor();
      await page.getByText('export its data first (GET /api/v1/export)').waitFor();

      // The confirmation says what is lost and offers the export; Escape leaves the account as it was.
      await row.getByRole('button', { name: `Delete ${target.email}` }).click();
      const dialog = page.getByRole('dialog', { name: `Delete ${target.email}?` });
      await dialog.waitFor();
      expect(await dialog.textContent()).toContain('This cannot be undone');
      expect(await dialog.textContent()).toContain('Export its data first');
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'staff-delete-confirm-desktop');
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      expect(await row.count()).toBe(1);

      // Keyboard only: the row's Delete, Enter, Tab to the confirm button, Enter.
      await row.getByRole('button', { name: `Delete ${target.email}` }).focus();
      await page.keyboard.press('Enter');
      await dialog.waitFor();
      const confirm = dialog.getByRole('button', { name: 'Delete for good' });
      for (let tabs = 0; tabs < 5 && !(await confirm.evaluate((element) => element === document.activeElement)); tabs++) await page.keyboard.press('Tab');
      expect(await confirm.evaluate((element) => element === document.activeElement)).toBe(true);
      await page.keyboard.press('Enter');
      await page.getByText(`Account ${target.email} deleted.`).waitFor();
      await row.waitFor({ state: 'detached' });
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'staff-deleted-desktop');
      const signInGone = await platform.app.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { email: target.email, password: TEST_PASSWORD },
        remoteAddress: '198.51.100.77',
      });
      expect(signInGone.statusCode).toBe(401);

      // Deleted elsewhere while the dialog was open: the API's 404 shows in the dialog, on a phone.
      const phone = await openPage(platform, { viewport: 'phone' });
      await signIn(phone.page, staff.email);
      await phone.page.goto('/staff');
      const goneRow = phone.page.getByRole('table', { name: 'Accounts' }).getByRole('row').filter({ hasText: gone.email });
      await goneRow.getByRole('button', { name: `Delete ${gone.email}` }).press('Enter');
      const goneDialog = phone.page.getByRole('dialog', { name: `Delete ${gone.email}?` });
      await goneDialog.waitFor();
      const cookie = await loginCookie(platform.app, staff.email, TEST_PASSWORD, '198.51.100.78');
      const elsewhere = await platform.app.inject({ method: 'DELETE', url: `/api/v1/users/${gone.id}`, headers: { cookie, origin: platform.origin } });
      expect(elsewhere.statusCode, elsewhere.body).toBe(200);
      await goneDialog.getByRole('button', { name: 'Delete for good' }).press('Enter');
      await goneDialog.getByText('Nothing was found here.').waitFor();
      expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      expect(await seriousA11yViolations(phone.page)).toEqual([]);
      await screenshot(phone.page, 'staff-delete-refused-phone');
      await phone.browserContext.close();
      expect(problems).toEqual([]);
      await browserContext.close();
    },
  );

  it("shows an account's history (what staff did to it, by whom, from where), and the empty state, in German on a phone", { timeout: 90_000 }, async () => {
    const staff = await newAccount(platform, 'staff');
    const target = await newAccount(platform);
    const fresh = await newAccount(platform);
    const cookie = await loginCookie(platform.app, staff.email, TEST_PASSWORD, '198.51.100.79');
    for (const disabled of [true, false]) {
      const changed = await platform.app.inject({
        method: 'PATCH',
        url: `/api/v1/users/${target.id}`,
        headers: { cookie, origin: platform.origin },
        payload: { disabled },
        remoteAddress: '198.51.100.79',
      });
      expect(changed.statusCode, changed.body).toBe(200);
    }
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, staff.email);
    await page.goto('/staff');
    const row = page.getByRole('table', { name: 'Accounts' }).getByRole('row').filter({ hasText: target.email });
    await row.getByRole('button', { name: `History of ${target.email}` }).press('Enter');
    const dialog = page.getByRole('dialog', { name: `History of ${target.email}` });
    await dialog.waitFor();
    // Audit rows are written after the answers: the two are there within moments.
    const entries = dialog.getByRole('table').getByRole('row').filter({ hasText: staff.email });
    await entries.filter({ hasText: 'user.enabled' }).waitFor();
    expect(await entries.filter({ hasText: 'user.disabled' }).textContent()).toContain('198.51.100.79');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'staff-history-desktop');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(problems).toEqual([]);
    await browserContext.close();

    const phone = await openPage(platform, { viewport: 'phone', locale: 'de-DE' });
    await phone.page.goto('/login');
    await phone.page.getByLabel('E-Mail').fill(staff.email);
    await phone.page.getByLabel('Passwort').fill(TEST_PASSWORD);
    await phone.page.getByRole('button', { name: 'Anmelden' }).click();
    await phone.page.locator('#main-nav').waitFor({ state: 'attached' });
    await phone.page.goto('/staff');
    const freshRow = phone.page.getByRole('table', { name: 'Konten' }).getByRole('row').filter({ hasText: fresh.email });
    await freshRow.getByRole('button', { name: `Verlauf von ${fresh.email}` }).press('Enter');
    const empty = phone.page.getByRole('dialog', { name: `Verlauf von ${fresh.email}` });
    await empty.locator('.state-empty').waitFor();
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(phone.page)).toEqual([]);
    await screenshot(phone.page, 'staff-history-empty-phone-de');
    await empty.getByRole('button', { name: 'Schließen' }).press('Enter');
    await empty.waitFor({ state: 'hidden' });
    expect(phone.problems).toEqual([]);
    await phone.browserContext.close();
  });
});
