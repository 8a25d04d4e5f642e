import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { openPage, openSignedIn, screenshot, seriousA11yViolations, startUiPlatform, type OpenedPage, type UiPlatform } from './support.js';

// Issue 40, protected links in a real browser: the link form sets and removes the password
// (write-only) and the fallback URL, the table shows a "Protected" badge, and the edge's password
// page works without script, with the keyboard, in the visitor's language.
let platform: UiPlatform;

beforeAll(async () => {
  platform = await startUiPlatform();
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

const unique = (prefix: string) => `${prefix}${Math.random().toString(36).slice(2, 9)}`;

async function newOwner(): Promise<{ owner: TestOwner; subdomain: string }> {
  const owner = await createOwner(platform.context, platform.app);
  return { owner, subdomain: await claimSubdomain(platform.app, owner) };
}

const ownerPage = (owner: TestOwner, options: Parameters<typeof openPage>[1] = {}): Promise<OpenedPage> => openSignedIn(platform, owner, options);

const readLink = async (owner: TestOwner, id: string) =>
  (await platform.app.inject({ method: 'GET', url: `/api/v1/links/${id}`, headers: owner.auth })).json().data;

describe('the link form', () => {
  it('creates a protected link with a fallback; the table shows it protected; the password is never shown back', async () => {
    const { owner } = await newOwner();
    const { page, problems, browserContext } = await ownerPage(owner);
    const target = `https://example.com/${unique('protected')}`;
    await page.goto('/links');
    await page.getByRole('button', { name: 'New link' }).click();
    await page.getByLabel('Target URL').fill(target);
    await page.getByLabel('Password', { exact: true }).fill('open sesame');
    await page.getByLabel('Fallback URL').fill('https://example.org/ended');
    await screenshot(page, 'links-protection-create-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Create link' }).click();
    await page.getByRole('status').filter({ hasText: 'Link created:' }).waitFor();
    const list = (await platform.app.inject({ method: 'GET', url: `/api/v1/links?q=${encodeURIComponent(target)}`, headers: owner.auth })).json().data.links;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ has_password: true, fallback_url: 'https://example.org/ended' });
    const row = page.locator('tbody tr').filter({ hasText: list[0].slug });
    await row.getByText('Protected', { exact: true }).waitFor();
    await screenshot(page, 'links-protection-table-desktop');
    // The edit form offers a new password or its removal, never the old one.
    await row.getByRole('link', { name: /^Edit/ }).click();
    await page.waitForURL(`**/links/${list[0].id}`);
    expect(await page.getByLabel('New password').inputValue()).toBe('');
    expect(await page.getByLabel('Fallback URL').inputValue()).toBe('https://example.org/ended');
    expect(await page.content()).not.toContain('open sesame');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('removes the password and refuses a fallback that is no http URL on its field, on a phone', async () => {
    const { owner, subdomain } = await newOwner();
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/edit', password: 'open sesame' },
    });
    const link = created.json().data;
    const { page, problems, browserContext } = await ownerPage(owner, { viewport: 'phone' });
    await page.goto(`/links/${link.id}`);
    await page.getByLabel('Fallback URL').fill('ftp://example.org/');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#link-edit-fallback_url-error').waitFor();
    expect(await page.getByLabel('Fallback URL').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'links-protection-invalid-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByLabel('Fallback URL').fill('');
    await page.getByLabel('Remove the password').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Changes saved.' }).waitFor();
    expect(await readLink(owner, link.id)).toMatchObject({ has_password: false, fallback_url: null });
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});

describe('the password page', () => {
  it('asks the password without script, says a wrong one, and lets the right one through, with the keyboard', async () => {
    const { owner, subdomain } = await newOwner();
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/behind', password: 'open sesame' },
    });
    const link = created.json().data;
    // The page has no script and its CSP forbids any (script-src 'none'); the browser keeps JavaScript on only for axe.
    const { page, problems, browserContext } = await openPage(platform, { locale: 'de-DE' });
    page.setDefaultTimeout(8_000);
    await page.goto(`${platform.shortOrigin(subdomain)}/${link.slug}`);
    await page.getByRole('heading', { name: 'Geschützter Link' }).waitFor();
    await screenshot(page, 'links-protection-page-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByLabel('Passwort').fill('wrong guess');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Falsches Passwort' }).waitFor();
    expect(await page.getByLabel('Passwort').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'links-protection-page-wrong-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByLabel('Passwort').fill('open sesame');
    // The browser follows the redirect to the target (unreachable from here: its request is what is seen).
    const [toTarget] = await Promise.all([page.waitForRequest('https://example.com/behind'), page.keyboard.press('Enter')]);
    expect(toTarget.isNavigationRequest()).toBe(true);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('fits a phone and works with JavaScript off', async () => {
    const { owner, subdomain } = await newOwner();
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/', password: 'open sesame' },
    });
    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone', javaScriptEnabled: false });
    await page.goto(`${platform.shortOrigin(subdomain)}/${created.json().data.slug}`);
    await page.getByLabel('Password').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await screenshot(page, 'links-protection-page-phone');
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
