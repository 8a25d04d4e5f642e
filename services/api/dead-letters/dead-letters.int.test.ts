import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createAccount, loginCookie, mintToken } from '#tests/support/accounts.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { rawVisit } from '#tests/support/visits.js';
import type { DeadLetterView } from './dead-letters.service.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
// The app first: its OpenAPI module extends zod before the enricher's modules create the tracker's
// schemas (zod 4 gives each schema its methods when it is created), as services/platform.ts does.
import { buildApp } from '#services/app.js';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';

/** Kafka consumer-group joins (the enricher's, each peek's and take's) take seconds: generous, bounded waits. */
const DEADLINE_MS = 45_000;

/**
 * A platform of its own (context, API, enricher) and a staff token with the admin scope: each
 * describe block has its own message log (a fresh folder, or topics of its own prefix on Kafka), so
 * the dead-letter topic holds only what its tests put there.
 */
function platform() {
  const state = {} as { context: Context; app: FastifyInstance; enricher: Consumer; staff: string; origin: string };
  beforeAll(async () => {
    state.context = await createTestContext();
    state.app = (await buildApp(state.context)).app;
    state.enricher = await startVisitConsumer(state.context);
    state.origin = new URL(state.context.config.publicUrl).origin;
    const staff = await createAccount(state.context, 'staff');
    const cookie = await loginCookie(state.app, staff.email, undefined, clientIp());
    state.staff = (await mintToken(state.app, cookie, state.origin, { name: 'dead letters', scopes: ['admin'] })).token;
  });
  afterAll(async () => {
    await state.enricher?.stop();
    await state.app?.close();
    await closeContext(state.context);
  });
  return state;
}

const clientIp = () => `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

/** A dead letter as the enricher writes it, published straight to visits.dlq. */
const deadLetter = (key: string, value: string, reason = 'invalid visit: test', source: string = TOPICS.visitsRaw, own: Record<string, string> = {}) => ({
  key,
  value,
  headers: { ...own, 'x-dlq-reason': reason, 'x-dlq-source': source, 'x-dlq-at': new Date().toISOString() },
});

describe(`GET /api/v1/admin/dead-letters (${SERVICES_MODE ? 'kafka' : 'lmdb'})`, { timeout: 120_000 }, () => {
  const p = platform();
  const list = async (query = '', token = p.staff) =>
    p.app.inject({ method: 'GET', url: `/api/v1/admin/dead-letters${query}`, headers: { authorization: `Bearer ${token}` } });
  const items = async (query = '') => (await list(query)).json().data.dead_letters as DeadLetterView[];

  it('lists what the enricher dead-lettered, with its source topic, place, reason, time, key and text', async () => {
    const key = uniqueName('poison-link');
    const started = Date.now();
    const undecodable = '{"visit_id": "truncated';
    const invalid = JSON.stringify(rawVisit(uniqueName('poison'), { visit_id: 'not-a-uuid' }));
    await p.context.messageLog.publish(TOPICS.visitsRaw, [
      { key, value: undecodable, headers: { 'x-origin': 'edge-1' } },
      { key, value: invalid },
    ]);
    await p.context.messageLog.publish(TOPICS.trackerRaw, [{ key, value: 'not a beacon' }]);
    const ours = await waitFor(
      async () => {
        const found = (await items()).filter((item) => item.key === key);
        return found.length === 3 ? found : undefined;
      },
      DEADLINE_MS,
      { message: 'three dead letters listed', intervalMs: 200 },
    );

    const fromVisits = ours.filter((item) => item.source_topic === 'visits.raw');
    expect(fromVisits.map((item) => item.message)).toEqual([undecodable, invalid]);
    expect(fromVisits[0]).toEqual({
      id: `${fromVisits[0]!.partition}-${fromVisits[0]!.offset}`,
      partition: expect.any(Number),
      offset: expect.any(Number),
      source_topic: 'visits.raw',
      reason: 'undecodable JSON',
      dead_lettered_at: expect.any(String),
      key,
      message: undecodable,
      headers: { 'x-origin': 'edge-1' },
      replays: 0,
    });
    expect(fromVisits[1]!.reason).toMatch(/^invalid visit: visit_id: /);
    const beacon = ours.find((item) => item.source_topic === 'tracker.raw')!;
    expect(beacon).toMatchObject({ message: 'not a beacon', reason: 'undecodable JSON', headers: {} });
    for (const item of ours) {
      expect(Date.parse(item.dead_lettered_at!)).toBeGreaterThanOrEqual(started - 1_000);
      expect(Date.parse(item.dead_lettered_at!)).toBeLessThanOrEqual(Date.now());
    }
    // Reading moves nothing: the same dead letters are listed again.
    const again = await list();
    expect(again.statusCode).toBe(200);
    expect(again.json().data.dead_letters.filter((item: DeadLetterView) => item.key === key)).toEqual(ours);
  });

  it('pages oldest first by cursor: a walk lists each pending dead letter once, and a cursor past the end gives an empty page', async () => {
    const key = uniqueName('paged');
    for (let n = 0; n < 5; n++) {
      await p.context.messageLog.publish(TOPICS.visitsDlq, [deadLetter(key, `{"n":${n}}`, `reason ${n}`)]);
      // Distinct record times: Kafka's partitions are merged by them (one key keeps one partition anyway).
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const first = await list('?limit=2');
    expect(first.statusCode).toBe(200);
    const total = first.json().meta.total;
    expect(total).toBeGreaterThanOrEqual(5);
    const walked: DeadLetterView[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = (await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`)).json();
      pages += 1;
      expect(page.meta).toMatchObject({ limit: 2, total, count: page.data.dead_letters.length, cursor: cursor ?? null });
      expect(page.data.dead_letters.length).toBeLessThanOrEqual(2);
      walked.push(...page.data.dead_letters);
      if (!page.meta.has_more) {
        expect(page.meta.next_cursor).toBeNull();
        break;
      }
      expect(page.meta.next_cursor).toMatch(/^d1(\.\d+-\d+)+$/);
      cursor = page.meta.next_cursor;
    }
    expect(pages).toBe(Math.ceil(total / 2));
    expect(walked).toHaveLength(total);
    expect(new Set(walked.map((item) => item.id)).size).toBe(total);
    const ours = walked.filter((item) => item.key === key);
    expect(ours.map((item) => item.message)).toEqual([0, 1, 2, 3, 4].map((n) => `{"n":${n}}`));
    expect(ours.map((item) => item.reason)).toEqual([0, 1, 2, 3, 4].map((n) => `reason ${n}`));
    // Offsets grow within a partition.
    for (let i = 1; i < ours.length; i++) expect(ours[i]!.offset).toBeGreaterThan(ours[i - 1]!.offset);

    const pastEnd = Array.from({ length: 16 }, (_, partition) => `${partition}-100000000000`).join('.');
    const empty = await list(`?cursor=d1.${pastEnd}`);
    expect(empty.statusCode).toBe(200);
    expect(empty.json().data.dead_letters).toEqual([]);
    expect(empty.json().meta).toMatchObject({ count: 0, total, has_more: false, next_cursor: null });
  });

  it('brings a replayed message the enricher still refuses back to the end of the list, with its reason and one replay more', async () => {
    const key = uniqueName('still-poison');
    await p.context.messageLog.publish(TOPICS.visitsDlq, [
      deadLetter(key, '{"still": "poison"', 'undecodable JSON', TOPICS.visitsRaw, { 'x-origin': 'edge-9' }),
    ]);
    const before = await waitFor(async () => (await items('?limit=200')).find((item) => item.key === key), DEADLINE_MS, { message: 'the dead letter listed' });
    const replay = await p.app.inject({ method: 'POST', url: '/api/v1/admin/dead-letters/replay', headers: { authorization: `Bearer ${p.staff}` } });
    expect(replay.statusCode, replay.body).toBe(200);
    expect(replay.json().data.replayed).toBeGreaterThanOrEqual(1);
    const back = await waitFor(async () => (await items('?limit=200')).find((item) => item.key === key), DEADLINE_MS, {
      message: 'the dead letter back',
      intervalMs: 200,
    });
    expect(back).toMatchObject({
      reason: 'undecodable JSON',
      source_topic: 'visits.raw',
      message: '{"still": "poison"',
      headers: { 'x-origin': 'edge-9' },
      replays: 1,
    });
    expect(back.id).not.toBe(before.id);
  });

  it('refuses callers without the admin scope (403, as the other staff routes) and anonymous ones (401)', async () => {
    const user = await createAccount(p.context);
    const cookie = await loginCookie(p.app, user.email, undefined, clientIp());
    const token = (await mintToken(p.app, cookie, p.origin)).token;
    for (const request of [
      { method: 'GET' as const, url: '/api/v1/admin/dead-letters' },
      { method: 'POST' as const, url: '/api/v1/admin/dead-letters/replay' },
    ]) {
      const refused = await p.app.inject({ ...request, headers: { authorization: `Bearer ${token}` } });
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toMatchObject({ ok: false, error: { code: 'forbidden', details: { reason: 'missing_scope', required_scope: 'admin' } } });
      const bySession = await p.app.inject({ ...request, headers: { cookie, origin: p.origin } });
      expect(bySession.statusCode).toBe(403);
      expect((await p.app.inject(request)).json().error.code).toBe('unauthorized');
    }
  });

  it('answers bad input with the catalogue codes: unknown parameter or a body 400, invalid values 422', async () => {
    const auth = { authorization: `Bearer ${p.staff}` };
    const cases: [string, string, unknown, number, string][] = [
      ['GET', '/api/v1/admin/dead-letters?limit=0', undefined, 422, 'validation_error'],
      ['GET', '/api/v1/admin/dead-letters?limit=201', undefined, 422, 'validation_error'],
      ['GET', '/api/v1/admin/dead-letters?cursor=s1.5', undefined, 422, 'validation_error'],
      ['GET', '/api/v1/admin/dead-letters?page=2', undefined, 400, 'bad_request'],
      ['POST', '/api/v1/admin/dead-letters/replay?limit=0', undefined, 422, 'validation_error'],
      ['POST', '/api/v1/admin/dead-letters/replay?limit=many', undefined, 422, 'validation_error'],
      ['POST', '/api/v1/admin/dead-letters/replay?all=1', undefined, 400, 'bad_request'],
      ['POST', '/api/v1/admin/dead-letters/replay', { limit: 1 }, 400, 'bad_request'],
    ];
    for (const [method, url, payload, status, code] of cases) {
      const answer = await p.app.inject({ method: method as 'GET', url, headers: auth, ...(payload ? { payload } : {}) });
      expect(answer.statusCode, `${method} ${url}`).toBe(status);
      expect(answer.json().error.code, `${method} ${url}`).toBe(code);
    }
    // A body of the route is refused by name: the limit goes in the query.
    const body = await p.app.inject({ method: 'POST', url: '/api/v1/admin/dead-letters/replay', headers: auth, payload: { limit: 1 } });
    expect(body.json().error.details).toEqual({ unknown: ['limit'], in: 'body' });
  });

  it('documents both operations in the OpenAPI document: staff only, their answers and error codes', async () => {
    const response = await p.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const document = response.json();
    const listOperation = document.paths['/api/v1/admin/dead-letters'].get;
    const replayOperation = document.paths['/api/v1/admin/dead-letters/replay'].post;
    for (const operation of [listOperation, replayOperation]) {
      expect(operation.security).toEqual([{ bearerToken: ['admin'] }, { sessionCookie: [] }]);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '422', '429', '503']));
      expect(operation.description).toMatch(/dlq-replay/);
    }
    expect(listOperation.description).toMatch(/[Oo]ldest first/);
    expect(replayOperation.description).toMatch(/comes back/);
  });
});

describe(`POST /api/v1/admin/dead-letters/replay (${SERVICES_MODE ? 'kafka' : 'lmdb'})`, { timeout: 120_000 }, () => {
  const p = platform();
  const auth = () => ({ authorization: `Bearer ${p.staff}` });
  const list = async (query = '') => (await p.app.inject({ method: 'GET', url: `/api/v1/admin/dead-letters${query}`, headers: auth() })).json();
  const replay = async (query = '') => p.app.inject({ method: 'POST', url: `/api/v1/admin/dead-letters/replay${query}`, headers: auth() });

  /** The visits of a subdomain stored in ClickHouse. */
  async function storedVisits(subdomain: string): Promise<{ visit_id: string }[]> {
    const result = await p.context.analytics.client.query({
      query: 'SELECT visit_id FROM visits FINAL WHERE subdomain = {subdomain:String} ORDER BY ts',
      query_params: { subdomain },
      format: 'JSONEachRow',
    });
    return result.json<{ visit_id: string }>();
  }

  it('republishes pending dead letters to their source topic, where the enricher stores them, up to a limit then all, and leaves the list empty', async () => {
    const subdomain = uniqueName('replayed');
    const visits = [rawVisit(subdomain, { ts: '2025-07-01T00:00:00.001Z' }), rawVisit(subdomain, { ts: '2025-07-01T00:00:00.002Z' })];
    // Valid visits dead-lettered (as a fixed bug would leave them), one publish each: oldest first is publish order.
    for (const visit of visits) {
      await p.context.messageLog.publish(TOPICS.visitsDlq, [deadLetter(`${subdomain}-link`, JSON.stringify(visit), 'invalid visit: a rule since relaxed')]);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const listed = await waitFor(
      async () => {
        const page = await list();
        return page.meta.total === 2 ? page : undefined;
      },
      DEADLINE_MS,
      { message: 'two pending dead letters' },
    );
    expect(listed.data.dead_letters.map((item: DeadLetterView) => JSON.parse(item.message).visit_id)).toEqual(visits.map((visit) => visit.visit_id));

    const one = await replay('?limit=1');
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json()).toMatchObject({ ok: true, data: { replayed: 1, skipped: 0, pending: 1 } });
    const left = await list();
    expect(left.meta.total).toBe(1);
    expect(JSON.parse(left.data.dead_letters[0].message).visit_id).toBe(visits[1]!.visit_id);
    await waitFor(async () => (await storedVisits(subdomain)).length === 1, DEADLINE_MS, { message: 'the first replayed visit stored', intervalMs: 200 });
    expect((await storedVisits(subdomain)).map((row) => row.visit_id)).toEqual([visits[0]!.visit_id]);

    const rest = await replay();
    expect(rest.json().data).toEqual({ replayed: 1, skipped: 0, pending: 0 });
    const stored = await waitFor(
      async () => {
        const rows = await storedVisits(subdomain);
        return rows.length === 2 ? rows : undefined;
      },
      DEADLINE_MS,
      { message: 'both replayed visits stored', intervalMs: 200 },
    );
    expect(stored.map((row) => row.visit_id)).toEqual(visits.map((visit) => visit.visit_id));

    const empty = await list();
    expect(empty.data.dead_letters).toEqual([]);
    expect(empty.meta).toMatchObject({ count: 0, total: 0, has_more: false, next_cursor: null });
    // Nothing pending: a replay has nothing to do.
    expect((await replay()).json().data).toEqual({ replayed: 0, skipped: 0, pending: 0 });
  });

  it('passes over a dead letter whose source names no topic a dead letter comes from, counted as skipped', async () => {
    await p.context.messageLog.publish(TOPICS.visitsDlq, [deadLetter(uniqueName('nowhere'), '{}', 'test', 'events')]);
    await waitFor(async () => (await list()).meta.total === 1, DEADLINE_MS, { message: 'the dead letter pending' });
    expect((await list()).data.dead_letters[0].source_topic).toBeNull();
    const answer = await replay();
    expect(answer.json().data).toEqual({ replayed: 0, skipped: 1, pending: 0 });
    expect((await list()).meta.total).toBe(0);
  });
});
