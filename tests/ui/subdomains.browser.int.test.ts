import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner } from '../support/owners.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, type UiPlatform } from './support.js';

// The subdomains page in a real browser: claiming one through the form (refusals said on the
// field), its title and its policy fields with the "what the public sees" preview changing
// before saving, the saved policy matching the public payload an anonymous reader gets, and
// another account kept out.
let platform: UiPlatform;
/** Claimed by the first test through the form, edited by the second, opened by others later. */
let owner: { id: string; email: string };
let name: string;
const title = 'Shop <img src=x onerror=alert(1)>';

beforeAll(async () => {
  platform = await startUiPlatform();
  owner = await newAccount(platform);
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

const label = (prefix: string) => `${prefix}${Math.random().toString(36).slice(2, 10)}`;

async function publicPayload(subdomain: string) {
  const response = await fetch(`${platform.origin}/api/v1/subdomains/${subdomain}`);
  expect(response.status).toBe(200);
  return (await response.json()).data as {
    title: string | null;
    public: Record<string, boolean | number>;
    links?: { slug: string; short_url: string }[];
    owner?: { display_name: string | null };
  };
}

/** The preview's public summary as the page shows it (each row's data-key and its state). */
async function previewSummary(page: Page): Promise<Record<string, boolean | number>> {
  const rows = page.locator('[data-testid="preview"] [data-key]');
  // The preview renders once the settings have loaded, after the heading: read it only when it is there.
  await rows.first().waitFor();
  return rows.evaluateAll((rows) =>
    Object.fromEntries(
      rows.map((row) => [
        row.getAttribute('data-key'),
        row.hasAttribute('data-value') ? Number(row.getAttribute('data-value')) : row.getAttribute('data-public') === 'true',
      ]),
    ),
  );
}

const nameError = (page: Page) => page.locator('#claim-name-error');

describe('subdomains page', () => {
  it('claims a subdomain through the form, saying a reserved name and a taken one on the name field', async () => {
    const someoneElse = await createOwner(platform.context, platform.app);
    const taken = label('taken');
    expect((await platform.app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: someoneElse.auth, payload: { name: taken } })).statusCode).toBe(
      201,
    );

    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, owner.email);
    await page.goto('/subdomains');
    await page.getByRole('heading', { name: 'Subdomains', level: 1 }).waitFor();
    await page.getByText('You have no subdomain yet.').waitFor();

    const nameInput = page.getByLabel('Name', { exact: true });
    await nameInput.fill('www');
    await page.getByRole('button', { name: 'Claim' }).click();
    await expect.poll(() => nameError(page).textContent()).toBe('This name is reserved for the platform. Pick another one.');
    expect(await nameInput.getAttribute('aria-invalid')).toBe('true');
    expect(await nameInput.getAttribute('aria-describedby')).toContain('claim-name-error');
    expect(await seriousA11yViolations(page)).toEqual([]);

    await nameInput.fill(taken);
    await page.getByRole('button', { name: 'Claim' }).click();
    await expect.poll(() => nameError(page).textContent()).toBe('This name is already taken. Pick another one.');

    await nameInput.fill('-alice');
    await page.getByRole('button', { name: 'Claim' }).click();
    await expect.poll(() => nameError(page).textContent()).toBe('Use 3 to 63 lower-case letters, digits or hyphens, not starting or ending with a hyphen.');

    name = label('mine');
    await nameInput.fill(name);
    await page.getByLabel('Title (optional)').fill('First title');
    await page.getByRole('button', { name: 'Claim' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `${name} is yours.` })
      .waitFor();
    expect(await nameError(page).count()).toBe(0);
    expect(await nameInput.inputValue()).toBe('');

    const card = page.locator(`[data-subdomain="${name}"]`);
    await card.waitFor();
    expect(await card.getByText('First title').count()).toBe(1);
    expect(await card.getByTestId('links-count').textContent()).toBe('0');
    const origin = `${platform.shortOrigin(name)}/`;
    expect(await card.locator('code').textContent()).toBe(origin);
    expect(await card.getByRole('link', { name: `Public page of ${name}` }).getAttribute('href')).toBe(origin);
    expect(await card.getByRole('link', { name: `Statistics of ${name}` }).getAttribute('href')).toBe(`/stats/subdomain/${name}`);
    expect(await page.getByText('1 of 50').count()).toBe(1);
    // The taken name stays its owner's: the list holds only the claimed one.
    expect(await page.locator('[data-subdomain]').count()).toBe(1);

    // A link, so the public payload has one to list once the policy shows links.
    const created = await page.evaluate(
      async (subdomain) =>
        (
          await fetch('/api/v1/links', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ subdomain, target_url: 'https://example.com/private-target', title: 'Spring sale' }),
          })
        ).status,
      name,
    );
    expect(created).toBe(201);
    await page.reload();
    await expect.poll(() => page.locator(`[data-subdomain="${name}"]`).getByTestId('links-count').textContent()).toBe('1');

    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'subdomains-list-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('edits the title and policy with a live preview before saving, saves, and the public payload matches after a reload', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, owner.email);
    await page.goto('/subdomains');
    await page
      .getByRole('link', { name: `Settings of ${name}` })
      .first()
      .click();
    await page.waitForURL(new RegExp(`/subdomains/${name}$`));
    await page.getByRole('heading', { name: `Subdomain ${name}` }).waitFor();

    // Private by default, and the server agrees.
    const before = await previewSummary(page);
    expect(before).toMatchObject({ stats: false, visits_list: false, links: false, owner: false, ip: false, geo: false, publish_delay_sec: 0, max_items: 50 });
    await page.locator('[data-testid="served-match"][data-match="true"]').waitFor();
    expect(await page.getByTestId('served-links-absent').count()).toBe(1);

    await page.getByLabel('Title', { exact: true }).fill(title);
    await page.getByLabel('Public statistics', { exact: true }).check();
    await page.getByLabel('Location', { exact: true }).check();
    await page.getByLabel('Referrer', { exact: true }).check();
    await page.getByLabel('Links', { exact: true }).check();
    await page.getByLabel('Owner', { exact: true }).check();
    await page.getByLabel('Publish delay', { exact: true }).fill('2');
    await page.getByLabel('Unit of the publish delay').selectOption('hour');
    await page.getByLabel('Most items per public list', { exact: true }).fill('5');

    // The preview follows the unsaved draft; the server still serves the private policy.
    const draft = await previewSummary(page);
    expect(draft).toMatchObject({
      stats: true,
      visits_list: false,
      links: true,
      owner: true,
      ip: false,
      internal_ip: false,
      geo: true,
      ua: false,
      referrer: true,
      publish_delay_sec: 7200,
      max_items: 5,
    });
    expect(await page.getByTestId('preview').getByText(title, { exact: true }).count()).toBe(1);
    expect(await page.getByTestId('preview').getByText('2 hours').count()).toBe(1);
    expect(await page.getByTestId('preview').getByText('country, city, referrer, UTM source, link').count()).toBe(1);
    await page.locator('[data-testid="served-match"][data-match="false"]').waitFor();
    expect(await page.getByText('Unsaved changes: 8').count()).toBe(1);
    expect((await publicPayload(name)).public.stats).toBe(false);

    // A value out of bounds is said on its field and cannot be saved.
    await page.getByLabel('Most items per public list', { exact: true }).fill('2000');
    await page.locator('#settings-max-items-error').filter({ hasText: 'A whole number from 1 to 1000.' }).waitFor();
    expect(await page.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);
    await page.getByLabel('Most items per public list', { exact: true }).fill('5');

    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved. The public page now follows this policy.').waitFor();
    await page.locator('[data-testid="served-match"][data-match="true"]').waitFor();
    expect(await page.getByText('No unsaved changes.').count()).toBe(1);
    // The title is text, never markup.
    expect(await page.getByTestId('served').getByText(title, { exact: true }).count()).toBe(1);
    expect(await page.locator('img[src="x"]').count()).toBe(0);

    // The public payload, as an anonymous reader gets it, is what the preview showed.
    const saved = await publicPayload(name);
    expect(saved.title).toBe(title);
    expect(saved.public).toEqual(await previewSummary(page));
    expect(saved.public).toEqual(draft);
    expect(saved.owner).toEqual({ display_name: null });
    // The link is younger than the two-hour delay: listed as public, but none published yet.
    expect(saved.links).toEqual([]);
    await page.getByText('No link is public yet').waitFor();
    await page.getByText('shown, but your account has no display name').waitFor();

    // Reloaded: the saved values, with the delay in the unit it was set in.
    await page.reload();
    await page.getByRole('heading', { name: `Subdomain ${name}` }).waitFor();
    expect(await page.getByLabel('Title', { exact: true }).inputValue()).toBe(title);
    for (const [field, on] of [
      ['Public statistics', true],
      ['Public visit list', false],
      ['Location', true],
      ['Referrer', true],
      ['Visitor IP address', false],
      ['Links', true],
      ['Owner', true],
    ] as const) {
      expect(await page.getByLabel(field, { exact: true }).isChecked(), field).toBe(on);
    }
    expect(await page.getByLabel('Publish delay', { exact: true }).inputValue()).toBe('2');
    expect(await page.getByLabel('Unit of the publish delay').inputValue()).toBe('hour');
    expect(await page.getByLabel('Most items per public list', { exact: true }).inputValue()).toBe('5');
    expect(await previewSummary(page)).toEqual(saved.public);

    // No delay: the link is published, and the served payload shows it.
    await page.getByLabel('Publish delay', { exact: true }).fill('0');
    expect((await previewSummary(page)).publish_delay_sec).toBe(0);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByTestId('served-links').getByText('Spring sale').waitFor();
    const published = await publicPayload(name);
    expect(published.public).toEqual(await previewSummary(page));
    expect(published.links?.map((link) => link.short_url)).toEqual([await page.getByTestId('served-links').locator('a').textContent()]);
    expect(JSON.stringify(published)).not.toContain('private-target');

    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'subdomains-settings-desktop');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('sets the sites the tracker may run on: a line that is no site is said on the field with its number; saved canonical', async () => {
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, owner.email);
    await page.goto(`/subdomains/${name}`);
    await page.getByRole('heading', { name: `Subdomain ${name}` }).waitFor();
    const box = page.getByLabel('Sites the tracker may run on', { exact: true });
    expect(await box.inputValue()).toBe('');
    await box.fill('https://Shop.Example/\nhttps://shop.example/landing');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#settings-tracker-origins-error').filter({ hasText: 'Line 2 (https://shop.example/landing) is not a site' }).waitFor();
    await box.fill('https://Shop.Example/\n\nhttp://localhost:8080');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('No unsaved changes.').waitFor();
    expect(await box.inputValue()).toBe('https://shop.example\nhttp://localhost:8080');
    const settings = await fetch(`${platform.origin}/api/v1/subdomains/${name}/settings`, {
      headers: { cookie: (await browserContext.cookies()).map((cookie) => `${cookie.name}=${cookie.value}`).join('; ') },
    });
    expect((await settings.json()).data.tracker_origins).toEqual(['https://shop.example', 'http://localhost:8080']);
    await page.reload();
    await page.getByRole('heading', { name: `Subdomain ${name}` }).waitFor();
    expect(await box.inputValue()).toBe('https://shop.example\nhttp://localhost:8080');
    // Emptied: any site again.
    await box.fill('');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('No unsaved changes.').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  // Guards issue 34: paths of attack attempts reached public pages with no way to keep them off.
  it('offers the attack-path switch, off by default, and saves it', async () => {
    const other = await createOwner(platform.context, platform.app);
    const subdomain = label('paths');
    expect((await platform.app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: other.auth, payload: { name: subdomain } })).statusCode).toBe(201);
    const settings = async () =>
      (await platform.app.inject({ method: 'GET', url: `/api/v1/subdomains/${subdomain}/settings`, headers: other.auth })).json().data.stats_show_attack_paths;
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, other.email);
    await page.goto(`/subdomains/${subdomain}`);
    const box = page.getByLabel('Paths of attack attempts', { exact: true });
    expect(await box.isChecked()).toBe(false);
    expect(await page.locator('#policy-stats_show_attack_paths-help').textContent()).toContain('Anyone can make one up');
    await box.check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved. The public page now follows this policy.').waitFor();
    expect(await settings()).toBe(true);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it("sets the subdomain's default for query forwarding with the keyboard; a link created without forward_query takes it", async () => {
    const other = await createOwner(platform.context, platform.app);
    const subdomain = label('fwd');
    expect((await platform.app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: other.auth, payload: { name: subdomain } })).statusCode).toBe(201);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, other.email);
    await page.goto(`/subdomains/${subdomain}`);
    const box = page.getByLabel('Forward the query of short URLs to the target', { exact: true });
    expect(await box.isChecked()).toBe(false);
    expect(await page.locator('#settings-forward-query-help').textContent()).toContain('existing links keep theirs');
    await box.focus();
    await page.keyboard.press('Space');
    expect(await box.isChecked()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved. The public page now follows this policy.').waitFor();
    await screenshot(page, 'subdomain-forward-query');
    const link = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: other.auth,
      payload: { subdomain, target_url: 'https://example.com/landing' },
    });
    expect(link.statusCode, link.body).toBe(201);
    expect(link.json().data.forward_query).toBe(true);
    await page.reload();
    expect(await page.getByLabel('Forward the query of short URLs to the target', { exact: true }).isChecked()).toBe(true);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('fits a phone: the list and the settings with the preview below the form, nothing wider than the screen', async () => {
    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone' });
    await signIn(page, owner.email);
    await page.goto('/subdomains');
    await page.locator(`[data-subdomain="${name}"]`).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'subdomains-list-phone');
    await page.goto(`/subdomains/${name}`);
    await page.locator('[data-testid="served-match"][data-match="true"]').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    const form = await page.locator('.settings-form').boundingBox();
    const preview = await page.locator('.public-preview').boundingBox();
    expect(preview!.y).toBeGreaterThan(form!.y + form!.height - 1);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'subdomains-settings-phone');
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('says the 50-subdomain limit on the name field when another client took the last place meanwhile, then disables claiming', async () => {
    const full = await createOwner(platform.context, platform.app);
    const claim = async (subdomain: string) =>
      (await platform.app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: full.auth, payload: { name: subdomain } })).statusCode;
    for (let index = 0; index < 49; index++) expect(await claim(label('bulk'))).toBe(201);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, full.email);
    await page.goto('/subdomains');
    await page.getByText('49 of 50').waitFor();
    // The fiftieth taken by a script after the page loaded: the form still offers claiming.
    expect(await claim(label('script'))).toBe(201);
    await page.getByLabel('Name', { exact: true }).fill(label('late'));
    await page.getByRole('button', { name: 'Claim' }).click();
    await expect.poll(() => nameError(page).textContent()).toBe('You already hold 50 subdomains, the most one account may have.');
    await page.reload();
    await page.getByText('50 of 50').waitFor();
    expect(await page.getByRole('button', { name: 'Claim' }).isDisabled()).toBe(true);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it("shows another account the forbidden state on the first one's subdomain, and not found on an unknown name", async () => {
    const other = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, other.email);
    await page.goto(`/subdomains/${name}`);
    const forbidden = page.locator('.state-forbidden');
    await forbidden.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    expect(await forbidden.textContent()).toContain('This object belongs to someone else.');
    expect(await page.getByLabel('Public statistics', { exact: true }).count()).toBe(0);
    expect(await page.getByText(title).count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'subdomains-forbidden-desktop');

    await page.goto(`/subdomains/${label('nobody')}`);
    await page.locator('.state-error').getByRole('heading', { name: 'Something went wrong' }).waitFor();
    expect(await page.locator('.state-error').textContent()).toContain('Nothing was found here.');
    expect(await page.locator('.state-forbidden').count()).toBe(0);
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
