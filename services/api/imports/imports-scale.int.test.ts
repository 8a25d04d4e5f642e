import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { buildApp } from '#services/app.js';
import { startWorker } from '#services/worker/worker.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { bitlyCsv, dubCsv, shlinkCsv, sourceLinks, type SourceLink } from '#tests/support/import-fixtures.js';
import { startKuttStandIn } from '#tests/support/kutt-stand-in.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { withRepositories } from '#tests/support/repositories.js';
import { shlinkVisits, startShlinkStandIn, type ShlinkVisitFixture } from '#tests/support/shlink-stand-in.js';
import { yourlsClicks, yourlsMysqldump, type YourlsClick } from '#tests/support/yourls-dump.js';
import { startYourlsStandIn } from '#tests/support/yourls-stand-in.js';
import { importRunner } from './imports.service.js';

// Every importer at the size of a real installation (issue 39): 1 000 links from each source, and
// 100 000 visits where the source has a history (Shlink's API, YOURLS's database export). Through
// POST /api/v1/imports and the worker role, on the real stores (PGlite and chDB embedded; Postgres,
// ClickHouse and BullMQ on Redis in services mode); the API sources are local stand-ins replaying their
// documented answers (tests/support/*-stand-in.ts: not Shlink, Kutt or YOURLS themselves). Each import
// prints its throughput; a second run of each must import nothing.

const LINKS = 1_000;
/** Visits of the source's link `i`: 101 ± 10, so links differ and the total is over 100 000. */
const visitsOf = (i: number) => 91 + (i % 21);
const TOTAL_VISITS = Array.from({ length: LINKS }, (_, i) => visitsOf(i)).reduce((a, b) => a + b, 0);
/** The newest visit of link `i`: one hour apart from link to link, so every link has its own date range. */
const newestOf = (i: number) => Date.UTC(2024, 5, 30, 12) - i * 3_600_000;

let context: Context;
let app: FastifyInstance;
let worker: Consumer;
let alice: TestOwner;
const standIns: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  context = await createTestContext({ WEBHOOK_ALLOWLIST: '127.0.0.1' });
  ({ app } = await buildApp(context));
  worker = await startWorker(context, undefined, undefined, importRunner(withRepositories(context)));
  alice = await createOwner(context, app);
}, 120_000);

afterAll(async () => {
  await Promise.all(standIns.map((standIn) => standIn.close()));
  await worker?.stop();
  await app?.close();
  if (context) await closeContext(context);
});

interface Finished {
  status: string;
  rows_total: number;
  counts: Record<string, number>;
  visits: { added: number; existing: number; skipped: number } | null;
  error: unknown;
}

/** Starts an import and polls it to its end: its last state, and how long it took from the request. */
async function imported(payload: Record<string, unknown>): Promise<{ data: Finished; seconds: number }> {
  const began = performance.now();
  const answer = await app.inject({ method: 'POST', url: '/api/v1/imports', headers: alice.auth, payload });
  expect(answer.statusCode, answer.body.slice(0, 500)).toBe(202);
  const id = answer.json().data.id as string;
  const deadline = Date.now() + 600_000;
  for (;;) {
    const state = await app.inject({ method: 'GET', url: `/api/v1/imports/${id}?rows_limit=0`, headers: alice.auth });
    expect(state.statusCode, state.body).toBe(200);
    const data = state.json().data as Finished;
    if (data.status === 'completed' || data.status === 'failed') return { data, seconds: (performance.now() - began) / 1000 };
    if (Date.now() > deadline) throw new Error(`import ${id} still ${data.status} after 600 s: ${state.body}`);
    await sleep(250);
  }
}

/** The subdomain's live links as the API lists them: how many. */
async function listed(subdomain: string): Promise<number> {
  const answer = await app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${subdomain}&limit=1`, headers: alice.auth });
  expect(answer.statusCode, answer.body).toBe(200);
  return answer.json().meta.total as number;
}

interface LinkHistory {
  count: number;
  first: number;
  last: number;
}

/** Per slug, the visits the store holds for the subdomain: how many, the first and the last time (ms). */
async function storedHistory(subdomain: string): Promise<Map<string, LinkHistory>> {
  const result = await context.analytics.client.query({
    query:
      'SELECT slug, count() AS n, toUnixTimestamp64Milli(min(ts)) AS first, toUnixTimestamp64Milli(max(ts)) AS last ' +
      'FROM visits FINAL WHERE subdomain = {subdomain:String} GROUP BY slug',
    query_params: { subdomain },
    format: 'JSONEachRow',
  });
  const rows = await result.json<{ slug: string; n: string; first: string; last: string }>();
  return new Map(rows.map((row) => [row.slug, { count: Number(row.n), first: Number(row.first), last: Number(row.last) }]));
}

/** Per slug, the source's own count and date range, from its visits' times. */
function sourceHistory(times: Map<string, number[]>): Map<string, LinkHistory> {
  return new Map([...times].map(([slug, list]) => [slug, { count: list.length, first: Math.min(...list), last: Math.max(...list) }]));
}

const rate = (count: number, seconds: number) => Math.round(count / seconds).toLocaleString('en-US');

function report(source: string, links: number, visits: number, seconds: number, again: number) {
  const history = visits > 0 ? `, ${visits} visits: ${rate(visits, seconds)} visits/s` : '';
  process.stdout.write(
    `import ${source}: ${links} links in ${seconds.toFixed(1)} s (${rate(links, seconds)} links/s${history}); the second run, importing nothing, ${again.toFixed(1)} s\n`,
  );
}

describe('each importer at the size of a real installation', () => {
  const csvSources: [string, (links: SourceLink[]) => string][] = [
    ['shlink', shlinkCsv],
    ['bitly', bitlyCsv],
    ['dub', dubCsv],
  ];
  for (const [source, write] of csvSources) {
    it(`imports a ${source} CSV export of ${LINKS} links, then nothing the second time`, async () => {
      const subdomain = await claimSubdomain(app, alice);
      const file = write(sourceLinks(LINKS, `${source.slice(0, 2)}x`));
      const first = await imported({ source, subdomain, file });
      expect(first.data).toMatchObject({ status: 'completed', rows_total: LINKS, counts: { created: LINKS, conflict: 0, refused: 0 }, error: null });
      expect(await listed(subdomain)).toBe(LINKS);
      const second = await imported({ source, subdomain, file });
      expect(second.data).toMatchObject({ status: 'completed', counts: { created: 0, exists: LINKS } });
      expect(await listed(subdomain)).toBe(LINKS);
      report(`${source} CSV`, LINKS, 0, first.seconds, second.seconds);
    }, 600_000);
  }

  it(`imports ${LINKS} links from the Kutt API stand-in and the YOURLS API stand-in, then nothing the second time`, async () => {
    const kutt = await startKuttStandIn(sourceLinks(LINKS, 'kx'));
    standIns.push(kutt);
    const yourls = await startYourlsStandIn(sourceLinks(LINKS, 'yx'));
    standIns.push(yourls);
    const sources: [string, Record<string, unknown>][] = [
      ['kutt', { source: 'kutt', url: kutt.url, api_key: kutt.apiKey }],
      ['yourls-api', { source: 'yourls-api', url: yourls.url, signature: yourls.signature }],
    ];
    for (const [name, payload] of sources) {
      const subdomain = await claimSubdomain(app, alice);
      const first = await imported({ ...payload, subdomain });
      expect(first.data).toMatchObject({ status: 'completed', rows_total: LINKS, counts: { created: LINKS }, error: null });
      expect(await listed(subdomain)).toBe(LINKS);
      const second = await imported({ ...payload, subdomain });
      expect(second.data).toMatchObject({ status: 'completed', counts: { created: 0, exists: LINKS } });
      report(`${name} (stand-in)`, LINKS, 0, first.seconds, second.seconds);
    }
  }, 600_000);

  it(`imports ${LINKS} links and ${TOTAL_VISITS} visits from the Shlink API stand-in: each link's count and date range as the source's; a second run imports nothing`, async () => {
    const links = sourceLinks(LINKS, 'sx');
    const visits = new Map<string, ShlinkVisitFixture[]>(links.map((link, i) => [link.slug, shlinkVisits(link.slug, visitsOf(i), newestOf(i))]));
    const shlink = await startShlinkStandIn(links, visits);
    standIns.push(shlink);
    const subdomain = await claimSubdomain(app, alice);
    const first = await imported({ source: 'shlink-api', subdomain, url: shlink.url, api_key: shlink.apiKey });
    expect(first.data).toMatchObject({
      status: 'completed',
      rows_total: LINKS,
      counts: { created: LINKS },
      visits: { added: TOTAL_VISITS, existing: 0, skipped: 0 },
      error: null,
    });
    const expected = sourceHistory(new Map([...visits].map(([slug, list]) => [slug, list.map((visit) => Date.parse(visit.date))])));
    expect(await storedHistory(subdomain)).toEqual(expected);

    const second = await imported({ source: 'shlink-api', subdomain, url: shlink.url, api_key: shlink.apiKey });
    expect(second.data).toMatchObject({ status: 'completed', counts: { created: 0, exists: LINKS }, visits: { added: 0, existing: TOTAL_VISITS } });
    expect(await storedHistory(subdomain)).toEqual(expected);
    expect(await listed(subdomain)).toBe(LINKS);
    report('shlink-api (stand-in)', LINKS, TOTAL_VISITS, first.seconds, second.seconds);
  }, 900_000);

  it(`imports a YOURLS database export of ${LINKS} links and ${TOTAL_VISITS} clicks: each link's count and date range as the source's; a second run imports nothing`, async () => {
    const links = sourceLinks(LINKS, 'yd');
    const clicks: YourlsClick[] = [];
    for (const [i, link] of links.entries()) clicks.push(...yourlsClicks(link.slug, visitsOf(i), clicks.length + 1, newestOf(i)));
    const file = yourlsMysqldump(links, clicks);
    const subdomain = await claimSubdomain(app, alice);
    const first = await imported({ source: 'yourls', subdomain, file });
    expect(first.data).toMatchObject({
      status: 'completed',
      rows_total: LINKS,
      counts: { created: LINKS },
      visits: { added: TOTAL_VISITS, existing: 0, skipped: 0 },
      error: null,
    });
    const times = new Map<string, number[]>();
    for (const click of clicks) {
      const list = times.get(click.shorturl) ?? [];
      if (list.length === 0) times.set(click.shorturl, list);
      list.push(Date.parse(`${click.click_time.replace(' ', 'T')}Z`));
    }
    const expected = sourceHistory(times);
    expect(await storedHistory(subdomain)).toEqual(expected);

    const second = await imported({ source: 'yourls', subdomain, file });
    expect(second.data).toMatchObject({ status: 'completed', counts: { created: 0, exists: LINKS }, visits: { added: 0, existing: TOTAL_VISITS } });
    expect(await storedHistory(subdomain)).toEqual(expected);
    report(`yourls database export (${(Buffer.byteLength(file) / 2 ** 20).toFixed(1)} MiB)`, LINKS, TOTAL_VISITS, first.seconds, second.seconds);
  }, 900_000);
});
