import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext } from '#tests/support/context.js';
import { claimSubdomain, type TestOwner } from '#tests/support/owners.js';
import { waitFor } from '#tests/support/wait.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { startVisitConsumer } from '../enricher/visit-consumer.js';
import type { listenerClient } from '#tests/support/listener.js';
import { startTestPlatform } from '#tests/support/platform.js';

// The tracker script in a real browser: Debian's headless Chromium driven by playwright-core, a
// target page served from another origin (CORS for real), the platform listening on loopback,
// rows read back from ClickHouse. `.ci/run` and `make test` install Chromium (scripts/ensure-chromium.sh).
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DEADLINE_MS = 60_000;

let context: Context;
let app: FastifyInstance;
/** The server's listener, as a socket reaches it. */
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let subdomain: string;
let enricher: Consumer;
let browser: Browser;
let site: Server;
let platformOrigin: string;
let siteOrigin: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run scripts/ensure-chromium.sh (or set CHROMIUM_PATH)`);
  ({ context, app, ingest, owner, subdomain } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '100000:60', RATE_LIMIT_TRACK: '1000:60' }));
  enricher = await startVisitConsumer(context);
  await app.listen({ port: 0, host: '127.0.0.1' });
  platformOrigin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  // The owner's site: another origin, which includes the script as a target page would.
  site = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://site');
    const own = url.searchParams.get('own');
    const attributes = own ? ` data-subdomain="${own === '1' ? subdomain : own}"` : '';
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(
      `<!doctype html><html><head><title>Landing</title></head><body><h1>Landing</h1><script src="${platformOrigin}/tracker.js"${attributes}></script></body></html>`,
    );
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
  await enricher?.stop();
  await app?.close();
  await closeContext(context);
});

type Json = Record<string, any>;

/** A redirect through a link with append_visit_id; the visit id the target page receives. */
async function redirectedVisitId(): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://shop.example/landing', append_visit_id: true },
  });
  const answer = await ingest.inject({
    method: 'GET',
    url: `/${created.json().data.slug}`,
    remoteAddress: '203.0.113.60',
    headers: { host: `${subdomain}.localhost:8080`, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0 Safari/537.36' },
  });
  return new URL(String(answer.headers.location)).searchParams.get('lt_visit')!;
}

async function visitRow(visitId: string): Promise<Json | undefined> {
  const result = await context.analytics.client.query({
    query: 'SELECT * FROM visits FINAL WHERE visit_id = {id:UUID}',
    query_params: { id: visitId },
    format: 'JSONEachRow',
  });
  return (await result.json<Json>())[0];
}

/** Opens the landing page in a fresh browser context, recording every request it sends to the tracker. */
async function openLanding(query: string): Promise<{ page: Page; trackerRequests: Request[] }> {
  const page = await (await browser.newContext()).newPage();
  const trackerRequests: Request[] = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname.startsWith('/tracker/')) trackerRequests.push(request);
  });
  await page.goto(`${siteOrigin}/landing?${query}`);
  await page.waitForFunction(() => (globalThis as any).LinkTracker?.version === 1);
  return { page, trackerRequests };
}

describe('tracker.js in headless Chromium', () => {
  it('sends nothing by itself', async () => {
    const { page, trackerRequests } = await openLanding(`lt_visit=${await redirectedVisitId()}`);
    await page.waitForTimeout(500);
    expect(trackerRequests).toEqual([]);
    await page.context().close();
  });

  it("with analytics and LAN consent: attaches time zone, screen, capabilities and the WebRTC LAN address to the redirect's visit", async () => {
    const visitId = await redirectedVisitId();
    const { page, trackerRequests } = await openLanding(`lt_visit=${visitId}`);
    const recorded = await page.evaluate(() => (globalThis as any).LinkTracker.consent({ analytics: true, lan_ip: true }));
    expect(recorded).toMatchObject({ visit_id: visitId, analytics: true, lan_ip: true });
    const collect = trackerRequests.find((request) => request.url().endsWith('/tracker/collect'))!;
    expect(collect).toBeDefined();
    const sent = JSON.parse(collect.postData()!);
    expect(sent.lan_ip).toMatch(/\.local$|^(10|192\.168|172\.(1[6-9]|2\d|3[01]))\.|^f[cd]/);
    expect((await collect.response())!.status()).toBe(202);
    const row = await waitFor(
      async () => {
        const found = await visitRow(visitId);
        return found?.consent_analytics === 1 && found.timezone !== '' && found;
      },
      DEADLINE_MS,
      { message: 'visit row with the beacon signals' },
    );
    expect(row.ip_lan).toBe(sent.lan_ip);
    expect(row.consent_lan_ip).toBe(1);
    expect(row.screen).toMatch(/^\d+x\d+$/);
    expect(JSON.parse(row.capabilities)).toMatchObject({ cookies: true, webrtc: true });
    expect(row.ip_public).toBe('203.0.113.60'); // the redirect's address, not the tracker's (127.0.0.1)
    await page.context().close();
  });

  it('with analytics but no LAN consent: collects, without a LAN address and without opening WebRTC', async () => {
    const visitId = await redirectedVisitId();
    const { page, trackerRequests } = await openLanding(`lt_visit=${visitId}`);
    await page.evaluate(() => {
      (globalThis as any).peerConnections = 0;
      const Original = (globalThis as any).RTCPeerConnection;
      (globalThis as any).RTCPeerConnection = function (...args: unknown[]) {
        (globalThis as any).peerConnections += 1;
        return new Original(...args);
      };
    });
    await page.evaluate(() => (globalThis as any).LinkTracker.consent({ analytics: true, lan_ip: false }));
    const collect = trackerRequests.find((request) => request.url().endsWith('/tracker/collect'))!;
    expect(JSON.parse(collect.postData()!).lan_ip).toBeUndefined();
    expect(await page.evaluate(() => (globalThis as any).peerConnections)).toBe(0);
    const row = await waitFor(async () => {
      const found = await visitRow(visitId);
      return found?.timezone !== '' && found?.consent_analytics === 1 && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({ ip_lan: '', consent_lan_ip: 0 });
    await page.context().close();
  });

  it('with consent refused: records the refusal and never collects', async () => {
    const visitId = await redirectedVisitId();
    const { page, trackerRequests } = await openLanding(`lt_visit=${visitId}`);
    const recorded = await page.evaluate(() => (globalThis as any).LinkTracker.consent({ analytics: false, lan_ip: true }));
    expect(recorded).toMatchObject({ analytics: false, lan_ip: false, token: null });
    const refusedCollect = await page.evaluate(() =>
      (globalThis as any).LinkTracker.collect().then(
        () => 'sent',
        (error: Error) => error.message,
      ),
    );
    expect(refusedCollect).toBe('no consent recorded');
    await page.waitForTimeout(300);
    expect(trackerRequests.map((request) => new URL(request.url()).pathname)).toEqual(['/tracker/consent']);
    const row = await waitFor(() => visitRow(visitId), DEADLINE_MS);
    expect(row).toMatchObject({ consent_analytics: 0, timezone: '', screen: '', ip_lan: '' });
    await page.context().close();
  });

  // Guards issue 34: a refusal started a visit that kept the visitor's address and user agent.
  it('on a page with data-subdomain: a refusal stores nothing, and a later consent starts the visit', async () => {
    const { page } = await openLanding('own=1&utm_source=refusal-test');
    const refused = await page.evaluate(() => (globalThis as any).LinkTracker.consent({ analytics: false, lan_ip: false }));
    expect(refused).toMatchObject({ visit_id: null, analytics: false, token: null });
    expect(await page.evaluate(() => (globalThis as any).LinkTracker.visitId())).toBeNull();
    const given = await page.evaluate(() => (globalThis as any).LinkTracker.consent({ analytics: true, lan_ip: false }));
    expect(given.visit_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    const row = await waitFor(async () => {
      const found = await visitRow(given.visit_id);
      return found?.timezone !== '' && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({ kind: 'beacon', utm_source: 'refusal-test', consent_analytics: 1 });
    const stored = await context.analytics.client.query({
      query: "SELECT uniqExact(visit_id) AS n FROM visits WHERE subdomain = {subdomain:String} AND utm_source = 'refusal-test'",
      query_params: { subdomain },
      format: 'JSONEachRow',
    });
    expect((await stored.json<{ n: string | number }>()).map((found) => Number(found.n))).toEqual([1]);
    await page.context().close();
  });

  it('starts a visit of its own on a page with data-subdomain and no lt_visit', async () => {
    const { page } = await openLanding('own=1&utm_source=browser-test');
    const recorded = await page.evaluate(() => (globalThis as any).LinkTracker.consent({ analytics: true, lan_ip: false }));
    const row = await waitFor(async () => {
      const found = await visitRow(recorded.visit_id);
      return found?.timezone !== '' && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({ kind: 'beacon', subdomain, ip_public: '127.0.0.1', utm_source: 'browser-test', consent_analytics: 1 });
    expect(row.browser).toMatch(/^Chrome/);
    await page.context().close();
  });
  // Guards issue 34: any site could start visits for any subdomain.
  it('with tracker_origins: runs on a listed site (CORS names it); on another site the browser gets no answer and nothing is stored', async () => {
    const listed = await claimSubdomain(app, owner);
    const setOrigins = async (origins: string[]) => {
      const response = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${listed}`, headers: owner.auth, payload: { tracker_origins: origins } });
      expect(response.statusCode).toBe(200);
    };
    await setOrigins([siteOrigin]);
    const first = await openLanding(`own=${listed}&utm_source=listed-site`);
    const given = await first.page.evaluate(() => (globalThis as any).LinkTracker.consent({ analytics: true, lan_ip: false }));
    const row = await waitFor(async () => {
      const found = await visitRow(given.visit_id);
      return found?.timezone !== '' && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({ kind: 'beacon', subdomain: listed, utm_source: 'listed-site' });
    await first.page.context().close();

    await setOrigins(['https://elsewhere.example']);
    const second = await openLanding(`own=${listed}&utm_source=unlisted-site`);
    const refused = await second.page.evaluate(() =>
      (globalThis as any).LinkTracker.consent({ analytics: true, lan_ip: false }).then(
        () => 'answered',
        (error: Error) => error.name,
      ),
    );
    expect(refused).toBe('TypeError');
    const consentRequest = second.trackerRequests.find((request) => request.url().endsWith('/tracker/consent'))!;
    expect(await consentRequest.response()).toBeNull();
    await second.page.context().close();
    const stored = await context.analytics.client.query({
      query: "SELECT count() AS n FROM visits WHERE subdomain = {listed:String} AND utm_source = 'unlisted-site'",
      query_params: { listed },
      format: 'JSONEachRow',
    });
    expect((await stored.json<{ n: string | number }>()).map((found) => Number(found.n))).toEqual([0]);
  });
});
