import ExcelJS from 'exceljs';
import type { FastifyInstance } from 'fastify';
import { PDFParse } from 'pdf-parse';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, selectRows, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { withRepositories } from '#tests/support/repositories.js';
import { buildApp } from '#services/app.js';
import { waitFor } from '#tests/support/wait.js';
import { pruneRawVisits, retentionJob, startRetention } from './retention.js';

// Retention of raw visits per subdomain (issue 38): visits spread over 400 days, a retention of 90.
// The job deletes the raw rows older than 90 days (and their beacon states); the rollups, filled when
// each visit was inserted, keep counting them, so every report over the whole period is unchanged.
type Json = Record<string, any>;

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** `days` before the start of this hour: where retention cuts. */
const cutAt = (days: number) => Math.floor(Date.now() / HOUR_MS) * HOUR_MS - days * DAY_MS;
const now = Date.now();
/** One visit a day for 400 days, an hour before each day's mark; every third from Germany, every fifth a bot. */
const DAYS = 400;

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;
let sub: string;
let other: string;
let link: Json;

const visitRow = (subdomain: string, age: number, i: number) => ({
  visit_id: v7({ msecs: now - age }),
  ts: toClickHouseTime(now - age),
  kind: i % 5 === 0 ? 'bot' : 'visit',
  owner_id: alice.id,
  subdomain,
  link_id: link.id,
  slug: link.slug,
  ip_public: `203.0.113.${i % 200}`,
  country: i % 3 === 0 ? 'DE' : 'FR',
  user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0',
  browser: 'Firefox',
  referrer: 'https://news.example/item',
  is_bot: i % 5 === 0 ? 1 : 0,
  visitor_hash: `visitor-${i % 37}`,
  version: 0,
});

const get = async (owner: TestOwner | undefined, url: string) => {
  const response = await app.inject({ method: 'GET', url, headers: owner?.auth ?? {} });
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  return response;
};
const range = `since=${encodeURIComponent(new Date(now - (DAYS + 2) * DAY_MS).toISOString())}&until=${encodeURIComponent(new Date(now + DAY_MS).toISOString())}`;
/** Every report over the whole period: owner's subdomain (by day and by hour of the time series), the link's, and the public one. */
const reports = async () => ({
  subdomain: (await get(alice, `/api/v1/stats/subdomain/${sub}?${range}&granularity=day`)).json().data,
  link: (await get(alice, `/api/v1/stats/link/${link.id}?${range}&granularity=day`)).json().data,
  public: (await get(undefined, `/api/v1/stats?subdomain=${sub}&${range}&granularity=day`)).json().data,
});
const rawCount = async (subdomain: string, olderThanDays = 0) => {
  const [row] = await selectRows<{ n: number }>(
    context.analytics.client,
    'SELECT count() AS n FROM visits WHERE subdomain = {s:String} AND ts < fromUnixTimestamp64Milli({before:Int64})',
    { s: subdomain, before: now - olderThanDays * DAY_MS + 1 },
  );
  return Number(row!.n);
};

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  sub = await claimSubdomain(app, alice, { stats_public: true, stats_show_visits_list: true, stats_publish_delay_sec: 0 });
  other = await claimSubdomain(app, alice);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: alice.auth,
    payload: { subdomain: sub, slug: 'old', target_url: 'https://example.com/' },
  });
  link = created.json().data;
  const ages = Array.from({ length: DAYS }, (_, i) => i * DAY_MS + 3_600_000);
  await context.analytics.client.insert({
    table: 'visits',
    values: [...ages.map((age, i) => visitRow(sub, age, i)), ...ages.map((age, i) => visitRow(other, age, i))],
    format: 'JSONEachRow',
    clickhouse_settings: deduplicatedBy(`retention-${sub}`),
  });
});

afterAll(async () => {
  await app?.close();
  if (context) await closeContext(context);
});

describe('visits_retention_days', () => {
  it('is null on a new subdomain (kept as long as the operator allows: forever without VISITS_RETENTION_DAYS_MAX), and set by PATCH', async () => {
    const settings = (await get(alice, `/api/v1/subdomains/${other}/settings`)).json().data;
    expect(settings).toMatchObject({ visits_retention_days: null, raw_visits_since: null });
  });

  it('refuses 0, fractions, strings and more than the operator maximum with 422 validation_error; someone else’s subdomain is 403', async () => {
    for (const value of [0, 1.5, '30', 36_501]) {
      const response = await app.inject({
        method: 'PATCH',
        url: `/api/v1/subdomains/${other}`,
        headers: alice.auth,
        payload: { visits_retention_days: value },
      });
      expect(response.statusCode, String(value)).toBe(422);
      expect(response.json().error.code).toBe('validation_error');
    }
    const capped = await buildApp({ ...context, config: { ...context.config, retention: { ...context.config.retention, visitsMaxDays: 60 } } });
    try {
      const over = await capped.app.inject({
        method: 'PATCH',
        url: `/api/v1/subdomains/${other}`,
        headers: alice.auth,
        payload: { visits_retention_days: 61 },
      });
      expect(over.statusCode).toBe(422);
      expect(over.json().error.details).toHaveProperty('visits_retention_days');
      // Every refusal names this server's maximum (60), not the schema's bound (36 500).
      for (const value of [61, 0, 1.5]) {
        const refused = await capped.app.inject({
          method: 'PATCH',
          url: `/api/v1/subdomains/${other}`,
          headers: alice.auth,
          payload: { visits_retention_days: value },
        });
        expect(refused.statusCode, String(value)).toBe(422);
        expect(refused.json().error.details.visits_retention_days, String(value)).toContain('from 1 to 60 ');
      }
      // Without its own, the operator's maximum applies: the settings say from when raw visits exist.
      const settings = (await capped.app.inject({ url: `/api/v1/subdomains/${other}/settings`, headers: alice.auth })).json().data;
      expect(settings.visits_retention_days).toBeNull();
      expect(Date.parse(settings.raw_visits_since)).toBe(cutAt(60));
    } finally {
      await capped.app.close();
    }
    const theirs = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${other}`, headers: bob.auth, payload: { visits_retention_days: 5 } });
    expect(theirs.statusCode).toBe(403);
    expect(theirs.json().error.code).toBe('not_owner');
  });

  it('400 days of visits, retention 90: the job deletes the raw visits older than 90 days; every report over the whole period is unchanged; the list and exports say from when raw visits exist', async () => {
    const before = await reports();
    expect(before.subdomain.totals.visits + before.subdomain.totals.bots).toBeGreaterThan(0);
    expect(await rawCount(sub)).toBe(DAYS);

    const patched = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${sub}`, headers: alice.auth, payload: { visits_retention_days: 90 } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data.visits_retention_days).toBe(90);

    const deleted = await pruneRawVisits(withRepositories(context));
    expect(deleted).toBeGreaterThanOrEqual(DAYS - 90);
    expect(await rawCount(sub, 90)).toBe(0);
    expect(await rawCount(sub)).toBe(90);
    // Another subdomain of the same owner, without a retention, keeps all of its own.
    expect(await rawCount(other)).toBe(DAYS);

    // A link's visits by rule and by variant come from its raw visits (as the visit list): retention shortens them,
    // while every rollup-backed figure stays as it was.
    const after = await reports();
    const { routes: routesBefore, ...linkBefore } = before.link;
    const { routes: routesAfter, ...linkAfter } = after.link;
    expect({ ...after, link: linkAfter }).toEqual({ ...before, link: linkBefore });
    const routed = (routes: { rules: { visits: number }[] }) => routes.rules.reduce((sum, item) => sum + item.visits, 0);
    expect(routed(routesAfter)).toBeLessThan(routed(routesBefore));

    // The visit list says from when raw visits exist, for the subdomain and over all the owner's subdomains.
    const listed = (await get(alice, `/api/v1/visits?subdomain=${sub}&limit=100`)).json();
    expect(listed.meta.total).toBe(90);
    const since = Date.parse(listed.meta.raw_visits_since);
    expect(since).toBe(cutAt(90));
    expect(listed.data.visits.every((visit: Json) => Date.parse(visit.ts) >= since)).toBe(true);
    const all = (await get(alice, `/api/v1/visits?limit=1`)).json();
    expect(Math.abs(Date.parse(all.meta.raw_visits_since) - since)).toBeLessThan(60_000);
    const publicList = (await get(undefined, `/api/v1/visits?subdomain=${sub}&limit=1`)).json();
    expect(Math.abs(Date.parse(publicList.meta.raw_visits_since) - since)).toBeLessThan(60_000);
    const otherList = (await get(alice, `/api/v1/visits?subdomain=${other}&limit=1`)).json();
    expect(otherList.meta.raw_visits_since).toBeNull();

    // Exports: a header in every format, the JSON export's meta too, and only the rows kept.
    const json = await get(alice, `/api/v1/export?format=json&subdomain=${sub}`);
    expect(Math.abs(Date.parse(String(json.headers['x-raw-visits-since'])) - since)).toBeLessThan(60_000);
    const exported = json.json();
    expect(exported.meta.count).toBe(90);
    expect(exported.meta.raw_visits_since).toBe(json.headers['x-raw-visits-since']);
    const csv = await get(alice, `/api/v1/export?format=csv&subdomain=${sub}`);
    expect(csv.headers['x-raw-visits-since']).toBe(json.headers['x-raw-visits-since']);
    expect(csv.body.trim().split('\n')).toHaveLength(91);
    const otherCsv = await get(alice, `/api/v1/export?format=csv&subdomain=${other}`);
    expect(otherCsv.headers['x-raw-visits-since']).toBeUndefined();
    // A saved file keeps no header: the XLSX (a last sheet) and the PDF (under the period) say it in their bytes.
    const rawSince = String(json.headers['x-raw-visits-since']);
    const xlsx = await get(alice, `/api/v1/export?format=xlsx&subdomain=${sub}`);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(xlsx.rawPayload as unknown as ExcelJS.Buffer);
    expect(workbook.worksheets.map((sheet) => sheet.name)).toEqual(['Visits 1', 'About']);
    expect((workbook.getWorksheet('About')!.getRow(1).values as unknown[]).slice(1)).toEqual(['raw_visits_since', rawSince]);
    expect(workbook.getWorksheet('Visits 1')!.rowCount).toBe(91);
    const pdf = await get(alice, `/api/v1/export?format=pdf&subdomain=${sub}&${range}`);
    const parser = new PDFParse({ data: new Uint8Array(pdf.rawPayload) });
    const { text } = await parser.getText();
    await parser.destroy();
    expect(text).toContain(`Raw visits kept since ${rawSince}`);
    // Without a cutoff neither says anything.
    const otherXlsx = await get(alice, `/api/v1/export?format=xlsx&subdomain=${other}`);
    const otherBook = new ExcelJS.Workbook();
    await otherBook.xlsx.load(otherXlsx.rawPayload as unknown as ExcelJS.Buffer);
    expect(otherBook.getWorksheet('About')).toBeUndefined();

    // A second run finds nothing more to delete.
    expect(await pruneRawVisits(withRepositories(context))).toBe(0);
  });

  it("the worker's hourly retention job prunes them: run now, it deletes another subdomain's raw visits past its own retention", async () => {
    const patched = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${other}`, headers: alice.auth, payload: { visits_retention_days: 200 } });
    expect(patched.statusCode).toBe(200);
    const retention = await startRetention(withRepositories(context));
    try {
      // A schedule left by an earlier worker keeps its hour: run it now.
      await context.jobs.enqueue(retentionJob, {});
      await waitFor(async () => (await rawCount(other, 200)) === 0, 30_000, { message: 'the visits older than 200 days to go' });
    } finally {
      await retention.stop();
    }
    expect(await rawCount(other)).toBe(200);
    // The first subdomain's are as the direct run left them.
    expect(await rawCount(sub)).toBe(90);
  });

  it('the health page and the metric show the oldest raw visit', async () => {
    const health = (await get(undefined, '/api/v1/health')).json().data;
    expect(health.raw_visits.oldest_at).not.toBeNull();
    // Other test files' visits share the store: the oldest is at least as old as this file's oldest kept (199 days, on the other subdomain).
    expect(Date.parse(health.raw_visits.oldest_at)).toBeLessThanOrEqual(now - 199 * DAY_MS);
    const metrics = (await get(undefined, '/metrics')).body;
    const gauge = /^visits_oldest_raw_timestamp_seconds (\S+)$/m.exec(metrics);
    expect(Number(gauge?.[1])).toBeCloseTo(Date.parse(health.raw_visits.oldest_at) / 1000, 0);
  });
});
