import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { buildApp } from '#services/app.js';
import { startWorker } from '#services/worker/worker.js';
import { mintToken } from '#tests/support/accounts.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { shlinkCsv, sourceLinks } from '#tests/support/import-fixtures.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { withRepositories } from '#tests/support/repositories.js';
import { IMPORT_MAX_BYTES } from './imports.formats.js';
import { IMPORT_BODY_LIMIT } from './imports.routes.js';
import { importRunner } from './imports.service.js';
import { YOURLS_DUMP_MAX_BYTES } from './sources/yourls-dump.js';

// The import API on a real platform (PGlite and chDB embedded, or Postgres and BullMQ on Redis in
// services mode) with the worker role running its jobs: HTTP in, polling for progress.

let context: Context;
let app: FastifyInstance;
let worker: Consumer;
let alice: TestOwner;
let bob: TestOwner;

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  worker = await startWorker(context, undefined, undefined, importRunner(withRepositories(context)));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await app?.close();
  if (context) await closeContext(context);
});

const start = (owner: { auth: Record<string, string> }, payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/api/v1/imports', headers: owner.auth, payload });

const poll = (owner: { auth: Record<string, string> }, id: string, query = '') =>
  app.inject({ method: 'GET', url: `/api/v1/imports/${id}${query}`, headers: owner.auth });

/** Polls an import until it has finished; answers its last state and every rows_read seen on the way. */
async function finished(owner: TestOwner, id: string, timeoutMs = 240_000) {
  const seen: number[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await poll(owner, id, '?rows_limit=0');
    expect(answer.statusCode).toBe(200);
    const data = answer.json().data;
    seen.push(data.rows_read);
    if (data.status === 'completed' || data.status === 'failed') return { data, seen };
    if (Date.now() > deadline) throw new Error(`import ${id} still ${data.status} after ${timeoutMs} ms: ${JSON.stringify(data)}`);
    await sleep(200);
  }
}

async function liveLinks(subdomain: string): Promise<number> {
  const row = await context.db.db
    .selectFrom('links')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('subdomain', '=', subdomain)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('POST /api/v1/imports runs an import as a job', () => {
  it('imports 1 000 Shlink links to completion with progress and a paged report; a dry run writes nothing and a second import creates nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const file = shlinkCsv(sourceLinks(1000, 'jb'));

    const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
      const started = performance.now();
      return [await run(), performance.now() - started];
    };
    const [dry, dryMs] = await timed(async () => {
      const answer = await start(alice, { source: 'shlink', subdomain, file, dry_run: true });
      await finished(alice, answer.json().data.id);
      return answer;
    });
    expect(dry.statusCode).toBe(202);
    expect(dry.json().data).toMatchObject({ status: 'queued', dry_run: true, rows_read: 0, rows_total: null, file_bytes: Buffer.byteLength(file) });
    const dryDone = await finished(alice, dry.json().data.id);
    expect(dryDone.data).toMatchObject({ status: 'completed', rows_total: 1000, rows_read: 1000, error: null });
    expect(dryDone.data.counts).toEqual({ created: 0, would_create: 1000, exists: 0, conflict: 0, refused: 0, unreadable: 0 });
    expect(await liveLinks(subdomain)).toBe(0);

    const [[started, done], importMs] = await timed(async () => {
      const answer = await start(alice, { source: 'shlink', subdomain, file });
      expect(answer.statusCode).toBe(202);
      expect(answer.json().data.id).toMatch(/^imp_[A-Za-z0-9_-]{16}$/);
      return [answer, await finished(alice, answer.json().data.id)] as const;
    });
    const { id } = started.json().data;
    expect(done.data.counts).toEqual({ created: 1000, would_create: 0, exists: 0, conflict: 0, refused: 0, unreadable: 0 });
    // Progress was visible on the way: some poll saw the import part-way through.
    expect(done.seen.some((read) => read > 0 && read < 1000)).toBe(true);
    expect(done.data.started_at).not.toBeNull();
    expect(done.data.finished_at).not.toBeNull();
    expect(await liveLinks(subdomain)).toBe(1000);

    // The report, page by page in file order.
    const first = (await poll(alice, id, '?rows_limit=400')).json().data;
    expect(first.rows).toHaveLength(400);
    expect(first.rows[0]).toMatchObject({ line: 2, status: 'created', slug: 'jb0', reason: null });
    expect(first.rows[0].link_id).toMatch(/^l_/);
    expect(first.next_rows_after).toBe(401);
    const last = (await poll(alice, id, `?rows_limit=1000&rows_after=${first.next_rows_after}`)).json().data;
    expect(last.rows).toHaveLength(600);
    expect(last.rows.at(-1)).toMatchObject({ line: 1001, slug: 'jb999' });
    expect(last.next_rows_after).toBeNull();

    const [[again, againDone], againMs] = await timed(async () => {
      const answer = await start(alice, { source: 'shlink', subdomain, file });
      return [answer, await finished(alice, answer.json().data.id)] as const;
    });
    expect(againDone.data.counts).toMatchObject({ created: 0, exists: 1000 });
    expect(await liveLinks(subdomain)).toBe(1000);

    // The list: newest first, the caller's own only.
    const list = await app.inject({ method: 'GET', url: '/api/v1/imports?limit=3', headers: alice.auth });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.imports.map((row: { id: string }) => row.id)).toEqual([again.json().data.id, id, dry.json().data.id]);
    const bobs = await app.inject({ method: 'GET', url: '/api/v1/imports', headers: bob.auth });
    expect(bobs.json().data.imports).toEqual([]);

    // Throughput from the POST to the last poll, beside a baseline measured in the same run: 200 links created one by one through POST /api/v1/links.
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
      `import job of 1 000 Shlink links (POST to completed, polled every 200 ms): dry run ${perSecond(1000, dryMs)} rows/s, import ${perSecond(1000, importMs)} rows/s, ` +
        `second run ${perSecond(1000, againMs)} rows/s; baseline POST /api/v1/links ${perSecond(200, apiMs)} links/s\n`,
    );

    const audited = await context.db.db.selectFrom('audit_log').selectAll().where('action', '=', 'import.start').where('target', '=', `import:${id}`).execute();
    expect(audited).toHaveLength(1);
    expect(audited[0]).toMatchObject({ actor_id: alice.id, details: expect.objectContaining({ subdomain, source: 'shlink', dry_run: false }) });
  }, 600_000);

  it('reports conflicts and unreadable rows per row, filtered by status', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const made = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: { subdomain, slug: 'cf1', target_url: 'https://mine.example/' },
    });
    expect(made.statusCode).toBe(201);
    const file = shlinkCsv(sourceLinks(3, 'cf')) + '"","s.test","","","","","",""\r\n';
    const { id } = (await start(alice, { source: 'shlink', subdomain, file })).json().data;
    const done = await finished(alice, id);
    expect(done.data.counts).toMatchObject({ created: 2, conflict: 1, unreadable: 1 });
    const conflicts = (await poll(alice, id, '?rows_status=conflict')).json().data.rows;
    expect(conflicts).toEqual([{ line: 3, status: 'conflict', slug: 'cf1', reason: 'slug_taken', link_id: null }]);
    const unreadable = (await poll(alice, id, '?rows_status=unreadable')).json().data.rows;
    expect(unreadable).toEqual([{ line: 5, status: 'unreadable', slug: null, reason: 'slug_missing', link_id: null }]);
  }, 120_000);
});

describe('an import whose account is deleted while it runs', () => {
  it('ends its job without a retry or a failure: the import, its report and its links went with the account', async () => {
    const carol = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, carol);
    const outcome = async (name: string) =>
      (await context.metrics.jobsProcessed.get()).values.find((value) => value.labels.job === 'import.run' && value.labels.outcome === name)?.value ?? 0;
    const [completed, retried, failed] = await Promise.all([outcome('completed'), outcome('retried'), outcome('failed')]);
    const { id } = (await start(carol, { source: 'shlink', subdomain, file: shlinkCsv(sourceLinks(1000, 'gone')) })).json().data;
    for (let read = 0; read < 50;) {
      await sleep(100);
      read = (await poll(carol, id, '?rows_limit=0')).json().data.rows_read;
    }
    expect(await withRepositories(context).repositories.users.deleteAccount(carol.id)).toBeDefined();
    const deadline = Date.now() + 60_000;
    while ((await outcome('completed')) === completed && Date.now() < deadline) await sleep(100);
    expect(await outcome('completed')).toBe(completed + 1);
    expect([await outcome('retried'), await outcome('failed')]).toEqual([retried, failed]);
    expect(await context.db.db.selectFrom('imports').select('id').where('id', '=', id).execute()).toEqual([]);
    expect(await context.db.db.selectFrom('import_rows').select('line').where('import_id', '=', id).execute()).toEqual([]);
    expect(await liveLinks(subdomain)).toBe(0);
  }, 120_000);
});

describe('what POST /api/v1/imports and GET /api/v1/imports/{id} refuse', () => {
  it('answers 422 validation_error to an unknown format and 400 to a missing file, storing nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const unknown = await start(alice, { source: 'tinyurl', subdomain, file: shlinkCsv(sourceLinks(1, 'u')) });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error.code).toBe('validation_error');
    expect(unknown.json().error.details).toHaveProperty('source');
    const missing = await start(alice, { source: 'shlink', subdomain });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.code).toBe('missing_parameter');
    const extra = await start(alice, { source: 'shlink', subdomain, file: '', mode: 'fast' });
    expect(extra.statusCode).toBe(400);
    expect(await context.db.db.selectFrom('imports').select('id').where('subdomain', '=', subdomain).execute()).toEqual([]);
  });

  it('fails the import (validation_error) when the file is not the source’s export or stops being CSV, creating nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const notShlink = await start(alice, { source: 'shlink', subdomain, file: 'a,b,c\r\n1,2,3\r\n' });
    expect(notShlink.statusCode).toBe(202);
    const wrong = await finished(alice, notShlink.json().data.id);
    expect(wrong.data).toMatchObject({ status: 'failed', rows_read: 0, rows_total: null });
    expect(wrong.data.error).toEqual({ code: 'validation_error', details: { file: 'not a shlink export: no slug column' } });
    const file = 'createdAt,shortCode,longUrl\r\n2021-01-01T00:00:00Z,ok,https://example.com/\r\n"2021-01-01,abc,https://example.com/\r\n';
    const started = await start(alice, { source: 'shlink', subdomain, file });
    expect(started.statusCode).toBe(202);
    const done = await finished(alice, started.json().data.id);
    expect(done.data).toMatchObject({ status: 'failed', rows_read: 0 });
    expect(done.data.error.code).toBe('validation_error');
    expect(await liveLinks(subdomain)).toBe(0);
  }, 60_000);

  it(`answers 413 payload_too_large to a CSV export over ${IMPORT_MAX_BYTES} bytes, a database export over ${YOURLS_DUMP_MAX_BYTES}, and a body over the route's limit`, async () => {
    const subdomain = await claimSubdomain(app, alice);
    const file = shlinkCsv(sourceLinks(1, 'h')) + 'x'.repeat(IMPORT_MAX_BYTES);
    const tooLarge = await start(alice, { source: 'shlink', subdomain, file });
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.json().error.code).toBe('payload_too_large');
    // Quotes are escaped in JSON: a body past the route's limit (twice the largest file) is refused before it is parsed.
    const body = await start(alice, { source: 'yourls', subdomain, file: '"'.repeat(IMPORT_BODY_LIMIT / 2 + 40 * 1024) });
    expect(body.statusCode).toBe(413);
    expect(body.json().error.code).toBe('payload_too_large');
    // A database export may be larger than a CSV export, up to its own limit.
    const dump = await start(alice, { source: 'yourls', subdomain, file: 'x'.repeat(YOURLS_DUMP_MAX_BYTES + 1) });
    expect(dump.statusCode).toBe(413);
    expect(dump.json().error).toMatchObject({ code: 'payload_too_large', details: { file: `at most ${YOURLS_DUMP_MAX_BYTES} bytes` } });
  }, 60_000);

  it("answers 403 not_owner for someone else's subdomain, 404 for an unknown one, and 404 for someone else's import", async () => {
    const bobs = await claimSubdomain(app, bob);
    const file = shlinkCsv(sourceLinks(2, 'fo'));
    const foreign = await start(alice, { source: 'shlink', subdomain: bobs, file });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.code).toBe('not_owner');
    expect((await start(alice, { source: 'shlink', subdomain: 'nosuchsubdomain', file })).statusCode).toBe(404);

    const bobsImport = await start(bob, { source: 'shlink', subdomain: bobs, file, dry_run: true });
    expect(bobsImport.statusCode).toBe(202);
    const peek = await poll(alice, bobsImport.json().data.id);
    expect(peek.statusCode).toBe(404);
    expect(peek.json().error.code).toBe('not_found');
    expect((await poll(alice, 'imp_AAAAAAAAAAAAAAAA')).statusCode).toBe(404);
    expect((await poll(alice, 'not-an-id')).statusCode).toBe(422);
    await finished(bob, bobsImport.json().data.id);
  }, 60_000);

  it('answers 403 forbidden (missing_scope) to a token without links:write, and without links:read for the reads; 401 without credentials', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const origin = new URL(context.config.publicUrl).origin;
    const { token: reader } = await mintToken(app, alice.cookie, origin, { name: 'reader', scopes: ['links:read'] });
    const { token: stats } = await mintToken(app, alice.cookie, origin, { name: 'stats', scopes: ['stats:read'] });
    const file = shlinkCsv(sourceLinks(1, 'sc'));
    const refused = await start({ auth: { authorization: `Bearer ${reader}` } }, { source: 'shlink', subdomain, file });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'missing_scope', required_scope: 'links:write' } });
    const listed = await app.inject({ method: 'GET', url: '/api/v1/imports', headers: { authorization: `Bearer ${stats}` } });
    expect(listed.statusCode).toBe(403);
    expect(listed.json().error.details.required_scope).toBe('links:read');
    expect((await app.inject({ method: 'GET', url: '/api/v1/imports' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url: '/api/v1/imports', payload: { source: 'shlink', subdomain, file } })).statusCode).toBe(401);
  });
});
