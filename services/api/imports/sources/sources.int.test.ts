import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { createEventBus } from '#shared/events/events.js';
import type { Principal } from '#shared/http/auth.js';
import { buildApp } from '#services/app.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { sourceLinks, type SourceLink } from '#tests/support/import-fixtures.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { withRepositories } from '#tests/support/repositories.js';
import { shlinkVisits, startShlinkStandIn, type ShlinkStandIn, type ShlinkVisitFixture } from '#tests/support/shlink-stand-in.js';
import { linksService } from '#services/api/links/links.service.js';
import { subdomainsService } from '#services/api/subdomains/subdomains.service.js';
import { sourceImports, type SourceImports } from './sources.service.js';

let context: Context;
let app: FastifyInstance;
let imports: SourceImports;
let alice: TestOwner;
const standIns: ShlinkStandIn[] = [];

const principalOf = (owner: TestOwner): Principal => ({
  userId: owner.id,
  email: owner.email,
  role: 'user',
  via: 'token',
  scopes: new Set(['links:read', 'links:write']),
  identity: `user:${owner.id}`,
});

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  alice = await createOwner(context, app);
  const deps = withRepositories(context);
  const subdomains = subdomainsService(deps);
  imports = sourceImports({ links: linksService({ ...deps, subdomains, events: createEventBus(context) }), subdomains, repositories: deps.repositories });
}, 120_000);

afterAll(async () => {
  await Promise.all(standIns.map((standIn) => standIn.close()));
  await app?.close();
  await closeContext(context);
});

async function standIn(links: SourceLink[], visits: Map<string, ShlinkVisitFixture[]>) {
  const started = await startShlinkStandIn(links, visits);
  standIns.push(started);
  return started;
}

/** Visits stored per link id, and their earliest and latest time, straight from ClickHouse (one row per visit). */
async function storedVisits(subdomain: string) {
  const result = await context.analytics.client.query({
    query: `SELECT link_id, count() AS visits, min(ts) AS first, max(ts) AS last, countIf(imported_from = 'shlink') AS imported
            FROM (SELECT * FROM visits FINAL WHERE subdomain = {subdomain:String}) GROUP BY link_id`,
    query_params: { subdomain },
    format: 'JSONEachRow',
  });
  const rows = await result.json<{ link_id: string; visits: string; first: string; last: string; imported: string }>();
  return new Map(rows.map((row) => [row.link_id, { visits: Number(row.visits), first: row.first, last: row.last, imported: Number(row.imported) }]));
}

const chTime = (iso: string) => new Date(iso).toISOString().replace('T', ' ').replace('Z', '');

const report = async (path: string) => {
  const response = await app.inject({ method: 'GET', url: path, headers: alice.auth });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data;
};

const caught = async (promise: Promise<unknown>): Promise<AppError> => {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
};

const NEWEST = Date.UTC(2024, 5, 30, 12);
const RANGE = `since=${encodeURIComponent('2024-01-01T00:00:00Z')}&until=${encodeURIComponent('2024-07-01T00:00:00Z')}`;

describe('importing from a local stand-in of Shlink’s REST API v3', () => {
  it('imports 1 000 links, paginated, and 100 000 visits with their times, referrers, agents and countries; a second run adds nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(1000, 'sv');
    // 50 links with 2 000 visits each (20 pages of 100 per link).
    const visits = new Map(links.slice(0, 50).map((link) => [link.slug, shlinkVisits(link.slug, 2000, NEWEST)]));
    const shlink = await standIn(links, visits);
    const from = { source: 'shlink' as const, url: shlink.url, apiKey: shlink.apiKey, pageSize: 100 };

    const dry = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: true });
    expect(dry.counts).toMatchObject({ would_create: 1000, created: 0 });
    expect(dry.visits).toEqual({ added: 100_000, existing: 0, skipped: 0 });
    expect((await storedVisits(subdomain)).size).toBe(0);

    const started = performance.now();
    const progress: number[] = [];
    const first = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false }, (done, total) => {
      expect(total).toBe(1000);
      progress.push(done);
    });
    const firstMs = performance.now() - started;
    expect(first.counts).toMatchObject({ created: 1000, conflict: 0, refused: 0 });
    expect(first.visits).toEqual({ added: 100_000, existing: 0, skipped: 0 });
    expect(progress.at(-1)).toBe(1000);
    // Both lists were read page by page, as Shlink pages them.
    expect(shlink.requests.filter((path) => path.startsWith('/rest/v3/short-urls?'))).toContain('/rest/v3/short-urls?page=10&itemsPerPage=100');
    expect(shlink.requests).toContain('/rest/v3/short-urls/sv0/visits?page=20&itemsPerPage=100');

    // Per link: the source's count and date range, every row marked as imported.
    const stored = await storedVisits(subdomain);
    for (const row of first.rows.slice(0, 50)) {
      const source = visits.get(links[row.index]!.slug)!;
      expect(stored.get('link_id' in row ? row.link_id! : '')).toEqual({
        visits: 2000,
        imported: 2000,
        first: chTime(source.at(-1)!.date),
        last: chTime(source[0]!.date),
      });
    }
    expect(first.rows.slice(50).every((row) => row.visits?.added === 0)).toBe(true);

    // The reports count them, with the source's countries; bots (Shlink's potentialBot) beside.
    const all = [...visits.values()].flat();
    const humans = all.filter((visit) => !visit.potentialBot);
    const stats = await report(`/api/v1/stats/subdomain/${subdomain}?${RANGE}`);
    expect(stats.totals).toMatchObject({ visits: humans.length, bots: all.length - humans.length });
    const byCountry = new Map<string, number>();
    for (const visit of humans)
      if (visit.visitLocation) byCountry.set(visit.visitLocation.countryCode, (byCountry.get(visit.visitLocation.countryCode) ?? 0) + 1);
    expect(
      Object.fromEntries(
        stats.top.country.filter((item: { value: string }) => item.value !== '').map((item: { value: string; visits: number }) => [item.value, item.visits]),
      ),
    ).toEqual(Object.fromEntries(byCountry));

    // The visit list shows them as imported, with the original time, referrer and agent.
    const listed = await report(`/api/v1/visits?subdomain=${subdomain}&limit=1`);
    const newest = visits.get('sv0')![0]!;
    expect(listed.visits[0]).toMatchObject({
      imported_from: 'shlink',
      ts: new Date(newest.date).toISOString(),
      user_agent: newest.userAgent,
      referrer: newest.referer ?? '',
      country: newest.visitLocation?.countryCode ?? '',
    });

    const second = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    expect(second.counts).toMatchObject({ created: 0, exists: 1000 });
    expect(second.visits).toEqual({ added: 0, existing: 100_000, skipped: 0 });
    expect((await report(`/api/v1/stats/subdomain/${subdomain}?${RANGE}`)).totals).toEqual(stats.totals);
    expect(await storedVisits(subdomain)).toEqual(stored);

    process.stdout.write(
      `import from the Shlink stand-in: 1 000 links and 100 000 visits in ${Math.round(firstMs)} ms, ${Math.round((100_000 / firstMs) * 1000)} visits/s overall\n`,
    );
  }, 600_000);

  it('resumes after the stand-in fails mid-way: no link and no visit twice, reports counting each visit once', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(6, 'rm');
    const visits = new Map(links.map((link) => [link.slug, shlinkVisits(link.slug, 250, NEWEST)]));
    const shlink = await standIn(links, visits);
    const from = { source: 'shlink' as const, url: shlink.url, apiKey: shlink.apiKey, pageSize: 100 };
    // Request 1 lists the links; then 3 pages per link: the 9th request is the 2nd page of the 3rd link's visits.
    shlink.failRequest(9);
    const failure = await caught(imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false }));
    expect(failure.code).toBe('service_unavailable');
    expect(JSON.stringify(failure.details)).toContain('Shlink answered 500: Internal server error');
    const partial = await storedVisits(subdomain);
    expect([...partial.values()].map((row) => row.visits)).toEqual([250, 250]);

    const resumed = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    // The third link was created before its visits failed: it exists, and its visits come in now.
    expect(resumed.counts).toMatchObject({ exists: 3, created: 3 });
    expect(resumed.visits).toEqual({ added: 1000, existing: 500, skipped: 0 });
    const stored = await storedVisits(subdomain);
    expect([...stored.values()].map((row) => row.visits)).toEqual(Array(6).fill(250));
    const all = [...visits.values()].flat();
    const stats = await report(`/api/v1/stats/subdomain/${subdomain}?${RANGE}`);
    expect(stats.totals.visits + stats.totals.bots).toBe(all.length);
  }, 120_000);

  it('answers 422 validation_error naming the API key when the stand-in refuses it, importing nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(3, 'wk');
    const shlink = await standIn(links, new Map());
    const failure = await caught(
      imports.importFromSource(principalOf(alice), { from: { source: 'shlink', url: shlink.url, apiKey: 'wrong-key' }, subdomain, dryRun: false }),
    );
    expect(failure.code).toBe('validation_error');
    expect(failure.details).toEqual({ api_key: 'Shlink refused the API key (401: Invalid API key)' });
    const listed = await report(`/api/v1/links?subdomain=${subdomain}`);
    expect(listed.links).toHaveLength(0);
  });

  it('answers 503 service_unavailable when nothing answers at the URL, and 403 forbidden without links:write', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const closed = await startShlinkStandIn([], new Map());
    await closed.close();
    const failure = await caught(
      imports.importFromSource(principalOf(alice), { from: { source: 'shlink', url: closed.url, apiKey: closed.apiKey }, subdomain, dryRun: true }),
    );
    expect(failure.code).toBe('service_unavailable');
    const readOnly = { ...principalOf(alice), scopes: new Set(['links:read'] as const) };
    expect((await caught(imports.importFromSource(readOnly, { from: { source: 'shlink', url: closed.url, apiKey: 'k' }, subdomain, dryRun: true }))).code).toBe(
      'forbidden',
    );
  });
});
