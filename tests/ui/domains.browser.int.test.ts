import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { type openPage, openSignedIn, screenshot, seriousA11yViolations, startUiPlatform, type OpenedPage, type UiPlatform } from './support.js';

// Issue 40, custom domains in a real browser, against a DNS server started here (DNS_RESOLVERS):
// the subdomain settings page adds a domain, shows the TXT record, checks it (not found, then
// found), and removes it; a name the API refuses is said on the field; then the platform's socket
// answers the verified host with the redirect.
let platform: UiPlatform;
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  platform = await startUiPlatform({ DNS_RESOLVERS: dns.address });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await dns?.close();
});

const ownerPage = (owner: TestOwner, options: Parameters<typeof openPage>[1] = {}): Promise<OpenedPage> => openSignedIn(platform, owner, options);

/** GET over a real socket to the platform's port with another Host: what a visitor of the domain sends. */
const visit = (host: string, path: string) =>
  new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: platform.port, path, headers: { host } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, location: res.headers.location });
    });
    req.on('error', reject);
    req.end();
  });

describe('custom domains on the subdomain settings page', () => {
  it('adds a domain, shows its TXT record, verifies it once the record exists, serves it, and removes it', async () => {
    const owner = await createOwner(platform.context, platform.app);
    const subdomain = await claimSubdomain(platform.app, owner);
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, slug: 'docs', target_url: 'https://example.org/docs' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const domain = `go-${Math.random().toString(36).slice(2, 8)}.example-ui.test`;
    const { page, problems, browserContext } = await ownerPage(owner);
    await page.goto(`/subdomains/${subdomain}`);
    const section = page.getByRole('region', { name: 'Custom domains' });
    await section.getByText('No custom domain yet.').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);

    // A name the API refuses: said on the field.
    await section.getByLabel('Domain', { exact: true }).fill('192.0.2.10');
    await section.getByRole('button', { name: 'Add domain' }).click();
    await page.locator('#domain-new-error').filter({ hasText: 'not an IP address' }).waitFor();

    await section.getByLabel('Domain', { exact: true }).fill(domain.toUpperCase());
    await section.getByRole('button', { name: 'Add domain' }).click();
    const item = section.getByRole('listitem').filter({ hasText: domain });
    await item.getByText('Not verified').waitFor();
    const stored = (await platform.app.inject({ method: 'GET', url: `/api/v1/domains/${domain}`, headers: owner.auth })).json().data;
    await item.getByText(stored.verification.name).waitFor();
    await item.getByText(stored.verification.value).waitFor();
    expect(await page.locator('#domain-new').inputValue()).toBe('');

    // Checked before the record exists: not found yet, and why.
    await item.getByRole('button', { name: 'Verify now' }).click();
    await item.getByText('The record was not found yet.', { exact: false }).waitFor();
    await item.getByText(`no TXT record at ${stored.verification.name}`, { exact: false }).waitFor();
    await screenshot(page, 'domains-pending-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect((await visit(domain, '/docs')).location).toBeUndefined();

    // The record created: verified, and the platform's socket answers the host with the redirect.
    dns.setTxt(stored.verification.name, [stored.verification.value]);
    await item.getByRole('button', { name: 'Verify now' }).click();
    await item.getByText('Verified', { exact: true }).waitFor();
    await item.getByText(`${domain} is verified and served.`).waitFor();
    await screenshot(page, 'domains-verified-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await expect.poll(async () => (await visit(domain, '/docs')).location, { timeout: 10_000 }).toBe('https://example.org/docs');

    // Removed (after the confirmation): the empty state again, and the host no longer served.
    page.once('dialog', (dialog) => void dialog.accept());
    await item.getByRole('button', { name: 'Remove' }).click();
    await section.getByText(`${domain} was removed.`).waitFor();
    await section.getByText('No custom domain yet.').waitFor();
    await expect.poll(async () => (await visit(domain, '/docs')).status, { timeout: 10_000 }).not.toBe(302);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('works on a phone with the keyboard, in German, and escapes what was typed', async () => {
    const owner = await createOwner(platform.context, platform.app);
    const subdomain = await claimSubdomain(platform.app, owner);
    const domain = `k-${Math.random().toString(36).slice(2, 8)}.example-ui.test`;
    const { page, problems, browserContext } = await ownerPage(owner, { viewport: 'phone', locale: 'de-DE' });
    await page.goto(`/subdomains/${subdomain}`);
    const section = page.getByRole('region', { name: 'Eigene Domains' });
    await section.getByText('Noch keine eigene Domain.').waitFor();
    // Typed markup is refused as a name and shown as text, never as HTML.
    const field = section.getByLabel('Domain', { exact: true });
    await field.focus();
    await page.keyboard.type('<img src=x onerror=alert(1)>.example.org');
    await page.keyboard.press('Enter');
    await page.locator('#domain-new-error').waitFor();
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    await field.fill('');
    await page.keyboard.type(domain);
    await page.keyboard.press('Enter');
    const item = section.getByRole('listitem').filter({ hasText: domain });
    await item.getByText('Nicht bestätigt').waitFor();
    // The verify button is reachable by Tab from the record's copy buttons and works with Enter.
    await item.getByRole('button', { name: 'Jetzt prüfen' }).focus();
    await page.keyboard.press('Enter');
    await item.getByText('Der Eintrag wurde noch nicht gefunden.', { exact: false }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, 'domains-pending-phone-de');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
