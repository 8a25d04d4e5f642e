// What the browser tests of the dashboard and the public pages stand on: the whole platform in
// this process on the embedded stores (API, edge, enricher, webhook worker) listening on a real
// loopback port, the built dashboard (dist/web, from `make build`), Debian's headless Chromium
// driven by playwright-core, axe-core run inside each page, and screenshots of every page at a
// desktop and a phone width written to `screenshots/` (ignored by git) for people to look at.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { freePort } from '../support/platform-process.js';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { buildApp } from '#services/app.js';
import { DASHBOARD_DIR } from '#services/api/dashboard/dashboard.js';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import { startWorker } from '#services/worker/worker.js';
import { importRunner } from '#services/api/imports/imports.service.js';
import { withRepositories } from '../support/repositories.js';
import type { Context } from '#shared/context.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import { createAccount, TEST_PASSWORD } from '../support/accounts.js';
import { closeContext, createTestContext } from '../support/context.js';
import type { Consumer } from '#shared/message-log/message-log.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS_DIR = join(PROJECT_ROOT, 'screenshots');
export { TEST_PASSWORD };

export interface UiPlatform {
  context: Context;
  app: FastifyInstance;
  /** `http://localhost:{port}` (or the host asked for): the dashboard's origin (PUBLIC_URL). */
  origin: string;
  port: number;
  /** `http://{name}.localhost:{port}`: a subdomain's short host (Chromium resolves *.localhost to loopback). */
  shortOrigin(subdomain: string): string;
  browser: Browser;
  stop(): Promise<void>;
}

/**
 * Starts the platform as `make run` does (every role in this process), listening on loopback, and
 * a headless Chromium. `overrides` are configuration variables (rate limits, CAPTCHA, …). `host`
 * names the dashboard's host instead of localhost: Chromium treats `http://localhost` and
 * `http://127.0.0.1` as secure contexts, so a LAN-like name (`links.lan`, mapped to loopback by the
 * browser's resolver) is how a test sees the plain-HTTP origin a LAN install has.
 */
export async function startUiPlatform(overrides: Record<string, string> = {}, options: { host?: string } = {}): Promise<UiPlatform> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run scripts/ensure-chromium.sh (or set CHROMIUM_PATH)`);
  if (!existsSync(join(DASHBOARD_DIR, 'index.html'))) throw new Error(`the dashboard is not built in ${DASHBOARD_DIR}: run make build`);
  const port = await freePort();
  const host = options.host ?? 'localhost';
  const origin = `http://${host}:${port}`;
  const context = await createTestContext({
    PUBLIC_URL: origin,
    BASE_DOMAIN: 'localhost',
    RATE_LIMIT_REDIRECT: '100000:60',
    RATE_LIMIT_API: '100000:60',
    RATE_LIMIT_DEFAULT: '100000:60',
    RATE_LIMIT_TRACK: '100000:60',
    ...overrides,
  });
  const consumers: Consumer[] = [await startVisitConsumer(context), await startWorker(context, undefined, undefined, importRunner(withRepositories(context)))];
  const { app } = await buildApp(context);
  await app.listen({ port, host: '127.0.0.1' });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // Short hosts are `{name}.localhost`: loopback, whatever the system's resolver says of them.
      `--host-resolver-rules=MAP *.localhost 127.0.0.1${host === 'localhost' ? '' : `,MAP ${host} 127.0.0.1`}`,
    ],
  });
  return {
    context,
    app,
    origin,
    port,
    shortOrigin: (subdomain) => `http://${subdomain}.localhost:${port}`,
    browser,
    async stop() {
      await browser.close().catch(() => undefined);
      await app.close();
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      await closeContext(context);
    },
  };
}

/** User agents of visitors' browsers, as the statistics tests send them. */
export const BROWSER_AGENTS = {
  chrome: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  firefox: 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
} as const;

/**
 * A request to a subdomain's short host as a visitor's browser sends it (Node's resolver does not
 * know `*.localhost`: the Host header names it); resolves with the status once the answer ended.
 */
export function shortHostVisit(platform: UiPlatform, subdomain: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = request(
      {
        host: '127.0.0.1',
        port: platform.port,
        path,
        method: 'GET',
        headers: { host: `${subdomain}.localhost:${platform.port}`, accept: 'text/html', ...headers },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    sent.on('error', reject);
    sent.end();
  });
}

/** A new account in the store (no HTTP), to sign in with through the dashboard. */
export async function newAccount(platform: UiPlatform, role: 'staff' | 'user' = 'user') {
  return createAccount(platform.context, role);
}

export const VIEWPORTS = {
  desktop: { width: 1280, height: 860 },
  phone: { width: 375, height: 740 },
} as const;

export interface OpenedPage {
  browserContext: BrowserContext;
  page: Page;
  /** Content-Security-Policy refusals and uncaught page errors seen so far: a page must cause none. */
  problems: string[];
}

/** A fresh browser profile and page (English, UTC unless told), recording CSP refusals and page errors. */
export async function openPage(
  platform: UiPlatform,
  options: { viewport?: keyof typeof VIEWPORTS; locale?: string; timezoneId?: string; javaScriptEnabled?: boolean; userAgent?: string } = {},
): Promise<OpenedPage> {
  const browserContext = await platform.browser.newContext({
    baseURL: platform.origin,
    viewport: VIEWPORTS[options.viewport ?? 'desktop'],
    locale: options.locale ?? 'en-US',
    timezoneId: options.timezoneId ?? 'UTC',
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    acceptDownloads: true,
    // Headless Chromium says so in its user agent, and the platform rightly counts it as a bot.
    ...(options.userAgent ? { userAgent: options.userAgent } : {}),
  });
  // The Clipboard API exists only in secure contexts: a LAN-like origin has none to grant.
  if (new URL(platform.origin).hostname === 'localhost')
    await browserContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: platform.origin });
  const page = await browserContext.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    const text = message.text();
    if (/Content Security Policy|Refused to/i.test(text)) problems.push(`csp: ${text}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return { browserContext, page, problems };
}

/**
 * A page signed in as `owner` (its session cookie set on the dashboard's origin, no login form), with
 * a default timeout of 8 s: a step that cannot happen fails in seconds and names itself.
 */
export async function openSignedIn(platform: UiPlatform, owner: { cookie: string }, options: Parameters<typeof openPage>[1] = {}): Promise<OpenedPage> {
  const opened = await openPage(platform, options);
  const [name, value] = owner.cookie.split('=') as [string, string];
  await opened.browserContext.addCookies([{ name, value, url: platform.origin, httpOnly: true, sameSite: 'Lax' }]);
  opened.page.setDefaultTimeout(8_000);
  return opened;
}

/** Signs in through the dashboard's form and waits for the overview. */
export async function signIn(page: Page, email: string, password = TEST_PASSWORD): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#main-nav').waitFor({ state: 'attached' });
}

const axeSource = readFileSync(join(PROJECT_ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Runs axe-core inside the page (evaluated through the DevTools protocol, so the page's CSP, which
 * forbids inline scripts, stays on) and returns the serious and critical violations.
 */
export async function seriousA11yViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run(
            context: Document,
            options: unknown,
          ): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }>;
        };
      }
    ).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      nodes: violation.nodes.map((node) => JSON.stringify(node.target)),
    }));
  });
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

/** Writes a full-page screenshot to screenshots/{name}.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS_DIR, { recursive: true });
  const path = join(SCREENSHOTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
