import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { buildApp } from '#services/app.js';
import { startWorker } from '#services/worker/worker.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { sourceLinks } from '#tests/support/import-fixtures.js';
import { startKuttStandIn } from '#tests/support/kutt-stand-in.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { withRepositories } from '#tests/support/repositories.js';
import { shlinkVisits, startShlinkStandIn, type ShlinkStandIn } from '#tests/support/shlink-stand-in.js';
import { yourlsClicks, yourlsMysqldump } from '#tests/support/yourls-dump.js';
import { startYourlsStandIn } from '#tests/support/yourls-stand-in.js';
import { importRunner } from './imports.service.js';

// POST /api/v1/imports with the sources beyond the CSV files, on a real platform (PGlite and chDB
// embedded, or Postgres, ClickHouse and BullMQ on Redis in services mode) with the worker role
// running the jobs, against local stand-ins of the sources' APIs (tests/support/*-stand-in.ts: not
// Shlink, Kutt or YOURLS themselves). The stand-ins listen on loopback: WEBHOOK_ALLOWLIST admits
// 127.0.0.1, as for the webhook tests; every other internal address stays refused.

let context: Context;
let app: FastifyInstance;
let worker: Consumer;
let alice: TestOwner;
const standIns: { close(): Promise<void> }[] = [];
/** Every line the platform logs, at every level. */
const logged: string[] = [];

beforeAll(async () => {
  const log = pino({ level: 'trace' }, { write: (line: string) => void logged.push(line) });
  context = await createTestContext({ WEBHOOK_ALLOWLIST: '127.0.0.1' }, { log });
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

const start = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/v1/imports', headers: alice.auth, payload });

/** Polls an import until it has finished; answers its last state (with the first page of its report). */
async function finished(id: string, timeoutMs = 240_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: alice.auth });
    expect(answer.statusCode, answer.body).toBe(200);
    const data = answer.json().data;
    if (data.status === 'completed' || data.status === 'failed') return { data, body: answer.body };
    if (Date.now() > deadline) throw new Error(`import ${id} still ${data.status} after ${timeoutMs} ms: ${answer.body}`);
    await sleep(200);
  }
}

async function shlink(links = sourceLinks(30, 'sa'), visitsPerLink = 40): Promise<ShlinkStandIn> {
  const visits = new Map(links.slice(0, 10).map((link) => [link.slug, shlinkVisits(link.slug, visitsPerLink, Date.UTC(2024, 5, 30, 12))]));
  const started = await startShlinkStandIn(links, visits);
  standIns.push(started);
  return started;
}

async function storedVisits(subdomain: string): Promise<number> {
  const result = await context.analytics.client.query({
    query: 'SELECT count() AS n FROM visits FINAL WHERE subdomain = {subdomain:String}',
    query_params: { subdomain },
    format: 'JSONEachRow',
  });
  return Number((await result.json<{ n: string }>())[0]!.n);
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

describe('POST /api/v1/imports from a source’s API (local stand-ins)', () => {
  it('imports from the Shlink stand-in to completion with its visits counted; a second import creates no link and no visit', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const source = await shlink();
    const answer = await start({ source: 'shlink-api', subdomain, url: source.url, api_key: source.apiKey });
    expect(answer.statusCode, answer.body).toBe(202);
    expect(answer.json().data).toMatchObject({ source: 'shlink-api', status: 'queued', file_bytes: 0, visits: { added: 0, existing: 0, skipped: 0 } });

    const { data } = await finished(answer.json().data.id);
    expect(data).toMatchObject({ status: 'completed', error: null, rows_total: 30, rows_read: 30 });
    expect(data.counts).toMatchObject({ created: 30, exists: 0, conflict: 0, refused: 0 });
    expect(data.visits).toEqual({ added: 400, existing: 0, skipped: 0 });
    expect(data.rows[0]).toMatchObject({ line: 2, status: 'created', slug: 'sa0' });
    expect(await liveLinks(subdomain)).toBe(30);
    expect(await storedVisits(subdomain)).toBe(400);

    const again = await finished((await start({ source: 'shlink-api', subdomain, url: source.url, api_key: source.apiKey })).json().data.id);
    expect(again.data.counts).toMatchObject({ created: 0, exists: 30 });
    expect(again.data.visits).toEqual({ added: 0, existing: 400, skipped: 0 });
    expect(await storedVisits(subdomain)).toBe(400);

    const withoutHistory = await claimSubdomain(app, alice);
    const links = await finished(
      (await start({ source: 'shlink-api', subdomain: withoutHistory, url: source.url, api_key: source.apiKey, history: false })).json().data.id,
    );
    expect(links.data.counts).toMatchObject({ created: 30 });
    expect(links.data.visits).toEqual({ added: 0, existing: 0, skipped: 0 });
    expect(await storedVisits(withoutHistory)).toBe(0);
  });

  it('fails the import with validation_error naming api_key when the Shlink stand-in refuses the key, importing nothing', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const source = await shlink();
    const { data } = await finished((await start({ source: 'shlink-api', subdomain, url: source.url, api_key: 'wrong-key' })).json().data.id);
    expect(data.status).toBe('failed');
    expect(data.error.code).toBe('validation_error');
    expect(Object.keys(data.error.details)).toEqual(['api_key']);
    expect(data.error.details.api_key).toMatch(/refused the API key \(401/);
    expect(await liveLinks(subdomain)).toBe(0);
  });

  it('fails the import with service_unavailable when the source does not answer', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const closed = await startShlinkStandIn([], new Map());
    await closed.close();
    const { data } = await finished((await start({ source: 'shlink-api', subdomain, url: closed.url, api_key: closed.apiKey })).json().data.id);
    expect(data).toMatchObject({ status: 'failed', error: { code: 'service_unavailable' } });
    expect(data.error.details.source).toContain('did not answer');
  });

  it('never shows the key in an answer, the audit log, the logs or the stored row in clear, and deletes it when the import ends', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const source = await shlink(sourceLinks(3, 'sk'), 1);
    const answer = await start({ source: 'shlink-api', subdomain, url: source.url, api_key: source.apiKey });
    expect(answer.body).not.toContain(source.apiKey);
    const id = answer.json().data.id as string;

    // While the import waits or runs, the stored file holds the key sealed (v1:<key id>:…) only.
    const waiting = await context.db.db.selectFrom('imports').select('file').where('id', '=', id).executeTakeFirstOrThrow();
    if (waiting.file !== null) {
      expect(waiting.file).not.toContain(source.apiKey);
      expect(JSON.parse(waiting.file).api_key).toMatch(/^v1:/);
    }

    const { body } = await finished(id);
    expect(body).not.toContain(source.apiKey);
    const list = await app.inject({ method: 'GET', url: '/api/v1/imports', headers: alice.auth });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(source.apiKey);
    const row = await context.db.db.selectFrom('imports').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.file).toBeNull();
    expect(JSON.stringify(row)).not.toContain(source.apiKey);
    const audit = await context.db.db.selectFrom('audit_log').selectAll().where('target', '=', `import:${id}`).execute();
    expect(audit.length).toBe(1);
    expect(JSON.stringify(audit)).not.toContain(source.apiKey);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.join('')).not.toContain(source.apiKey);
  });

  it('refuses a private, link-local or loopback URL the allow-list does not admit, failing the import before any request', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const source = await shlink(sourceLinks(2, 'sp'), 1);
    const port = new URL(source.url).port;
    for (const url of ['http://192.168.10.20:8080', 'http://169.254.169.254', `http://[::1]:${port}`, `http://127.0.0.2:${port}`]) {
      const { data } = await finished((await start({ source: 'shlink-api', subdomain, url, api_key: source.apiKey })).json().data.id);
      expect(data, url).toMatchObject({ status: 'failed', error: { code: 'validation_error' } });
      expect(Object.keys(data.error.details), url).toEqual(['url']);
    }
    expect(source.requests).toEqual([]);
    expect(await liveLinks(subdomain)).toBe(0);
  });

  it('imports from the Kutt stand-in and the YOURLS API stand-in (signature, and username and password), links only', async () => {
    const kutt = await startKuttStandIn(sourceLinks(7, 'ka'));
    standIns.push(kutt);
    const viaKutt = await claimSubdomain(app, alice);
    const k = await finished((await start({ source: 'kutt', subdomain: viaKutt, url: kutt.url, api_key: kutt.apiKey })).json().data.id);
    expect(k.data).toMatchObject({ status: 'completed', rows_total: 7, counts: { created: 7 }, visits: { added: 0 } });

    const yourls = await startYourlsStandIn(sourceLinks(6, 'ya'));
    standIns.push(yourls);
    const bySignature = await claimSubdomain(app, alice);
    const s = await finished((await start({ source: 'yourls-api', subdomain: bySignature, url: yourls.url, signature: yourls.signature })).json().data.id);
    expect(s.data).toMatchObject({ status: 'completed', counts: { created: 6 } });
    const byPassword = await claimSubdomain(app, alice);
    const p = await finished(
      (await start({ source: 'yourls-api', subdomain: byPassword, url: yourls.url, username: yourls.username, password: yourls.password })).json().data.id,
    );
    expect(p.data).toMatchObject({ status: 'completed', counts: { created: 6 } });
    const wrong = await finished(
      (await start({ source: 'yourls-api', subdomain: byPassword, url: yourls.url, username: yourls.username, password: 'nope' })).json().data.id,
    );
    expect(wrong.data).toMatchObject({ status: 'failed', error: { code: 'validation_error' } });
    expect(Object.keys(wrong.data.error.details)).toEqual(['password']);
  });

  it('refuses a body mixing two sources’ fields (400, as an unknown field) or lacking the key (400 missing_parameter), and keeps the CSV requests as they were', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const mixed = await start({ source: 'shlink-api', subdomain, url: 'https://s.example', api_key: 'k', file: 'x' });
    expect(mixed.statusCode, mixed.body).toBe(400);
    expect(mixed.body).toContain('file');
    const noKey = await start({ source: 'kutt', subdomain, url: 'https://s.example' });
    expect(noKey.statusCode, noKey.body).toBe(400);
    expect(noKey.json().error).toMatchObject({ code: 'missing_parameter', details: { missing: ['api_key'] } });
    expect(await liveLinks(subdomain)).toBe(0);
    const csv = await start({ source: 'shlink', subdomain, file: 'shortCode,longUrl\nabc,https://example.com/\n' });
    expect(csv.statusCode, csv.body).toBe(202);
    expect(csv.json().data.visits).toBeNull();
    const { data } = await finished(csv.json().data.id);
    expect(data).toMatchObject({ status: 'completed', counts: { created: 1 }, visits: null });
  });
});

describe('POST /api/v1/imports with a YOURLS database export', () => {
  it('imports the links and the yourls_log clicks of a mysqldump; a file that is not an export fails the import', async () => {
    const subdomain = await claimSubdomain(app, alice);
    const links = sourceLinks(20, 'yd');
    const clicks = links.slice(0, 5).flatMap((link, i) => yourlsClicks(link.slug, 30, 1 + i * 30, Date.UTC(2024, 5, 30, 12)));
    const file = yourlsMysqldump(links, clicks);
    const answer = await start({ source: 'yourls', subdomain, file });
    expect(answer.statusCode, answer.body).toBe(202);
    expect(answer.json().data.file_bytes).toBe(Buffer.byteLength(file));
    const { data } = await finished(answer.json().data.id);
    expect(data).toMatchObject({ status: 'completed', rows_total: 20, counts: { created: 20 }, visits: { added: 150, existing: 0, skipped: 0 } });
    expect(await storedVisits(subdomain)).toBe(150);

    const bad = await finished((await start({ source: 'yourls', subdomain, file: 'SELECT 1;' })).json().data.id);
    expect(bad.data).toMatchObject({
      status: 'failed',
      error: { code: 'validation_error', details: { dump: expect.stringContaining('not a YOURLS database export') } },
    });
  });
});
