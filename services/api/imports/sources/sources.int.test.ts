import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { createEventBus } from '#shared/events/events.js';
import type { Principal } from '#shared/http/auth.js';
import { buildApp } from '#services/app.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { sourceLinks, type SourceLink } from '#tests/support/import-fixtures.js';
import { startKuttStandIn } from '#tests/support/kutt-stand-in.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { withRepositories } from '#tests/support/repositories.js';
import { shlinkVisits, startShlinkStandIn, type ShlinkVisitFixture } from '#tests/support/shlink-stand-in.js';
import { yourlsClicks, yourlsMysqldump, yourlsPhpMyAdmin } from '#tests/support/yourls-dump.js';
import { startYourlsStandIn } from '#tests/support/yourls-stand-in.js';
import { linksService } from '#services/api/links/links.service.js';
import { subdomainsService } from '#services/api/subdomains/subdomains.service.js';
import { sourceImports, type SourceImports } from './sources.service.js';

let context: Context;
let app: FastifyInstance;
let imports: SourceImports;
let alice: TestOwner;
const standIns: { close(): Promise<void> }[] = [];

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
    // The 2nd page of the 3rd link's visits (the importer reads a few links' visits ahead, so not the n-th request).
    shlink.failOnce((path) => path.startsWith('/rest/v3/short-urls/rm2/visits?') && new URLSearchParams(path.split('?')[1]).get('page') === '2');
    const failure = await caught(imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false }));
    expect(failure.code).toBe('service_unavailable');
    expect(JSON.stringify(failure.details)).toContain('Shlink answered 500: Internal server error');
    const partial = await storedVisits(subdomain);
    expect([...partial.values()].map((row) => row.visits)).toEqual([250, 250]);

    const resumed = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    // The links are created IMPORT_LINKS_AT_ONCE at a time, before their visits are read: all six were when the
    // third's visits failed. They exist now, and the visits of the last four come in.
    expect(resumed.counts).toMatchObject({ exists: 6, created: 0 });
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

describe('importing a YOURLS database export (yourls_url and yourls_log)', () => {
  it('imports a mysqldump of 1 000 links and 100 000 yourls_log clicks with their times, referrers, agents, IPs and countries; a second run adds nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(1000, 'yl');
    const clicks = links.slice(0, 40).flatMap((link, i) => yourlsClicks(link.slug, 2500, 1 + i * 2500, NEWEST));
    const dump = yourlsMysqldump(links, clicks);
    const from = { source: 'yourls' as const, dump };

    const started = performance.now();
    const first = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    const firstMs = performance.now() - started;
    expect(first.counts).toMatchObject({ created: 1000, conflict: 0, refused: 0 });
    expect(first.visits).toEqual({ added: 100_000, existing: 0, skipped: 0 });
    expect(first.rows[0]).toMatchObject({ index: 0, status: 'created', slug: 'yl0', visits: { added: 2500 } });

    const stored = await storedVisits(subdomain);
    for (const row of first.rows.slice(0, 40)) {
      const own = clicks.filter((click) => click.shorturl === links[row.index]!.slug);
      expect(stored.get('link_id' in row ? row.link_id! : '')).toEqual({
        visits: 2500,
        imported: 0,
        first: `${own.at(-1)!.click_time}.000`,
        last: `${own[0]!.click_time}.000`,
      });
    }
    const titled = await context.db.db
      .selectFrom('links')
      .select(['title', 'created_at', 'tags'])
      .where('subdomain', '=', subdomain)
      .where('slug', '=', 'yl3')
      .executeTakeFirstOrThrow();
    expect(titled).toEqual({ title: links[3]!.title, created_at: links[3]!.created, tags: [] });

    const stats = await report(`/api/v1/stats/subdomain/${subdomain}?${RANGE}`);
    expect(stats.totals.visits + stats.totals.bots).toBe(100_000);
    const byCountry = new Map<string, number>();
    for (const click of clicks) if (click.country_code) byCountry.set(click.country_code, (byCountry.get(click.country_code) ?? 0) + 1);
    expect(
      Object.fromEntries(
        stats.top.country.filter((item: { value: string }) => item.value !== '').map((item: { value: string; visits: number }) => [item.value, item.visits]),
      ),
    ).toEqual(Object.fromEntries(byCountry));
    const firstLink = first.rows[0]!;
    const listed = await report(`/api/v1/visits?link_id=${'link_id' in firstLink ? firstLink.link_id : ''}&limit=3`);
    expect(listed.visits[0]).toMatchObject({
      imported_from: 'yourls',
      ts: `${clicks[0]!.click_time.replace(' ', 'T')}.000Z`,
      ip_public: clicks[0]!.ip_address,
      referrer: '',
      country: clicks[0]!.country_code,
    });
    expect(listed.visits[1]).toMatchObject({ referrer: clicks[1]!.referrer });

    const second = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    expect(second.counts).toMatchObject({ created: 0, exists: 1000 });
    expect(second.visits).toEqual({ added: 0, existing: 100_000, skipped: 0 });
    expect((await report(`/api/v1/stats/subdomain/${subdomain}?${RANGE}`)).totals).toEqual(stats.totals);
    // Baseline in the same run: the same dump's links alone (history: false) into another subdomain.
    const baseline = await claimSubdomain(app, alice);
    const baselineStart = performance.now();
    const linksOnly = await imports.importFromSource(principalOf(alice), { from, subdomain: baseline, dryRun: false, history: false });
    const linksOnlyMs = performance.now() - baselineStart;
    expect(linksOnly.counts.created).toBe(1000);
    expect(linksOnly.visits.added).toBe(0);
    process.stdout.write(
      `import of a YOURLS mysqldump: 1 000 links and 100 000 visits in ${Math.round(firstMs)} ms (${Math.round((100_000 / firstMs) * 1000)} visits/s overall); ` +
        `baseline, the links alone: ${Math.round(linksOnlyMs)} ms; the history's share: ${Math.round(firstMs - linksOnlyMs)} ms, ` +
        `${Math.round((100_000 / Math.max(1, firstMs - linksOnlyMs)) * 1000)} visits/s\n`,
    );
  }, 600_000);

  it("shows imported IPs publicly only as the subdomain's policy allows, like live visits", async () => {
    const links = sourceLinks(2, 'yp');
    const dump = yourlsMysqldump(links, yourlsClicks('yp0', 5, 1, NEWEST));
    const hidden = await claimSubdomain(app, alice, { stats_public: true, stats_show_visits_list: true, stats_show_geo: true });
    const shown = await claimSubdomain(app, alice, { stats_public: true, stats_show_visits_list: true, stats_show_ip: true });
    for (const subdomain of [hidden, shown]) await imports.importFromSource(principalOf(alice), { from: { source: 'yourls', dump }, subdomain, dryRun: false });
    const publicList = async (subdomain: string) => {
      const response = await app.inject({ method: 'GET', url: `/api/v1/visits?subdomain=${subdomain}` });
      expect(response.statusCode, response.body).toBe(200);
      return response.json().data.visits as Record<string, unknown>[];
    };
    const withoutIp = await publicList(hidden);
    expect(withoutIp).toHaveLength(5);
    expect(withoutIp.every((visit) => !('ip_public' in visit) && visit.country !== undefined)).toBe(true);
    const withIp = await publicList(shown);
    expect(withIp.map((visit) => visit.ip_public)).toEqual(['198.51.100.0', '198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4']);
  });

  it('reads phpMyAdmin’s export (INSERTs naming their columns, in another order) and dry-runs it without writing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(20, 'pm');
    const dump = yourlsPhpMyAdmin(links, yourlsClicks('pm1', 30, 1, NEWEST));
    const dry = await imports.importFromSource(principalOf(alice), { from: { source: 'yourls', dump }, subdomain, dryRun: true });
    expect(dry.counts).toMatchObject({ would_create: 20 });
    expect(dry.visits).toEqual({ added: 30, existing: 0, skipped: 0 });
    expect((await report(`/api/v1/links?subdomain=${subdomain}`)).links).toHaveLength(0);
    const done = await imports.importFromSource(principalOf(alice), { from: { source: 'yourls', dump }, subdomain, dryRun: false });
    expect(done.rows[1]).toMatchObject({ status: 'created', slug: 'pm1', visits: { added: 30 } });
    const link = (await report(`/api/v1/links?subdomain=${subdomain}`)).links.find((row: { slug: string }) => row.slug === 'pm1');
    expect(link.target_url).toBe(links[1]!.target);
  });

  it('answers 422 validation_error to a dump without yourls_url rows, importing nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const failure = await caught(
      imports.importFromSource(principalOf(alice), {
        from: { source: 'yourls', dump: 'CREATE TABLE `other` (`id` int);\nINSERT INTO `other` VALUES (1);' },
        subdomain,
        dryRun: false,
      }),
    );
    expect(failure.code).toBe('validation_error');
    expect(failure.details).toEqual({ dump: 'no rows of yourls_url: not a YOURLS database export' });
  });
});

describe('importing from a local stand-in of Kutt’s API v2', () => {
  it('imports 1 000 links page by page (50 at a time) with slugs, targets, descriptions as titles and dates; a second run creates nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(1000, 'kt');
    const kutt = await startKuttStandIn(links);
    standIns.push(kutt);
    const from = { source: 'kutt' as const, url: kutt.url, apiKey: kutt.apiKey };
    const first = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    expect(first.counts).toMatchObject({ created: 1000, conflict: 0, refused: 0 });
    expect(first.visits).toEqual({ added: 0, existing: 0, skipped: 0 });
    expect(kutt.requests).toHaveLength(20);
    expect(kutt.requests.at(-1)).toBe('/api/v2/links?limit=50&skip=950');
    const rows = await context.db.db
      .selectFrom('links')
      .select(['slug', 'target_url', 'title', 'created_at'])
      .where('subdomain', '=', subdomain)
      .where('deleted_at', 'is', null)
      .execute();
    expect(rows).toHaveLength(1000);
    const bySlug = new Map(rows.map((row) => [row.slug, row]));
    for (const [i, link] of links.entries()) {
      expect(bySlug.get(link.slug)).toEqual({ slug: link.slug, target_url: link.target, title: i % 2 === 0 ? link.title : null, created_at: link.created });
    }
    const second = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    expect(second.counts).toMatchObject({ created: 0, exists: 1000 });
  }, 600_000);

  it('answers 422 validation_error naming the API key when the stand-in refuses it', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const kutt = await startKuttStandIn(sourceLinks(3, 'kw'));
    standIns.push(kutt);
    const failure = await caught(
      imports.importFromSource(principalOf(alice), { from: { source: 'kutt', url: kutt.url, apiKey: 'nope' }, subdomain, dryRun: false }),
    );
    expect(failure.code).toBe('validation_error');
    expect(failure.details).toEqual({ api_key: 'Kutt refused the API key (401: Unauthorized.)' });
  });
});

describe('importing from a local stand-in of YOURLS’s API (links only)', () => {
  it('imports 1 000 links through action=stats&filter=last, page by page, signed by signature; a second run creates nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(1000, 'ya');
    const yourls = await startYourlsStandIn(links);
    standIns.push(yourls);
    const from = { source: 'yourls-api' as const, url: yourls.url, signature: yourls.signature, pageSize: 100 };
    const first = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    expect(first.counts).toMatchObject({ created: 1000, conflict: 0, refused: 0 });
    expect(yourls.requests.map((request) => request.params.start)).toEqual(['0', '100', '200', '300', '400', '500', '600', '700', '800', '900']);
    // The signature travels in a POST form, never in a URL.
    expect(yourls.requests.every((request) => !request.inUrl && request.params.action === 'stats' && request.params.filter === 'last')).toBe(true);
    const rows = await context.db.db
      .selectFrom('links')
      .select(['slug', 'target_url', 'title', 'created_at'])
      .where('subdomain', '=', subdomain)
      .where('deleted_at', 'is', null)
      .execute();
    const bySlug = new Map(rows.map((row) => [row.slug, row]));
    expect(bySlug.size).toBe(1000);
    for (const link of links) expect(bySlug.get(link.slug)).toEqual({ slug: link.slug, target_url: link.target, title: link.title, created_at: link.created });
    const second = await imports.importFromSource(principalOf(alice), { from, subdomain, dryRun: false });
    expect(second.counts).toMatchObject({ created: 0, exists: 1000 });
  }, 600_000);

  it('signs in with username and password too, and answers 422 validation_error naming what YOURLS refused', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const yourls = await startYourlsStandIn(sourceLinks(5, 'yu'));
    standIns.push(yourls);
    const byPassword = { source: 'yourls-api' as const, url: yourls.url, username: yourls.username, password: yourls.password };
    expect((await imports.importFromSource(principalOf(alice), { from: byPassword, subdomain, dryRun: true })).counts).toMatchObject({ would_create: 5 });
    const wrongSignature = await caught(
      imports.importFromSource(principalOf(alice), { from: { source: 'yourls-api', url: yourls.url, signature: 'nope' }, subdomain, dryRun: false }),
    );
    expect(wrongSignature.code).toBe('validation_error');
    expect(wrongSignature.details).toEqual({ signature: 'YOURLS refused the signature (403: Please log in)' });
    const wrongPassword = await caught(imports.importFromSource(principalOf(alice), { from: { ...byPassword, password: 'wrong' }, subdomain, dryRun: false }));
    expect(wrongPassword.details).toEqual({ password: 'YOURLS refused the username or password (403: Please log in)' });
  });
});
