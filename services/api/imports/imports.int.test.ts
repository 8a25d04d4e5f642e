import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { createEventBus } from '#shared/events/events.js';
import type { Principal } from '#shared/http/auth.js';
import type { Scope } from '#shared/http/scopes.js';
import { buildApp } from '#services/app.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { bitlyCsv, dubCsv, shlinkCsv, sourceLinks, type SourceLink } from '#tests/support/import-fixtures.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { withRepositories } from '#tests/support/repositories.js';
import { linksService } from '../links/links.service.js';
import { subdomainsService } from '../subdomains/subdomains.service.js';
import { IMPORT_MAX_BYTES } from './imports.formats.js';
import { importsService, type ImportsService } from './imports.service.js';

let context: Context;
let app: FastifyInstance;
let imports: ImportsService;
let alice: TestOwner;
let bob: TestOwner;

/** The principal a links:write token of the owner authenticates as. */
const principalOf = (owner: TestOwner, scopes: Scope[] = ['links:read', 'links:write']): Principal => ({
  userId: owner.id,
  email: owner.email,
  role: 'user',
  via: 'token',
  scopes: new Set(scopes),
  identity: `user:${owner.id}`,
});

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  const deps = withRepositories(context);
  const subdomains = subdomainsService(deps);
  imports = importsService({ links: linksService({ ...deps, subdomains, events: createEventBus(context) }), subdomains });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

/** The live links of a subdomain as stored, by slug. */
async function stored(subdomain: string) {
  const rows = await context.db.db
    .selectFrom('links')
    .select(['slug', 'target_url', 'title', 'tags', 'created_at'])
    .where('subdomain', '=', subdomain)
    .where('deleted_at', 'is', null)
    .execute();
  return new Map(rows.map((row) => [row.slug, row]));
}

function expectImported(rows: Awaited<ReturnType<typeof stored>>, links: (Omit<SourceLink, 'title'> & { title: string | null })[]) {
  for (const link of links) {
    const row = rows.get(link.slug.toLowerCase());
    expect(row, link.slug).toBeDefined();
    expect(row!.target_url).toBe(link.target);
    expect(row!.title).toBe(link.title);
    expect([...row!.tags].sort()).toEqual([...link.tags].sort());
    expect(row!.created_at.toISOString()).toBe(link.created.toISOString());
  }
}

const caught = async (promise: Promise<unknown>): Promise<AppError> => {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
};

describe('importing a Shlink CSV export of 1 000 links', () => {
  it('dry-runs without writing, imports every link with its slug, target, title, tags and date, then imports nothing the second time', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(1000, 'sh');
    const csv = shlinkCsv(links);

    const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
      const start = performance.now();
      const result = await run();
      return [result, performance.now() - start];
    };
    const [dry, dryMs] = await timed(() => imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv, dryRun: true }));
    expect(dry.counts).toMatchObject({ would_create: 1000, created: 0, conflict: 0, refused: 0, unreadable: 0 });
    expect((await stored(subdomain)).size).toBe(0);

    const progress: number[] = [];
    const [first, firstMs] = await timed(() =>
      imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv, dryRun: false }, (done, total) => {
        expect(total).toBe(1000);
        progress.push(done);
      }),
    );
    expect(first.counts).toMatchObject({ created: 1000, exists: 0, conflict: 0, refused: 0, unreadable: 0 });
    expect(progress.length).toBe(1000);
    expect(progress.at(-1)).toBe(1000);
    const rows = await stored(subdomain);
    expect(rows.size).toBe(1000);
    expectImported(rows, links);

    const [second, secondMs] = await timed(() => imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv, dryRun: false }));
    expect(second.counts).toMatchObject({ created: 0, exists: 1000 });
    expect((await stored(subdomain)).size).toBe(1000);

    // Throughput, beside a baseline measured in the same run: 200 links created one by one through POST /api/v1/links.
    const baseline = await claimSubdomain(app, alice);
    const [, apiMs] = await timed(async () => {
      for (let i = 0; i < 200; i++) {
        const made = await app.inject({
          method: 'POST',
          url: '/api/v1/links',
          headers: alice.auth,
          payload: { subdomain: baseline, slug: `b${i}`, target_url: `https://example.com/${i}` },
        });
        expect(made.statusCode).toBe(201);
      }
    });
    const perSecond = (rows: number, ms: number) => Math.round((rows / ms) * 1000);
    process.stdout.write(
      `import of 1 000 Shlink links: dry run ${perSecond(1000, dryMs)} rows/s, import ${perSecond(1000, firstMs)} rows/s, second run ${perSecond(1000, secondMs)} rows/s; ` +
        `baseline POST /api/v1/links ${perSecond(200, apiMs)} links/s\n`,
    );
  }, 300_000);

  it('resumes an interrupted import: the rows already in are reported as existing, the rest created', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(40, 'rs');
    await imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv: shlinkCsv(links.slice(0, 15)), dryRun: false });
    const resumed = await imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv: shlinkCsv(links), dryRun: false });
    expect(resumed.counts).toMatchObject({ exists: 15, created: 25 });
    expectImported(await stored(subdomain), links);
  });
});

describe('importing Bitly and Dub CSV exports', () => {
  it('imports a Bitly export (bit.ly/<slug>, comma-separated tags, +0000 dates)', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(30, 'Bt');
    const report = await imports.importCsv(principalOf(alice), { source: 'bitly', subdomain, csv: bitlyCsv(links), dryRun: false });
    expect(report.counts).toMatchObject({ created: 30 });
    expect(report.rows[0]).toMatchObject({ line: 2, status: 'created', slug: 'bt0' });
    expectImported(await stored(subdomain), links);
  });

  it('imports a Dub export (https://dub.sh/<slug>, "a, b" tags), and again imports nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    // Dub's export has no title.
    const source = sourceLinks(30, 'db');
    const links = source.map((link) => ({ ...link, title: null }));
    const csv = dubCsv(source);
    expect((await imports.importCsv(principalOf(alice), { source: 'dub', subdomain, csv, dryRun: false })).counts).toMatchObject({ created: 30 });
    expectImported(await stored(subdomain), links);
    expect((await imports.importCsv(principalOf(alice), { source: 'dub', subdomain, csv, dryRun: false })).counts).toMatchObject({ created: 0, exists: 30 });
  });
  it('does not bring back a link deleted since it was imported', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const csv = dubCsv(sourceLinks(3, 'del'));
    const first = await imports.importCsv(principalOf(alice), { source: 'dub', subdomain, csv, dryRun: false });
    const deleted = first.rows[1]!;
    expect(deleted).toMatchObject({ status: 'created', slug: 'del1' });
    const removed = await app.inject({ method: 'DELETE', url: `/api/v1/links/${'link_id' in deleted ? deleted.link_id : ''}`, headers: alice.auth });
    expect(removed.statusCode).toBe(200);
    const again = await imports.importCsv(principalOf(alice), { source: 'dub', subdomain, csv, dryRun: false });
    expect(again.counts).toMatchObject({ created: 0, exists: 3 });
    expect([...(await stored(subdomain)).keys()].sort()).toEqual(['del0', 'del2']);
  });
});

describe('rows the importer reports and skips', () => {
  it('reports a slug taken by another link as a conflict, in the dry run too, and never overwrites it', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const made = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: { subdomain, slug: 'taken', target_url: 'https://mine.example/' },
    });
    expect(made.statusCode).toBe(201);
    const links = [...sourceLinks(2, 'ok'), { ...sourceLinks(1, 'x')[0]!, slug: 'Taken' }];
    for (const dryRun of [true, false]) {
      const report = await imports.importCsv(principalOf(alice), { source: 'bitly', subdomain, csv: bitlyCsv(links), dryRun });
      expect(report.rows[2]).toEqual({ line: 4, status: 'conflict', slug: 'taken', reason: 'slug_taken' });
      expect(report.counts.conflict).toBe(1);
    }
    expect((await stored(subdomain)).get('taken')!.target_url).toBe('https://mine.example/');
  });

  it('refuses a target that is not a URL, a reserved slug and a slug the platform does not accept, and reports unreadable rows', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const [good] = sourceLinks(1, 'good');
    const rows = [good!, { ...good!, slug: 'bad-target', target: 'not a url' }, { ...good!, slug: 'api' }, { ...good!, slug: 'has.dot' }];
    const csv =
      shlinkCsv(rows) + '"not a date","s.test","no-date","https://s.test/no-date","https://example.com/","","",""\r\n' + '"","s.test","","","","","",""\r\n';
    const report = await imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv, dryRun: false });
    expect(report.rows.map((row) => [row.line, row.status, 'reason' in row ? row.reason : undefined])).toEqual([
      [2, 'created', undefined],
      [3, 'refused', 'target_invalid'],
      [4, 'refused', 'slug_reserved'],
      [5, 'refused', 'slug_invalid'],
      [6, 'unreadable', 'created_at_invalid'],
      [7, 'unreadable', 'slug_missing'],
    ]);
    expect([...(await stored(subdomain)).keys()]).toEqual(['good0']);
  });
});

describe('files and subdomains the importer refuses', () => {
  it('answers 422 validation_error to a file that is not CSV or not the named source’s export, importing nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const unclosed = 'createdAt,shortCode,longUrl\r\n"2021-01-01,abc,https://example.com/\r\n';
    expect((await caught(imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv: unclosed, dryRun: false }))).code).toBe('validation_error');
    const dub = dubCsv(sourceLinks(3, 'w'));
    expect((await caught(imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv: dub, dryRun: false }))).code).toBe('validation_error');
    expect((await stored(subdomain)).size).toBe(0);
  });

  it(`answers 413 payload_too_large to a file over ${IMPORT_MAX_BYTES} bytes`, async () => {
    const subdomain = await claimSubdomain(app, alice);
    const huge = shlinkCsv(sourceLinks(1, 'h')) + 'x'.repeat(IMPORT_MAX_BYTES);
    expect((await caught(imports.importCsv(principalOf(alice), { source: 'shlink', subdomain, csv: huge, dryRun: false }))).code).toBe('payload_too_large');
  });

  it("answers 403 not_owner for someone else's subdomain, 404 not_found for an unknown one and 403 forbidden without links:write", async () => {
    const bobs = await claimSubdomain(app, bob);
    const csv = shlinkCsv(sourceLinks(2, 'o'));
    expect((await caught(imports.importCsv(principalOf(alice), { source: 'shlink', subdomain: bobs, csv, dryRun: true }))).code).toBe('not_owner');
    expect((await caught(imports.importCsv(principalOf(alice), { source: 'shlink', subdomain: 'nosuchsub', csv, dryRun: true }))).code).toBe('not_found');
    expect((await caught(imports.importCsv(principalOf(bob, ['links:read']), { source: 'shlink', subdomain: bobs, csv, dryRun: true }))).code).toBe(
      'forbidden',
    );
    expect((await stored(bobs)).size).toBe(0);
  });
});
