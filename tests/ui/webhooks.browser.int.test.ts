import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { createTeam, joinTeam } from '../support/teams.js';
import { waitFor } from '../support/wait.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, type UiPlatform } from './support.js';

// Webhooks and notifications in a real browser against the whole platform, with a real receiver:
// an HTTP server on loopback, admitted by WEBHOOK_ALLOWLIST (the SSRF guard refuses loopback
// otherwise). Retries wait 50, 200, 800 and 3200 ms (WEBHOOK_RETRY_BASE_MS=50), so a receiver
// that keeps failing gets the webhook disabled within seconds.
let platform: UiPlatform;
let receiver: Server;
let base: string;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
}
const received: Received[] = [];
const arrivedAt = (path: string) => received.filter((entry) => entry.path === path);
const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
/** Longer than the table's preview of a response, so that the whole excerpt sits in a disclosure (stored by the test: see below). */
const FAILURE_BODY = JSON.stringify({ error: 'the receiver is down for maintenance', detail: 'back in an hour; nothing was stored, please retry later' });

/** What a receiver checks: the hex HMAC-SHA256 of the raw body with the secret (computed here, not with the platform's helper). */
const signedWith = (secret: string, entry: Received) =>
  entry.headers['x-svc-signature'] === `sha256=${createHmac('sha256', secret).update(entry.raw).digest('hex')}`;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      received.push({ path, headers: req.headers, raw: Buffer.concat(chunks).toString() });
      if (path.startsWith('/ok')) res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks from the receiver');
      else if (path.startsWith('/fail')) res.writeHead(500, { 'content-type': 'application/json' }).end(FAILURE_BODY);
      else if (path.startsWith('/gone')) res.writeHead(410).end('gone');
      else res.writeHead(404).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  platform = await startUiPlatform({ WEBHOOK_ALLOWLIST: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '2000' });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  receiver?.close();
});

/** An owner with a token (to raise events through the API) who signs in to the dashboard in a fresh browser profile. */
async function signedInOwner(
  viewport: 'desktop' | 'phone' = 'desktop',
): Promise<{ owner: TestOwner; page: Page; problems: string[]; close: () => Promise<void> }> {
  const owner = await createOwner(platform.context, platform.app);
  const { page, problems, browserContext } = await openPage(platform, { viewport });
  await signIn(page, owner.email);
  return { owner, page, problems, close: () => browserContext.close() };
}

/** Fills and submits the create form, ticking exactly the given events. */
async function createInUi(page: Page, url: string, events: string[]): Promise<void> {
  await page.getByLabel('Receiver URL').fill(url);
  for (const name of ['visit.new', 'visit.unique', 'link.created', 'link.limit_reached', 'security.suspicious', 'link.target_down', 'agent.task']) {
    await page.getByRole('checkbox', { name: new RegExp(`^${name.replace('.', '\\.')} `) }).setChecked(events.includes(name));
  }
  await page.getByRole('button', { name: 'Create webhook' }).click();
}

const unreadBadge = (page: Page) => page.getByRole('navigation', { name: 'Main navigation' }).locator('.badge');

describe('webhooks page', () => {
  it(
    'creates a webhook with its secret shown once, sends a signed test that the log shows, rotates the secret, and deletes after confirming',
    { timeout: 60_000 },
    async () => {
      const { page, problems, close } = await signedInOwner();
      await page.goto('/webhooks');
      await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      const empty = page.getByText('You have no webhook yet.');
      await empty.waitFor();
      // Guards issue 34: it said "above" of a form that is below it.
      expect(await empty.textContent()).toContain('with the form below');
      const form = page.getByRole('heading', { name: 'New webhook' });
      expect((await form.boundingBox())!.y).toBeGreaterThan((await empty.boundingBox())!.y);
      // The events not emitted yet say so beside them.
      await page.getByRole('checkbox', { name: /^link\.target_down .*not sent yet/ }).waitFor();
      await page.getByRole('checkbox', { name: /^agent\.task .*not sent yet/ }).waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'webhooks-empty-desktop');

      // The SSRF guard's refusal (422) is shown on the URL field.
      await createInUi(page, 'http://10.0.0.1/hook', ['link.created']);
      const urlError = page.locator('#new-webhook-url-error');
      await urlError.waitFor();
      expect(await urlError.textContent()).toMatch(/10\.0\.0\.1|private|not allowed|refused/i);
      expect(await page.getByLabel('Receiver URL').getAttribute('aria-invalid')).toBe('true');
      // No event picked: the API's 422 is shown on the events.
      await createInUi(page, `${base}/ok/none`, []);
      await page.getByText('Pick at least one event.').waitFor();

      const path = unique('/ok/hook');
      await createInUi(page, `${base}${path}`, ['link.created', 'visit.new']);
      const secretBox = page.locator('.secret code');
      await secretBox.waitFor();
      const secret = (await secretBox.textContent())!;
      expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      await page.locator('.secret').getByRole('button', { name: /Copy/ }).click();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
      const row = page.getByRole('row').filter({ hasText: `${base}${path}` });
      await row.waitFor();
      expect(await row.textContent()).toContain('Enabled');
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'webhooks-created-desktop');

      // Shown once: gone after a reload, and the page's HTML never held it.
      await page.reload();
      await row.waitFor();
      expect(await page.locator('.secret').count()).toBe(0);
      expect(await page.content()).not.toContain(secret);

      await row.getByRole('link').click();
      await page.waitForURL(/\/webhooks\/[0-9a-f-]{36}$/);
      await page.getByRole('heading', { name: 'Webhook', level: 1 }).waitFor();
      await page.getByText('No delivery yet.').waitFor();
      await page.getByRole('button', { name: 'Send test' }).click();
      await page.getByText(/Test delivered: HTTP 200 in \d+ ms\./).waitFor();
      const [test] = arrivedAt(path);
      expect(test).toBeDefined();
      expect(test!.headers['x-svc-event']).toBe('webhook.test');
      expect(signedWith(secret, test!)).toBe(true);
      expect(JSON.parse(test!.raw)).toMatchObject({ event: 'webhook.test' });
      const log = page.getByRole('table', { name: 'Delivery log' });
      const first = log.getByRole('row').nth(1);
      await first.filter({ hasText: 'webhook.test' }).waitFor();
      const cells = await first.getByRole('cell').allTextContents();
      // The receiver is internal (admitted by WEBHOOK_ALLOWLIST): its answer is not shown, only a dash.
      expect(cells.slice(1, 7)).toEqual(['webhook.test', '200', expect.stringMatching(/^\d+ ms$/), '1', 'Delivered', '—']);
      expect(cells[0]).toMatch(/\d{1,2}:\d{2}:\d{2}/);

      // Rotating asks first; the new secret is shown once and signs the next test, the old one no longer does.
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      const rotateDialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
      await rotateDialog.waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);
      await rotateDialog.getByRole('button', { name: 'Rotate secret' }).click();
      await rotateDialog.waitFor({ state: 'hidden' });
      const rotated = (await page.locator('.secret code').textContent())!;
      expect(rotated).toMatch(/^whsec_/);
      expect(rotated).not.toBe(secret);
      await page.getByRole('button', { name: 'Send test' }).click();
      await waitFor(() => arrivedAt(path).length === 2, 10_000, { message: 'second test delivery' });
      const second = arrivedAt(path)[1]!;
      expect(signedWith(rotated, second)).toBe(true);
      expect(signedWith(secret, second)).toBe(false);
      await log.getByRole('row').nth(2).waitFor();
      expect(await log.getByRole('row').count()).toBe(3);
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'webhooks-detail-desktop');

      // Delete asks in a modal dialog: Escape keeps the webhook, confirming deletes it.
      await page.getByRole('button', { name: 'Delete' }).click();
      const deleteDialog = page.getByRole('dialog', { name: 'Delete this webhook?' });
      await deleteDialog.waitFor();
      expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true);
      await page.keyboard.press('Escape');
      await deleteDialog.waitFor({ state: 'hidden' });
      await page.getByRole('button', { name: 'Delete' }).click();
      await deleteDialog.getByRole('button', { name: 'Delete' }).click();
      await page.waitForURL(/\/webhooks$/);
      await page.getByText('You have no webhook yet.').waitFor();
      expect(problems).toEqual([]);
      await close();
    },
  );

  it(
    'disables a webhook after five failed attempts, raises a notification with the unread badge, marks it read, and enables the webhook again',
    { timeout: 60_000 },
    async () => {
      const { owner, page, problems, close } = await signedInOwner();
      const subdomain = await claimSubdomain(platform.app, owner);
      const failing = unique('/fail/hook');
      await page.goto('/webhooks');
      await createInUi(page, `${base}${failing}`, ['link.created']);
      await page.locator('.secret code').waitFor();
      // A second receiver answers 410 Gone, which disables its webhook at once: two notifications.
      const goneUrl = `${base}${unique('/gone/hook')}`;
      const gone = await platform.app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: owner.auth,
        payload: { url: goneUrl, events: ['link.created'] },
      });
      expect(gone.statusCode).toBe(201);
      await page.goto('/notifications');
      await page.getByText('No notifications.').waitFor();
      expect(await unreadBadge(page).count()).toBe(0);

      const link = await platform.app.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: owner.auth,
        payload: { subdomain, target_url: 'https://example.com/landing' },
      });
      expect(link.statusCode).toBe(201);
      await waitFor(() => arrivedAt(failing).length === 5, 40_000, { message: 'five attempts' });
      await waitFor(
        async () => (await platform.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: owner.auth })).json().meta.unread === 2,
        10_000,
        { message: 'two notifications' },
      );

      // The shell counts again on navigation: the badge shows both.
      const nav = page.getByRole('navigation', { name: 'Main navigation' });
      await nav.getByRole('link', { name: /Webhooks/ }).click();
      await nav.getByRole('link', { name: /Notifications/ }).click();
      await page.waitForURL(/\/notifications$/);
      await unreadBadge(page).filter({ hasText: '2' }).waitFor();
      expect(await unreadBadge(page).getAttribute('aria-label')).toBe('2 unread');
      const items = page.locator('.notification');
      await items.nth(1).waitFor();
      expect(await items.count()).toBe(2);
      expect(await page.locator('.notification-unread').count()).toBe(2);
      const failed = items.filter({ hasText: `${base}${failing}` });
      expect(await failed.textContent()).toContain('A webhook was disabled');
      expect(await failed.textContent()).toMatch(/5 attempts/);
      await page.getByText('2 unread').first().waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'notifications-unread-desktop');

      // One marked read: its mark goes, the other stays unread (also under the unread filter).
      await items.filter({ hasText: goneUrl }).getByRole('button', { name: 'Mark read' }).click();
      await page.locator('.notification-unread').nth(1).waitFor({ state: 'detached' });
      expect(await page.locator('.notification-unread').count()).toBe(1);
      await page.getByRole('button', { name: 'Unread only' }).click();
      await page.locator('.notification').nth(1).waitFor({ state: 'detached' });
      expect(await page.locator('.notification').textContent()).toContain(failing);
      await page.getByRole('button', { name: 'Mark all read' }).click();
      await page.getByText('1 marked read.').waitFor();
      await page.getByText('Nothing unread.').waitFor();
      expect(await page.getByRole('button', { name: 'Mark all read' }).isDisabled()).toBe(true);
      await page.getByRole('button', { name: 'All', exact: true }).click();
      await page.locator('.notification').nth(1).waitFor();
      expect(await page.locator('.notification-unread').count()).toBe(0);

      // From the notification to the webhook: why it was disabled, the five attempts, then enabled again.
      await page.locator('.notification').filter({ hasText: failing }).getByRole('link', { name: 'Open the webhook' }).click();
      await page.waitForURL(/\/webhooks\/[0-9a-f-]{36}$/);
      // The navigation counted again: nothing unread, no badge.
      await page.getByText(/^Disabled since /).waitFor();
      await unreadBadge(page).waitFor({ state: 'detached' });
      expect(await page.getByText(/^Why: .*5 attempts/).count()).toBe(1);
      const log = page.getByRole('table', { name: 'Delivery log' });
      await log.getByRole('row').nth(5).waitFor();
      const attempts = await log
        .locator('tbody tr')
        .evaluateAll((rows) => rows.map((row) => [row.children[2]!.textContent, row.children[4]!.textContent, row.children[5]!.textContent]));
      expect(attempts).toEqual([5, 4, 3, 2, 1].map((attempt) => ['500', String(attempt), 'FailedHTTP 500']));
      // This receiver is internal (admitted by WEBHOOK_ALLOWLIST): the log keeps none of its answers.
      expect(await log.locator('tbody .excerpt').count()).toBe(0);
      // A public receiver's excerpt (stored here: no public receiver is reachable from a test) is text,
      // cut short in the cell, whole in its disclosure.
      const webhookId = new URL(page.url()).pathname.split('/').pop()!;
      await platform.context.db.db.updateTable('webhook_deliveries').set({ response_excerpt: FAILURE_BODY }).where('webhook_id', '=', webhookId).execute();
      await page.reload();
      await log.getByRole('row').nth(5).waitFor();
      const excerpt = log.locator('tbody tr').first().locator('details');
      expect(await excerpt.locator('pre').isVisible()).toBe(false);
      await excerpt.locator('summary').click();
      expect(await excerpt.locator('pre').textContent()).toBe(FAILURE_BODY);
      expect(await seriousA11yViolations(page)).toEqual([]);
      await screenshot(page, 'webhooks-disabled-desktop');

      await page.getByRole('button', { name: 'Enable again' }).click();
      await page.getByText('Pause deliveries').waitFor();
      expect(await page.locator('.webhook-facts').textContent()).toContain('Enabled');
      const stored = (await platform.app.inject({ method: 'GET', url: '/api/v1/webhooks', headers: owner.auth })).json().data.webhooks;
      expect(stored.find((entry: { url: string }) => entry.url.endsWith(failing))).toMatchObject({ enabled: true, disabled_reason: null });
      expect(problems).toEqual([]);
      await close();
    },
  );

  it("lets a team admin create a webhook on the team's subdomain from the page, and offers it to no viewer", { timeout: 60_000 }, async () => {
    const origin = new URL(platform.origin).origin;
    const subdomainOwner = await createOwner(platform.context, platform.app);
    const admin = await createOwner(platform.context, platform.app);
    const viewer = await createOwner(platform.context, platform.app);
    const teamId = await createTeam(platform.app, origin, subdomainOwner, 'Hooks team');
    await joinTeam(platform.app, origin, teamId, subdomainOwner, admin, 'admin');
    await joinTeam(platform.app, origin, teamId, subdomainOwner, viewer, 'viewer');
    const shared = await claimSubdomain(platform.app, subdomainOwner);
    const assigned = await platform.app.inject({
      method: 'PUT',
      url: `/api/v1/subdomains/${shared}/team`,
      headers: subdomainOwner.auth,
      payload: { team_id: teamId },
    });
    expect(assigned.statusCode, assigned.body).toBe(200);

    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, admin.email);
    await page.goto('/webhooks');
    await page.getByText('You have no webhook yet.').waitFor();
    await page.getByLabel('Subdomain', { exact: true }).selectOption(shared);
    const path = unique('/ok/team');
    await createInUi(page, `${base}${path}`, ['link.created']);
    await page.locator('.secret code').waitFor();
    const row = page.getByRole('row').filter({ hasText: `${base}${path}` });
    await row.waitFor();
    expect(await row.textContent()).toContain(shared);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'webhooks-team-admin-desktop');
    // The webhook is the subdomain owner's (it outlives the admin's membership), and the owner sees it too.
    const owned = await platform.app.inject({ method: 'GET', url: '/api/v1/webhooks', headers: subdomainOwner.auth });
    expect(owned.json().data.webhooks.find((hook: { url: string }) => hook.url === `${base}${path}`)).toMatchObject({ subdomain: shared });
    expect(problems).toEqual([]);
    await browserContext.close();

    const other = await openPage(platform);
    await signIn(other.page, viewer.email);
    await other.page.goto('/webhooks');
    await other.page.getByText('You have no webhook yet.').waitFor();
    const options = await other.page.getByLabel('Subdomain', { exact: true }).locator('option').allTextContents();
    expect(options).not.toContain(shared);
    expect(other.problems).toEqual([]);
    await other.browserContext.close();
  });

  it("shows the forbidden state for someone else's webhook, an error for an unknown one, and fits a phone", async () => {
    const stranger = await createOwner(platform.context, platform.app);
    const theirs = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: stranger.auth,
      payload: { url: `${base}/ok/theirs`, events: ['visit.new'] },
    });
    const { owner, page, problems, close } = await signedInOwner('phone');
    await page.goto(`/webhooks/${theirs.json().data.id}`);
    await page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    await page.goto('/webhooks/0191e7a4-0000-7000-8000-000000000000');
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    await page.getByText('Nothing was found here.').waitFor();

    const path = unique('/ok/phone');
    const mine = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: `${base}${path}`, events: ['visit.new', 'link.created'], description: 'CRM <b>import</b>' },
    });
    await platform.app.inject({ method: 'POST', url: `/api/v1/webhooks/${mine.json().data.id}/test`, headers: owner.auth });
    await page.goto('/webhooks');
    // What the owner typed is text, never markup.
    await page.getByText('CRM <b>import</b>').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'webhooks-list-phone');
    await page.goto(`/webhooks/${mine.json().data.id}`);
    await page.getByRole('table', { name: 'Delivery log' }).getByRole('row').nth(1).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'webhooks-detail-phone');
    await page.goto('/notifications');
    await page.getByText('No notifications.').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'notifications-empty-phone');
    expect(problems).toEqual([]);
    await close();
  });

  it('edits the settings (refusing an internal URL on its field), pauses and resumes, and pages the delivery log', { timeout: 60_000 }, async () => {
    const { owner, page, problems, close } = await signedInOwner();
    const subdomain = await claimSubdomain(platform.app, owner);
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: `${base}${unique('/ok/paged')}`, events: ['visit.new'] },
    });
    const id = created.json().data.id;
    for (let i = 0; i < 21; i++) await platform.app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, headers: owner.auth });
    await page.goto(`/webhooks/${id}`);
    const settings = page.getByRole('region', { name: 'Settings' });
    await settings.getByLabel('Receiver URL').fill('http://169.254.169.254/latest/meta-data/');
    await settings.getByRole('button', { name: 'Save' }).click();
    await page.locator('#webhook-url-error').waitFor();
    await settings.getByLabel('Receiver URL').fill(`${base}/ok/edited`);
    await settings.getByRole('checkbox', { name: /^security\.suspicious / }).check();
    await settings.getByLabel('Subdomain').selectOption(subdomain);
    await settings.getByLabel(/^Description/).fill('Alerts');
    await settings.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: `${base}/ok/edited`, level: 2 }).waitFor();
    await page.getByText('Saved', { exact: true }).waitFor();
    expect((await platform.app.inject({ method: 'GET', url: `/api/v1/webhooks/${id}`, headers: owner.auth })).json().data).toMatchObject({
      url: `${base}/ok/edited`,
      events: ['visit.new', 'security.suspicious'],
      subdomain,
      description: 'Alerts',
    });

    await page.getByRole('button', { name: 'Pause deliveries' }).click();
    await page.getByText('Why: disabled by its owner').waitFor();
    await page.getByRole('button', { name: 'Enable again' }).click();
    await page.getByRole('button', { name: 'Pause deliveries' }).waitFor();

    // 21 attempts: 20 on the first page of the log, the oldest on the next.
    const rows = page.getByRole('table', { name: 'Delivery log' }).locator('tbody tr');
    await rows.nth(19).waitFor();
    expect(await rows.count()).toBe(20);
    await page.getByText('21 in all').waitFor();
    await page.getByRole('button', { name: 'Next page' }).click();
    await rows.nth(1).waitFor({ state: 'detached' });
    expect(await rows.count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await rows.nth(19).waitFor();
    expect(problems).toEqual([]);
    await close();
  });

  it('lists notifications on a phone, and says when the API fails', async () => {
    const account = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone' });
    await signIn(page, account.email);
    // The API answers 503 for this page's list: the error state with a retry that works.
    let failNext = true;
    await page.route(
      (url) => url.pathname === '/api/v1/notifications' && url.searchParams.get('limit') === '20',
      async (route) => {
        if (!failNext) return route.continue();
        failNext = false;
        await route.fulfill({
          status: 503,
          contentType: 'application/json',
          body: JSON.stringify({ ok: false, error: { code: 'unavailable', message: 'The service is busy, try again.', request_id: 'req-1' } }),
        });
      },
    );
    await page.goto('/notifications');
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    await page.getByText('The service is busy, try again.').waitFor();
    await page.getByText('Request id: req-1').waitFor();
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByText('No notifications.').waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
