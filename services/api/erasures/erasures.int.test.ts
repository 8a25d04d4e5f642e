import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, selectRows, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { Principal } from '#shared/http/auth.js';
import { DLQ_HEADERS, DLQ_REPLAY_GROUP } from '#shared/message-log/dead-letters.js';
import type { Consumer, StoredLogMessage } from '#shared/message-log/message-log.js';
import { ENRICHER_GROUPS, TOPICS } from '#shared/message-log/topics.js';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import { createRepositories } from '#services/repositories.js';
import { rawVisit } from '#tests/support/visits.js';
import { waitFor } from '#tests/support/wait.js';
import { webhooksRepository } from '#shared/webhooks/webhooks.repository.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { insertWebhook } from '#tests/support/webhooks.js';
import { buildApp } from '#services/app.js';
import { erasuresService } from './erasures.service.js';

// Erasure (issue 38): after erasing a visitor, no row of the analytics store, no export, no kept
// webhook delivery excerpt and no dead letter holds their IP address or user agent, and the reports'
// totals are unchanged. A visit still in the message log when the erasure begins is not stored after it.
type Json = Record<string, any>;

const DAY_MS = 86_400_000;
const now = Date.now();

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;
let sub: string;
let link: Json;
/** The visitor to erase: an address and a user agent no other test file uses. */
const ip = `198.51.100.${10 + Math.floor(Math.random() * 200)}`;
const agent = `ErasureTest/${randomUUID()}`;
let visitorIds: string[];
let deliveries: string[];
let enricher: Consumer | undefined;
/** Another visitor, whose visit is still in the message log when they are erased. */
const lateIp = `198.51.100.${210 + Math.floor(Math.random() * 40)}`;

const row = (age: number, i: number, visitor: boolean) => ({
  visit_id: v7({ msecs: now - age }),
  ts: toClickHouseTime(now - age),
  kind: 'visit',
  owner_id: alice.id,
  subdomain: sub,
  link_id: link.id,
  slug: link.slug,
  ip_public: visitor ? ip : `203.0.113.${i}`,
  country: visitor ? 'NL' : 'FR',
  user_agent: visitor ? agent : 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0',
  browser: 'Firefox',
  visitor_hash: visitor ? 'erased-visitor' : `visitor-${i}`,
  version: 0,
});

const post = (owner: TestOwner, payload: unknown) => app.inject({ method: 'POST', url: '/api/v1/erasures', headers: owner.auth, payload: payload as Json });
const get = async (url: string) => {
  const response = await app.inject({ method: 'GET', url, headers: alice.auth });
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  return response;
};
const range = `since=${encodeURIComponent(new Date(now - 30 * DAY_MS).toISOString())}&until=${encodeURIComponent(new Date(now + DAY_MS).toISOString())}`;
/**
 * The reports an erasure must leave as they were: everything the rollups hold. A link's `routes` (its
 * visits by redirect rule and A/B variant) are counted from its raw visits, as the visit list is, so
 * an erasure shortens them: they are left out here.
 */
const reports = async () => {
  const { routes: _routes, ...linkReport } = (await get(`/api/v1/stats/link/${link.id}?${range}&granularity=day`)).json().data;
  return { subdomain: (await get(`/api/v1/stats/subdomain/${sub}?${range}&granularity=day`)).json().data, link: linkReport };
};

/** Rows of every table of the analytics store whose string columns hold `needle`, by table. */
async function analyticsRowsHolding(needle: string): Promise<Record<string, number>> {
  const columns = await selectRows<{ table: string; name: string }>(
    context.analytics.client,
    `SELECT table, name FROM system.columns WHERE database = currentDatabase() AND type LIKE '%String%'
       AND table IN (SELECT name FROM system.tables WHERE database = currentDatabase() AND engine NOT LIKE '%View%')`,
    {},
  );
  const byTable = new Map<string, string[]>();
  for (const column of columns) byTable.set(column.table, [...(byTable.get(column.table) ?? []), column.name]);
  const found: Record<string, number> = {};
  for (const [table, names] of byTable) {
    const where = names.map((name) => `position(toString(\`${name}\`), {needle:String}) > 0`).join(' OR ');
    const [counted] = await selectRows<{ n: number }>(context.analytics.client, `SELECT count() AS n FROM \`${table}\` WHERE ${where}`, { needle });
    if (Number(counted!.n) > 0) found[table] = Number(counted!.n);
  }
  return found;
}

const deliveriesHolding = async (needle: string) =>
  Number(
    (
      await sql<{
        n: string;
      }>`SELECT count(*) AS n FROM webhook_deliveries WHERE seq = ANY(${deliveries}::bigint[]) AND (response_excerpt LIKE ${`%${needle}%`} OR error LIKE ${`%${needle}%`})`.execute(
        context.db.db,
      )
    ).rows[0]!.n,
  );

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  sub = await claimSubdomain(app, alice);
  link = (
    await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: alice.auth,
      payload: { subdomain: sub, slug: 'erase', target_url: 'https://example.com/' },
    })
  ).json().data;
  // Three visits of the visitor (one with a beacon's newer version and beacon state), five of others.
  const visitor = [1, 2, 3].map((day) => row(day * DAY_MS, day, true));
  const others = [1, 2, 3, 4, 5].map((day) => row(day * DAY_MS + 60_000, day, false));
  await context.analytics.client.insert({
    table: 'visits',
    values: [...visitor, ...others],
    format: 'JSONEachRow',
    clickhouse_settings: deduplicatedBy(`erase-${sub}`),
  });
  await context.analytics.client.insert({
    table: 'visits',
    values: [{ ...visitor[0]!, version: 2, consent_analytics: 1, ip_lan: '192.168.1.20' }],
    format: 'JSONEachRow',
    clickhouse_settings: deduplicatedBy(`erase-merge-${sub}`),
  });
  await context.analytics.client.insert({
    table: 'visit_beacons',
    values: [
      { visit_id: visitor[0]!.visit_id, received_at: toClickHouseTime(now), consent_analytics: 1, consent_lan_ip: 1, ip_lan: '192.168.1.20', version: 2 },
    ],
    format: 'JSONEachRow',
    clickhouse_settings: deduplicatedBy(`erase-beacon-${sub}`),
  });
  visitorIds = visitor.map((visit) => visit.visit_id);
  // Dead letters: two of the visitor (a visit that failed validation, a cut-off one that is no JSON), one of someone else.
  const dead = (value: string, key = link.id as string) => ({
    key,
    value,
    headers: { [DLQ_HEADERS.reason]: 'invalid visit', [DLQ_HEADERS.source]: TOPICS.visitsRaw, [DLQ_HEADERS.at]: new Date().toISOString() },
  });
  await context.messageLog.publish(TOPICS.visitsDlq, [
    dead(JSON.stringify({ ...rawVisit(sub, { owner_id: alice.id, link_id: link.id, ip_public: ip, user_agent: agent }), ts: 'yesterday' })),
    dead(`{"owner_id":"${alice.id}","ip_public":"${ip}","user_agent":"${agent}","ts":"20`),
    dead(JSON.stringify({ ...rawVisit(sub, { owner_id: alice.id, link_id: link.id, ip_public: '203.0.113.99' }), ts: 'yesterday' })),
  ]);
  // The delivery log keeps receivers' answers: two of them echo the visitor's IP or user agent.
  const { row: hook } = await insertWebhook(context, { owner_id: alice.id, url: 'https://receiver.example/hook', events: ['visit.new'] });
  const excerpts = [`{"ip_public":"${ip}"}`, null, '{"ok":true}'];
  const errors = [null, `500: echo ${agent}`, null];
  await webhooksRepository(context.db.db).insertAttempts(
    excerpts.map((excerpt, i) => ({
      webhook_id: hook.id,
      delivery_id: randomUUID(),
      event_id: randomUUID(),
      event: 'visit.new',
      attempt: 1,
      attempted_at: new Date(now - i * 1000).toISOString(),
      status_code: excerpt ? 200 : 500,
      latency_ms: 5,
      success: excerpt !== null,
      error: errors[i] ?? null,
      response_excerpt: excerpt,
    })),
  );
  deliveries = (await sql<{ seq: string }>`SELECT seq FROM webhook_deliveries WHERE webhook_id = ${hook.id}`.execute(context.db.db)).rows.map(
    (entry) => entry.seq,
  );
});

/** The dead letters still pending (after the replay group's position), whole. */
const pendingDeadLetters = async (): Promise<StoredLogMessage[]> =>
  (await context.messageLog.peek({ topic: TOPICS.visitsDlq, groupId: DLQ_REPLAY_GROUP, limit: 100 })).messages;
const holding = (messages: StoredLogMessage[], needle: string) =>
  messages.filter((message) => [message.key, message.value, ...Object.values(message.headers ?? {})].some((text) => text.includes(needle)));

afterAll(async () => {
  await enricher?.stop();
  await app?.close();
  if (context) await closeContext(context);
});

describe('POST /api/v1/erasures', () => {
  it('refuses a body naming no target or two, an unknown field, and a malformed IP address', async () => {
    for (const payload of [{}, { ip, visit_id: randomUUID() }, { email: 'x@example.org' }, { ip: '300.1.1.1' }]) {
      const response = await post(alice, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBeGreaterThanOrEqual(400);
      expect(response.statusCode, JSON.stringify(payload)).toBeLessThan(500);
      expect(['bad_request', 'validation_error']).toContain(response.json().error.code);
    }
  });

  it("someone else's link or subdomain is 403 not_owner, an unknown link 404; by IP, another owner erases none of alice's visits", async () => {
    const link403 = await post(bob, { link_id: link.id });
    expect([link403.statusCode, link403.json().error.code]).toEqual([403, 'not_owner']);
    const sub403 = await post(bob, { subdomain: sub });
    expect([sub403.statusCode, sub403.json().error.code]).toEqual([403, 'not_owner']);
    const unknown = await post(alice, { link_id: 'l_0000000000000000' });
    expect([unknown.statusCode, unknown.json().error.code]).toEqual([404, 'not_found']);
    const theirs = await post(bob, { ip });
    expect(theirs.statusCode).toBe(200);
    expect(theirs.json().data).toMatchObject({ visits_deleted: 0, webhook_deliveries_scrubbed: 0, dead_letters_removed: 0 });
    expect(holding(await pendingDeadLetters(), ip)).toHaveLength(2);
    expect(await analyticsRowsHolding(agent)).toMatchObject({ visits: 4 });
  });

  it('erasing a visitor by IP: no row of the analytics store, no export and no kept delivery excerpt holds their IP or user agent; the reports are unchanged', async () => {
    const before = await reports();
    expect(await analyticsRowsHolding(agent)).toEqual({ visits: 4 });
    expect(await deliveriesHolding(ip)).toBe(1);

    const response = await post(alice, { ip });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toEqual({ target: { ip }, visits_deleted: 4, webhook_deliveries_scrubbed: 2, dead_letters_removed: 2 });
    // No dead letter holds them any more, pending or not; the other visitor's is still pending, and replayable.
    const left = await pendingDeadLetters();
    expect(holding(left, ip)).toEqual([]);
    expect(holding(left, agent)).toEqual([]);
    expect(holding(left, '203.0.113.99')).toHaveLength(1);
    const everything = (await context.messageLog.peek({ topic: TOPICS.visitsDlq, groupId: `erasure-audit-${sub}`, limit: 100 })).messages;
    expect(holding(everything, ip)).toEqual([]);
    // A replay (the staff API takes from the replay group) gets the one left.
    const replayed = await context.messageLog.take({ topic: TOPICS.visitsDlq, groupId: DLQ_REPLAY_GROUP, limit: 100 }, async () => undefined);
    expect(replayed.map((message) => holding([message], '203.0.113.99').length)).toEqual([1]);

    for (const needle of [ip, agent, '192.168.1.20']) expect(await analyticsRowsHolding(needle), needle).toEqual({});
    const [beacon] = await selectRows<{ n: number }>(context.analytics.client, 'SELECT count() AS n FROM visit_beacons WHERE visit_id IN {ids:Array(UUID)}', {
      ids: visitorIds,
    });
    expect(Number(beacon!.n)).toBe(0);
    expect(await deliveriesHolding(ip)).toBe(0);
    expect(await deliveriesHolding(agent)).toBe(0);
    // The unrelated excerpt stays.
    expect(await deliveriesHolding('"ok":true')).toBe(1);
    for (const format of ['csv', 'json']) {
      const body = (await get(`/api/v1/export?format=${format}&subdomain=${sub}`)).body;
      expect(body).not.toContain(ip);
      expect(body).not.toContain(agent);
    }
    const listed = (await get(`/api/v1/visits?subdomain=${sub}`)).json();
    expect(listed.meta.total).toBe(5);
    expect(await reports()).toEqual(before);

    const audited = await sql<{
      target: string;
      details: Json;
    }>`SELECT target, details FROM audit_log WHERE action = 'erasure' AND actor_id = ${alice.id}`.execute(context.db.db);
    expect(audited.rows).toHaveLength(1);
    expect(audited.rows[0]!.target).toBe('ip:erased');
    expect(JSON.stringify(audited.rows[0])).not.toContain(ip);
  });

  it('a visit still in the message log: an erasure the enricher does not catch up with answers 503 and erases nothing', async () => {
    await context.messageLog.publish(TOPICS.visitsRaw, [
      { key: link.id, value: JSON.stringify(rawVisit(sub, { owner_id: alice.id, link_id: link.id, slug: link.slug, ip_public: lateIp, user_agent: agent })) },
    ]);
    // No enricher runs: the visit stays in the log. A short bound, so that the test does not wait 30 s.
    const principal: Principal = {
      userId: alice.id,
      email: 'alice@example.org',
      role: 'user',
      via: 'token',
      scopes: new Set(['stats:read']),
      identity: 'test',
    };
    const impatient = erasuresService({
      ...context,
      repositories: createRepositories(context),
      subdomains: { managed: () => Promise.reject(new Error('not used')), access: () => Promise.reject(new Error('not used')) },
      waitMs: 300,
    });
    await context.messageLog.publish(TOPICS.visitsDlq, [{ key: link.id, value: `{"ip_public":"${lateIp}"` }]);
    const failed = await impatient.erase(principal, { ip: lateIp }, { id: 'late-1', ip: '127.0.0.1' }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(AppError);
    expect((failed as AppError).code).toBe('service_unavailable');
    // Nothing half done: the dead letter is still there, no audit row was written.
    expect(holding(await pendingDeadLetters(), lateIp)).toHaveLength(1);
    const audited = await sql<{ n: string }>`SELECT count(*) AS n FROM audit_log WHERE action = 'erasure' AND actor_id = ${alice.id}`.execute(context.db.db);
    expect(Number(audited.rows[0]!.n)).toBe(1);
  });

  it('a visit answered just before the erasure, still in the message log, is stored first and erased with the rest: never stored after the answer', async () => {
    // The erasure begins while no enricher runs; the enricher starts a moment later.
    const answer = post(alice, { ip: lateIp });
    await new Promise((resolve) => setTimeout(resolve, 300));
    enricher = await startVisitConsumer(context);
    const response = await answer;
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toMatchObject({ visits_deleted: 1, dead_letters_removed: 1 });
    // Whatever the enricher still does after the answer, the visit stays erased.
    await waitFor(
      async () => (await context.messageLog.positions(TOPICS.visitsRaw, ENRICHER_GROUPS[TOPICS.visitsRaw])).every(({ committed, end }) => committed >= end),
      30_000,
      { message: 'the enricher has committed everything' },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await analyticsRowsHolding(lateIp)).toEqual({});
    expect(holding(await pendingDeadLetters(), lateIp)).toEqual([]);
  });

  it("erasing a link removes all its raw visits and keeps its report; a subdomain's likewise", async () => {
    const before = await reports();
    const byLink = await post(alice, { link_id: link.id });
    expect(byLink.statusCode).toBe(200);
    expect(byLink.json().data.visits_deleted).toBe(5);
    expect(await reports()).toEqual(before);
    const bySubdomain = await post(alice, { subdomain: sub });
    expect(bySubdomain.json().data.visits_deleted).toBe(0);
    expect((await get(`/api/v1/visits?subdomain=${sub}`)).json().meta.total).toBe(0);
  });
});
