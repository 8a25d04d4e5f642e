import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpServer } from '../support/smtp.js';
import { waitFor } from '../support/wait.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, TEST_PASSWORD, type UiPlatform } from './support.js';

// The account pages in a real browser: changing the password (wrong, weak, then right), the
// sessions list with the current one marked, signing another session and then this one out; the
// forgotten-password flow through a real local SMTP server, the link opened, used and refused when
// used again; a staff-issued reset link. axe on each page, at desktop and phone size, in English
// and German.
let platform: UiPlatform;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

const NEW_PASSWORD = 'plum tractor velvet orbit lantern';

beforeAll(async () => {
  smtp = await startSmtpServer();
  platform = await startUiPlatform({ SMTP_URL: smtp.url });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  smtp?.close();
});

/** GET /api/v1/me with a browser profile's own cookies. */
const meStatus = async (page: Page) => (await page.request.get('/api/v1/me')).status();

describe('account page', () => {
  it('changes the password (wrong and weak refused first), lists the sessions and signs one, then this one, out', async () => {
    const account = await newAccount(platform);
    const elsewhere = await openPage(platform, { userAgent: 'Other browser/1.0' });
    await signIn(elsewhere.page, account.email);
    const { page, problems, browserContext } = await openPage(platform, { userAgent: 'This browser/1.0' });
    await signIn(page, account.email);
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
    const sessions = page.getByRole('region', { name: 'Sessions' });
    await sessions.getByRole('rowheader', { name: /This browser\/1\.0\s*This session/ }).waitFor();
    await sessions.getByRole('rowheader', { name: 'Other browser/1.0' }).waitFor();

    // Wrong current password, submitted from the keyboard.
    await page.getByLabel('Current password').fill('not the password');
    await page.getByLabel('New password').fill(NEW_PASSWORD);
    await page.getByLabel('New password').press('Enter');
    await page.getByText('The current password is wrong.').waitFor();
    // A weak new one: the server's rule, shown at the field.
    await page.getByLabel('Current password').fill(TEST_PASSWORD);
    await page.getByLabel('New password').fill('password1234');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText(/is too common or too easy to guess/).waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);

    await page.getByLabel('New password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    // The change hashes the new password on libuv's pool, which a loaded services run keeps busy: up to
    // 60 s; and the notice read whole, so that a failure says what it showed.
    const changed = page.getByText(/^Password changed\./);
    await changed.waitFor({ timeout: 60_000 });
    expect(await changed.textContent()).toBe('Password changed. Other sessions signed out: 1.');
    await page.getByText('No other session is signed in.').waitFor();
    expect(await meStatus(elsewhere.page)).toBe(401);
    expect(await meStatus(page)).toBe(200);
    await screenshot(page, 'account-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // The change is in the account's activity, by "You", with this browser's address (audit rows are
    // written after the answer: read again until it is there).
    const activity = page.locator('section[aria-labelledby="activity-title"]');
    await expect
      .poll(
        async () => {
          await page.reload();
          await activity.locator('.activity-table, .state-empty').first().waitFor();
          return activity.getByRole('row').filter({ hasText: 'user.password_changed' }).count();
        },
        { timeout: 30_000 },
      )
      .toBe(1);
    const changeRow = activity.getByRole('row').filter({ hasText: 'user.password_changed' });
    expect(await changeRow.getByRole('cell').nth(2).textContent()).toBe('You');
    expect(await changeRow.getByRole('cell').nth(3).textContent()).toBe('127.0.0.1');
    await screenshot(page, 'account-activity-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // Another session, signed out from here.
    const third = await openPage(platform, { userAgent: 'Third browser/3.0' });
    await signIn(third.page, account.email, NEW_PASSWORD);
    await page.reload();
    await page.getByRole('button', { name: /^Sign out the session of Third browser\/3\.0 from / }).click();
    await page.getByText('The session was signed out.').waitFor();
    expect(await meStatus(third.page)).toBe(401);
    // The notice shows before the list is read again: the row leaves with that read.
    await expect.poll(() => page.getByRole('button', { name: /^Sign out the session of Third browser/ }).count(), { timeout: 30_000 }).toBe(0);

    // This session: the dashboard returns to the sign-in page.
    await page.getByRole('button', { name: /^Sign out the session of This browser\/1\.0 from / }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    expect(await meStatus(page)).toBe(401);
    expect(problems).toEqual([]);
    await Promise.all([browserContext.close(), elsewhere.browserContext.close(), third.browserContext.close()]);
    // Three browsers, four sign-ins (each a password hash) and two axe runs: 5 s alone, over 30 s on a loaded CI machine.
  }, 120_000);

  it('fits a phone and speaks German', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone', locale: 'de-DE' });
    await page.goto('/login');
    await page.getByLabel('E-Mail').fill(account.email);
    await page.getByLabel('Passwort').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Anmelden' }).click();
    await page.locator('#main-nav').waitFor({ state: 'attached' });
    await page.goto('/account');
    await page.getByRole('heading', { name: 'Ihr Konto', level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Passwort ändern' }).waitFor();
    await page.getByText('Diese Sitzung').waitFor();
    // A new account's activity: nothing yet (the empty state), under its German heading.
    await page.getByRole('heading', { name: 'Aktivität' }).waitFor();
    await page.locator('section[aria-labelledby="activity-title"] .state-empty').waitFor();
    // Each session a block of its own: its sign-out button within the screen, no sideways scrolling.
    const button = await page.getByRole('button', { name: /^Sitzung von .* abmelden$/ }).boundingBox();
    expect(button!.x + button!.width).toBeLessThanOrEqual(375);
    // Nothing wider than the screen but the table's own scrolling region.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, 'account-phone-de');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});

describe("deleting one's account", () => {
  it('offers the data first, asks the password in a dialog (a wrong one refused there), then deletes and returns to the sign-in page; on a phone, by keyboard', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone' });
    await signIn(page, account.email);
    await page.goto('/account');
    const section = page.getByRole('region', { name: 'Delete account' });
    await section.waitFor();
    // The data first: the link downloads the account's visits, as GET /api/v1/export answers them.
    const download = section.getByRole('link', { name: 'Download my data' });
    const href = await download.getAttribute('href');
    expect(href).toBe('/api/v1/export?format=json');
    const exported = await page.request.get(href!);
    expect(exported.status()).toBe(200);
    expect(exported.headers()['content-type']).toContain('application/json');

    // By keyboard: the button opens the dialog, which says the deletion cannot be undone.
    await section.getByRole('button', { name: 'Delete account…' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Delete your account?' });
    await dialog.getByText(/cannot be undone/).waitFor();
    await dialog.getByLabel('Current password').fill('not the password');
    await dialog.getByLabel('Current password').press('Enter');
    await dialog.getByText('The current password is wrong.').waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, 'account-delete-dialog-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await meStatus(page)).toBe(200);

    await dialog.getByLabel('Current password').fill(TEST_PASSWORD);
    await dialog.getByRole('button', { name: 'Delete my account' }).click();
    await page.getByText('Your account was deleted.').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await screenshot(page, 'account-deleted-sign-in-phone');
    expect(await meStatus(page)).toBe(401);
    // The account is gone: its password signs nobody in.
    const signIn2 = await page.request.post('/auth/login', { data: { email: account.email, password: TEST_PASSWORD } });
    expect(signIn2.status()).toBe(401);
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);

  it('shows the team refusal in the dialog, naming the team the account is the only owner of, and deletes nothing', async () => {
    const account = await newAccount(platform);
    const member = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, account.email);
    const other = await openPage(platform);
    await signIn(other.page, member.email);
    const headers = { origin: platform.origin };
    const team = await page.request.post('/api/v1/teams', { data: { name: 'Shared plans' }, headers });
    expect(team.status()).toBe(201);
    const teamId = (await team.json()).data.id as string;
    const invited = await page.request.post(`/api/v1/teams/${teamId}/invitations`, { data: { email: member.email, role: 'admin' }, headers });
    expect(invited.status()).toBe(201);
    // With SMTP_URL the invitation is mailed: the token comes from the member's mail.
    const mail = await waitFor(() => smtp.mails.find((sent) => sent.to.includes(member.email)), 10_000);
    const token = /#token=([\w-]+)/.exec(mail.text)![1]!;
    expect((await other.page.request.post('/api/v1/invitations/accept', { data: { token }, headers })).status()).toBe(200);

    await page.goto('/account');
    await page.getByRole('button', { name: 'Delete account…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete your account?' });
    await dialog.getByLabel('Current password').fill(TEST_PASSWORD);
    await dialog.getByRole('button', { name: 'Delete my account' }).click();
    await dialog.getByText(/without an owner.*Teams: Shared plans\./).waitFor();
    await screenshot(page, 'account-delete-team-refused');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await meStatus(page)).toBe(200);
    expect(problems).toEqual([]);
    await Promise.all([browserContext.close(), other.browserContext.close()]);
  }, 120_000);
});

describe('forgotten password', () => {
  it('mails a link from the sign-in page; the link sets a new password once, then says it was used', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await page.goto('/login');
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByRole('heading', { name: 'Reset your password', level: 1 }).waitFor();
    await page.getByLabel('E-mail').fill(account.email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByText(/If an account uses this address, a link is on its way/).waitFor();
    await screenshot(page, 'forgot-password-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    const mail = await waitFor(() => smtp.mails.find((sent) => sent.to.includes(account.email)), 10_000);
    const link = /(http\S+#token=[\w-]{43})/.exec(mail.text)![1]!;
    await page.goto(link);
    await page.getByRole('heading', { name: 'Choose a new password', level: 1 }).waitFor();
    // The secret leaves the address bar (and so the history) at once.
    expect(page.url()).not.toContain('#token=');
    await page.getByLabel('New password').fill('password1234');
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.getByText(/is too common or too easy to guess/).waitFor();
    await page.getByLabel('New password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.getByText('Your password is set. Sign in with it.').waitFor();
    await screenshot(page, 'reset-password-done-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await signIn(page, account.email, NEW_PASSWORD);

    // The same link again: refused, with the way to a new one.
    const again = await openPage(platform, { viewport: 'phone' });
    await again.page.goto(link);
    await again.page.getByLabel('New password').fill('another long unusual passphrase 42');
    await again.page.getByRole('button', { name: 'Set the password' }).click();
    await again.page.getByText('This password reset link was already used: ask for a new one.').waitFor();
    await again.page.getByRole('link', { name: 'Ask for a new link' }).waitFor();
    // Opened as the first page: it shows alone, without index.html's static "Loading…" line.
    expect(await again.page.getByText('Loading…').count()).toBe(0);
    await screenshot(again.page, 'reset-password-used-phone');
    expect(await seriousA11yViolations(again.page)).toEqual([]);
    // Opened without its token: says so.
    await again.page.goto('/login/reset');
    await again.page.getByText(/This link is incomplete/).waitFor();
    expect(problems).toEqual([]);
    expect(again.problems).toEqual([]);
    await Promise.all([browserContext.close(), again.browserContext.close()]);
  });

  it('lets staff issue a reset link from the staff page', async () => {
    const staff = await newAccount(platform, 'staff');
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, staff.email);
    await page.goto('/staff');
    await page.getByRole('button', { name: `Issue a password-reset link for ${account.email}` }).click();
    const issued = page.getByRole('group', { name: 'Reset link' });
    await issued.getByText(new RegExp(`Reset link for ${account.email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, valid until`)).waitFor();
    const url = (await issued.locator('code').textContent())!;
    expect(url).toMatch(new RegExp(`^${platform.origin}/login/reset#token=[\\w-]{43}$`));
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'staff-reset-link-desktop');
    // The link works, as a mailed one does.
    const response = await page.request.post('/auth/password-reset/confirm', {
      data: { token: url.split('#token=')[1], password: NEW_PASSWORD },
      headers: { origin: platform.origin },
    });
    expect(response.status()).toBe(200);
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
