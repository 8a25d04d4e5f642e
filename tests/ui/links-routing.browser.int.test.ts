import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { type openPage, openSignedIn, screenshot, seriousA11yViolations, startUiPlatform, type OpenedPage, type UiPlatform } from './support.js';

// Issue 40 in a real browser: the link form's redirect rules (added, moved, each condition's
// inputs), the A/B split with its shares, query forwarding starting from the subdomain's default,
// the preview of where a described visitor goes, and the UTM builder; then editing: the rules come
// back, a refusal is said at the rule's field, a rule is removed.
let platform: UiPlatform;

beforeAll(async () => {
  platform = await startUiPlatform();
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

const ownerPage = (owner: TestOwner, options: Parameters<typeof openPage>[1] = {}): Promise<OpenedPage> => openSignedIn(platform, owner, options);

const readLink = async (owner: TestOwner, id: string) =>
  (await platform.app.inject({ method: 'GET', url: `/api/v1/links/${id}`, headers: owner.auth })).json().data;

describe('routing in the link form', () => {
  it('creates a link with two rules (moved), a 3-way split, forwarding from the subdomain default and UTM parameters; the preview follows the rules', async () => {
    const owner = await createOwner(platform.context, platform.app);
    const subdomain = await claimSubdomain(platform.app, owner, { forward_query: true });
    const { page, problems, browserContext } = await ownerPage(owner);
    const target = `https://example.com/landing-${Math.random().toString(36).slice(2, 8)}?ref=1`;
    await page.goto('/links');
    await page.getByRole('button', { name: 'New link' }).click();
    const form = page.locator('#link-create');
    await form.getByLabel('Target URL').fill(target);

    // UTM builder: written into the target, its own parameter kept.
    await form.getByText('UTM builder').click();
    await form.getByLabel('Source (utm_source)').fill('newsletter');
    await form.getByLabel('Medium (utm_medium)').fill('email');
    const withUtm = await form.getByLabel('Target URL').inputValue();
    expect(new URL(withUtm).searchParams.get('ref')).toBe('1');
    expect(new URL(withUtm).searchParams.get('utm_source')).toBe('newsletter');
    expect(new URL(withUtm).searchParams.get('utm_medium')).toBe('email');

    // Forwarding starts from the subdomain's default (on).
    expect(await form.getByLabel('Forward the query of the short URL to the target').isChecked()).toBe(true);

    // Rule 1: mobile devices; rule 2: Germany and Austria; then rule 2 moved up.
    await form.getByRole('button', { name: 'Add a rule' }).click();
    const first = form.getByRole('group', { name: 'Rule 1' });
    await first.getByLabel('Mobile').check();
    await first.getByLabel('Then go to').fill('https://m.example.com/');
    await form.getByRole('button', { name: 'Add a rule' }).click();
    const second = form.getByRole('group', { name: 'Rule 2' });
    await second.getByLabel('When').selectOption('country');
    await second.getByLabel('Is one of').fill('de, at');
    await second.getByLabel('Then go to').fill('https://example.de/');
    await form.getByRole('button', { name: 'Move rule 2 up' }).click();
    // The focus stays with the moved rule, now rule 1: its "up" is disabled, so on its "down".
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Move rule 1 down');
    expect(await form.getByRole('group', { name: 'Rule 1' }).getByLabel('Then go to').inputValue()).toBe('https://example.de/');

    // A 3-way split, 50/30/20.
    await form.getByRole('button', { name: 'Split the traffic' }).click();
    expect(await form.getByLabel('Target 1').inputValue()).toBe(withUtm);
    await form.getByLabel('Target 2').fill('https://b.example.com/');
    await form.getByRole('button', { name: 'Add a target' }).click();
    await form.getByLabel('Target 3').fill('https://c.example.com/');
    const weights = form.getByLabel('Weight');
    await weights.nth(1).fill('30');
    await weights.nth(2).fill('20');
    await form.getByText('20 % of the visitors').waitFor();

    // The preview: a phone from Germany → rule 1; from France → rule 2; on a desktop → the split.
    await form.getByText('Preview: where does a visitor go?').click();
    const answer = form.locator('output.routing-answer');
    await expect.poll(() => answer.textContent()).toBe('This visitor goes to https://example.de/ (rule 1).');
    await form.locator('[id$="-preview-country"]').fill('FR');
    await expect.poll(() => answer.textContent()).toBe('This visitor goes to https://m.example.com/ (rule 2).');
    await form.locator('[id$="-preview-query"]').fill('utm_source=ads');
    await expect.poll(() => answer.textContent()).toBe('This visitor goes to https://m.example.com/?utm_source=ads (rule 2).');
    await form.locator('[id$="-preview-device"]').selectOption('desktop');
    await expect.poll(() => answer.textContent()).toContain('No rule matches: the split sends this visitor to one of its targets, by weight:');
    expect(await answer.textContent()).toContain('https://c.example.com/?utm_source=ads (20 %)');
    await screenshot(page, 'links-routing-create-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    await form.getByRole('button', { name: 'Create link' }).click();
    await page.getByRole('status').filter({ hasText: 'Link created:' }).waitFor();
    const listed = (await platform.app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${subdomain}`, headers: owner.auth })).json().data.links;
    expect(listed).toHaveLength(1);
    const link = await readLink(owner, listed[0].id);
    expect(link.target_url).toBe(withUtm);
    expect(link.rules).toEqual([
      { condition: { type: 'country', values: ['DE', 'AT'] }, target_url: 'https://example.de/' },
      { condition: { type: 'device', values: ['mobile'] }, target_url: 'https://m.example.com/' },
    ]);
    expect(link.variants).toEqual([
      { target_url: withUtm, weight: 50 },
      { target_url: 'https://b.example.com/', weight: 30 },
      { target_url: 'https://c.example.com/', weight: 20 },
    ]);
    expect(link.forward_query).toBe(true);
    expect(problems).toEqual([]);
    await browserContext.close();
  });

  it('edits the routing on a phone: the rules come back, a bad rule target is said at its field, a rule removed and forwarding turned off', async () => {
    const owner = await createOwner(platform.context, platform.app);
    const subdomain = await claimSubdomain(platform.app, owner);
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: {
        subdomain,
        target_url: 'https://example.com/edit',
        forward_query: true,
        rules: [
          { condition: { type: 'time', from: '22:00', to: '06:00', days: [0, 6] }, target_url: 'https://night.example.com/' },
          { condition: { type: 'query', name: 'lang', value: 'de' }, target_url: 'https://example.de/' },
        ],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().data.id;
    const { page, problems, browserContext } = await ownerPage(owner, { viewport: 'phone' });
    await page.goto(`/links/${id}`);
    const first = page.getByRole('group', { name: 'Rule 1' });
    expect(await first.getByLabel('When').inputValue()).toBe('time');
    expect(await first.getByLabel('From (UTC)').inputValue()).toBe('22:00');
    expect(await first.getByLabel('Until (UTC)').inputValue()).toBe('06:00');
    expect(await first.getByLabel('Sun').isChecked()).toBe(true);
    expect(await first.getByLabel('Sat').isChecked()).toBe(true);
    expect(await first.getByLabel('Mon').isChecked()).toBe(false);
    const second = page.getByRole('group', { name: 'Rule 2' });
    expect(await second.getByLabel('Parameter').inputValue()).toBe('lang');
    expect(await page.getByLabel('Forward the query of the short URL to the target').isChecked()).toBe(true);

    // A rule target that is no http URL: refused, and said at that rule's field (which gets the focus).
    await first.getByLabel('Then go to').fill('ftp://night.example.com/');
    await page.getByRole('button', { name: 'Save' }).click();
    const refusal = first.locator('.field-error');
    await refusal.waitFor();
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.value)).toBe('ftp://night.example.com/');
    expect((await readLink(owner, id)).rules[0].target_url).toBe('https://night.example.com/');
    await screenshot(page, 'links-routing-refused-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);

    await first.getByLabel('Then go to').fill('https://night.example.com/');
    await page.getByRole('button', { name: 'Remove rule 2' }).click();
    await page.getByLabel('Forward the query of the short URL to the target').uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Changes saved.' }).first().waitFor();
    const saved = await readLink(owner, id);
    expect(saved.rules).toEqual([{ condition: { type: 'time', from: '22:00', to: '06:00', days: [0, 6] }, target_url: 'https://night.example.com/' }]);
    expect(saved.forward_query).toBe(false);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, 'links-routing-edit-phone');
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
